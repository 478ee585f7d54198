// SPDX-License-Identifier: GPL-2.0

//! Selftest: many RDMA READs in flight against the READ limits of both
//! ends (issue 24: our requester tripped our responder's limit).
//!
//! `reads.sh` makes `rxa` (10.78.7.1) and `rxb` (10.78.7.2) in two
//! namespaces joined by a veth pair and loads this module twice: on a
//! clean path, then with random loss, duplication and reordering on both
//! devices. Each case connects a QP pair with `max_rd_atomic` and
//! `max_dest_rd_atomic` 16 and keeps 64 READs posted on `rxa` (as `make
//! bench` does), reposting as they complete, until [`SMALL`] or [`MIXED`]
//! have completed:
//!
//! - `small_reads`: 64 bytes each, one response packet;
//! - `mixed_reads`: 1 byte to 4 KiB at a path MTU of 1 KiB, so under loss
//!   a READ is also asked for again from the middle of its response.
//!
//! Every READ reads from its own random place of the responder's patterned
//! buffer into a zeroed slot, and must complete successfully, in order,
//! with its length and its bytes. The script checks the counters: no READ
//! was refused as beyond the responder's resources (`rd_atomic_exceeded`),
//! and on the clean path nothing was sent again (`completer_retry_err`).

#![forbid(unsafe_code)]

use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;
use kernel::time::{ktime_ms_delta, Ktime};

use rdma::kshim::time;
use rdma::spec::opcodes::{WcOpcode, WcStatus};
use rdma::spec::qp_state::QpState;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{SendOp, SendWr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{pair, Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::{fill_pattern, same, Rng, WAIT_MS};

module! {
    type: RxeReadsTest,
    name: "rdma_rxe_reads_test",
    author: "rdma-rs developers",
    description: "Selftest: many RDMA READs in flight on rdma_rs_rxe within the READ limits",
    license: "GPL",
}

/// READs posted at once, as `make bench` keeps them.
const OUTSTANDING: u64 = 64;
/// Local slots READs land in: twice the READs posted, so a slot is
/// reused only once its READ has completed.
const SLOTS: u64 = 2 * OUTSTANDING;
/// Bytes of a slot: the largest READ.
const SLOT: usize = 4096;
/// Each end's buffer: the slots, and as much again to read from.
const BUF: usize = 2 * SLOTS as usize * SLOT;
/// READs of `small_reads`.
const SMALL: u64 = 2048;
/// READs of `mixed_reads`.
const MIXED: u64 = 512;
/// Sizes of `mixed_reads`, in turn: one byte, one packet, exactly one
/// MTU, just over, several packets.
const SIZES: [usize; 7] = [1, 64, 1000, 1024, 1025, 3000, 4096];

/// RC ends: 16 READs outstanding each way (`rc::RC`'s), 64 send WQEs, a
/// 1 KiB path MTU, `rc::RC`'s ACK timeout for a slow (TCG) guest, and PSNs
/// that wrap early.
const OPTS: Opts = Opts {
    buf_len: BUF,
    max_rd_atomic: 16,
    psn: 0xff_fc00,
    ..rc::RC
};

/// Keeps [`OUTSTANDING`] READs of `size(i)` bytes posted from `a` to `b`
/// until `total` have completed, checking each completion and its bytes.
fn reads(a: Port<'_>, b: Port<'_>, name: &str, total: u64, size: fn(u64) -> usize) -> Result {
    let (x, y) = pair(a, b, &OPTS)?;
    // The slots are the first half of `x`'s buffer; READs read from
    // anywhere in `y`'s.
    fill_pattern(&y.buf, 0, BUF, 0x2400 ^ total as u32)?;
    x.buf.fill(0, BUF, 0)?;
    let rkey = y.mr.rkey();
    let mut rng = Rng(0x24);
    // What each slot's READ read: (remote offset, length).
    let mut flight = [(0usize, 0usize); SLOTS as usize];
    let (mut posted, mut done) = (0u64, 0u64);
    let start = Ktime::ktime_get();
    let mut last = start;
    let mut idle = 0u32;
    let mut wcs: [Wc; 16] = Default::default();
    while done < total {
        while posted < total && posted - done < OUTSTANDING {
            let slot = (posted % SLOTS) as usize;
            let len = size(posted);
            let from = rng.below((BUF - SLOT) as u32) as usize;
            x.buf.fill(slot * SLOT, len, 0)?;
            let sg = [x.sge(slot * SLOT, len)?];
            let op = SendOp::Read {
                remote_addr: y.buf.addr(from),
                rkey,
            };
            x.qp.post_send(&[SendWr::new(posted, op, &sg)])
                .map_err(|(_, e)| e)?;
            flight[slot] = (from, len);
            posted += 1;
        }
        let n = x.cq.poll(&mut wcs);
        for wc in &wcs[..n] {
            let slot = (done % SLOTS) as usize;
            let (from, len) = flight[slot];
            if wc.wr_id != done
                || wc.status != WcStatus::Success
                || wc.opcode != WcOpcode::RdmaRead
                || wc.byte_len as usize != len
            {
                pr_err!(
                    "{}: READ {} of {} bytes: completion wr_id {} status {:?} opcode {:?} byte_len {}\n",
                    name,
                    done,
                    len,
                    wc.wr_id,
                    wc.status,
                    wc.opcode,
                    wc.byte_len
                );
                return Err(EINVAL);
            }
            if !same(&x.buf, slot * SLOT, &y.buf, from, len)? {
                pr_err!("{}: READ {} of {} bytes: wrong bytes\n", name, done, len);
                return Err(EINVAL);
            }
            done += 1;
        }
        // Spins as `make bench` does, so READs are reposted as soon as
        // they complete, sleeping now and then.
        let now = Ktime::ktime_get();
        if n > 0 {
            last = now;
            idle = 0;
        } else if ktime_ms_delta(now, last) > i64::from(WAIT_MS) {
            pr_err!("{}: {} of {} READs done, then none\n", name, done, total);
            return Err(EAGAIN);
        } else {
            idle += 1;
            if idle % 64 == 0 {
                time::msleep(1);
            } else {
                time::cond_resched();
            }
        }
    }
    pr_info!(
        "reads: {} {} READs in {} ms\n",
        name,
        total,
        ktime_ms_delta(Ktime::ktime_get(), start)
    );
    check(x.state()? == QpState::Rts, "requester in RTS")?;
    check(y.state()? == QpState::Rts, "responder in RTS")
}

fn small_reads(p: &mut RxePair) -> Result {
    reads(p.a, p.b, "small_reads", SMALL, |_| 64)
}

fn mixed_reads(p: &mut RxePair) -> Result {
    reads(p.a, p.b, "mixed_reads", MIXED, |i| {
        SIZES[(i % SIZES.len() as u64) as usize]
    })
}

const CASES: &[FnCase<RxePair>] = &[case!(small_reads(_)), case!(mixed_reads(_))];

struct RxeReadsTest;

impl kernel::Module for RxeReadsTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(7);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeReadsTest)
    }
}
