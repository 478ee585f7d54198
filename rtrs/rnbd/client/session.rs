// SPDX-License-Identifier: GPL-2.0

//! A client session ([`CltSess`]): one RTRS session, named by the user,
//! shared by every device mapped over it; the session messages
//! (SESS_INFO, OPEN, CLOSE), each sent and waited for; the completions of
//! its devices' IO, routed to the device by the request's tag; and its
//! service work, which opens every device again after the link comes
//! back and sends the IO that waited for a permit or a path.
//!
//! Completions come in softirq (RTRS polls there): `devs` and the
//! answer's lock are IRQ-safe spinlocks, and a device's IO is completed
//! under `devs` (so no device, and no session with it, is let go there).
//!
//! Lock order: `devs`, then a device's locks (`device.rs`). No lock is
//! held across a request or a wait; `devs` only across the end of a
//! completed request.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::time::msecs_to_jiffies;
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use rdma::kshim::errno::{eproto, etimedout};
use rdma::kshim::mem::Buffer;
use rdma::kshim::ratelimit::log_allowed;
use rdma::kshim::sync::SpinLockIrq;
use rdma::kshim::vec;
use rdma::verbs::mr::BufSlice;
use rtrs::clt::{ConType, Dir, IoDone, LinkOps, Session};
use rtrs::proto::rnbd::{
    AccessMode, Close, Open, OpenRsp, SessInfo, SessInfoRsp, OPEN_RSP_LEN, RNBD_PROTO_VER_MAJOR,
    SESS_INFO_LEN,
};

use super::device::DevIo;
use super::Clt;

/// Seconds a session message waits for its answer.
const ADMIN_SECS: u32 = 30;

/// The error a server's answer `errno` (not 0) stands for: `EIO` if it
/// is no errno (the server's word is not trusted).
pub(crate) fn server_err(errno: i32) -> Error {
    if (-4095..0).contains(&errno) {
        Error::from_errno(errno)
    } else {
        EIO
    }
}

/// The tag bit of a session message (the rest is its sequence number);
/// device IO tags have it clear.
const ADMIN_TAG: u64 = 1 << 63;

/// The answer to the session message in progress (`admin`): its
/// sequence number, and its errno once it came. A late answer to an
/// earlier message that timed out is not taken for it.
#[pin_data]
struct AdminWait {
    #[pin]
    errno: SpinLockIrq<(u64, Option<i32>)>,
    #[pin]
    cv: CondVar,
}

/// A session of the client.
#[pin_data]
pub(crate) struct CltSess {
    name: KVec<u8>,
    /// The RTRS session (closed when the last device goes).
    pub(crate) rtrs: Session,
    /// Its devices, by the index in the high half of their IO tags.
    #[pin]
    devs: SpinLockIrq<KVec<Option<Arc<DevIo>>>>,
    /// One session message at a time.
    #[pin]
    admin: Mutex<()>,
    #[pin]
    answer: AdminWait,
    /// The link came back: every device is to be opened again.
    need_reopen: AtomicBool,
    /// Whether a path is connected (as the last link event said).
    up: AtomicBool,
    #[pin]
    service: Work<CltSess>,
}

impl_has_work! {
    impl HasWork<Self> for CltSess { self.service }
}

impl WorkItem for CltSess {
    type Pointer = Arc<CltSess>;

    fn run(this: Arc<CltSess>) {
        this.serve();
    }
}

/// The session's link events, until the session is set (and after it
/// goes, nothing).
#[pin_data]
pub(crate) struct Link {
    #[pin]
    sess: Mutex<Option<Arc<CltSess>>>,
}

impl Link {
    pub(crate) fn new() -> Result<Arc<Link>> {
        Arc::pin_init(
            pin_init!(Link {
                sess <- new_mutex!(None, "rnbd_client::Link::sess"),
            }),
            GFP_KERNEL,
        )
    }

    /// No more events reach the session (it is closing).
    pub(crate) fn clear(&self) {
        let s = self.sess.lock().take();
        drop(s);
    }
}

impl LinkOps for Link {
    fn link_ev(&self, up: bool) {
        let Some(s) = self.sess.lock().clone() else {
            return;
        };
        s.up.store(up, Ordering::Release);
        if up {
            pr_info!(
                "rnbd_client: session {}: connected again; reopening its devices\n",
                s.name_str()
            );
            s.need_reopen.store(true, Ordering::Release);
            s.kick();
        } else {
            pr_info!(
                "rnbd_client: session {}: no path left; IO waits for a path\n",
                s.name_str()
            );
            for d in s.devices().iter() {
                d.link_down();
            }
        }
    }
}

impl CltSess {
    /// A session over `rtrs`, whose link events `link` will bring here.
    pub(crate) fn new(name: &[u8], rtrs: Session, link: &Link) -> Result<Arc<CltSess>> {
        let mut n = KVec::with_capacity(name.len(), GFP_KERNEL)?;
        n.extend_from_slice(name, GFP_KERNEL)?;
        let s = Arc::pin_init(
            pin_init!(CltSess {
                name: n,
                rtrs,
                devs <- rdma::new_spinlock_irq!(KVec::new(), "rnbd_client::CltSess::devs"),
                admin <- new_mutex!((), "rnbd_client::CltSess::admin"),
                answer <- pin_init!(AdminWait {
                    errno <- rdma::new_spinlock_irq!((0, None), "rnbd_client::AdminWait::errno"),
                    cv <- new_condvar!("rnbd_client::AdminWait::cv"),
                }),
                need_reopen: AtomicBool::new(false),
                up: AtomicBool::new(true),
                service <- new_work!("rnbd_client::CltSess::service"),
            }),
            GFP_KERNEL,
        )?;
        *link.sess.lock() = Some(s.clone());
        Ok(s)
    }

    /// The session's name.
    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    /// The name as text, for the log.
    pub(crate) fn name_str(&self) -> &str {
        core::str::from_utf8(&self.name).unwrap_or("?")
    }

    /// Whether a path is connected.
    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// Has the service work open the closed devices again now.
    pub(crate) fn reopen_all(self: &Arc<Self>) {
        self.need_reopen.store(true, Ordering::Release);
        self.kick();
    }

    /// Queues the service work (devices to reopen, IO to send).
    pub(crate) fn kick(self: &Arc<Self>) {
        if let Some(clt) = Clt::get() {
            let _ = clt.wq.enqueue(self.clone());
        }
    }

    /// The devices, for a pass without the lock.
    pub(crate) fn devices(&self) -> KVec<Arc<DevIo>> {
        let g = self.devs.lock();
        let mut v = KVec::new();
        for d in g.iter().flatten() {
            if v.push(d.clone(), GFP_ATOMIC).is_err() {
                break;
            }
        }
        v
    }

    /// How many devices the session has.
    pub(crate) fn ndevs(&self) -> usize {
        self.devs.lock().iter().flatten().count()
    }

    /// Places `d` in the table: the index its IO tags carry.
    pub(crate) fn attach(&self, d: Arc<DevIo>) -> Result<u32> {
        // Room for one more, reserved outside the spinlock.
        let n = self.devs.lock().len();
        let mut room = KVec::with_capacity(n + 1, GFP_KERNEL)?;
        let mut g = self.devs.lock();
        if g.capacity() == g.len() && room.capacity() > g.len() {
            while let Some(x) = vec::remove(&mut g, 0) {
                room.push(x, GFP_ATOMIC)?;
            }
            core::mem::swap(&mut *g, &mut room);
        }
        let idx = match g.iter().position(Option::is_none) {
            Some(i) => {
                g[i] = Some(d);
                i
            }
            None => {
                g.push(Some(d), GFP_ATOMIC)?;
                g.len() - 1
            }
        };
        u32::try_from(idx).map_err(|_| EINVAL)
    }

    /// Takes device `idx` out of the table (after its last IO); returns
    /// it, to be dropped outside the lock.
    pub(crate) fn detach(&self, idx: u32) -> Option<Arc<DevIo>> {
        self.devs
            .lock()
            .get_mut(idx as usize)
            .and_then(Option::take)
    }

    /// A session message `usr`, waited for; `rsp` (if any) takes the
    /// server's answer: the server's errno (0 or negative).
    fn admin(
        self: &Arc<Self>,
        dir: Dir,
        usr: &[u8],
        rsp: Option<&Arc<Buffer>>,
        len: usize,
    ) -> Result<i32> {
        let _one = self.admin.lock();
        let seq = {
            let mut g = self.answer.errno.lock();
            g.0 = (g.0 + 1) & !ADMIN_TAG;
            g.1 = None;
            g.0
        };
        let permit = self.rtrs.permit(ConType::Admin, true)?;
        let done: Arc<dyn IoDone> = self.clone();
        let data: KVec<BufSlice<'_>> = match rsp {
            Some(buf) => {
                let mut v = KVec::new();
                v.push(
                    BufSlice {
                        buf,
                        offset: 0,
                        len,
                    },
                    GFP_KERNEL,
                )?;
                v
            }
            None => KVec::new(),
        };
        self.rtrs
            .request(dir, permit, usr, &data, done, ADMIN_TAG | seq)?;
        let mut g = self.answer.errno.lock();
        let mut left = ADMIN_SECS * 10;
        while g.1.is_none() {
            if left == 0 {
                // The request stays the session's: it completes when its
                // path fails or the session closes.
                return Err(etimedout());
            }
            left -= 1;
            let _ = self
                .answer
                .cv
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(100));
        }
        g.1.take().ok_or(EIO)
    }

    /// SESS_INFO: checks the server speaks our major version.
    pub(crate) fn sess_info(self: &Arc<Self>) -> Result {
        let mut m = [0u8; 64];
        let n = SessInfo {
            ver: RNBD_PROTO_VER_MAJOR,
        }
        .write(&mut m)
        .map_err(|_| EINVAL)?;
        let rsp = Buffer::new(SESS_INFO_LEN)?;
        let e = self.admin(Dir::Read, &m[..n], Some(&rsp), SESS_INFO_LEN)?;
        if e != 0 {
            return Err(server_err(e));
        }
        let mut raw = [0u8; SESS_INFO_LEN];
        rsp.read(0, &mut raw)?;
        match SessInfoRsp::parse(&raw) {
            Ok(r) if r.ver >= 1 => Ok(()),
            _ => {
                pr_err!(
                    "rnbd_client: session {}: bad SESS_INFO answer\n",
                    self.name_str()
                );
                Err(eproto())
            }
        }
    }

    /// OPEN of `path` in `mode`: the server's answer, or its errno.
    pub(crate) fn open(self: &Arc<Self>, path: &[u8], mode: AccessMode) -> Result<OpenRsp> {
        let mut m = [0u8; 300];
        let n = Open::new(mode, path)
            .and_then(|o| o.write(&mut m))
            .map_err(|_| EINVAL)?;
        let rsp = Buffer::new(OPEN_RSP_LEN)?;
        let e = self.admin(Dir::Read, &m[..n], Some(&rsp), OPEN_RSP_LEN)?;
        if e != 0 {
            return Err(server_err(e));
        }
        let mut raw = [0u8; OPEN_RSP_LEN];
        rsp.read(0, &mut raw)?;
        OpenRsp::parse(&raw).map_err(|_| {
            if log_allowed() {
                pr_err!(
                    "rnbd_client: session {}: bad OPEN answer\n",
                    self.name_str()
                );
            }
            eproto()
        })
    }

    /// CLOSE of the server's device `id`: the server's errno.
    pub(crate) fn close_dev(self: &Arc<Self>, id: u32) -> Result<i32> {
        let mut m = [0u8; 16];
        let n = Close { device_id: id }.write(&mut m).map_err(|_| EINVAL)?;
        self.admin(Dir::Write, &m[..n], None, 0)
    }

    /// The service work: devices opened again after the link came back
    /// (their IO waits meanwhile), then every device's waiting IO sent.
    fn serve(self: Arc<Self>) {
        if self.need_reopen.swap(false, Ordering::AcqRel) {
            let again = match self.sess_info() {
                Ok(()) => {
                    let mut again = false;
                    for d in self.devices().iter() {
                        if d.reopen(&self).is_err() {
                            again = true;
                        }
                    }
                    again
                }
                Err(e) => {
                    pr_warn!(
                        "rnbd_client: session {}: SESS_INFO after reconnect failed ({})\n",
                        self.name_str(),
                        e.to_errno()
                    );
                    true
                }
            };
            if again && self.is_up() {
                // Tried again on the next link event or kick.
                self.need_reopen.store(true, Ordering::Release);
            }
        }
        for d in self.devices().iter() {
            d.send_waiting(&self);
        }
    }
}

impl IoDone for CltSess {
    fn done(&self, tag: u64, errno: i32) {
        if tag & ADMIN_TAG != 0 {
            let mut g = self.answer.errno.lock();
            if g.0 == tag & !ADMIN_TAG {
                g.1 = Some(errno);
                self.answer.cv.notify_all();
            }
            return;
        }
        let idx = (tag >> 32) as usize;
        // Completed under `devs`: the device cannot be let go meanwhile,
        // and no reference to it is dropped here.
        let g = self.devs.lock();
        match g.get(idx).and_then(Option::as_ref) {
            Some(d) => d.complete(tag as u32, errno),
            None => {
                if log_allowed() {
                    pr_warn!(
                        "rnbd_client: session {}: completion of no device ({:#x})\n",
                        self.name_str(),
                        tag
                    );
                }
            }
        }
    }
}
