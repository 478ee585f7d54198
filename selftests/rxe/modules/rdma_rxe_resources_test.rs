// SPDX-License-Identifier: GPL-2.0

//! Selftest: the responder's READ resources (`max_dest_rd_atomic`) against
//! a peer that ignores them.
//!
//! `hostile.sh` loads this module with `rxa` (10.78.3.1) and `rxb`
//! (10.78.3.2) in two namespaces. It connects a QP pair whose responder
//! on `rxb` takes one READ at a time (`max_dest_rd_atomic` 1), prints what
//! a forger needs (`resources: qpn Q psn P rkey K va V`), and waits. The
//! script then sends, from `rxa`'s address with `pktinject`, two 1 MiB
//! READ requests at the responder's expected PSNs: the first is queued,
//! the second is one more than the QP allows and is NAKed (invalid RD
//! request), which moves the responder to the error state; this module
//! sees that state, and that its own requester, which never sent a READ,
//! is unharmed. The script checks `rd_atomic_exceeded`. Then the same
//! for a READ whose RETH length is over 2^31 (`reth_len: ...`), which is
//! refused as an invalid request; the script checks `length_err`.

#![forbid(unsafe_code)]

use kernel::error::code::EAGAIN;
use kernel::prelude::*;

use rdma::kshim::time;
use rdma::spec::qp_state::QpState;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{pair, Opts, Port, RxePair};

module! {
    type: RxeResourcesTest,
    name: "rdma_rxe_resources_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma_rs_rxe responder resources against forged READs",
    license: "GPL",
}

/// The requester's first PSN, which the responder expects.
const PSN: u32 = 0x12_3400;

fn read_limit(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts {
        buf_len: 1 << 20,
        max_rd_atomic: 1,
        psn: PSN,
        ..rc::RC
    };
    let (x, y) = pair(a, b, &o)?;
    pr_info!(
        "resources: qpn {} psn {} rkey {} va {}\n",
        y.qp.qpn(),
        PSN,
        y.mr.rkey(),
        y.buf.addr(0)
    );
    for _ in 0..1200 {
        if y.state()? == QpState::Err {
            check(x.state()? == QpState::Rts, "our requester unharmed")?;
            return Ok(());
        }
        time::msleep(50);
    }
    pr_err!("the responder never refused the second READ\n");
    Err(EAGAIN)
}

/// A READ request whose RETH asks for more than 2^31 bytes (IBTA C9-94),
/// forged by the script at a responder that grants READ on a 64 KiB
/// buffer: refused as an invalid request before its key is looked at, as
/// the C rxe refuses it (a NAK, after which the responder is in the
/// error state, as for any invalid request on RC); the script checks
/// `length_err`. This module sees the state, and its requester unharmed.
fn reth_len(a: Port<'_>, b: Port<'_>) -> Result {
    let o = Opts { psn: PSN, ..rc::RC };
    let (x, y) = pair(a, b, &o)?;
    pr_info!(
        "reth_len: qpn {} psn {} rkey {} va {}\n",
        y.qp.qpn(),
        PSN,
        y.mr.rkey(),
        y.buf.addr(0)
    );
    for _ in 0..1200 {
        if y.state()? == QpState::Err {
            check(x.state()? == QpState::Rts, "our requester unharmed")?;
            return Ok(());
        }
        time::msleep(50);
    }
    pr_err!("the responder never refused the READ\n");
    Err(EAGAIN)
}

const CASES: &[FnCase<RxePair>] = &[
    case!("read_limit", |p| read_limit(p.a, p.b)),
    case!("reth_len", |p| reth_len(p.a, p.b)),
];

struct RxeResourcesTest;

impl kernel::Module for RxeResourcesTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(3);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeResourcesTest)
    }
}
