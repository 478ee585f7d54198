// SPDX-License-Identifier: GPL-2.0

//! Selftest: a ULP that keeps verbs objects on every `swdev` device.
//!
//! On `add` it allocates a PD, a core-polled CQ, a buffer MR and an RC QP
//! connected to itself, with receives posted; on `remove` it destroys them,
//! as a real ULP must. The shell test unloads the provider under it (the
//! ULP sees `remove`, frees, the unload completes) and the ULP under the
//! provider, and reads the resource counts in sysfs on the way.
//!
//! It also registers a port group of its own in sysfs
//! (`ports/<N>/ulptest/where` on `swdev` devices), which the shell test
//! finds on a device registered before the module and on one registered
//! after it, and which goes with the module.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use core::fmt::Write;

use rdma::device::client::{Client, ClientRegistration};
use rdma::device::sysfs::{PortGroup, PortGroupShow, PortGroupsRegistration};
use rdma::device::Device;
use rdma::kshim::mem::Buffer;
use rdma::kshim::sysfs::Page;
use rdma::spec::opcodes::Access;
use rdma::spec::qp_state::QpState;
use rdma::verbs::cq::{Cq, PollCtx};
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{Qp, QpCap};
use rdma::verbs::wr::RecvWr;

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{Opts, Remote};

module! {
    type: UlpTest,
    name: "rdma_ulp_test",
    author: "rdma-rs developers",
    description: "Selftest: a ULP holding verbs objects across hot-unplug",
    license: "GPL",
}

/// What the ULP keeps per device, dropped in dependency order.
struct Objects {
    qp: Option<Qp>,
    mr: Option<Mr>,
    cq: Option<Cq>,
    pd: Option<Pd>,
}

impl Drop for Objects {
    fn drop(&mut self) {
        drop(self.qp.take());
        drop(self.mr.take());
        drop(self.cq.take());
        drop(self.pd.take());
    }
}

/// The ULP's QP: RC, 8 requests deep, one SGE, no rights granted yet.
const OPTS: Opts = Opts {
    access: Access::NONE,
    cap: QpCap {
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    },
    ..rc::RC
};

fn setup(dev: &Arc<Device>) -> Result<Objects> {
    let pd = Pd::alloc(dev)?;
    let cq = Cq::alloc(dev, 64, PollCtx::Workqueue)?;
    let buf = Buffer::new(4096)?;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, Access::LOCAL_WRITE)?;
    let qp = rc::create_qp(&pd, &cq, &cq, &OPTS)?;
    rc::modify_to(&qp, &OPTS, &Remote::default(), QpState::Init)?;
    let sg = [buf.sge(0, 4096, mr.lkey())?];
    for i in 0..4 {
        qp.post_recv(&[RecvWr {
            wr_id: i,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    Ok(Objects {
        qp: Some(qp),
        mr: Some(mr),
        cq: Some(cq),
        pd: Some(pd),
    })
}

struct Ulp;

impl Client for Ulp {
    type Data = Option<Objects>;

    fn name(&self) -> &CStr {
        c_str!("ulptest")
    }

    fn add(&self, dev: &Arc<Device>) -> Result<Option<Objects>> {
        if !dev.name().as_bytes().starts_with(b"swdev") {
            return Ok(None);
        }
        let objs = setup(dev)?;
        pr_info!("ulptest: add {:?}\n", dev.name());
        Ok(Some(objs))
    }

    fn remove(&self, dev: &Arc<Device>, _data: &Option<Objects>) {
        // The data is dropped (and the objects destroyed) when this returns.
        pr_info!("ulptest: remove {:?}\n", dev.name());
    }
}

/// `ports/<N>/ulptest/where`: the device and port it is on.
static GROUPS: [PortGroup; 1] = [PortGroup {
    name: c_str!("ulptest"),
    files: &[c_str!("where")],
}];

struct Where;

impl PortGroupShow for Where {
    fn wants(&self, dev: &Device, _port: u32) -> bool {
        dev.name().as_bytes().starts_with(b"swdev")
    }

    fn show(&self, dev: &Device, port: u32, _group: usize, _file: usize, out: &mut Page) -> Result {
        writeln!(out, "{} {}", dev.name().to_str()?, port).map_err(|_| EINVAL)
    }
}

struct UlpTest {
    _reg: ClientRegistration<Ulp>,
    _files: PortGroupsRegistration,
}

impl kernel::Module for UlpTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let files =
            rdma::device::sysfs::register_port_groups(&GROUPS, Arc::new(Where, GFP_KERNEL)?)?;
        Ok(UlpTest {
            _reg: ClientRegistration::new(Ulp)?,
            _files: files,
        })
    }
}
