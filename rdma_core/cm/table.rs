// SPDX-License-Identifier: GPL-2.0

//! The CM's tables: connections by our communication ID and by the
//! peer's (communication ID, node GUID), listeners by service ID; and the
//! one timer that runs every connection's deadline.
//!
//! The tables are short lists under one mutex: a CM has tens of
//! connections, not millions. The timer fires at the earliest deadline of
//! all connections and its work (process context) calls their
//! [`CmConn::on_timer`] with no table lock held.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use crate::cm::conn::CmConn;
use crate::cm::port::CmPortShared;
use crate::kshim::global::Global;
use crate::kshim::time::now_ms;
use crate::kshim::timer::{Timer, TimerItem};
use crate::kshim::vec::retain;
use crate::mad::MadAddr;
use crate::spec::cm_msg::Req;

/// A listener's owner (the rdma_cm id that listens).
pub trait ListenUser: Send + Sync {
    /// Whether this listener takes `req`, which arrived on `port`
    /// (address, namespace).
    fn takes(&self, port: &CmPortShared, req: &Req) -> bool;

    /// A REQ for it made `conn` (passive, REQ received): the user of the
    /// new connection, or an error to reject it.
    fn on_req(
        &self,
        port: &Arc<CmPortShared>,
        conn: &Arc<CmConn>,
        req: &Req,
        from: &MadAddr,
    ) -> Result<Arc<dyn crate::cm::conn::ConnUser>>;
}

/// A listen registration: removed from the table when dropped.
pub struct Listener {
    entry: Arc<ListenEntry>,
}

struct ListenEntry {
    service_id: u64,
    user: Arc<dyn ListenUser>,
}

struct Inner {
    conns: KVec<Arc<CmConn>>,
    listeners: KVec<Arc<ListenEntry>>,
}

/// The tables.
#[pin_data]
pub(crate) struct Tables {
    #[pin]
    inner: Mutex<Inner>,
    next_id: AtomicU32,
    #[pin]
    timer: Timer<Tables>,
    #[pin]
    work: Work<Tables>,
}

impl_has_work! {
    impl HasWork<Self> for Tables { self.work }
}

impl WorkItem for Tables {
    type Pointer = Arc<Tables>;

    fn run(this: Arc<Tables>) {
        let now = now_ms();
        let due: KVec<Arc<CmConn>> = {
            let inner = this.inner.lock();
            let mut v = KVec::new();
            for c in inner.conns.iter() {
                if c.deadline().is_some_and(|d| d <= now) {
                    let _ = v.push(c.clone(), GFP_KERNEL);
                }
            }
            v
        };
        for c in due.iter() {
            c.on_timer(now);
        }
        rearm();
    }
}

impl TimerItem for Tables {
    fn timer(&self) -> &Timer<Self> {
        &self.timer
    }

    fn fired(this: Arc<Self>) {
        let _ = workqueue::system().enqueue(this);
    }
}

static TABLES: Global<Tables> = Global::new();

/// Sets up the tables (module init).
pub(crate) fn init() -> Result {
    let t = Arc::pin_init(
        pin_init!(Tables {
            inner <- new_mutex!(
                Inner {
                    conns: KVec::new(),
                    listeners: KVec::new(),
                },
                "cm::Tables::inner"
            ),
            next_id: AtomicU32::new(crate::kshim::random::u32()),
            timer <- Timer::new(),
            work <- new_work!("cm::Tables::work"),
        }),
        GFP_KERNEL,
    )?;
    TABLES.replace(Some(t));
    Ok(())
}

/// Tears them down (module exit: no device, hence no connection, is left).
pub(crate) fn exit() {
    if let Some(t) = TABLES.replace(None) {
        t.timer.shutdown();
        crate::kshim::work::flush(&t.work);
    }
}

/// A communication ID not 0.
pub(crate) fn new_comm_id() -> u32 {
    let Some(t) = TABLES.get() else { return 1 };
    loop {
        let id = t.next_id.fetch_add(1, Ordering::Relaxed);
        if id != 0 {
            return id;
        }
    }
}

/// Adds a connection (once).
pub(crate) fn insert(conn: Arc<CmConn>) -> Result {
    let Some(t) = TABLES.get() else { return Ok(()) };
    let mut inner = t.inner.lock();
    if !inner.conns.iter().any(|c| Arc::ptr_eq(c, &conn)) {
        inner.conns.push(conn, GFP_KERNEL)?;
    }
    Ok(())
}

/// Removes a connection.
pub(crate) fn remove(conn: &Arc<CmConn>) {
    if let Some(t) = TABLES.get() {
        let mut inner = t.inner.lock();
        retain(&mut inner.conns, |c| !Arc::ptr_eq(c, conn));
    }
}

/// Removes every connection on `port` (the device goes).
pub(crate) fn remove_port(port: &CmPortShared) {
    if let Some(t) = TABLES.get() {
        let gone: KVec<Arc<CmConn>> = {
            let mut inner = t.inner.lock();
            let mut out = KVec::new();
            for c in inner.conns.iter() {
                if core::ptr::eq(&**c.port(), port) {
                    let _ = out.push(c.clone(), GFP_KERNEL);
                }
            }
            retain(&mut inner.conns, |c| !core::ptr::eq(&**c.port(), port));
            out
        };
        drop(gone);
    }
}

/// The connection whose communication ID is `id`, on `port`.
pub(crate) fn find_local(port: &CmPortShared, id: u32) -> Option<Arc<CmConn>> {
    let t = TABLES.get()?;
    let inner = t.inner.lock();
    inner
        .conns
        .iter()
        .find(|c| core::ptr::eq(&**c.port(), port) && c.local_comm_id() == id)
        .cloned()
}

/// The connection that is the peer's `(comm_id, guid)`.
pub(crate) fn find_peer(comm_id: u32, guid: u64) -> Option<Arc<CmConn>> {
    let t = TABLES.get()?;
    let inner = t.inner.lock();
    inner
        .conns
        .iter()
        .find(|c| c.is_peer(comm_id, guid))
        .cloned()
}

/// A connection that still holds the peer's QP `qpn` of node `guid`
/// (`cm_insert_remote_qpn` of the C finds it), timewait included.
pub(crate) fn find_remote_qp(qpn: u32, guid: u64) -> Option<Arc<CmConn>> {
    let t = TABLES.get()?;
    let inner = t.inner.lock();
    inner
        .conns
        .iter()
        .find(|c| c.holds_remote_qp(qpn, guid))
        .cloned()
}

/// The listener of `req`'s service ID that takes it.
pub(crate) fn find_listener(port: &CmPortShared, req: &Req) -> Option<Arc<dyn ListenUser>> {
    let t = TABLES.get()?;
    let users: KVec<Arc<dyn ListenUser>> = {
        let inner = t.inner.lock();
        let mut v = KVec::new();
        for l in inner.listeners.iter() {
            if l.service_id == req.service_id {
                let _ = v.push(l.user.clone(), GFP_KERNEL);
            }
        }
        v
    };
    users.iter().find(|u| u.takes(port, req)).cloned()
}

/// Arms the timer for the earliest deadline.
pub(crate) fn rearm() {
    let Some(t) = TABLES.get() else { return };
    let next = {
        let inner = t.inner.lock();
        inner.conns.iter().filter_map(|c| c.deadline()).min()
    };
    if let Some(at) = next {
        let us = at
            .saturating_sub(now_ms())
            .saturating_mul(1000)
            .min(u64::from(u32::MAX));
        Timer::arm_us(&t, us.max(1) as u32);
    }
}

impl Listener {
    /// Listens for REQs of `service_id`; `user` decides which it takes.
    pub fn new(service_id: u64, user: Arc<dyn ListenUser>) -> Result<Listener> {
        let t = TABLES.get().ok_or(kernel::error::code::ENODEV)?;
        let entry = Arc::new(ListenEntry { service_id, user }, GFP_KERNEL)?;
        t.inner.lock().listeners.push(entry.clone(), GFP_KERNEL)?;
        Ok(Listener { entry })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(t) = TABLES.get() {
            let mut inner = t.inner.lock();
            retain(&mut inner.listeners, |l| !Arc::ptr_eq(l, &self.entry));
        }
    }
}
