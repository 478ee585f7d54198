// SPDX-License-Identifier: GPL-2.0

//! Selftest: our RTRS client against the kernel's RTRS server. The
//! kernel's `rnbd_server` exports a RAM disk (`/dev/ram0`, brd) from the
//! initial namespace over the kernel's rdma_rxe (10.80.3.1); this module
//! opens a session to it through our RTRS client on our rxe `rte`
//! (namespace rt_e) and speaks RNBD: SESS_INFO, OPEN, IO, CLOSE.
//!
//! It writes patterns at many offsets and sizes, from one sector to the
//! largest IO, in one piece and in several, reads each back and compares;
//! then many IOs in flight at once (more than the connections' share of
//! the queue depth); then a request too large or at the device's end. It
//! writes 16-byte text lines at 4 MiB for `clt.sh` to find on `/dev/ram0`
//! itself, and reads the lines `clt.sh` wrote there at 8 MiB. The session
//! stays open until the module is unloaded, so that `clt.sh` can see it in
//! the kernel server's sysfs.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::mem::Buffer;
use rdma::verbs::mr::BufSlice;
use rtrs::clt::{Config, Dir, PathAddr, Session};
use rtrs::proto::consts::RTRS_PORT;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "rnbd_clt.rs"]
mod rnbd_clt;
use rnbd_clt::{fill, fill_lines, ns_of, Dev, Rnbd};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::same;

module! {
    type: RnbdCltTest,
    name: "rtrs_rnbd_clt_test",
    author: "rdma-rs developers",
    description: "Selftest: our RTRS client against the kernel's rnbd_server",
    license: "GPL",
}

/// Where `clt.sh` looks for our lines (bytes) and how many.
const OURS_AT: u64 = 4 << 20;
const OURS_LEN: usize = 64 << 10;
/// Where `clt.sh` wrote its lines, and their first number.
const THEIRS_AT: u64 = 8 << 20;
const THEIRS_LEN: usize = 64 << 10;
const THEIRS_FIRST: u64 = 0x5000;

struct Ctx {
    sess: Option<Session>,
    dev: Option<Dev>,
    a: Arc<Buffer>,
    b: Arc<Buffer>,
}

impl Ctx {
    fn sess(&self) -> Result<&Session> {
        self.sess.as_ref().ok_or(EINVAL)
    }

    fn dev(&self) -> Result<&Dev> {
        self.dev.as_ref().ok_or(EINVAL)
    }
}

fn open_session(c: &mut Ctx) -> Result {
    let ns = ns_of(c_str!("rte"))?;
    let paths = [PathAddr {
        src: None,
        dst: SockAddr {
            ip: IpAddr::V4([10, 80, 3, 1]),
            port: RTRS_PORT,
        },
    }];
    let cfg = Config::new(b"rdma_rs_clt", &paths);
    let s = Session::open(ns, &cfg, None)?;
    let a = s.query()?;
    pr_info!(
        "rtrs clt test: queue depth {}, max IO {}, always invalidate: {}\n",
        a.queue_depth,
        a.max_io_size,
        if s.paths()?.first().is_some_and(|p| p.new_rkey()) {
            "yes"
        } else {
            "no"
        }
    );
    // The kernel server's defaults: 512 chunks of 128 KiB, 4 KiB of it for
    // headers.
    check(a.queue_depth == 512, "queue depth 512")?;
    check(a.max_io_size == 126976, "max IO 124 KiB")?;
    c.sess = Some(s);
    Ok(())
}

fn sess_info(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let ver = r.sess_info()?;
    check(ver == 2, "the server speaks RNBD 2")
}

fn open_device(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    // A name the server does not have.
    let missing = r.open(b"/dev/ram7").err().map(|e| e.to_errno());
    pr_info!("rtrs clt test: open of a missing device: {:?}\n", missing);
    check(
        missing.is_some_and(|e| e < 0),
        "a missing device is refused",
    )?;
    let d = r.open(b"/dev/ram0")?;
    pr_info!(
        "rtrs clt test: /dev/ram0 is device {}: {} sectors of {}\n",
        d.id,
        d.nsectors,
        d.lbs
    );
    // clt.sh loads brd with 32 MiB.
    check(d.nsectors == (32 << 20) / 512, "32 MiB")?;
    check(d.lbs == 512, "512-byte blocks")?;
    c.dev = Some(d);
    Ok(())
}

/// Writes then reads back `len` bytes at `sector`, from `pieces` slices
/// of `a` (page-aligned pieces, the last one shorter) into `b`.
fn roundtrip(r: &Rnbd<'_>, c: &Ctx, sector: u64, len: usize, pieces: usize) -> Result {
    let id = c.dev()?.id;
    fill(&c.a, 0, len, (sector as u32) ^ (len as u32))?;
    c.b.fill(0, len, 0)?;
    let step = if pieces > 1 {
        // Whole pages but the last.
        (len / pieces) & !4095
    } else {
        len
    };
    let mut ws = KVec::new();
    let mut rs = KVec::new();
    let mut off = 0;
    for i in 0..pieces {
        let n = if i + 1 == pieces { len - off } else { step };
        ws.push(
            BufSlice {
                buf: &c.a,
                offset: off,
                len: n,
            },
            GFP_KERNEL,
        )?;
        off += n;
    }
    rs.push(
        BufSlice {
            buf: &c.b,
            offset: 0,
            len,
        },
        GFP_KERNEL,
    )?;
    let e = r.io(id, Dir::Write, sector, &ws)?;
    check(e == 0, "the write succeeds")?;
    let e = r.io(id, Dir::Read, sector, &rs)?;
    check(e == 0, "the read succeeds")?;
    check(
        same(&c.a, 0, &c.b, 0, len)?,
        "the bytes read are those written",
    )
}

fn patterns(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let max = c.sess()?.query()?.max_io_size as usize;
    let cases: [(u64, usize, usize); 9] = [
        (0, 512, 1),
        (1, 4096, 1),
        (9, 8192 + 512, 1),
        (100, 65536, 1),
        (777, max, 1),
        (2048, 3 * 4096, 3),
        (4095, 16 * 4096 + 1024, 4),
        (30000, 4096, 1),
        ((32 << 20) / 512 - 8, 4096, 1),
    ];
    for (sector, len, pieces) in cases.iter() {
        roundtrip(&r, c, *sector, *len, *pieces).inspect_err(|_| {
            pr_err!(
                "rtrs clt test: {} bytes at sector {} in {} pieces\n",
                len,
                sector,
                pieces
            );
        })?;
    }
    Ok(())
}

/// 256 writes of 4 KiB at once, then 256 reads at once: more than a
/// connection's receives could take if the permits did not bound them.
fn many_in_flight(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let id = c.dev()?.id;
    const N: usize = 256;
    fill(&c.a, 0, N * 4096, 0xabc)?;
    c.b.fill(0, N * 4096, 0)?;
    r.io_many(id, Dir::Write, 20480, &c.a, 4096, N)?;
    r.io_many(id, Dir::Read, 20480, &c.b, 4096, N)?;
    check(
        same(&c.a, 0, &c.b, 0, N * 4096)?,
        "every block read is the one written",
    )
}

fn bad_requests(c: &mut Ctx) -> Result {
    let s = c.sess()?;
    let r = Rnbd::new(s)?;
    let d = c.dev()?;
    let max = s.query()?.max_io_size as usize;
    // Larger than the largest IO: refused before it is sent.
    let big = [BufSlice {
        buf: &c.a,
        offset: 0,
        len: max + 512,
    }];
    check(
        r.io(d.id, Dir::Write, 0, &big) == Err(EINVAL),
        "an IO above the max IO size is refused",
    )?;
    // Past the device's end: the server answers with an error.
    let one = [BufSlice {
        buf: &c.b,
        offset: 0,
        len: 4096,
    }];
    let e = r.io(d.id, Dir::Read, d.nsectors, &one)?;
    pr_info!("rtrs clt test: a read past the end: {}\n", e);
    check(e < 0, "a read past the end fails on the server")?;
    // An unknown device.
    let e = r.io(d.id + 100, Dir::Read, 0, &one)?;
    check(e < 0, "an IO to an unknown device fails on the server")?;
    // And the session still works.
    roundtrip(&r, c, 64, 4096, 1)
}

fn lines_for_the_shell(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let id = c.dev()?.id;
    fill_lines(&c.a, 0, OURS_LEN, 0)?;
    let e = r.io(
        id,
        Dir::Write,
        OURS_AT / 512,
        &[BufSlice {
            buf: &c.a,
            offset: 0,
            len: OURS_LEN,
        }],
    )?;
    check(e == 0, "the lines are written")
}

fn lines_from_the_shell(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let id = c.dev()?.id;
    fill_lines(&c.a, 0, THEIRS_LEN, THEIRS_FIRST)?;
    let e = r.io(
        id,
        Dir::Read,
        THEIRS_AT / 512,
        &[BufSlice {
            buf: &c.b,
            offset: 0,
            len: THEIRS_LEN,
        }],
    )?;
    check(e == 0, "the shell's lines are read")?;
    check(
        same(&c.a, 0, &c.b, 0, THEIRS_LEN)?,
        "they are what the shell wrote on /dev/ram0",
    )
}

fn close_device(c: &mut Ctx) -> Result {
    let d = c.dev.take().ok_or(EINVAL)?;
    let r = Rnbd::new(c.sess()?)?;
    let e = r.close(d.id)?;
    check(e == 0, "CLOSE succeeds")?;
    // The device is gone from the session: IO to it fails.
    let one = [BufSlice {
        buf: &c.b,
        offset: 0,
        len: 4096,
    }];
    let e = r.io(d.id, Dir::Read, 0, &one)?;
    check(e < 0, "IO after CLOSE fails")
}

const CASES: &[FnCase<Ctx>] = &[
    case!(open_session(_)),
    case!(sess_info(_)),
    case!(open_device(_)),
    case!(patterns(_)),
    case!(many_in_flight(_)),
    case!(bad_requests(_)),
    case!(lines_for_the_shell(_)),
    case!(lines_from_the_shell(_)),
    case!(close_device(_)),
];

struct RnbdCltTest {
    _sess: Option<Session>,
}

impl kernel::Module for RnbdCltTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut c = Ctx {
            sess: None,
            dev: None,
            a: Buffer::new(2 << 20)?,
            b: Buffer::new(2 << 20)?,
        };
        ktap::run(CASES, &mut c)?;
        Ok(RnbdCltTest { _sess: c.sess })
    }
}
