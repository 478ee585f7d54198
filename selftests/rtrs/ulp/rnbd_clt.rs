// SPDX-License-Identifier: GPL-2.0

//! A small RNBD client on our RTRS client, for the test modules: the
//! session messages (SESS_INFO, OPEN, CLOSE) and block IO, each sent and
//! waited for, or many IOs in flight at once; and the patterns they write
//! (checked with `verify::same` of `selftests/lib/verify.rs`).
//!
//! Include it with `#[path = "rnbd_clt.rs"] mod rnbd_clt;`.

// Each test module uses its own part of this file.
#![allow(dead_code)]

use kernel::error::code::{EINVAL, EIO};
use kernel::prelude::*;
use kernel::sync::{new_condvar, Arc, CondVar};
use kernel::time::msecs_to_jiffies;

use kernel::str::CStr;

use rdma::device;
use rdma::kshim::mem::Buffer;
use rdma::kshim::route::NetNs;
use rdma::kshim::sync::SpinLockIrq;
use rdma::verbs::mr::BufSlice;
use rtrs::clt::{ConType, Dir, IoDone, Session};
use rtrs::proto::rnbd::{
    AccessMode, Close, Io, Open, OpenRsp, SessInfo, SessInfoRsp, OPEN_RSP_LEN, RNBD_F_SYNC,
    RNBD_OP_READ, RNBD_OP_WRITE, RNBD_PROTO_VER_MAJOR, SESS_INFO_LEN,
};

/// The completions of a test's requests, by tag.
#[pin_data]
pub(crate) struct Waiter {
    #[pin]
    done: SpinLockIrq<KVec<(u64, i32)>>,
    #[pin]
    cv: CondVar,
}

impl IoDone for Waiter {
    fn done(&self, tag: u64, errno: i32) {
        // Softirq: no sleeping allocation.
        let _ = self.done.lock().push((tag, errno), GFP_ATOMIC);
        self.cv.notify_all();
    }
}

impl Waiter {
    pub(crate) fn new() -> Result<Arc<Waiter>> {
        Arc::pin_init(
            pin_init!(Waiter {
                done <- rdma::new_spinlock_irq!(KVec::new(), "rnbd_clt::Waiter::done"),
                cv <- new_condvar!("rnbd_clt::Waiter::cv"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits up to `secs` for `n` completions; returns them.
    pub(crate) fn wait_n(&self, n: usize, secs: u32) -> Result<KVec<(u64, i32)>> {
        let mut g = self.done.lock();
        let mut left = secs * 10;
        while g.len() < n {
            if left == 0 {
                pr_err!("rnbd clt: {} of {} completions in {} s\n", g.len(), n, secs);
                return Err(EIO);
            }
            left -= 1;
            let _ = self
                .cv
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(100));
        }
        Ok(core::mem::take(&mut *g))
    }

    /// Waits for one completion; returns its errno.
    pub(crate) fn wait_one(&self, secs: u32) -> Result<i32> {
        let v = self.wait_n(1, secs)?;
        v.first().map(|d| d.1).ok_or(EINVAL)
    }
}

/// An RNBD client's view of a session and one opened device.
pub(crate) struct Rnbd<'a> {
    pub(crate) sess: &'a Session,
    pub(crate) w: Arc<Waiter>,
}

/// What OPEN answered.
pub(crate) struct Dev {
    pub(crate) id: u32,
    pub(crate) nsectors: u64,
    pub(crate) lbs: u16,
    pub(crate) max_write_zeroes: u32,
    pub(crate) max_discard: u32,
}

impl<'a> Rnbd<'a> {
    pub(crate) fn new(sess: &'a Session) -> Result<Rnbd<'a>> {
        Ok(Rnbd {
            sess,
            w: Waiter::new()?,
        })
    }

    /// One request on an admin or IO permit, waited for: its errno.
    pub(crate) fn call(
        &self,
        con: ConType,
        dir: Dir,
        usr: &[u8],
        data: &[BufSlice<'_>],
    ) -> Result<i32> {
        let permit = self.sess.permit(con, true)?;
        let done: Arc<dyn IoDone> = self.w.clone();
        self.sess.request(dir, permit, usr, data, done, 0)?;
        self.w.wait_one(60)
    }

    /// A session message `usr` whose answer the server writes back (an
    /// admin read): the answer's first `N` bytes, or the server's errno.
    fn admin_read<const N: usize>(&self, usr: &[u8]) -> Result<[u8; N]> {
        let rsp = Buffer::new(4096)?;
        let e = self.call(
            ConType::Admin,
            Dir::Read,
            usr,
            &[BufSlice {
                buf: &rsp,
                offset: 0,
                len: N,
            }],
        )?;
        if e != 0 {
            return Err(Error::from_errno(e));
        }
        let mut raw = [0u8; N];
        rsp.read(0, &mut raw)?;
        Ok(raw)
    }

    /// SESS_INFO: the server's protocol version.
    pub(crate) fn sess_info(&self) -> Result<u8> {
        let mut m = [0u8; 64];
        let n = SessInfo {
            ver: RNBD_PROTO_VER_MAJOR,
        }
        .write(&mut m)
        .map_err(|_| EINVAL)?;
        let raw = self.admin_read::<SESS_INFO_LEN>(&m[..n])?;
        Ok(SessInfoRsp::parse(&raw).map_err(|_| EINVAL)?.ver)
    }

    /// OPEN of `name`, read-write.
    pub(crate) fn open(&self, name: &[u8]) -> Result<Dev> {
        self.open_mode(name, AccessMode::Rw)
    }

    /// OPEN of `name` in `mode`.
    pub(crate) fn open_mode(&self, name: &[u8], mode: AccessMode) -> Result<Dev> {
        let mut m = [0u8; 300];
        let n = Open::new(mode, name)
            .and_then(|o| o.write(&mut m))
            .map_err(|_| EINVAL)?;
        self.open_raw(&m[..n])
    }

    /// OPEN as the bytes `msg` say it.
    pub(crate) fn open_raw(&self, msg: &[u8]) -> Result<Dev> {
        let raw = self.admin_read::<OPEN_RSP_LEN>(msg)?;
        let r = OpenRsp::parse(&raw).map_err(|_| EINVAL)?;
        Ok(Dev {
            id: r.device_id,
            nsectors: r.nsectors,
            lbs: r.logical_block_size,
            max_write_zeroes: r.max_write_zeroes_sectors,
            max_discard: r.max_discard_sectors,
        })
    }

    /// CLOSE of device `id`: its errno.
    pub(crate) fn close(&self, id: u32) -> Result<i32> {
        let mut m = [0u8; 16];
        let n = Close { device_id: id }.write(&mut m).map_err(|_| EINVAL)?;
        self.call(ConType::Admin, Dir::Write, &m[..n], &[])
    }

    /// The IO message of a read or write of `len` bytes at `sector`.
    pub(crate) fn io_msg(
        dev: u32,
        dir: Dir,
        sector: u64,
        len: u32,
        out: &mut [u8],
    ) -> Result<usize> {
        let rw = match dir {
            Dir::Read => RNBD_OP_READ | RNBD_F_SYNC,
            Dir::Write => RNBD_OP_WRITE,
        };
        Io {
            device_id: dev,
            sector,
            rw,
            bi_size: len,
            prio: 0,
        }
        .write(out)
        .map_err(|_| EINVAL)
    }

    /// A read or write of `data` at `sector`, waited for: its errno.
    pub(crate) fn io(&self, dev: u32, dir: Dir, sector: u64, data: &[BufSlice<'_>]) -> Result<i32> {
        let len: usize = data.iter().map(|d| d.len).sum();
        let mut m = [0u8; 64];
        let n = Self::io_msg(dev, dir, sector, len as u32, &mut m)?;
        self.call(ConType::Io, dir, &m[..n], data)
    }

    /// Many IOs in flight at once: `count` IOs of `len` bytes, the i-th at
    /// `sector0 + i * len / 512` from or into `buf` at `i * len`. Every
    /// one must complete with 0.
    pub(crate) fn io_many(
        &self,
        dev: u32,
        dir: Dir,
        sector0: u64,
        buf: &Arc<Buffer>,
        len: usize,
        count: usize,
    ) -> Result {
        for i in 0..count {
            let mut m = [0u8; 64];
            let sector = sector0 + (i * len / 512) as u64;
            let n = Self::io_msg(dev, dir, sector, len as u32, &mut m)?;
            let done: Arc<dyn IoDone> = self.w.clone();
            let sent = self.sess.permit(ConType::Io, true).and_then(|permit| {
                self.sess.request(
                    dir,
                    permit,
                    &m[..n],
                    &[BufSlice {
                        buf,
                        offset: i * len,
                        len,
                    }],
                    done,
                    i as u64,
                )
            });
            if let Err(e) = sent {
                // Those sent complete before the error is returned.
                self.w.wait_n(i, 120)?;
                return Err(e);
            }
        }
        let got = self.w.wait_n(count, 120)?;
        let mut seen = KVec::from_elem(false, count, GFP_KERNEL)?;
        for (tag, e) in got.iter() {
            let t = *tag as usize;
            if *e != 0 || t >= count || seen[t] {
                pr_err!("rnbd clt: IO {} completed with {} (or twice)\n", t, e);
                return Err(EIO);
            }
            seen[t] = true;
        }
        Ok(())
    }
}

/// The namespace of our rxe device `name`'s network device.
pub(crate) fn ns_of(name: &CStr) -> Result<NetNs> {
    let dev = device::get_by_name(name).ok_or(ENODEV)?;
    let nd = dev.netdev(1).ok_or(ENODEV)?;
    NetNs::of(&nd)
}

/// Fills `len` bytes of `buf` at `off` with the pattern of `seed`.
pub(crate) fn fill(buf: &Buffer, off: usize, len: usize, seed: u32) -> Result {
    let mut chunk = [0u8; 256];
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut done = 0;
    while done < len {
        let n = core::cmp::min(chunk.len(), len - done);
        for b in chunk[..n].iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        buf.write(off + done, &chunk[..n])?;
        done += n;
    }
    Ok(())
}

/// Fills `len` bytes of `buf` at `off` with 16-byte lines, `%015x\n` of
/// `first`, `first + 1`, ...: what a shell's `awk` writes and checks.
pub(crate) fn fill_lines(buf: &Buffer, off: usize, len: usize, first: u64) -> Result {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut line = [0u8; 16];
    for i in 0..len / 16 {
        let v = first + i as u64;
        for (k, b) in line[..15].iter_mut().enumerate() {
            *b = HEX[((v >> (4 * (14 - k))) & 0xf) as usize];
        }
        line[15] = b'\n';
        buf.write(off + i * 16, &line)?;
    }
    Ok(())
}
