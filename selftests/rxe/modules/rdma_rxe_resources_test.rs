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
//! is unharmed. The script checks `rd_atomic_exceeded`.

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

const CASES: &[FnCase<RxePair>] = &[case!("read_limit", |p| read_limit(p.a, p.b))];

struct RxeResourcesTest;

impl kernel::Module for RxeResourcesTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(3);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeResourcesTest)
    }
}
