// SPDX-License-Identifier: GPL-2.0

//! `/dev/peer_mem_test`: the user-space path of the peer memory tests
//! (`../peer_mem_test_uapi.h` is the interface, `../peer_user.c` its user).
//!
//! A user program registers a range of its own address space as a memory
//! region on our rxe device `pma` (`Mr::reg_user`, in the program's
//! context, as a user verbs command runs), pinned or given by a peer
//! memory client, and has operations run on it by an RC QP pair of its
//! open file: `pmb`'s QP writes and reads the region by its rkey, `pma`'s
//! sends from it by its lkey; or a stream of WRITEs runs into it while the
//! program invalidates the memory underneath.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::time::{ktime_ms_delta, Ktime};
use kernel::uaccess::UserSlice;
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use rdma::device::{self, Device};
use rdma::kshim::chardev::{CharDevOps, IoctlArg, MiscDev};
use rdma::kshim::mem::{Buffer, Sge};
use rdma::kshim::time;
use rdma::spec::attr::Gid;
use rdma::spec::opcodes::{Access, WcStatus};
use rdma::spec::qp_state::QpState;
use rdma::verbs::ah::{AhAttr, GlobalRoute};
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::Qp;
use rdma::verbs::umem::{UserKind, UserMrFlags};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

#[path = "../../lib/rc.rs"]
mod rc;

use rc::{create_qp, modify_to, Opts, Remote, RC};

module! {
    type: PeerTest,
    name: "peer_mem_test",
    author: "rdma-rs",
    description: "User-space path of the peer memory tests (/dev/peer_mem_test)",
    license: "GPL",
}

const fn ioc(dir: u32, nr: u32, size: u32) -> u32 {
    dir << 30 | size << 16 | (b't' as u32) << 8 | nr
}
const IOC_REG: u32 = ioc(3, 1, 136);
const IOC_DEREG: u32 = ioc(1, 2, 4);
const IOC_RDMA: u32 = ioc(3, 3, 40);
const IOC_STREAM_START: u32 = ioc(1, 4, 48);
const IOC_STREAM_STOP: u32 = ioc(3, 5, 48);

const OP_WRITE: u32 = 1;
const OP_READ: u32 = 2;
const OP_SEND: u32 = 3;

/// The largest operation, and B's buffer.
const MAX_OP: usize = 1 << 20;
/// How long a completion may take (ms): the guest is slow.
const WAIT_MS: i64 = 20_000;

const GID_A: Gid = Gid::from_ipv4([10, 79, 1, 1]);
const GID_B: Gid = Gid::from_ipv4([10, 79, 1, 2]);

/// One side of a file's QP pair: a PD, a CQ, a QP and a buffer with its
/// MR. It holds the device's `Arc`, not a usage reference: the device may
/// be removed under an open file (its objects then fail with `ENODEV`).
struct Side {
    qp: Qp,
    mr: Mr,
    cq: Cq,
    pd: Pd,
    buf: Arc<Buffer>,
    dev: Arc<Device>,
    gid: Gid,
}

impl Side {
    fn new(name: &CStr, gid: Gid, o: &Opts) -> Result<Side> {
        let dev = device::get_by_name(name).ok_or(ENODEV)?.arc().clone();
        let pd = Pd::alloc(&dev)?;
        let cq = Cq::create(&dev, o.cqe, None)?;
        let qp = create_qp(&pd, &cq, &cq, o)?;
        let buf = Buffer::new(o.buf_len)?;
        let mr = Mr::reg_buffer(pd.core(), &buf, 0, o.buf_len, o.mr_access)?;
        Ok(Side {
            qp,
            mr,
            cq,
            pd,
            buf,
            dev,
            gid,
        })
    }

    fn connect(&self, peer: &Side) -> Result {
        let (_, sgid) = self.dev.find_gid_on_port(1, &self.gid).ok_or(ENODEV)?;
        let remote = Remote {
            qpn: peer.qp.qpn(),
            psn: 0,
            av: AhAttr {
                port_num: 1,
                grh: GlobalRoute {
                    dgid: peer.gid,
                    sgid_index: sgid as u8,
                    hop_limit: 64,
                    ..GlobalRoute::default()
                },
                ..AhAttr::default()
            },
        };
        modify_to(&self.qp, &opts(), &remote, QpState::Rts)
    }

    fn state(&self) -> Result<QpState> {
        Ok(self.qp.query()?.qp_state)
    }

    fn sge(&self, off: usize, len: usize) -> Result<Sge> {
        self.buf.sge(off, len as u32, self.mr.lkey())
    }
}

fn opts() -> Opts {
    Opts {
        buf_len: MAX_OP,
        ..RC
    }
}

/// Polls one completion of `cq` within [`WAIT_MS`] (`ETIMEDOUT` else).
fn poll_one(cq: &Cq) -> Result<Wc> {
    let start = Ktime::ktime_get();
    let mut wc: [Wc; 1] = Default::default();
    loop {
        if cq.poll(&mut wc) == 1 {
            return Ok(core::mem::take(&mut wc[0]));
        }
        if ktime_ms_delta(Ktime::ktime_get(), start) > WAIT_MS {
            return Err(rdma::kshim::errno::etimedout());
        }
        time::msleep(1);
    }
}

/// Empties `cq`.
fn drain(cq: &Cq) {
    let mut wc: [Wc; 8] = Default::default();
    while cq.poll(&mut wc) > 0 {}
}

/// A registered region, and the PD it was registered in if not `pma`'s.
struct Reg {
    handle: u32,
    mr: Mr,
    _pd: Option<Pd>,
}

/// An open file's QP pair and regions.
struct Inner {
    /// First, so that the regions go before the PD they are in.
    regs: KVec<Reg>,
    a: Side,
    b: Side,
    next: u32,
}

impl Inner {
    /// Rebuilds the QPs if a failed operation left one in error.
    fn ready(&mut self) -> Result {
        if self.a.state()? == QpState::Rts && self.b.state()? == QpState::Rts {
            return Ok(());
        }
        let o = opts();
        self.a.qp = create_qp(&self.a.pd, &self.a.cq, &self.a.cq, &o)?;
        self.b.qp = create_qp(&self.b.pd, &self.b.cq, &self.b.cq, &o)?;
        drain(&self.a.cq);
        drain(&self.b.cq);
        self.a.connect(&self.b)?;
        self.b.connect(&self.a)
    }

    fn mr(&self, handle: u32) -> Result<&Mr> {
        self.regs
            .iter()
            .find(|r| r.handle == handle)
            .map(|r| &r.mr)
            .ok_or(EINVAL)
    }
}

/// A stream of WRITEs by B into a region.
#[pin_data]
struct Stream {
    file: Arc<FileCtx>,
    handle: u32,
    depth: u32,
    offset: u64,
    len: u64,
    stop: AtomicBool,
    done: AtomicBool,
    ok: AtomicU64,
    errors: AtomicU64,
    first_error: AtomicI32,
    #[pin]
    work: Work<Stream>,
}

impl_has_work! {
    impl HasWork<Self> for Stream { self.work }
}

impl WorkItem for Stream {
    type Pointer = Arc<Stream>;

    fn run(this: Arc<Stream>) {
        let r = this.run_stream();
        if r.is_err() && this.errors.load(Ordering::Relaxed) == 0 {
            this.first_error.store(-1, Ordering::Relaxed);
        }
        this.done.store(true, Ordering::Release);
    }
}

impl Stream {
    fn run_stream(&self) -> Result {
        let mut guard = self.file.inner()?;
        let inner = guard.as_mut().ok_or(EINVAL)?;
        inner.ready()?;
        let (iova, rkey) = {
            let mr = inner.mr(self.handle)?;
            (mr.iova() + self.offset, mr.rkey())
        };
        let b = &inner.b;
        let len = self.len as usize;
        let mut seq = 0u64;
        let mut inflight = 0u32;
        let mut failed = false;
        loop {
            while !failed && !self.stop.load(Ordering::Acquire) && inflight < self.depth {
                // A counter pattern: each write's bytes say which it is.
                let fill = (seq as u8).wrapping_add(1);
                let slot = (seq % u64::from(self.depth)) as usize * len;
                b.buf.fill(slot, len, fill)?;
                let sg = [b.sge(slot, len)?];
                let op = SendOp::Write {
                    remote_addr: iova,
                    rkey,
                };
                if b.qp.post_send(&[SendWr::new(seq, op, &sg)]).is_err() {
                    failed = true;
                    break;
                }
                seq += 1;
                inflight += 1;
            }
            if inflight == 0 {
                break;
            }
            let wc = poll_one(&b.cq)?;
            inflight -= 1;
            if wc.status == WcStatus::Success {
                self.ok.fetch_add(1, Ordering::Relaxed);
            } else {
                if self.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                    self.first_error.store(wc.status as i32, Ordering::Relaxed);
                }
                failed = true;
            }
        }
        Ok(())
    }
}

/// An open file.
#[pin_data]
struct FileCtx {
    /// Made by the first command ([`FileCtx::inner`]).
    #[pin]
    inner: Mutex<Option<Inner>>,
    #[pin]
    stream: Mutex<Option<Arc<Stream>>>,
}

impl FileCtx {
    /// The file's state, made on first use: the two sides' PDs, CQs and
    /// connected QPs.
    fn inner(
        &self,
    ) -> Result<kernel::sync::lock::Guard<'_, Option<Inner>, kernel::sync::lock::mutex::MutexBackend>>
    {
        let mut g = self.inner.lock();
        if g.is_none() {
            let o = opts();
            let a = Side::new(c_str!("pma"), GID_A, &o)?;
            let b = Side::new(c_str!("pmb"), GID_B, &o)?;
            a.connect(&b)?;
            b.connect(&a)?;
            *g = Some(Inner {
                regs: KVec::new(),
                a,
                b,
                next: 1,
            });
        }
        Ok(g)
    }

    fn reg(&self, arg: usize) -> Result<isize> {
        let mut io = IoctlArg::<136>::read(arg)?;
        let (addr, len, access, flags) = (io.u64(0), io.u64(8), io.u32(16), io.u32(20));
        let name = &io.bytes()[24..56];
        let nlen = name.iter().position(|&c| c == 0).ok_or(EINVAL)?;
        let mut guard = self.inner()?;
        let inner = guard.as_mut().ok_or(EINVAL)?;
        let (mr, pd) = if nlen == 0 || &name[..nlen] == b"pma" {
            let mr = Mr::reg_user(
                inner.a.pd.core(),
                addr,
                len,
                Access(access),
                UserMrFlags(flags),
            )?;
            (mr, None)
        } else {
            let mut cname = [0u8; 33];
            cname[..nlen].copy_from_slice(&name[..nlen]);
            let cstr = CStr::from_bytes_with_nul(&cname[..=nlen])?;
            let dev = device::get_by_name(cstr).ok_or(ENODEV)?;
            let pd = Pd::alloc(dev.arc())?;
            let mr = Mr::reg_user(pd.core(), addr, len, Access(access), UserMrFlags(flags))?;
            (mr, Some(pd))
        };
        let handle = inner.next;
        inner.next += 1;
        let (kind, peer) = match mr.user_mem() {
            Some(u) if u.kind() == UserKind::Peer => (2u32, u.peer_name()),
            _ => (1u32, &b""[..]),
        };
        io.set_u32(56, handle);
        io.set_u32(60, mr.lkey());
        io.set_u32(64, mr.rkey());
        io.set_u32(68, kind);
        let b = io.bytes_mut();
        b[72..136].fill(0);
        let n = core::cmp::min(peer.len(), 63);
        b[72..72 + n].copy_from_slice(&peer[..n]);
        inner.regs.push(
            Reg {
                handle,
                mr,
                _pd: pd,
            },
            GFP_KERNEL,
        )?;
        io.write_back()?;
        Ok(0)
    }

    fn dereg(&self, arg: usize) -> Result<isize> {
        let handle = IoctlArg::<4>::read(arg)?.u32(0);
        let reg = {
            let mut guard = self.inner()?;
            let inner = guard.as_mut().ok_or(EINVAL)?;
            rdma::kshim::vec::remove_first(&mut inner.regs, |r| r.handle == handle).ok_or(EINVAL)?
        };
        reg.mr.dereg().map_err(|(_, e)| e)?;
        Ok(0)
    }

    fn rdma(&self, arg: usize) -> Result<isize> {
        let mut io = IoctlArg::<40>::read(arg)?;
        let (handle, op, offset, len, buf) =
            (io.u32(0), io.u32(4), io.u64(8), io.u64(16), io.u64(24));
        if len == 0 || len > MAX_OP as u64 {
            return Err(EINVAL);
        }
        let n = len as usize;
        let mut guard = self.inner()?;
        let inner = guard.as_mut().ok_or(EINVAL)?;
        inner.ready()?;
        let (lkey, rkey, iova) = {
            let mr = inner.mr(handle)?;
            (mr.lkey(), mr.rkey(), mr.iova().wrapping_add(offset))
        };
        let (a, bq) = (&inner.a, &inner.b);
        let mut data = KVec::from_elem(0u8, n, GFP_KERNEL)?;
        let (status, peer_status) = match op {
            OP_WRITE => {
                UserSlice::new(buf as usize, n)
                    .reader()
                    .read_slice(&mut data)?;
                bq.buf.write(0, &data)?;
                let sg = [bq.sge(0, n)?];
                let w = SendOp::Write {
                    remote_addr: iova,
                    rkey,
                };
                bq.qp
                    .post_send(&[SendWr::new(1, w, &sg)])
                    .map_err(|(_, e)| e)?;
                (poll_one(&bq.cq)?.status as i32, 0)
            }
            OP_READ => {
                bq.buf.fill(0, n, 0)?;
                let sg = [bq.sge(0, n)?];
                let r = SendOp::Read {
                    remote_addr: iova,
                    rkey,
                };
                bq.qp
                    .post_send(&[SendWr::new(2, r, &sg)])
                    .map_err(|(_, e)| e)?;
                let st = poll_one(&bq.cq)?.status;
                if st == WcStatus::Success {
                    bq.buf.read(0, &mut data)?;
                    UserSlice::new(buf as usize, n)
                        .writer()
                        .write_slice(&data)?;
                }
                (st as i32, 0)
            }
            OP_SEND => {
                bq.buf.fill(0, n, 0)?;
                let rsg = [bq.sge(0, n)?];
                bq.qp
                    .post_recv(&[RecvWr {
                        wr_id: 3,
                        cqe: None,
                        sg: &rsg,
                    }])
                    .map_err(|(_, e)| e)?;
                let sg = [Sge {
                    addr: iova,
                    length: n as u32,
                    lkey,
                }];
                a.qp.post_send(&[SendWr::new(4, SendOp::Send, &sg)])
                    .map_err(|(_, e)| e)?;
                let st = poll_one(&a.cq)?.status;
                let peer = if st == WcStatus::Success {
                    let pst = poll_one(&bq.cq)?.status;
                    if pst == WcStatus::Success {
                        bq.buf.read(0, &mut data)?;
                        UserSlice::new(buf as usize, n)
                            .writer()
                            .write_slice(&data)?;
                    }
                    pst as i32
                } else {
                    -1
                };
                (st as i32, peer)
            }
            _ => return Err(EINVAL),
        };
        io.set_u32(32, status as u32);
        io.set_u32(36, peer_status as u32);
        io.write_back()?;
        Ok(0)
    }

    fn stream_start(self: &Arc<Self>, arg: usize) -> Result<isize> {
        let io = IoctlArg::<48>::read(arg)?;
        let (handle, depth, offset, len) = (io.u32(0), io.u32(4), io.u64(8), io.u64(16));
        if depth == 0 || depth > 16 || len == 0 || len > 64 * 1024 {
            return Err(EINVAL);
        }
        let mut slot = self.stream.lock();
        if slot.is_some() {
            return Err(EBUSY);
        }
        let s = Arc::pin_init(
            pin_init!(Stream {
                file: self.clone(),
                handle,
                depth,
                offset,
                len,
                stop: AtomicBool::new(false),
                done: AtomicBool::new(false),
                ok: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                first_error: AtomicI32::new(0),
                work <- new_work!("peer_mem_test::Stream::work"),
            }),
            GFP_KERNEL,
        )?;
        *slot = Some(s.clone());
        let _ = workqueue::system_unbound().enqueue(s);
        Ok(0)
    }

    fn stream_stop(&self, arg: usize) -> Result<isize> {
        let mut io = IoctlArg::<48>::read(arg)?;
        let s = self.stream.lock().take().ok_or(EINVAL)?;
        s.stop.store(true, Ordering::Release);
        while !s.done.load(Ordering::Acquire) {
            time::msleep(5);
        }
        io.set_u64(24, s.ok.load(Ordering::Relaxed));
        io.set_u64(32, s.errors.load(Ordering::Relaxed));
        io.set_u32(40, s.first_error.load(Ordering::Relaxed) as u32);
        io.write_back()?;
        Ok(0)
    }
}

struct Dev;

impl CharDevOps for Dev {
    type File = Arc<FileCtx>;

    /// The QPs are made on the first command, not here: `open` runs under
    /// the misc layer's lock, which must not be held around the core's
    /// device registry (uverbs registers its misc devices under it).
    fn open(&self) -> Result<Arc<FileCtx>> {
        Arc::pin_init(
            pin_init!(FileCtx {
                inner <- new_mutex!(None, "peer_mem_test::FileCtx::inner"),
                stream <- new_mutex!(None, "peer_mem_test::FileCtx::stream"),
            }),
            GFP_KERNEL,
        )
    }

    fn ioctl(&self, file: &Arc<FileCtx>, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            IOC_REG => file.reg(arg),
            IOC_DEREG => file.dereg(arg),
            IOC_RDMA => file.rdma(arg),
            IOC_STREAM_START => file.stream_start(arg),
            IOC_STREAM_STOP => file.stream_stop(arg),
            _ => Err(ENOTTY),
        }
    }

    fn release(&self, file: Arc<FileCtx>) {
        // A stream still running stops; the regions go with the file.
        if let Some(s) = file.stream.lock().take() {
            s.stop.store(true, Ordering::Release);
            while !s.done.load(Ordering::Acquire) {
                time::msleep(5);
            }
        }
        drop(file);
    }
}

struct PeerTest {
    _dev: Pin<KBox<MiscDev<Dev>>>,
}

impl kernel::Module for PeerTest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let dev = MiscDev::register(c_str!("peer_mem_test"), Arc::new(Dev, GFP_KERNEL)?, module)?;
        pr_info!("peer_mem_test: ready\n");
        Ok(PeerTest { _dev: dev })
    }
}
