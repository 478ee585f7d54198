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
//!
//! Then requests out of place at a live responder's expected PSN
//! (`CASE: qpn Q psn P rkey K va V` for each case below): packets of a
//! message whose first or last packet is missing, and atomics at a
//! misaligned address. Each is answered as the C rxe answers it (the
//! script checks the NAKs rxa sees and the counters): a NAK, after which
//! the responder is in the error state. This module checks the
//! responder's completions (a SEND in progress completes with
//! `REM_INV_REQ_ERR`, the other receives are flushed), its memory (what a
//! WRITE's first packet wrote stays, an atomic's target is untouched),
//! and that its own requester, which sent nothing, is unharmed and
//! completes nothing. Last, a READ forged as a duplicate (behind the
//! expected PSN, with a bad key) in the middle of a forged SEND: dropped,
//! the SEND completes whole and the responder stays in RTS.

#![forbid(unsafe_code)]

use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;

use rdma::kshim::time;
use rdma::spec::opcodes::WcStatus;
use rdma::spec::qp_state::QpState;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::RecvWr;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{pair, End, Opts, Port, RxePair};

#[path = "../../lib/verify.rs"]
mod verify;

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
    named_until_refused(&x, &y, "resources", PSN, 0)
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
    named_until_refused(&x, &y, "reth_len", PSN, 0)
}

/// Names responder `y` to the script (`NAME: qpn Q psn P rkey K va V`,
/// its expected PSN `psn` and an address `va_off` into its buffer), waits
/// until it has refused what the script sent (it is in the error state)
/// and checks that `x`, our requester, is unharmed.
fn named_until_refused(x: &End, y: &End, name: &str, psn: u32, va_off: usize) -> Result {
    name_to_script(y, name, psn, va_off);
    if !verify::wait_until(60_000, 50, || y.state().is_ok_and(|s| s == QpState::Err)) {
        pr_err!(
            "{}: the responder never refused the script's request\n",
            name
        );
        return Err(EAGAIN);
    }
    check(x.state()? == QpState::Rts, "our requester unharmed")
}

/// Tells the script where to forge case `name`'s packets: responder `y`,
/// its expected PSN `psn`, its key and an address `va_off` into its
/// buffer (`NAME: qpn Q psn P rkey K va V`).
fn name_to_script(y: &End, name: &str, psn: u32, va_off: usize) {
    pr_info!(
        "{}: qpn {} psn {} rkey {} va {}\n",
        name,
        y.qp.qpn(),
        psn,
        y.mr.rkey(),
        y.buf.addr(va_off)
    );
}

/// Where the receives of the out-of-place cases go in the responder's
/// buffer (the atomics aim at its first bytes, a WRITE at its first KiB).
const RECV_AT: usize = 32 * 1024;

/// A request out of place, forged by the script at a live responder.
struct OutOfPlace {
    /// The case's name, which the script waits for.
    name: &'static str,
    /// The responder's expected PSN, where the script sends.
    psn: u32,
    /// Where in the buffer the script aims (the `va` printed).
    va_off: usize,
    /// The receive completions, in order (`wr_id` 1 up): as many receives
    /// of 2 KiB are posted.
    want: &'static [WcStatus],
    /// The first bytes of the buffer that the script's data goes to (the
    /// rest of its first 4 KiB keeps its 0xa5).
    written: usize,
}

/// The script's SEND MIDDLE with no SEND begun: the C rxe's missing first
/// packet (class C); the receive is flushed.
const MISSING_FIRST: OutOfPlace = OutOfPlace {
    name: "missing_first",
    psn: PSN + 0x100,
    va_off: 0,
    want: &[WcStatus::WrFlushErr],
    written: 0,
};

/// The script's WRITE LAST with no WRITE begun: as `missing_first`.
const MISSING_FIRST_WRITE: OutOfPlace = OutOfPlace {
    name: "missing_first_write",
    psn: PSN + 0x200,
    ..MISSING_FIRST
};

/// The script's SEND FIRST (acknowledged: it asks for an ACK), then a SEND
/// ONLY: the C rxe's missing last packet (class C); the SEND in progress
/// completes its receive with `REM_INV_REQ_ERR`, the other is flushed.
const MISSING_LAST: OutOfPlace = OutOfPlace {
    name: "missing_last",
    psn: PSN + 0x300,
    want: &[WcStatus::RemInvReqErr, WcStatus::WrFlushErr],
    ..MISSING_FIRST
};

/// The script's WRITE FIRST of 1 KiB of 4 at the buffer's start (written
/// and acknowledged), then a SEND FIRST: missing last packet; no receive
/// was taken (the one posted is flushed), the first KiB stays written.
const MISSING_LAST_WRITE: OutOfPlace = OutOfPlace {
    name: "missing_last_write",
    psn: PSN + 0x400,
    written: 1024,
    ..MISSING_FIRST
};

/// The script's COMPARE_SWAP at the buffer's address + 4 with its key: the
/// C rxe's misaligned atomic (class C); nothing written.
const MISALIGNED_ATOMIC: OutOfPlace = OutOfPlace {
    name: "misaligned_atomic",
    psn: PSN + 0x500,
    va_off: 4,
    ..MISSING_FIRST
};

/// The script's FETCH_ADD at the buffer's address + 4 with a key nobody
/// gave out: the C rxe looks at the key first (a remote access error,
/// class C); nothing written.
const MISALIGNED_ATOMIC_BAD_KEY: OutOfPlace = OutOfPlace {
    name: "misaligned_atomic_bad_key",
    psn: PSN + 0x600,
    ..MISALIGNED_ATOMIC
};

/// Case `c`: a pair whose responder expects `c.psn`, named to the script
/// (`NAME: qpn Q psn P rkey K va V`); the responder must end in the error
/// state with exactly the receive completions `c.want`, its memory as
/// `c.written` says; our requester stays in RTS and completes nothing.
fn out_of_place(p: &RxePair, c: &OutOfPlace) -> Result {
    let o = Opts {
        psn: c.psn,
        ..rc::RC
    };
    let (x, y) = pair(p.a, p.b, &o)?;
    y.buf.fill(0, 4096, 0xa5)?;
    for i in 0..c.want.len() {
        let sg = [y.sge(RECV_AT + i * 2048, 2048)?];
        y.qp.post_recv(&[RecvWr {
            wr_id: i as u64 + 1,
            cqe: None,
            sg: &sg,
        }])
        .map_err(|(_, e)| e)?;
    }
    named_until_refused(&x, &y, c.name, c.psn, c.va_off)?;
    for (i, &status) in c.want.iter().enumerate() {
        verify::expect(y.cq.core(), i as u64 + 1, status, None)?;
    }
    verify::quiet(y.cq.core(), 100)?;
    check(
        memory_as(&y, c.written)?,
        "the responder's memory as the C rxe leaves it",
    )?;
    verify::quiet(x.cq.core(), 0)
}

/// Case `stale_duplicate_read`: the script's SEND FIRST of 1 KiB at the
/// responder's expected PSN P, then a READ request at P - 1 (a duplicate:
/// its PSN is behind) with a key nobody gave out, then the SEND LAST of
/// 64 bytes at P + 1. The duplicate is dropped as the C rxe drops a READ
/// it holds no response for: the SEND in progress completes whole and
/// the responder stays in RTS (it once failed the SEND, refusing the
/// replay as if it were new).
fn stale_duplicate_read(p: &mut RxePair) -> Result {
    const NAME: &str = "stale_duplicate_read";
    let psn = PSN + 0x700;
    let o = Opts { psn, ..rc::RC };
    let (x, y) = pair(p.a, p.b, &o)?;
    y.buf.fill(RECV_AT, 2048, 0xa5)?;
    let sg = [y.sge(RECV_AT, 2048)?];
    y.qp.post_recv(&[RecvWr {
        wr_id: 1,
        cqe: None,
        sg: &sg,
    }])
    .map_err(|(_, e)| e)?;
    name_to_script(&y, NAME, psn, 0);
    // The script's packets take seconds each under TCG.
    let mut wc: [Wc; 1] = Default::default();
    let mut waited = 0;
    while y.cq.core().poll(&mut wc) == 0 {
        if waited >= 60_000 {
            pr_err!("{}: the SEND never completed\n", NAME);
            return Err(EAGAIN);
        }
        time::msleep(50);
        waited += 50;
    }
    let wc = &wc[0];
    if wc.wr_id != 1 || wc.status != WcStatus::Success || wc.byte_len != 1024 + 64 {
        pr_err!(
            "{}: completion wr_id {} {:?} of {} bytes, wanted 1 Success of 1088\n",
            NAME,
            wc.wr_id,
            wc.status,
            wc.byte_len
        );
        return Err(EINVAL);
    }
    // Each forged packet carries the pattern from its start.
    let mut chunk = [0u8; 272];
    let mut whole = true;
    for c in 0..4 {
        y.buf.read(RECV_AT + c * chunk.len(), &mut chunk)?;
        whole &= chunk.iter().enumerate().all(|(i, &b)| {
            let at = c * 272 + i;
            let at = if at < 1024 { at } else { at - 1024 };
            b == (at % 251) as u8 + 1
        });
    }
    check(whole, "the SEND's bytes, both packets")?;
    check(y.state()? == QpState::Rts, "the responder still in RTS")?;
    verify::quiet(y.cq.core(), 100)?;
    check(x.state()? == QpState::Rts, "our requester unharmed")?;
    verify::quiet(x.cq.core(), 0)
}

/// Whether `y`'s buffer holds pktinject's payload (byte `i` of it is
/// `i % 251 + 1`) in its first `written` bytes and 0xa5 in the rest of
/// its first 4 KiB.
fn memory_as(y: &End, written: usize) -> Result<bool> {
    let mut b = [0u8; 256];
    let mut done = 0;
    while done < 4096 {
        y.buf.read(done, &mut b)?;
        for (i, &c) in b.iter().enumerate() {
            let at = done + i;
            let want = if at < written {
                (at % 251) as u8 + 1
            } else {
                0xa5
            };
            if c != want {
                return Ok(false);
            }
        }
        done += b.len();
    }
    Ok(true)
}

const CASES: &[FnCase<RxePair>] = &[
    case!("read_limit", |p| read_limit(p.a, p.b)),
    case!("reth_len", |p| reth_len(p.a, p.b)),
    case!("missing_first", |p| out_of_place(p, &MISSING_FIRST)),
    case!("missing_first_write", |p| out_of_place(
        p,
        &MISSING_FIRST_WRITE
    )),
    case!("missing_last", |p| out_of_place(p, &MISSING_LAST)),
    case!("missing_last_write", |p| out_of_place(
        p,
        &MISSING_LAST_WRITE
    )),
    case!("misaligned_atomic", |p| out_of_place(p, &MISALIGNED_ATOMIC)),
    case!("misaligned_atomic_bad_key", |p| out_of_place(
        p,
        &MISALIGNED_ATOMIC_BAD_KEY
    )),
    case!("stale_duplicate_read", stale_duplicate_read),
];

struct RxeResourcesTest;

impl kernel::Module for RxeResourcesTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ports = RxePair::ipv4(3);
        ktap::run(CASES, &mut ports)?;
        Ok(RxeResourcesTest)
    }
}
