// SPDX-License-Identifier: GPL-2.0

//! QP1 under stress (hostile.sh): rdma_cm connections from rxa
//! (10.78.3.1) to a listener on rxb (10.78.3.2), made and torn down while
//! QP1 of either side is forced out of RTS, and while hostile MADs and CM
//! messages arrive at rxb's QP1.
//!
//! - `recovers_rxb`, `recovers_rxa`: QP1 of the port moved to the error
//!   state through `modify_qp`; the MAD layer brings it back to RTS, counts
//!   it once (`qp1_recoveries`), and a connection on that port succeeds;
//! - `loop`: says `qp1 test: looping` and connects and disconnects for
//!   [`LOOP_MS`] while hostile.sh injects at rxb's QP1; every connection
//!   must succeed, and QP1 stays in RTS.

#![forbid(unsafe_code)]

use kernel::error::code::ENODEV;
use kernel::prelude::*;

use rdma::cma::{EventKind, IpAddr, SockAddr};
use rdma::kshim::time;
use rdma::spec::qp_state::{AttrMask, QpState};
use rdma::verbs::qp::QpAttr;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{connect_pair, CmPair, Ep};

module! {
    type: RxeQp1Test,
    name: "rdma_rxe_qp1_test",
    author: "rdma-rs developers",
    description: "Selftest: QP1 brought back, and connections under hostile MADs",
    license: "GPL",
}

/// How long `loop` connects and disconnects.
const LOOP_MS: u64 = 40_000;
/// The listener's port.
const PORT: u16 = 5070;

/// The two sides and the listener on rxb.
type Ctx = CmPair;

impl Ctx {
    /// One connection from rxa to rxb, then its disconnection from the
    /// client; both sides see every event.
    fn connect_once(&self) -> Result {
        let (ra, rb) = (&self.ra, &self.rb);
        let (client, server) = connect_pair(
            (&self.a, ra),
            (&self.b, rb),
            SockAddr {
                ip: IpAddr::V4([10, 78, 3, 2]),
                port: PORT,
            },
        )?;
        client.disconnect()?;
        ra.take(EventKind::Disconnected, 20)?;
        rb.take(EventKind::Disconnected, 20)?;
        drop(client);
        drop(server);
        ra.clear();
        rb.clear();
        Ok(())
    }
}

fn ctx(c: &mut Option<Ctx>) -> Result<&Ctx> {
    if c.is_none() {
        *c = Some(Ctx::new(PORT)?);
    }
    c.as_ref().ok_or(ENODEV)
}

/// A MAD counter of `ep`'s port 1.
fn mad_counter(ep: &Ep, name: &str) -> u64 {
    rdma::mad::port::counters(ep.dev.arc(), 1)
        .and_then(|c| c.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
        .unwrap_or(u64::MAX)
}

/// QP1's state on `ep`'s port 1.
fn qp1_state(ep: &Ep) -> Option<QpState> {
    rdma::mad::port::qp1(ep.dev.arc(), 1).map(|q| q.state())
}

/// Moves QP1 of `ep`'s port 1 to the error state; the MAD layer must
/// bring it back, count it once, and a connection must succeed.
fn recovers(c: &Ctx, ep: &Ep, who: &str) -> Result {
    c.connect_once()?;
    let r0 = mad_counter(ep, "qp1_recoveries");
    let qp1 = rdma::mad::port::qp1(ep.dev.arc(), 1).ok_or(ENODEV)?;
    check(qp1.state() == QpState::Rts, "QP1 in RTS at first")?;
    let attr = QpAttr {
        qp_state: QpState::Err,
        ..QpAttr::default()
    };
    qp1.modify(&attr, AttrMask::STATE)?;
    drop(qp1);
    let mut back = false;
    for _ in 0..1000 {
        if mad_counter(ep, "qp1_recoveries") > r0 && qp1_state(ep) == Some(QpState::Rts) {
            back = true;
            break;
        }
        time::msleep(10);
    }
    if !back {
        pr_err!(
            "qp1 test: {}: QP1 {:?}, recoveries {} (was {})\n",
            who,
            qp1_state(ep),
            mad_counter(ep, "qp1_recoveries"),
            r0
        );
    }
    check(back, "QP1 brought back to RTS")?;
    c.connect_once()?;
    check(
        mad_counter(ep, "qp1_recoveries") == r0 + 1,
        "one recovery counted",
    )?;
    check(
        qp1_state(ep) == Some(QpState::Rts),
        "QP1 still in RTS after the connection",
    )
}

fn recovers_rxb(c: &mut Option<Ctx>) -> Result {
    let c = ctx(c)?;
    recovers(c, &c.b, "rxb")
}

fn recovers_rxa(c: &mut Option<Ctx>) -> Result {
    let c = ctx(c)?;
    recovers(c, &c.a, "rxa")
}

/// Connections made and torn down for [`LOOP_MS`] while hostile.sh
/// injects: every one succeeds; QP1 of rxb never needs to be brought back.
fn conn_loop(c: &mut Option<Ctx>) -> Result {
    let c = ctx(c)?;
    let r0 = mad_counter(&c.b, "qp1_recoveries");
    pr_info!("qp1 test: looping\n");
    let start = time::now_ms();
    let mut n = 0u32;
    while time::now_ms() - start < LOOP_MS {
        if let Err(e) = c.connect_once() {
            pr_err!("qp1 test: connection {} failed: {:?}\n", n, e);
            return Err(e);
        }
        n += 1;
    }
    pr_info!("qp1 test: {} connections\n", n);
    check(n > 0, "connections were made")?;
    check(
        mad_counter(&c.b, "qp1_recoveries") == r0 && qp1_state(&c.b) == Some(QpState::Rts),
        "rxb's QP1 stayed in RTS",
    )
}

const CASES: &[FnCase<Option<Ctx>>] = &[
    case!(recovers_rxb(_)),
    case!(recovers_rxa(_)),
    case!("loop", conn_loop),
];

struct RxeQp1Test;

impl kernel::Module for RxeQp1Test {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut c = None;
        let r = ktap::run(CASES, &mut c);
        drop(c);
        r?;
        Ok(RxeQp1Test)
    }
}
