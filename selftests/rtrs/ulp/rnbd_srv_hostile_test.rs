// SPDX-License-Identifier: GPL-2.0

//! Selftest: requests the kernel's `rnbd_client` never sends, to our RNBD
//! server (`rdma_rs_rnbd_server.ko`, in namespace rt_b, exporting
//! `/dev/ram0` and `/dev/ram1`), from our RTRS client on our rxe `rte`
//! (namespace rt_e) to 10.80.3.2. `rnbd_server.sh` loads it while the
//! kernel's client has `ram0` mapped read-write.
//!
//! Each refusal must come back with its errno and leave the session
//! working: device names outside the search path (`EINVAL`), of no
//! device (`ENOENT`), a second writer (`EPERM`), an unknown access mode
//! (`EINVAL`); IO with an unknown operation or flag, past the device's
//! end, in part of a block, with a data area of another size than the
//! IO, with data on a dataless operation (`EINVAL`), for an id not open
//! (`ENOTCONN`), a write on a read-only mapping (`EROFS`). Then what
//! works: IO read back, an unknown priority class dropped, flush, write zeroes (zeroes read back) and
//! discard as the device announced them, and lines at 4 MiB of `ram1`
//! for the shell to find on `/dev/ram1` itself; CLOSE, twice, and of an
//! id never open. `ram0` stays open read-only until the module goes, for
//! the shell to see in the server's sysfs.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::mem::Buffer;
use rdma::verbs::mr::BufSlice;
use rtrs::clt::{ConType, Config, Dir, PathAddr, Session};
use rtrs::proto::consts::RTRS_PORT;
use rtrs::proto::rnbd::{
    AccessMode, Io, Open, RNBD_F_FUA, RNBD_OP_DISCARD, RNBD_OP_FLUSH, RNBD_OP_READ, RNBD_OP_WRITE,
    RNBD_OP_WRITE_ZEROES,
};

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
    type: RnbdSrvHostileTest,
    name: "rnbd_srv_hostile_test",
    author: "rdma-rs developers",
    description: "Selftest: hostile RNBD requests to our RNBD server",
    license: "GPL",
}

const EPERM_N: i32 = -1;
const ENOENT_N: i32 = -2;
const EINVAL_N: i32 = -22;
const EROFS_N: i32 = -30;
const EOPNOTSUPP_N: i32 = -95;
const ENOTCONN_N: i32 = -107;

/// Where the shell looks for our lines on /dev/ram1, and how many bytes.
const LINES_AT: u64 = 4 << 20;
const LINES_LEN: usize = 64 << 10;
const LINES_FIRST: u64 = 0x7000;

struct Ctx {
    sess: Option<Session>,
    /// `ram1`, read-write.
    rw: Option<Dev>,
    /// `ram0`, read-only.
    ro: Option<Dev>,
    a: Arc<Buffer>,
    b: Arc<Buffer>,
}

impl Ctx {
    fn sess(&self) -> Result<&Session> {
        self.sess.as_ref().ok_or(EINVAL)
    }
}

fn open_session(c: &mut Ctx) -> Result {
    let ns = ns_of(c_str!("rte"))?;
    let paths = [PathAddr {
        src: None,
        dst: SockAddr {
            ip: IpAddr::V4([10, 80, 3, 2]),
            port: RTRS_PORT,
        },
    }];
    let cfg = Config::new(b"rs_hostile", &paths);
    c.sess = Some(Session::open(ns, &cfg, None)?);
    let r = Rnbd::new(c.sess()?)?;
    check(r.sess_info()? == 2, "the server speaks RNBD 2")
}

/// The errno an OPEN of `name` in `mode` got (0 if it opened, and then
/// it is closed again).
fn open_errno(r: &Rnbd<'_>, name: &[u8], mode: AccessMode) -> Result<i32> {
    match r.open_mode(name, mode) {
        Ok(d) => {
            let _ = r.close(d.id)?;
            Ok(0)
        }
        Err(e) => Ok(e.to_errno()),
    }
}

fn open_refusals(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let cases: [(&[u8], AccessMode, i32, &str); 5] = [
        (
            b"../dev/ram1",
            AccessMode::Ro,
            EINVAL_N,
            "a name climbing out",
        ),
        (
            b"ram1/../ram0",
            AccessMode::Ro,
            EINVAL_N,
            "a name with .. inside",
        ),
        (
            b"nosuchdev",
            AccessMode::Ro,
            ENOENT_N,
            "a name of no device",
        ),
        (b"ram0", AccessMode::Rw, EPERM_N, "a second writer of ram0"),
        (b"ram0", AccessMode::Migration, 0, "a migration beside it"),
    ];
    for (name, mode, want, what) in cases {
        let got = open_errno(&r, name, mode)?;
        if got != want {
            pr_err!("rnbd hostile: {}: errno {}, not {}\n", what, got, want);
        }
        check(got == want, what)?;
    }
    // An access mode the protocol does not have.
    let mut m = [0u8; 300];
    let n = Open::new(AccessMode::Ro, b"ram1")
        .and_then(|o| o.write(&mut m))
        .map_err(|_| EINVAL)?;
    m[4] = 7;
    let got = r.open_raw(&m[..n]).err().map(|e| e.to_errno());
    check(got == Some(EINVAL_N), "an unknown access mode")
}

fn open_devices(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let rw = r.open_mode(b"ram1", AccessMode::Rw)?;
    let ro = r.open_mode(b"ram0", AccessMode::Ro)?;
    check(rw.id != ro.id, "two ids")?;
    check(
        rw.nsectors == (32 << 20) / 512 && rw.lbs == 512,
        "ram1: 32 MiB of 512-byte blocks",
    )?;
    let again = r.open_mode(b"ram1", AccessMode::Rw)?;
    check(again.id == rw.id, "an open name answers its id again")?;
    pr_info!(
        "rnbd hostile: ram1 id {}, ram0 id {}; write zeroes {} discard {} sectors at most\n",
        rw.id,
        ro.id,
        rw.max_write_zeroes,
        rw.max_discard
    );
    c.rw = Some(rw);
    c.ro = Some(ro);
    Ok(())
}

/// The errno of IO message `io` with `data` bytes of `c.a` in `dir`.
fn raw_io(r: &Rnbd<'_>, c: &Ctx, dir: Dir, io: Io, data: usize) -> Result<i32> {
    let mut m = [0u8; 64];
    let n = io.write(&mut m).map_err(|_| EINVAL)?;
    let slice = [BufSlice {
        buf: &c.a,
        offset: 0,
        len: data,
    }];
    let d: &[BufSlice<'_>] = if data > 0 { &slice } else { &[] };
    r.call(ConType::Io, dir, &m[..n], d)
}

fn io_refusals(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let rw = c.rw.as_ref().ok_or(EINVAL)?;
    let ro = c.ro.as_ref().ok_or(EINVAL)?;
    let io = |id, rw_bits, sector, size| Io {
        device_id: id,
        sector,
        rw: rw_bits,
        bi_size: size,
        prio: 0,
    };
    let end = rw.nsectors;
    let cases: [(Dir, Io, usize, i32, &str); 10] = [
        (
            Dir::Write,
            io(rw.id, 6, 0, 4096),
            4096,
            EINVAL_N,
            "operation 6",
        ),
        (
            Dir::Write,
            io(rw.id, RNBD_OP_WRITE | 1 << 12, 0, 4096),
            4096,
            EINVAL_N,
            "an unknown flag",
        ),
        (
            Dir::Write,
            io(rw.id, RNBD_OP_WRITE, end, 4096),
            4096,
            EINVAL_N,
            "past the end",
        ),
        (
            Dir::Read,
            io(rw.id, RNBD_OP_READ, end - 4, 4096),
            4096,
            EINVAL_N,
            "across the end",
        ),
        (
            Dir::Write,
            io(rw.id, RNBD_OP_WRITE, 0, 1000),
            1000,
            EINVAL_N,
            "part of a block",
        ),
        (
            Dir::Write,
            io(rw.id, RNBD_OP_WRITE, 0, 4096),
            8192,
            EINVAL_N,
            "data of another size",
        ),
        (
            Dir::Write,
            io(rw.id, RNBD_OP_DISCARD, 0, 4096),
            4096,
            EINVAL_N,
            "a discard with data",
        ),
        (
            Dir::Write,
            io(77, RNBD_OP_WRITE, 0, 4096),
            4096,
            ENOTCONN_N,
            "an id not open",
        ),
        (
            Dir::Write,
            io(ro.id, RNBD_OP_WRITE, 0, 4096),
            4096,
            EROFS_N,
            "a write on ro",
        ),
        (
            Dir::Write,
            io(ro.id, RNBD_OP_WRITE_ZEROES, 0, 4096),
            0,
            EROFS_N,
            "write zeroes on ro",
        ),
    ];
    for (dir, m, data, want, what) in cases {
        let got = raw_io(&r, c, dir, m, data)?;
        if got != want {
            pr_err!("rnbd hostile: {}: errno {}, not {}\n", what, got, want);
        }
        check(got == want, what)?;
    }
    Ok(())
}

fn io_works(c: &mut Ctx) -> Result {
    let r = Rnbd::new(c.sess()?)?;
    let rw = c.rw.as_ref().ok_or(EINVAL)?;
    let ro = c.ro.as_ref().ok_or(EINVAL)?;
    let len = 64 << 10;
    let at = 8192;
    fill(&c.a, 0, len, 0x4242)?;
    let e = raw_io(
        &r,
        c,
        Dir::Write,
        Io {
            device_id: rw.id,
            sector: at,
            rw: RNBD_OP_WRITE | RNBD_F_FUA,
            bi_size: len as u32,
            prio: 3,
        },
        len,
    )?;
    check(e == 0, "a FUA write with a priority")?;
    c.b.fill(0, len, 0xee)?;
    let back = [BufSlice {
        buf: &c.b,
        offset: 0,
        len,
    }];
    check(r.io(rw.id, Dir::Read, at, &back)? == 0, "it reads back")?;
    check(same(&c.a, 0, &c.b, 0, len)?, "the bytes written")?;
    // A priority of no class the block layer knows is not passed on: the
    // IO is done without it.
    let e = raw_io(
        &r,
        c,
        Dir::Write,
        Io {
            device_id: rw.id,
            sector: at,
            rw: RNBD_OP_WRITE,
            bi_size: len as u32,
            prio: 7 << 13 | 7,
        },
        len,
    )?;
    check(e == 0, "a write with priority class 7")?;
    let flush = Io {
        device_id: rw.id,
        sector: 0,
        rw: RNBD_OP_FLUSH,
        bi_size: 0,
        prio: 0,
    };
    check(raw_io(&r, c, Dir::Write, flush, 0)? == 0, "a flush")?;
    // Write zeroes on the first 8 KiB written above, as announced.
    let wz = Io {
        device_id: rw.id,
        sector: at,
        rw: RNBD_OP_WRITE_ZEROES,
        bi_size: 8192,
        prio: 0,
    };
    let e = raw_io(&r, c, Dir::Write, wz, 0)?;
    if rw.max_write_zeroes > 0 {
        check(e == 0, "write zeroes, announced")?;
        check(
            r.io(rw.id, Dir::Read, at, &back)? == 0,
            "read after write zeroes",
        )?;
        c.a.fill(0, 8192, 0)?;
        check(
            same(&c.a, 0, &c.b, 0, len)?,
            "8 KiB of zeroes, the rest kept",
        )?;
    } else {
        check(e == EOPNOTSUPP_N, "write zeroes, not announced: EOPNOTSUPP")?;
    }
    let discard = Io {
        device_id: rw.id,
        sector: at + 64,
        rw: RNBD_OP_DISCARD,
        bi_size: 32768,
        prio: 0,
    };
    let e = raw_io(&r, c, Dir::Write, discard, 0)?;
    check(
        if rw.max_discard > 0 {
            e == 0
        } else {
            e == EOPNOTSUPP_N
        },
        "a discard, as announced",
    )?;
    // The read-only mapping reads.
    check(r.io(ro.id, Dir::Read, 0, &back)? == 0, "a read on ro")?;
    // Lines for the shell, on ram1 itself.
    fill_lines(&c.a, 0, LINES_LEN, LINES_FIRST)?;
    let lines = [BufSlice {
        buf: &c.a,
        offset: 0,
        len: LINES_LEN,
    }];
    check(
        r.io(rw.id, Dir::Write, LINES_AT / 512, &lines)? == 0,
        "the lines are written",
    )
}

fn closes(c: &mut Ctx) -> Result {
    let rw = c.rw.take().ok_or(EINVAL)?;
    let r = Rnbd::new(c.sess()?)?;
    check(r.close(rw.id)? == 0, "CLOSE")?;
    check(r.close(rw.id)? == 0, "CLOSE again")?;
    check(r.close(999)? == 0, "CLOSE of an id never open")?;
    let one = [BufSlice {
        buf: &c.b,
        offset: 0,
        len: 4096,
    }];
    check(
        r.io(rw.id, Dir::Read, 0, &one)? == ENOTCONN_N,
        "IO after CLOSE: ENOTCONN",
    )?;
    let ro = c.ro.as_ref().ok_or(EINVAL)?;
    check(
        r.io(ro.id, Dir::Read, 0, &one)? == 0,
        "the other device still works",
    )
}

const CASES: &[FnCase<Ctx>] = &[
    case!(open_session(_)),
    case!(open_refusals(_)),
    case!(open_devices(_)),
    case!(io_refusals(_)),
    case!(io_works(_)),
    case!(closes(_)),
];

struct RnbdSrvHostileTest {
    _sess: Option<Session>,
}

impl kernel::Module for RnbdSrvHostileTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut c = Ctx {
            sess: None,
            rw: None,
            ro: None,
            a: Buffer::new(1 << 20)?,
            b: Buffer::new(1 << 20)?,
        };
        ktap::run(CASES, &mut c)?;
        Ok(RnbdSrvHostileTest { _sess: c.sess })
    }
}
