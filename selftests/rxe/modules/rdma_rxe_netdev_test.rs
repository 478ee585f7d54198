// SPDX-License-Identifier: GPL-2.0

//! Selftest: a netdev MTU change while QPs exist.
//!
//! `netdev.sh` makes `rxa` (10.78.5.1) and `rxb` (10.78.5.2) in two
//! namespaces joined by a veth pair (MTU 1500), loads this module, and
//! changes the MTU of both veth ends when the module asks for it with a
//! `netdev: ready for ...` line in the kernel log.
//!
//! At MTU 1500 the port's active MTU is 1024. A QP pair connected then
//! with path MTU 1024 moves data; the MTU goes to 9000 and the port shows
//! 4096, which a new pair uses for a 1 MiB WRITE while the old pair keeps
//! its path MTU and goes on working; the MTU goes back to 1500, the port
//! shows 1024 again, and the old pair (whose path MTU still fits) and a
//! new one work.

#![forbid(unsafe_code)]

use kernel::error::code::EAGAIN;
use kernel::prelude::*;

use rdma::kshim::time;
use rdma::spec::attr::Mtu;
use rdma::spec::opcodes::{WcOpcode, WcStatus};
use rdma::verbs::wr::{SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{pair, End, Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{expect, fill_pattern, same};

module! {
    type: RxeNetdevTest,
    name: "rdma_rxe_netdev_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma_rs_rxe QPs across a netdev MTU change",
    license: "GPL",
}

const fn opts(path_mtu: Mtu) -> Opts {
    Opts {
        buf_len: 1 << 20,
        path_mtu,
        ..rc::RC
    }
}

/// Waits (up to 60 s) until both ends' port shows `mtu` as active.
fn wait_mtu(x: &End, y: &End, mtu: Mtu) -> Result {
    for _ in 0..1200 {
        if x.dev.query_port(1)?.active_mtu == mtu && y.dev.query_port(1)?.active_mtu == mtu {
            return Ok(());
        }
        time::msleep(50);
    }
    pr_err!("active MTU never became {:?}\n", mtu);
    Err(EAGAIN)
}

/// One RDMA WRITE of `len` bytes from `x` to `y`, checked.
fn transfer(x: &End, y: &End, len: usize, seed: u32) -> Result {
    fill_pattern(&x.buf, 0, len, seed)?;
    let sg = [x.sge(0, len)?];
    let w = SendOp::Write {
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    x.qp.post_send(&[SendWr::new(u64::from(seed), w, &sg)])
        .map_err(|(_, e)| e)?;
    expect(
        &x.cq,
        u64::from(seed),
        WcStatus::Success,
        Some(WcOpcode::RdmaWrite),
    )?;
    check(same(&x.buf, 0, &y.buf, 0, len)?, "written bytes")
}

fn mtu_change(a: Port<'_>, b: Port<'_>) -> Result {
    let (x, y) = pair(a, b, &opts(Mtu::Mtu1024))?;
    check(
        x.dev.query_port(1)?.active_mtu == Mtu::Mtu1024,
        "active MTU 1024 at netdev MTU 1500",
    )?;
    transfer(&x, &y, 64 * 1024, 1)?;
    pr_info!("netdev: ready for a larger MTU\n");
    wait_mtu(&x, &y, Mtu::Mtu4096)?;
    transfer(&x, &y, 64 * 1024, 2)?;
    {
        let (x2, y2) = pair(a, b, &opts(Mtu::Mtu4096))?;
        transfer(&x2, &y2, 1 << 20, 3)?;
    }
    pr_info!("netdev: ready for a smaller MTU\n");
    wait_mtu(&x, &y, Mtu::Mtu1024)?;
    transfer(&x, &y, 64 * 1024, 4)?;
    let (x3, y3) = pair(a, b, &opts(Mtu::Mtu1024))?;
    transfer(&x3, &y3, 256 * 1024, 5)
}

const CASES: &[FnCase<RxePair>] = &[case!("mtu_change", |p| mtu_change(p.a, p.b))];

struct RxeNetdevTest;

impl kernel::Module for RxeNetdevTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(5);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeNetdevTest)
    }
}
