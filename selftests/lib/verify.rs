// SPDX-License-Identifier: GPL-2.0

//! Checks for in-kernel selftest modules: completions polled with a
//! deadline and compared with what was expected, conditions polled until
//! they hold, deterministic data patterns, and byte-for-byte comparison of
//! buffers.
//!
//! Include it with `#[path = "../../lib/verify.rs"] mod verify;` at the
//! crate root, beside `ktap.rs`.

// Each test module uses its own part of this file.
#![allow(dead_code)]

use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;
use kernel::time::{ktime_ms_delta, Ktime};

use rdma::kshim::mem::Buffer;
use rdma::kshim::time;
use rdma::spec::opcodes::{WcOpcode, WcStatus};
use rdma::verbs::cq::CqCore;
use rdma::verbs::wc::Wc;

use crate::ktap::check;

/// How long a completion may take (ms): a TCG guest is slow.
pub(crate) const WAIT_MS: u32 = 20_000;

/// Polls `n` completions, or fails after [`WAIT_MS`] without one.
pub(crate) fn poll(cq: &CqCore, n: usize) -> Result<KVec<Wc>> {
    let mut got = KVec::new();
    let mut wcs: [Wc; 16] = Default::default();
    let start = Ktime::ktime_get();
    while got.len() < n {
        let want = (n - got.len()).min(wcs.len());
        let k = cq.poll(&mut wcs[..want]);
        for wc in wcs.iter_mut().take(k) {
            got.push(core::mem::take(wc), GFP_KERNEL)?;
        }
        if k == 0 {
            if ktime_ms_delta(Ktime::ktime_get(), start) > i64::from(WAIT_MS) {
                pr_err!("polled {} of {} completions\n", got.len(), n);
                return Err(EAGAIN);
            }
            time::msleep(1);
        }
    }
    Ok(got)
}

/// Polls one completion and checks it.
pub(crate) fn expect(
    cq: &CqCore,
    wr_id: u64,
    status: WcStatus,
    opcode: Option<WcOpcode>,
) -> Result<Wc> {
    let wc = rdma::kshim::vec::pop(&mut poll(cq, 1)?).ok_or(EAGAIN)?;
    if wc.wr_id != wr_id || wc.status != status || opcode.is_some_and(|o| o != wc.opcode) {
        time::msleep(100);
        let mut rest: [Wc; 8] = Default::default();
        let n = cq.poll(&mut rest);
        for w in &rest[..n] {
            pr_err!(
                "  then: wr_id {} status {:?} opcode {:?}\n",
                w.wr_id,
                w.status,
                w.opcode
            );
        }
        pr_err!(
            "completion: wr_id {} status {:?} opcode {:?}, wanted {} {:?} {:?}\n",
            wc.wr_id,
            wc.status,
            wc.opcode,
            wr_id,
            status,
            opcode
        );
        return Err(EINVAL);
    }
    Ok(wc)
}

/// Polls `cond` every `every_ms` until it holds, `ms / every_ms` times at
/// most and then once more: whether it came to hold. (Each sleep lasts at
/// least `every_ms`, so the whole wait may last longer than `ms`.)
pub(crate) fn wait_until(ms: u32, every_ms: u32, cond: impl Fn() -> bool) -> bool {
    for _ in 0..ms / every_ms {
        if cond() {
            return true;
        }
        time::msleep(every_ms);
    }
    cond()
}

/// No completion arrives within `ms`.
pub(crate) fn quiet(cq: &CqCore, ms: u32) -> Result {
    time::msleep(ms);
    let mut wcs: [Wc; 1] = Default::default();
    check(cq.poll(&mut wcs) == 0, "no completion")
}

/// xorshift32, the generator of every data pattern of the test modules.
/// Its state must not be 0 (it would stay 0).
pub(crate) struct Rng(pub(crate) u32);

impl Rng {
    pub(crate) fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// Fills `out` with the next bytes of the pattern, one a step (the low
    /// byte of each state).
    pub(crate) fn fill(&mut self, out: &mut [u8]) {
        for b in out.iter_mut() {
            *b = self.next() as u8;
        }
    }

    pub(crate) fn below(&mut self, n: u32) -> u32 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Fills `len` bytes of `buf` from `off` with the pattern of `seed`.
pub(crate) fn fill_pattern(buf: &Buffer, off: usize, len: usize, seed: u32) -> Result {
    let mut rng = Rng(seed | 1);
    let mut chunk = [0u8; 512];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        rng.fill(&mut chunk[..n]);
        buf.write(off + done, &chunk[..n])?;
        done += n;
    }
    Ok(())
}

/// Compares `len` bytes of two buffers.
pub(crate) fn same(a: &Buffer, a_off: usize, b: &Buffer, b_off: usize, len: usize) -> Result<bool> {
    let mut x = [0u8; 512];
    let mut y = [0u8; 512];
    let mut done = 0;
    while done < len {
        let n = x.len().min(len - done);
        a.read(a_off + done, &mut x[..n])?;
        b.read(b_off + done, &mut y[..n])?;
        if x[..n] != y[..n] {
            pr_err!("bytes differ at offset {}\n", done);
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}
