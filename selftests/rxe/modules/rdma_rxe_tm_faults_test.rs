// SPDX-License-Identifier: GPL-2.0

//! Selftest: tagged traffic on rdma_rs_rxe under loss, duplication and
//! reordering (issue 27). `tm.sh` arms random faults on both devices and
//! loads this module; the sender is on `rxa` (10.78.8.1), the receiver, an
//! RC QP of a TM SRQ (`tm.rs`), on `rxb` (10.78.8.2).
//!
//! [`MSGS`] messages, each with its own exact tag listed beforehand, in
//! turn an eager message of one packet, an eager message of three and a
//! rendezvous of 8 KiB, all posted at once. Every tagged buffer must
//! complete exactly as its kind says (one `TM_MATCH | TM_DATA_VALID`, or
//! `TM_MATCH` then `TM_DATA_VALID`) and never again, with its bytes; no
//! ordinary receive may be taken; every SEND completes in order, and
//! every rendezvous's FIN reaches the sender once, in order, with the
//! request's headers. The script checks that `tm_matched` grew by exactly
//! [`MSGS`] (a duplicate first packet is never matched again).

#![forbid(unsafe_code)]

use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;
use kernel::time::{ktime_ms_delta, Ktime};

use rdma::kshim::time;
use rdma::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use rdma::spec::tm::header::{TmhOp, RNDV_HDRS_LEN, TMH_LEN};
use rdma::verbs::srq::tm::TmCap;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::RecvWr;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::RxePair;

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{fill_pattern, same, WAIT_MS};

mod tm;
use tm::{ctx_of, rvh, tm_pair, tmh, FIN_AT, RNDV_DATA};

module! {
    type: RxeTmFaultsTest,
    name: "rdma_rxe_tm_faults_test",
    author: "rdma-rs developers",
    description: "Selftest: tag matching on rdma_rs_rxe under faults",
    license: "GPL",
}

/// Messages of the run.
pub(crate) const MSGS: usize = 60;
/// Bytes of a tagged buffer, and of a rendezvous's data.
const SLOT: usize = 8192;
/// Bytes of the sender's room for one message.
const STAGE: usize = 4096;
/// Bytes of a rendezvous.
const RNDV: usize = 8192;
/// Ordinary receives posted, none of which may be taken.
const PLAIN_RECVS: u64 = 4;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Small,
    Large,
    Rndv,
}

fn kind(i: usize) -> Kind {
    match i % 3 {
        0 => Kind::Small,
        1 => Kind::Large,
        _ => Kind::Rndv,
    }
}

/// Payload bytes of an eager message.
fn eager_len(k: Kind) -> usize {
    if k == Kind::Small {
        64
    } else {
        3000
    }
}

fn tag(i: usize) -> u64 {
    0x7000 + i as u64
}

fn traffic(p: &mut RxePair) -> Result {
    let o = rc::Opts {
        timeout: 14,
        ..rc::RC
    };
    let p = tm_pair(
        p.a,
        p.b,
        &o,
        TmCap {
            max_num_tags: MSGS as u32,
            max_ops: 8,
        },
        16,
    )?;
    for i in 0..PLAIN_RECVS {
        p.recv(0xdead_0000 + i, i as usize * 4096, 4096)?;
    }
    let mut fins = 0u64;
    for i in 0..MSGS {
        p.add(
            tag(i),
            tag(i),
            u64::MAX,
            &[(i * SLOT, SLOT / 2), (i * SLOT + SLOT / 2, SLOT / 2)],
        )?;
        let at = i * STAGE;
        match kind(i) {
            Kind::Rndv => {
                let data = RNDV_DATA + i * SLOT;
                fill_pattern(&p.tx.buf, data, RNDV, i as u32 + 1)?;
                p.tx.buf
                    .write(at, &tmh(TmhOp::Rndv, ctx_of(tag(i)), tag(i)))?;
                p.tx.buf.write(
                    at + TMH_LEN,
                    &rvh(p.tx.buf.addr(data), p.tx.mr.rkey(), RNDV as u32),
                )?;
                let sg = [p.tx.sge(FIN_AT + fins as usize * 64, 64)?];
                p.tx.qp
                    .post_recv(&[RecvWr {
                        wr_id: i as u64,
                        cqe: None,
                        sg: &sg,
                    }])
                    .map_err(|(_, e)| e)?;
                fins += 1;
            }
            k => {
                p.tx.buf
                    .write(at, &tmh(TmhOp::Eager, ctx_of(tag(i)), tag(i)))?;
                fill_pattern(&p.tx.buf, at + TMH_LEN, eager_len(k), i as u32 + 1)?;
            }
        }
    }
    for i in 0..MSGS {
        let len = match kind(i) {
            Kind::Rndv => RNDV_HDRS_LEN,
            k => TMH_LEN + eager_len(k),
        };
        p.send_raw(i as u64, i * STAGE, len)?;
    }
    // What each buffer has had: 0 nothing, 1 TM_MATCH, 2 all.
    let mut seen = [0u8; MSGS];
    let (mut done, mut sends, mut fins_in) = (0, 0u64, 0u64);
    let mut last = Ktime::ktime_get();
    let mut wcs: [Wc; 16] = Default::default();
    while done < MSGS || sends < MSGS as u64 || fins_in < fins {
        let mut got = 0;
        let n = p.rx.cq.poll(&mut wcs);
        got += n;
        for wc in &wcs[..n] {
            let i = wc.wr_id.wrapping_sub(0x7000) as usize;
            if wc.opcode != WcOpcode::TmRecv || wc.status != WcStatus::Success || i >= MSGS {
                pr_err!(
                    "receiver: wr_id {:#x} opcode {:?} status {:?}\n",
                    wc.wr_id,
                    wc.opcode,
                    wc.status
                );
                return Err(EINVAL);
            }
            let m = wc.wc_flags.contains(WcFlags::TM_MATCH);
            let dv = wc.wc_flags.contains(WcFlags::TM_DATA_VALID);
            let ok = match (kind(i), seen[i], m, dv) {
                (Kind::Small, 0, true, true) => {
                    seen[i] = 2;
                    true
                }
                (Kind::Large | Kind::Rndv, 0, true, false) => {
                    seen[i] = 1;
                    true
                }
                (Kind::Large | Kind::Rndv, 1, false, true) => {
                    seen[i] = 2;
                    true
                }
                _ => false,
            };
            if !ok {
                pr_err!(
                    "message {}: flags {:#x} after {}\n",
                    i,
                    wc.wc_flags.0,
                    seen[i]
                );
                return Err(EINVAL);
            }
            if seen[i] == 2 {
                done += 1;
            }
        }
        let n = p.tx.cq.poll(&mut wcs);
        got += n;
        for wc in &wcs[..n] {
            match wc.opcode {
                WcOpcode::Send => {
                    p.expect(wc, sends, WcOpcode::Send, WcStatus::Success)?;
                    sends += 1;
                }
                _ => {
                    // FINs, in the order of their requests.
                    let i = fins_in as usize * 3 + 2;
                    p.expect(wc, i as u64, WcOpcode::Recv, WcStatus::Success)?;
                    let mut fin = [0u8; RNDV_HDRS_LEN];
                    p.tx.buf.read(FIN_AT + fins_in as usize * 64, &mut fin)?;
                    let mut want = [0u8; RNDV_HDRS_LEN];
                    want[..TMH_LEN].copy_from_slice(&tmh(TmhOp::Fin, ctx_of(tag(i)), tag(i)));
                    want[TMH_LEN..].copy_from_slice(&rvh(
                        p.tx.buf.addr(RNDV_DATA + i * SLOT),
                        p.tx.mr.rkey(),
                        RNDV as u32,
                    ));
                    if wc.byte_len as usize != RNDV_HDRS_LEN || fin != want {
                        pr_err!("FIN {}: wrong\n", i);
                        return Err(EINVAL);
                    }
                    fins_in += 1;
                }
            }
        }
        let now = Ktime::ktime_get();
        if got > 0 {
            last = now;
        } else if ktime_ms_delta(now, last) > i64::from(WAIT_MS) {
            pr_err!(
                "{} of {} messages, {} SENDs, {} of {} FINs, then nothing\n",
                done,
                MSGS,
                sends,
                fins_in,
                fins
            );
            return Err(EAGAIN);
        } else {
            time::msleep(1);
        }
    }
    for i in 0..MSGS {
        let ok = match kind(i) {
            Kind::Rndv => same(&p.rx.buf, i * SLOT, &p.tx.buf, RNDV_DATA + i * SLOT, RNDV)?,
            k => same(
                &p.rx.buf,
                i * SLOT,
                &p.tx.buf,
                i * STAGE + TMH_LEN,
                eager_len(k),
            )?,
        };
        if !ok {
            pr_err!("message {}: wrong bytes\n", i);
            return Err(EINVAL);
        }
    }
    pr_info!(
        "tm: {} messages, {} rendezvous, delivered once each\n",
        MSGS,
        fins
    );
    // Nothing more: no message twice, no ordinary receive taken.
    time::msleep(200);
    check(p.rx.cq.poll(&mut wcs) == 0, "no completion after the last")
}

const CASES: &[FnCase<RxePair>] = &[FnCase {
    name: "tagged_traffic_under_faults",
    run: traffic,
}];

struct RxeTmFaultsTest;

impl kernel::Module for RxeTmFaultsTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(8);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeTmFaultsTest)
    }
}
