// SPDX-License-Identifier: GPL-2.0

//! `make run`'s demonstration: an RDMA WRITE and an RDMA READ of 1 MiB
//! between two `rdma_rs_rxe` devices, `rxa` (10.78.3.1) and `rxb`
//! (10.78.3.2), which `demo.sh` binds to the two ends of a veth pair in two
//! network namespaces. Prints a summary line per operation (bytes,
//! packets, time, rate, data verified) and fails to load if anything did
//! not work.

#![forbid(unsafe_code)]

use kernel::error::code::{EAGAIN, EINVAL};
use kernel::prelude::*;
use kernel::time::{ktime_ms_delta, Ktime};

use rdma::kshim::time;
// The ULP's prelude: Buffer, Gid, Access, WcStatus, QpCap, Wc, SendOp, SendWr.
use rdma::prelude::*;

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, RxePair};

module! {
    type: RxeDemo,
    name: "rdma_rxe_demo",
    author: "rdma-rs developers",
    description: "make run: RDMA WRITE and READ between two rdma_rs_rxe devices",
    license: "GPL",
}

const LEN: usize = 1 << 20;

/// Each end: four requests deep, every one signaled, one SGE, one READ
/// outstanding, no atomics, a buffer of one message.
const OPTS: Opts = Opts {
    access: Access(Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0),
    mr_access: rc::RW_ACCESS,
    buf_len: LEN,
    cqe: 16,
    cap: QpCap {
        max_send_wr: 4,
        max_recv_wr: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    },
    sq_sig_all: true,
    max_rd_atomic: 1,
    ..rc::RC
};

/// Posts one request on `e` and waits for its completion: the time it
/// took in microseconds.
fn run(e: &End, op: SendOp<'_>) -> Result<i64> {
    let sg = [e.buf.sge(0, LEN as u32, e.mr.lkey())?];
    let start = Ktime::ktime_get();
    e.qp.post_send(&[SendWr::new(1, op, &sg)])
        .map_err(|(_, err)| err)?;
    let mut wc: [Wc; 1] = Default::default();
    loop {
        if e.cq.poll(&mut wc) == 1 {
            break;
        }
        if ktime_ms_delta(Ktime::ktime_get(), start) > 30_000 {
            return Err(EAGAIN);
        }
        time::msleep(1);
    }
    let us = (Ktime::ktime_get().to_ns() - start.to_ns()) / 1000;
    if wc[0].status != WcStatus::Success {
        pr_err!("rxe demo: completion status {:?}\n", wc[0].status);
        return Err(EINVAL);
    }
    Ok(us.max(1))
}

fn pattern(buf: &Buffer, seed: u8) -> Result {
    let mut chunk = [0u8; 4096];
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
    for off in (0..LEN).step_by(chunk.len()) {
        buf.write(off, &chunk)?;
    }
    Ok(())
}

fn same(a: &Buffer, b: &Buffer) -> Result<bool> {
    let mut x = [0u8; 4096];
    let mut y = [0u8; 4096];
    for off in (0..LEN).step_by(x.len()) {
        a.read(off, &mut x)?;
        b.read(off, &mut y)?;
        if x != y {
            return Ok(false);
        }
    }
    Ok(true)
}

fn summary(what: &str, us: i64, verified: bool) {
    // Bytes per millisecond is KB/s (10^3 bytes per second). At least 1 us:
    // no division by zero (nor its panic path, which objtool of 6.12
    // cannot follow).
    let us = us.max(1);
    let rate = LEN as i64 * 1000 / us;
    pr_info!(
        "rxe demo: {} {} bytes in {} packets: {}.{:03} ms, {} KB/s, data {}\n",
        what,
        LEN,
        LEN / 1024,
        us / 1000,
        us % 1000,
        rate,
        if verified { "verified" } else { "DIFFERS" }
    );
}

fn demo() -> Result {
    let p = RxePair::ipv4(3);
    let (a, b) = rc::pair(p.a, p.b, &OPTS)?;
    pr_info!(
        "rxe demo: RC QP {} on rxa (10.78.3.1) <-> QP {} on rxb (10.78.3.2), path MTU 1024\n",
        a.qp.qpn(),
        b.qp.qpn()
    );
    pattern(&a.buf, 1)?;
    b.buf.fill(0, LEN, 0)?;
    let us = run(
        &a,
        SendOp::Write {
            remote_addr: b.buf.addr(0),
            rkey: b.mr.rkey(),
        },
    )?;
    let ok_write = same(&a.buf, &b.buf)?;
    summary("RDMA WRITE rxa -> rxb", us, ok_write);
    pattern(&b.buf, 7)?;
    let us = run(
        &a,
        SendOp::Read {
            remote_addr: b.buf.addr(0),
            rkey: b.mr.rkey(),
        },
    )?;
    let ok_read = same(&a.buf, &b.buf)?;
    summary("RDMA READ rxa <- rxb", us, ok_read);
    if ok_write && ok_read {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

struct RxeDemo;

impl kernel::Module for RxeDemo {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        demo()?;
        Ok(RxeDemo)
    }
}
