// SPDX-License-Identifier: GPL-2.0

//! The CM's tables: connections by our communication ID, by the peer's
//! (communication ID, CA GUID), by the peer's (QPN, CA GUID) and by
//! deadline, with the count of half-open connections per port and per
//! source ([`crate::spec::cm_table`], host-tested, over the kernel's
//! red-black tree); SIDR REQs of ours by request ID and received ones
//! waiting for their answer ([`crate::spec::cm_sidr`]); listeners by
//! service ID; and the one timer that runs the connections whose
//! deadline passed.
//!
//! Every lookup is O(log n) and locks no connection: a connection hands
//! its keys to the table ([`sync`]) after each change of its state, under
//! its own lock, so the table's copy is never stale for long and never
//! out of order. The timer fires at the earliest deadline; its work
//! (process context) takes the due connections from the deadline index
//! and calls their [`CmConn::on_timer`] with no table lock held.
//!
//! # Lock order
//!
//! A connection's lock before the table's; the table's before the timer's
//! (a leaf). Nothing locks a connection under the table's lock, and
//! connections and listeners it drops go after it is released. The SIDR
//! requests ([`crate::cm::sidr`]) are in the table too (the host-tested
//! [`crate::spec::cm_sidr::SidrTable`]); a SIDR request's own lock and
//! the table's are never held together.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::error::code::ENOMEM;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use crate::cm::conn::CmConn;
use crate::cm::port::CmPortShared;
use crate::cm::sidr::{SidrActive, SidrEvent, SidrRequest};
use crate::kshim::global::Global;
use crate::kshim::time::now_ms;
use crate::kshim::timer::{Timer, TimerItem};
use crate::mad::MadAddr;
use crate::spec::cm_msg::{Req, SidrRep, SidrReq};
use crate::spec::cm_sidr::{RemoteError, RemoteKey, SidrTable, StartError};
use crate::spec::cm_table::{AdmitError, Keys, Maps, OrdMap, Source, Table, DEFAULT_LIMITS};

pub use crate::spec::cm_table::Limits;

/// The bounds on half-open connections ([`DEFAULT_LIMITS`]: 4096 a port,
/// 1024 of them from one source).
pub const LIMITS: Limits = DEFAULT_LIMITS;

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

    /// Whether this listener takes the SIDR REQ `req`, which arrived on
    /// `port`. The default takes none: a SIDR REQ for the service ID of
    /// listeners that all refuse it is answered REJECT (as the C rdma_cm
    /// answers one for a listener that is not a UD one).
    fn takes_sidr(&self, _port: &CmPortShared, _req: &SidrReq) -> bool {
        false
    }

    /// A SIDR REQ this listener takes: `req` is the user's to answer
    /// ([`SidrRequest::sidr_reply`]), now or later; dropped unanswered, it
    /// is answered REJECT. An error answers it REJECT now.
    fn on_sidr_req(&self, _req: Arc<SidrRequest>) -> Result {
        Err(crate::kshim::errno::eopnotsupp())
    }
}

/// A listen registration: removed from the table when dropped.
pub struct Listener {
    key: (u64, u64),
}

impl<K: Ord + Copy, V> OrdMap<K, V> for RBTree<K, V> {
    type Error = Error;

    fn get(&self, k: &K) -> Option<&V> {
        RBTree::get(self, k)
    }

    fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        RBTree::get_mut(self, k)
    }

    fn insert(&mut self, k: K, v: V) -> Result {
        let node = RBTreeNode::new(k, v, GFP_KERNEL)?;
        drop(RBTree::insert(self, node));
        Ok(())
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        RBTree::remove(self, k)
    }

    fn lower_bound(&mut self, k: &K) -> Option<K> {
        self.cursor_lower_bound(k).map(|c| *c.current().0)
    }

    fn first(&mut self) -> Option<K> {
        self.cursor_front().map(|c| *c.current().0)
    }

    fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        for (k, v) in self.iter() {
            f(k, v);
        }
    }
}

/// The kernel's red-black tree as the table's maps.
struct Trees;

impl Maps for Trees {
    type Error = Error;
    type Map<K: Ord + Copy, V> = RBTree<K, V>;
}

struct Inner {
    conns: Table<Trees, Arc<CmConn>>,
    /// SIDR REQs of ours waiting for their REP, and received ones
    /// waiting for their answer.
    sidr: SidrTable<Trees, Arc<SidrActive>>,
    /// By (service ID, registration number).
    listeners: RBTree<(u64, u64), Arc<dyn ListenUser>>,
    next_listener: u64,
    /// When the timer is armed to fire, if it is.
    armed_at: Option<u64>,
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

/// How many due connections the timer's work takes at a time.
const DUE_BATCH: usize = 64;
/// How many batches one run of the work takes at most.
const DUE_RUNS: usize = 64;

impl WorkItem for Tables {
    type Pointer = Arc<Tables>;

    fn run(this: Arc<Tables>) {
        this.inner.lock().armed_at = None;
        // Batches until none is due; bounded, so that a deadline that
        // stays in the past cannot keep the work running (the timer comes
        // back for what is left).
        for _ in 0..DUE_RUNS {
            let now = now_ms();
            // Room first: a deadline taken is the connection's last.
            let Ok(mut due) = KVec::<Arc<CmConn>>::with_capacity(DUE_BATCH, GFP_KERNEL) else {
                // Try again shortly.
                let mut inner = this.inner.lock();
                inner.armed_at = Some(now + 10);
                Timer::arm_us(&this, 10_000);
                return;
            };
            let n = this.inner.lock().conns.take_due(now, DUE_BATCH, |_, c| {
                let _ = due.push(c.clone(), GFP_KERNEL);
            });
            for c in due.iter() {
                c.on_timer(now);
            }
            drop(due);
            if n < DUE_BATCH {
                break;
            }
        }
        let mut inner = this.inner.lock();
        rearm_locked(&this, &mut inner);
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
                    conns: Table::new(),
                    sidr: SidrTable::new(),
                    listeners: RBTree::new(),
                    next_listener: 0,
                    armed_at: None,
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

/// A communication ID not 0 and not in use.
pub(crate) fn new_comm_id() -> u32 {
    let Some(t) = TABLES.get() else { return 1 };
    loop {
        let id = t.next_id.fetch_add(1, Ordering::Relaxed);
        let inner = t.inner.lock();
        if id != 0 && !inner.conns.contains(id) && !inner.sidr.contains(id) {
            return id;
        }
    }
}

/// The port's key in the table.
fn port_key(port: &CmPortShared) -> u64 {
    core::ptr::from_ref(port) as usize as u64
}

/// Arms the timer for the earliest deadline, unless it fires before.
fn rearm_locked(t: &Arc<Tables>, inner: &mut Inner) {
    let Some(at) = inner.conns.next_deadline() else {
        return;
    };
    if inner.armed_at.is_some_and(|a| a <= at) {
        return;
    }
    inner.armed_at = Some(at);
    let us = at
        .saturating_sub(now_ms())
        .saturating_mul(1000)
        .min(u64::from(u32::MAX));
    Timer::arm_us(t, us.max(1) as u32);
}

/// Why [`admit`] refused a REQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The port or the source has its bound of half-open connections.
    Bound,
    /// No memory (or no table).
    NoMem,
}

/// Adds `conn` (passive, its REQ just came from `from`) as half-open,
/// unless its port or its source has [`LIMITS`]' bound.
pub(crate) fn admit(conn: &Arc<CmConn>, from: &MadAddr) -> core::result::Result<(), Refused> {
    let t = TABLES.get().ok_or(Refused::NoMem)?;
    let id = conn.local_comm_id();
    let source = Source {
        port: port_key(conn.port()),
        addr: from.ah.grh.dgid.0,
    };
    let r = t
        .inner
        .lock()
        .conns
        .admit(id, conn.clone(), source, &LIMITS);
    match r {
        Ok(()) => Ok(()),
        Err(AdmitError::PortFull | AdmitError::SourceFull) => Err(Refused::Bound),
        Err(AdmitError::Exists | AdmitError::Map(_)) => Err(Refused::NoMem),
    }
}

/// The half-open connections on `port`.
pub fn half_open(port: &CmPortShared) -> u32 {
    TABLES
        .get()
        .map_or(0, |t| t.inner.lock().conns.half_open(port_key(port)))
}

/// How many connections the CM has (all ports).
pub fn conn_count() -> usize {
    TABLES.get().map_or(0, |t| t.inner.lock().conns.len())
}

/// Adds `conn` (active, its REQ about to go), with no keys yet.
pub(crate) fn insert(conn: &Arc<CmConn>) -> Result {
    let Some(t) = TABLES.get() else { return Ok(()) };
    let id = conn.local_comm_id();
    let r = t.inner.lock().conns.insert(id, conn.clone());
    match r {
        Ok(()) | Err(AdmitError::Exists) => Ok(()),
        Err(_) => Err(ENOMEM),
    }
}

/// Brings the table's keys of `conn` (our communication ID `id`) up to
/// `keys`, if it is in the table: an `idle` connection leaves it. Called
/// under the connection's lock, after each change.
pub(crate) fn sync(conn: &Arc<CmConn>, id: u32, idle: bool, keys: &Keys) {
    let Some(t) = TABLES.get() else { return };
    let gone;
    {
        let mut inner = t.inner.lock();
        if !inner.conns.get(id).is_some_and(|c| Arc::ptr_eq(c, conn)) {
            return;
        }
        if idle {
            gone = inner.conns.remove(id);
        } else {
            gone = None;
            if inner.conns.update(id, keys).is_err() && crate::kshim::ratelimit::log_allowed() {
                pr_warn!("rdma cm: no memory to index connection {:#x}\n", id);
            }
            rearm_locked(&t, &mut inner);
        }
    }
    drop(gone);
}

/// Removes every connection and SIDR request on `port` (the device
/// goes): the users of SIDR REQs of ours are told
/// [`SidrEvent::Timeout`].
pub(crate) fn remove_port(port: &CmPortShared) {
    let Some(t) = TABLES.get() else { return };
    let key = port_key(port);
    let mut sidrs: KVec<Arc<SidrActive>> = KVec::new();
    t.inner.lock().sidr.remove_port(key, |a| {
        let _ = sidrs.push(a, GFP_KERNEL);
    });
    for a in sidrs.iter() {
        a.finish(SidrEvent::Timeout);
    }
    drop(sidrs);
    loop {
        let mut gone: KVec<Arc<CmConn>> = KVec::new();
        {
            let mut inner = t.inner.lock();
            let mut ids: KVec<u32> = KVec::new();
            inner.conns.for_each(|id, c| {
                if port_key(c.port()) == key {
                    let _ = ids.push(id, GFP_KERNEL);
                }
            });
            if ids.is_empty() {
                return;
            }
            for id in ids.iter() {
                if let Some(c) = inner.conns.remove(*id) {
                    let _ = gone.push(c, GFP_KERNEL);
                }
            }
        }
        drop(gone);
    }
}

/// The connection whose communication ID is `id`, on `port`.
pub(crate) fn find_local(port: &CmPortShared, id: u32) -> Option<Arc<CmConn>> {
    let t = TABLES.get()?;
    let inner = t.inner.lock();
    inner
        .conns
        .get(id)
        .filter(|c| core::ptr::eq(&**c.port(), port))
        .cloned()
}

/// The connection that is the peer's `(comm_id, guid)`.
pub(crate) fn find_peer(comm_id: u32, guid: u64) -> Option<Arc<CmConn>> {
    let t = TABLES.get()?;
    let mut inner = t.inner.lock();
    inner.conns.find_peer(comm_id, guid).cloned()
}

/// A connection that still holds the peer's QP `qpn` of node `guid`
/// (`cm_insert_remote_qpn` of the C finds it), timewait included.
pub(crate) fn find_remote_qp(qpn: u32, guid: u64) -> Option<Arc<CmConn>> {
    let t = TABLES.get()?;
    let mut inner = t.inner.lock();
    inner.conns.find_remote_qp(qpn, guid).cloned()
}

/// The listeners of `service_id`, taken out of the table's lock (their
/// `takes` may lock their owners).
impl Tables {
    fn listeners_of(&self, service_id: u64) -> KVec<Arc<dyn ListenUser>> {
        let mut inner = self.inner.lock();
        let mut v = KVec::new();
        let mut cur = inner.listeners.cursor_lower_bound(&(service_id, 0));
        while let Some(c) = cur {
            let (k, u) = c.current();
            if k.0 != service_id {
                break;
            }
            let _ = v.push(u.clone(), GFP_KERNEL);
            cur = c.move_next();
        }
        v
    }
}

/// The listener of `req`'s service ID that takes it.
pub(crate) fn find_listener(port: &CmPortShared, req: &Req) -> Option<Arc<dyn ListenUser>> {
    let t = TABLES.get()?;
    let users = t.listeners_of(req.service_id);
    users.iter().find(|u| u.takes(port, req)).cloned()
}

/// The source of a MAD from `from` on `port`, as the SIDR table keys it.
fn source(port: &CmPortShared, from: &MadAddr) -> Source {
    Source {
        port: port_key(port),
        addr: from.ah.grh.dgid.0,
    }
}

/// Adds `a`, a SIDR REQ of ours about to go to `to`.
pub(crate) fn sidr_start(a: &Arc<SidrActive>, to: &MadAddr) -> Result {
    let t = TABLES.get().ok_or(kernel::error::code::ENODEV)?;
    let from = source(a.port(), to);
    let r = t
        .inner
        .lock()
        .sidr
        .start(a.request_id_of(), from, a.clone());
    match r {
        Ok(()) => Ok(()),
        Err(StartError::Exists) => Err(kernel::error::code::EBUSY),
        Err(StartError::Map(e)) => Err(e),
    }
}

/// Removes our SIDR REQ `request_id`, returning it if it was there.
pub(crate) fn sidr_take(request_id: u32) -> Option<Arc<SidrActive>> {
    TABLES.get()?.inner.lock().sidr.take(request_id)
}

/// Removes and returns our SIDR REQ that `rep`, received on `port` from
/// `from`, answers.
pub(crate) fn sidr_take_rep(
    port: &CmPortShared,
    from: &MadAddr,
    rep: &SidrRep,
) -> Option<Arc<SidrActive>> {
    let src = source(port, from);
    TABLES.get()?.inner.lock().sidr.take_rep(&src, rep)
}

/// The key of the SIDR REQ `req` received on `port` from `from`.
pub(crate) fn sidr_remote_key(port: &CmPortShared, from: &MadAddr, req: &SidrReq) -> RemoteKey {
    RemoteKey {
        from: source(port, from),
        request_id: req.request_id,
    }
}

/// Takes a received SIDR REQ as waiting for its answer, unless it is a
/// duplicate of one that does, or the port has too many waiting.
pub(crate) fn sidr_begin_remote(key: RemoteKey) -> core::result::Result<(), RemoteError<Error>> {
    let t = TABLES.get().ok_or(RemoteError::Full)?;
    let r = t.inner.lock().sidr.begin_remote(key);
    r
}

/// A received SIDR REQ was answered.
pub(crate) fn sidr_end_remote(key: &RemoteKey) {
    if let Some(t) = TABLES.get() {
        t.inner.lock().sidr.end_remote(key);
    }
}

/// For the SIDR REQ `req` on `port`: whether any listener has its
/// service ID, and the first that takes it.
pub(crate) fn find_sidr_listener(
    port: &CmPortShared,
    req: &SidrReq,
) -> (bool, Option<Arc<dyn ListenUser>>) {
    let Some(t) = TABLES.get() else {
        return (false, None);
    };
    let users = t.listeners_of(req.service_id);
    let taker = users.iter().find(|u| u.takes_sidr(port, req)).cloned();
    (!users.is_empty(), taker)
}

impl Listener {
    /// Listens for REQs of `service_id`; `user` decides which it takes.
    pub fn new(service_id: u64, user: Arc<dyn ListenUser>) -> Result<Listener> {
        let t = TABLES.get().ok_or(kernel::error::code::ENODEV)?;
        let mut inner = t.inner.lock();
        inner.next_listener += 1;
        let key = (service_id, inner.next_listener);
        OrdMap::insert(&mut inner.listeners, key, user)?;
        Ok(Listener { key })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(t) = TABLES.get() {
            let gone = t.inner.lock().listeners.remove(&self.key);
            drop(gone);
        }
    }
}
