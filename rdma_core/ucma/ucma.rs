// SPDX-License-Identifier: GPL-2.0

//! `rdma_rs_ucm`: the rdma_cm for user space, the way unchanged librdmacm
//! (rdma-core 44) reaches the kernel's C stack: `/dev/infiniband/rdma_cm`
//! (mode 0666) and its `write()` ABI (`include/uapi/rdma/rdma_user_cm.h`,
//! version 4), on our rdma_cm (`rdma::cma`).
//!
//! - [`file`]: an open file (an event channel of librdmacm's): its ids by
//!   handle, and their events, which `GET_EVENT` reads.
//! - [`ctx`]: an id of user space's and the map from rdma_cm ids to them.
//! - [`handler`]: the rdma_cm's events turned into user space's records.
//! - [`cmd`]: the commands.
//!
//! Each open file holds its ids; closing it (or the process exiting)
//! destroys them: connections are rejected or disconnected for the peer,
//! listeners stop, unread requests are rejected. An open file pins the
//! module.
//!
//! Locks, outermost first: `Ctx::file` → `UcmaFile::st`; the route map is
//! a leaf. No lock of this module is held across a call into the rdma_cm,
//! whose `destroy` waits for the handler, which takes `UcmaFile::st`.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::{UserSliceReader, UserSliceWriter};

use rdma::device::chardevs::{register_global, ChardevEntry, GlobalChardev};
use rdma::kshim::chardev::{CharDevOps, MiscDev};
use rdma::kshim::poll::PollTable;
use rdma::spec::uverbs::ucma::ABI_VERSION;

mod cmd;
mod ctx;
mod file;
mod handler;

use file::{UcmaFile, UcmaOps, OPS};

module! {
    type: Ucma,
    name: "rdma_rs_ucm",
    author: "rdma-rs developers",
    description: "rdma_cm for user space (rdma_ucm write() ABI) on the Rust RDMA stack",
    license: "GPL",
}

impl CharDevOps for UcmaOps {
    type File = Arc<UcmaFile>;

    fn open(&self) -> Result<Arc<UcmaFile>> {
        UcmaFile::new()
    }

    fn ioctl(&self, _file: &Arc<UcmaFile>, _cmd: u32, _arg: usize) -> Result<isize> {
        Err(ENOTTY)
    }

    fn write(&self, file: &Arc<UcmaFile>, data: UserSliceReader, nonblock: bool) -> Result<usize> {
        cmd::write(file, data, nonblock)
    }

    fn read(&self, _file: &Arc<UcmaFile>, _out: UserSliceWriter, _nonblock: bool) -> Result<usize> {
        Err(EINVAL)
    }

    fn poll<'a>(&'a self, file: &'a Arc<UcmaFile>, table: &PollTable<'a>) -> u32 {
        file.poll(table)
    }

    fn release(&self, file: Arc<UcmaFile>) {
        for ctx in file.close() {
            ctx.destroy();
        }
    }
}

struct Ucma {
    /// Named in RDMA netlink (librdmacm asks it for "rdma_cm" first);
    /// dropped before the device.
    _nl: GlobalChardev,
    _dev: Pin<KBox<MiscDev<UcmaOps>>>,
}

impl kernel::Module for Ucma {
    fn init(module: &'static ThisModule) -> Result<Self> {
        ctx::routes::init()?;
        let ops = Arc::new(UcmaOps, GFP_KERNEL)?;
        OPS.replace(Some(ops.clone()));
        let dev = MiscDev::register_node_abi(
            c_str!("rdma_cm"),
            Some(c_str!("infiniband/rdma_cm")),
            0o666,
            ABI_VERSION as u16,
            ops,
            module,
        )
        .inspect_err(|_| {
            pr_err!("cannot register misc device rdma_cm: is the kernel's rdma_ucm loaded?\n");
            OPS.replace(None);
            ctx::routes::exit();
        })?;
        let (major, minor) = dev.devt();
        let nl = register_global(ChardevEntry {
            name: c_str!("rdma_cm"),
            major,
            minor,
            abi: u64::from(ABI_VERSION),
        })
        .inspect_err(|_| {
            OPS.replace(None);
            ctx::routes::exit();
        })?;
        pr_info!("loaded: /dev/infiniband/rdma_cm on our rdma_cm\n");
        Ok(Ucma { _nl: nl, _dev: dev })
    }
}

impl Drop for Ucma {
    fn drop(&mut self) {
        OPS.replace(None);
        ctx::routes::exit();
    }
}
