// SPDX-License-Identifier: GPL-2.0

//! rdma_cm ids: addresses, routes, the QP, connections and listeners, and
//! the delivery of their events.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::c_str;
use kernel::error::code::{EINVAL, ENODEV};

use crate::kshim::errno::{eaddrnotavail, enotconn, etimedout};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use crate::cm::conn::{CmConn, ConnEvent, ConnUser};
use crate::cm::port::CmPortShared;
use crate::cm::table::{ListenUser, Listener};
use crate::device::client::{Client, ClientRegistration};
use crate::device::Device;
use crate::kshim::global::Global;
use crate::kshim::route::NetNs;
use crate::kshim::sync::SpinLockIrq;
use crate::kshim::vec::{remove, retain};
use crate::mad::MadAddr;
use crate::spec::attr::{Gid, Mtu};
use crate::spec::cm_msg::{
    service_id_port, tcp_service_id, Bytes, CmaHeader, RejReason, Rep, Req, ReqPath,
    REQ_PRIVATE_DATA_LEN, TRANSPORT_RC,
};
use crate::spec::cm_state::ack_timeout;
use crate::spec::opcodes::Access;
use crate::spec::qp_state::{AttrMask, QpState, QpType};
use crate::verbs::ah::{AhAttr, GlobalRoute};
use crate::verbs::pd::PdCore;
use crate::verbs::qp::{Qp, QpAttr, QpCore, QpInitAttr};

/// The packet life time of a RoCE path without an SA (IBA time).
const PACKET_LIFE_TIME: u8 = 16;
/// The CM response timeout rdma_cm puts in its REQs (IBA time).
const CM_RESPONSE_TIMEOUT: u8 = 20;
/// The REQ's Max CM Retries rdma_cm asks for.
const MAX_CM_RETRIES: u8 = 15;
/// The service timeout of the MRA rdma_cm sends for a request its consumer
/// has not accepted yet (`CMA_CM_MRA_SETTING`: about 65 s).
const MRA_SERVICE_TIMEOUT: u8 = 24;
/// The ACK delay of our software devices (IBA time), as rxe reports.
const CA_ACK_DELAY: u8 = 15;
/// The rdma_cm header in front of a REQ's private data.
const CMA_HDR_LEN: usize = crate::spec::cm_msg::CMA_HDR_LEN;

/// An IP address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr {
    /// IPv4.
    V4([u8; 4]),
    /// IPv6 (an IPv4-mapped one counts as IPv4 where it matters).
    V6([u8; 16]),
}

impl IpAddr {
    /// The 16 bytes of the address, IPv4 mapped (`::ffff:a.b.c.d`).
    pub fn to16(self) -> [u8; 16] {
        match self {
            IpAddr::V4(a) => Gid::from_ipv4(a).0,
            IpAddr::V6(a) => a,
        }
    }

    /// The address of 16 bytes, IPv4 if mapped.
    pub fn from16(a: [u8; 16]) -> IpAddr {
        match Gid(a).to_ipv4() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(a),
        }
    }

    /// Whether this is the wildcard (`0.0.0.0` or `::`).
    pub fn is_any(self) -> bool {
        match self {
            IpAddr::V4(a) => a == [0; 4],
            IpAddr::V6(a) => a == [0; 16],
        }
    }
}

/// An IP address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockAddr {
    /// The address.
    pub ip: IpAddr,
    /// The port.
    pub port: u16,
}

/// What happened to an id (`enum rdma_cm_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `resolve_addr` done.
    AddrResolved,
    /// `resolve_addr` failed (`status`).
    AddrError,
    /// `resolve_route` done.
    RouteResolved,
    /// `resolve_route` failed.
    RouteError,
    /// A connection request on a listener (`new_id`).
    ConnectRequest,
    /// No answer after the CM's retries.
    Unreachable,
    /// The peer rejected (`status` is the REJ's reason).
    Rejected,
    /// Connected.
    Established,
    /// Disconnected.
    Disconnected,
    /// The id's device is going away.
    DeviceRemoval,
    /// Timewait is over: the QP may be reused.
    TimewaitExit,
}

/// The connection parameters (`struct rdma_conn_param`).
#[derive(Debug, Default)]
pub struct ConnParam {
    /// Private data for the peer (REQ: up to 56 bytes; REP: 196; REJ 148).
    pub private_data: KVec<u8>,
    /// RDMA READs/atomics the peer may have outstanding at us.
    pub responder_resources: u8,
    /// RDMA READs/atomics we may have outstanding at the peer.
    pub initiator_depth: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// Transport retries (0 to 7).
    pub retry_count: u8,
    /// RNR retries (0 to 7, 7 meaning infinite).
    pub rnr_retry_count: u8,
    /// The REQ's CM response timeout (IBA time; rdma_cm's 20 if `None`),
    /// for tests that need a peer that never answers to time out soon.
    pub cm_response_timeout: Option<u8>,
    /// The REQ's Max CM Retries (rdma_cm's 15 if `None`).
    pub max_cm_retries: Option<u8>,
}

/// An event (`struct rdma_cm_event`).
pub struct CmEvent {
    /// What happened.
    pub kind: EventKind,
    /// An errno (negative) or, for `Rejected`, the REJ's reason.
    pub status: i32,
    /// The peer's private data (REQ: its 56 bytes after the rdma_cm
    /// header; REP 196; REJ 148).
    pub private_data: KVec<u8>,
    /// For `ConnectRequest`: the new id, to keep (and accept or reject)
    /// or to drop (which rejects it).
    pub new_id: Option<CmId>,
    /// For `ConnectRequest`: the peer's offer (responder resources and
    /// initiator depth as the REQ has them).
    pub param: ConnParam,
}

impl CmEvent {
    fn new(kind: EventKind, status: i32) -> CmEvent {
        CmEvent {
            kind,
            status,
            private_data: KVec::new(),
            new_id: None,
            param: ConnParam::default(),
        }
    }
}

/// What the handler wants done with the id after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Nothing.
    Keep,
    /// Destroy it (the C handler's non-zero return).
    Destroy,
}

/// The owner of an id.
pub trait CmHandler: Send + Sync {
    /// An event of `id`; see the module doc for what may be called here.
    fn event(&self, id: &Arc<CmIdCore>, ev: CmEvent) -> Disposition;
}

/// Where an id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    AddrBound,
    AddrResolved,
    RouteResolved,
    Listening,
    /// Passive: REQ received, not answered.
    ReqRcvd,
    Connecting,
    Established,
    Disconnected,
    Destroyed,
}

/// What an id is bound to.
struct Bound {
    dev: Arc<Device>,
    port: u32,
    sgid_index: u8,
    mtu: Mtu,
}

struct State {
    phase: Phase,
    src: Option<SockAddr>,
    dst: Option<SockAddr>,
    bound: Option<Bound>,
    qp: Option<Qp>,
    conn: Option<Arc<CmConn>>,
    listener: Option<Listener>,
    /// Passive: the REQ.
    req: Option<Req>,
    /// Active: the PSN we receive at (our REQ's).
    rq_psn: u32,
    /// Active: what `connect` asked for (retries).
    param_retry: u8,
    /// Active: the REP's private data, for the Established event.
    rep_data: KVec<u8>,
    /// Passive: the listener the request came to.
    parent: Option<Arc<CmIdCore>>,
}

struct Queue {
    events: KVec<CmEvent>,
    running: bool,
    /// The task running the handler, while it runs.
    task: usize,
}

/// The calling task, as a number.
fn current_task() -> usize {
    let t = kernel::current!();
    core::ptr::from_ref::<kernel::task::Task>(t) as usize
}

/// An id, as its handler and the CM see it.
#[pin_data]
pub struct CmIdCore {
    ns: NetNs,
    handler: Arc<dyn CmHandler>,
    #[pin]
    st: Mutex<State>,
    #[pin]
    queue: SpinLockIrq<Queue>,
    destroyed: AtomicBool,
    #[pin]
    work: Work<CmIdCore>,
}

impl_has_work! {
    impl HasWork<Self> for CmIdCore { self.work }
}

impl WorkItem for CmIdCore {
    type Pointer = Arc<CmIdCore>;

    fn run(this: Arc<CmIdCore>) {
        let me = current_task();
        loop {
            let ev = {
                let mut q = this.queue.lock();
                match remove(&mut q.events, 0) {
                    Some(ev) => {
                        q.task = me;
                        ev
                    }
                    None => {
                        q.running = false;
                        q.task = 0;
                        return;
                    }
                }
            };
            if this.destroyed.load(Ordering::Acquire) {
                continue;
            }
            // A request whose listener went before it was reported is
            // rejected: its new id goes with the event.
            if ev.kind == EventKind::ConnectRequest && this.parent_gone() {
                drop(ev);
                continue;
            }
            let request = ev.kind == EventKind::ConnectRequest;
            if this.handler.event(&this, ev) == Disposition::Destroy {
                this.destroy();
            } else if request {
                this.mra_if_unanswered();
            }
        }
    }
}

/// An id, owned by a ULP: destroyed when dropped (`rdma_destroy_id`).
pub struct CmId(Arc<CmIdCore>);

impl core::ops::Deref for CmId {
    type Target = Arc<CmIdCore>;

    fn deref(&self) -> &Arc<CmIdCore> {
        &self.0
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        self.0.destroy();
    }
}

/// Every live id (for device removal).
#[pin_data]
struct Ids {
    #[pin]
    list: Mutex<KVec<Arc<CmIdCore>>>,
}

static IDS: Global<Ids> = Global::new();

impl CmId {
    /// A new id in namespace `ns` (`rdma_create_id`, RC, port space TCP).
    pub fn new(ns: NetNs, handler: Arc<dyn CmHandler>) -> Result<CmId> {
        let core = CmIdCore::new(ns, handler)?;
        let ids = IDS.get().ok_or(ENODEV)?;
        ids.list.lock().push(core.clone(), GFP_KERNEL)?;
        Ok(CmId(core))
    }
}

fn gid_of(ip: IpAddr) -> Gid {
    Gid(ip.to16())
}

/// Moves a connected QP to RTR with `rtr`, then to RTS with `rts` (what
/// rdma_cm's `cma_modify_qp_rtr` and `_rts` set from the REQ and REP).
fn to_rts(qp: &Qp, rtr: &QpAttr, rts: &QpAttr) -> Result {
    qp.modify(
        rtr,
        AttrMask::STATE
            | AttrMask::AV
            | AttrMask::PATH_MTU
            | AttrMask::DEST_QPN
            | AttrMask::RQ_PSN
            | AttrMask::MAX_DEST_RD_ATOMIC
            | AttrMask::MIN_RNR_TIMER,
    )?;
    qp.modify(
        rts,
        AttrMask::STATE
            | AttrMask::SQ_PSN
            | AttrMask::TIMEOUT
            | AttrMask::RETRY_CNT
            | AttrMask::RNR_RETRY
            | AttrMask::MAX_QP_RD_ATOMIC,
    )
}

/// The addresses of an rdma_cm header: (source, destination).
fn hdr_addrs(hdr: &CmaHeader) -> (IpAddr, IpAddr) {
    match (hdr.src_ipv4(), hdr.dst_ipv4()) {
        (Some(s), Some(d)) => (IpAddr::V4(s), IpAddr::V4(d)),
        _ => (IpAddr::from16(hdr.src_addr), IpAddr::from16(hdr.dst_addr)),
    }
}

impl CmIdCore {
    fn new(ns: NetNs, handler: Arc<dyn CmHandler>) -> Result<Arc<CmIdCore>> {
        Arc::pin_init(
            pin_init!(CmIdCore {
                ns,
                handler,
                st <- new_mutex!(
                    State {
                        phase: Phase::Idle,
                        src: None,
                        dst: None,
                        bound: None,
                        qp: None,
                        conn: None,
                        listener: None,
                        req: None,
                        rq_psn: 0,
                        param_retry: 7,
                        rep_data: KVec::new(),
                        parent: None,
                    },
                    "CmIdCore::st"
                ),
                queue <- crate::new_spinlock_irq!(
                    Queue {
                        events: KVec::new(),
                        running: false,
                        task: 0,
                    },
                    "CmIdCore::queue"
                ),
                destroyed: AtomicBool::new(false),
                work <- new_work!("CmIdCore::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Queues an event for the handler.
    fn post(self: &Arc<Self>, ev: CmEvent) {
        if self.destroyed.load(Ordering::Acquire) {
            return;
        }
        let start = {
            let mut q = self.queue.lock();
            if q.events.push(ev, GFP_ATOMIC).is_err() {
                return;
            }
            !core::mem::replace(&mut q.running, true)
        };
        if start {
            let _ = workqueue::system_unbound().enqueue(self.clone());
        }
    }

    /// After the request's event: if the consumer has not answered yet,
    /// a delayed MRA, so that a duplicate REQ is answered with an MRA
    /// while the consumer decides (rdma_cm does the same).
    fn mra_if_unanswered(&self) {
        let conn = {
            let st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return;
            }
            st.conn.clone()
        };
        if let Some(c) = conn {
            c.mra_delayed(MRA_SERVICE_TIMEOUT);
        }
    }

    /// Whether the listener of this (passive) id was destroyed.
    fn parent_gone(&self) -> bool {
        self.st
            .lock()
            .parent
            .as_ref()
            .is_some_and(|p| p.destroyed.load(Ordering::Acquire))
    }

    /// The source address (after `resolve_addr` or `bind_addr`).
    pub fn src_addr(&self) -> Option<SockAddr> {
        self.st.lock().src
    }

    /// The destination address.
    pub fn dst_addr(&self) -> Option<SockAddr> {
        self.st.lock().dst
    }

    /// The device the id is bound to, and its port.
    pub fn device(&self) -> Option<(Arc<Device>, u32)> {
        self.st
            .lock()
            .bound
            .as_ref()
            .map(|b| (b.dev.clone(), b.port))
    }

    /// The id's QP, once created.
    pub fn qp(&self) -> Option<Arc<QpCore>> {
        self.st.lock().qp.as_ref().map(|q| q.core().clone())
    }

    /// Finds our device, port and GID index of source address `src` on
    /// the netdev `ifindex` of the id's namespace.
    fn find_port(&self, ifindex: i32, src: [u8; 16]) -> Result<Bound> {
        for d in crate::device::devices()?.iter() {
            let dev = d.arc();
            for port in 1..=dev.port_count() {
                if !dev.has_mad(port) {
                    continue;
                }
                let Some(nd) = dev.netdev(port) else { continue };
                if nd.net_id() != self.ns.id() || (ifindex != 0 && nd.ifindex() != ifindex) {
                    continue;
                }
                let Some((_, index)) = dev.find_gid_on_port(port, &Gid(src)) else {
                    continue;
                };
                let mtu = dev.query_port(port)?.active_mtu;
                return Ok(Bound {
                    dev: dev.clone(),
                    port,
                    sgid_index: index as u8,
                    mtu,
                });
            }
        }
        Err(eaddrnotavail())
    }

    /// Resolves `dst` (`rdma_resolve_addr`): the route from `src` (or the
    /// one the routing table picks) in the id's namespace, and our device
    /// on its netdev. The outcome comes as `AddrResolved` or `AddrError`.
    pub fn resolve_addr(self: &Arc<Self>, src: Option<SockAddr>, dst: SockAddr) -> Result {
        let from = src.map_or([0u8; 16], |s| s.ip.to16());
        let route = match dst.ip {
            IpAddr::V4(d) => {
                let s4 = Gid(from).to_ipv4().unwrap_or([0; 4]);
                self.ns.route_v4(d, s4)
            }
            IpAddr::V6(d) => self.ns.route_v6(d, from),
        };
        let found = route.and_then(|r| {
            let mut b = self.find_port(r.ifindex, r.src)?;
            if let Some(m) = Mtu::largest_within(r.mtu) {
                if m.bytes() < b.mtu.bytes() {
                    b.mtu = m;
                }
            }
            Ok((r, b))
        });
        let mut st = self.st.lock();
        if !matches!(st.phase, Phase::Idle | Phase::AddrBound) {
            return Err(EINVAL);
        }
        match found {
            Ok((r, b)) => {
                let port = match src {
                    Some(s) if s.port != 0 => s.port,
                    _ => 0x8000 | (crate::kshim::random::u32() as u16 & 0x3fff),
                };
                st.src = Some(SockAddr {
                    ip: IpAddr::from16(r.src),
                    port,
                });
                st.dst = Some(dst);
                st.bound = Some(b);
                st.phase = Phase::AddrResolved;
                drop(st);
                self.post(CmEvent::new(EventKind::AddrResolved, 0));
            }
            Err(e) => {
                drop(st);
                self.post(CmEvent::new(EventKind::AddrError, e.to_errno()));
            }
        }
        Ok(())
    }

    /// Resolves the route (`rdma_resolve_route`): over RoCE without an SA
    /// it is made from the address; `RouteResolved` follows.
    pub fn resolve_route(self: &Arc<Self>) -> Result {
        let mut st = self.st.lock();
        if st.phase != Phase::AddrResolved {
            return Err(EINVAL);
        }
        st.phase = Phase::RouteResolved;
        drop(st);
        self.post(CmEvent::new(EventKind::RouteResolved, 0));
        Ok(())
    }

    /// Creates the id's RC QP on its device (`rdma_create_qp`) and moves
    /// it to INIT; `init.qp_type` must be RC.
    pub fn create_qp(self: &Arc<Self>, pd: &Arc<PdCore>, init: &QpInitAttr<'_>) -> Result {
        let mut st = self.st.lock();
        let b = st.bound.as_ref().ok_or(EINVAL)?;
        if st.qp.is_some() || init.qp_type != QpType::Rc || !Arc::ptr_eq(pd.device(), &b.dev) {
            return Err(EINVAL);
        }
        let qp = Qp::create(pd, init)?;
        let attr = QpAttr {
            qp_state: QpState::Init,
            pkey_index: 0,
            port_num: b.port,
            qp_access_flags: Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
            ..QpAttr::default()
        };
        qp.modify(
            &attr,
            AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS,
        )?;
        st.qp = Some(qp);
        Ok(())
    }

    /// The address of the peer's port for the QP and the CM.
    fn ah(b: &Bound, dgid: Gid, flow_label: u32, hop_limit: u8, tclass: u8) -> AhAttr {
        AhAttr {
            port_num: b.port,
            sl: 0,
            static_rate: 0,
            grh: GlobalRoute {
                dgid,
                flow_label,
                sgid_index: b.sgid_index,
                hop_limit,
                traffic_class: tclass,
            },
            dmac: [0; 6],
        }
    }

    /// Connects (`rdma_connect`): after `resolve_route` and `create_qp`.
    pub fn connect(self: &Arc<Self>, param: &ConnParam) -> Result {
        let (conn, req) = {
            let mut st = self.st.lock();
            if st.phase != Phase::RouteResolved {
                return Err(EINVAL);
            }
            let (src, dst) = (st.src.ok_or(EINVAL)?, st.dst.ok_or(EINVAL)?);
            let b = st.bound.as_ref().ok_or(EINVAL)?;
            let qpn = st.qp.as_ref().ok_or(EINVAL)?.qpn();
            if param.private_data.len() > REQ_PRIVATE_DATA_LEN - CMA_HDR_LEN {
                return Err(EINVAL);
            }
            let mut pd = [0u8; REQ_PRIVATE_DATA_LEN];
            let hdr = match (src.ip, dst.ip) {
                (IpAddr::V4(s), IpAddr::V4(d)) => CmaHeader::ipv4(src.port, s, d),
                _ => CmaHeader::ipv6(src.port, src.ip.to16(), dst.ip.to16()),
            };
            hdr.write(&mut pd).map_err(|_| EINVAL)?;
            pd[CMA_HDR_LEN..CMA_HDR_LEN + param.private_data.len()]
                .copy_from_slice(&param.private_data);
            let flow_label = (u32::from(src.port) * 31 + u32::from(dst.port)) & 0xf_ffff;
            let psn = crate::kshim::random::u32() & 0xff_ffff;
            let (sgid, dgid) = (gid_of(src.ip), gid_of(dst.ip));
            let req = Req {
                service_id: tcp_service_id(dst.port),
                local_ca_guid: b.dev.node_guid(),
                local_qpn: qpn,
                responder_resources: param.responder_resources,
                initiator_depth: param.initiator_depth,
                remote_cm_response_timeout: param
                    .cm_response_timeout
                    .unwrap_or(CM_RESPONSE_TIMEOUT)
                    .min(31),
                transport_service_type: TRANSPORT_RC,
                end_to_end_flow_control: param.flow_control,
                starting_psn: psn,
                local_cm_response_timeout: CM_RESPONSE_TIMEOUT,
                retry_count: param.retry_count.min(7),
                partition_key: 0xffff,
                path_mtu: b.mtu as u8,
                rnr_retry_count: param.rnr_retry_count.min(7),
                max_cm_retries: param.max_cm_retries.unwrap_or(MAX_CM_RETRIES).min(15),
                primary_path: ReqPath {
                    local_lid: 0xffff,
                    remote_lid: 0xffff,
                    local_gid: sgid,
                    remote_gid: dgid,
                    flow_label,
                    packet_rate: 0,
                    traffic_class: 0,
                    hop_limit: 64,
                    sl: 0,
                    subnet_local: false,
                    local_ack_timeout: PACKET_LIFE_TIME + 1,
                },
                private_data: Bytes::from_slice(&pd).map_err(|_| EINVAL)?,
                ..Req::default()
            };
            let shared = crate::cm::port::shared(&b.dev, b.port).ok_or(ENODEV)?;
            let addr = MadAddr {
                ah: Self::ah(b, dgid, flow_label, 64, 0),
                remote_qpn: 1,
                pkey_index: 0,
            };
            let conn = CmConn::new(shared, addr)?;
            st.rq_psn = psn;
            st.param_retry = param.retry_count.min(7);
            st.conn = Some(conn.clone());
            st.phase = Phase::Connecting;
            (conn, req)
        };
        let user: Arc<dyn ConnUser> = self.clone();
        conn.set_user(Some(user));
        conn.connect(req, PACKET_LIFE_TIME)
    }

    /// Binds a source address (`rdma_bind_addr`): the wildcard, or an
    /// address of ours in the id's namespace.
    pub fn bind_addr(self: &Arc<Self>, addr: SockAddr) -> Result {
        if !addr.ip.is_any() {
            self.find_port(0, addr.ip.to16())?;
        }
        let mut st = self.st.lock();
        if st.phase != Phase::Idle {
            return Err(EINVAL);
        }
        st.src = Some(addr);
        st.phase = Phase::AddrBound;
        Ok(())
    }

    /// Listens on the bound address and port (`rdma_listen`).
    pub fn listen(self: &Arc<Self>) -> Result {
        let port = {
            let st = self.st.lock();
            if st.phase != Phase::AddrBound {
                return Err(EINVAL);
            }
            st.src.ok_or(EINVAL)?.port
        };
        let user: Arc<dyn ListenUser> = self.clone();
        let l = Listener::new(tcp_service_id(port), user)?;
        let mut st = self.st.lock();
        st.listener = Some(l);
        st.phase = Phase::Listening;
        Ok(())
    }

    /// Accepts a connection request (`rdma_accept`) on the id the
    /// `ConnectRequest` event gave: the QP goes to RTR and RTS with the
    /// REQ's values, then the REP goes.
    pub fn accept(self: &Arc<Self>, param: &ConnParam) -> Result {
        let (conn, rep) = {
            let mut st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return Err(EINVAL);
            }
            let req = st.req.ok_or(EINVAL)?;
            let b = st.bound.as_ref().ok_or(EINVAL)?;
            let qp = st.qp.as_ref().ok_or(EINVAL)?;
            let path = &req.primary_path;
            let psn = crate::kshim::random::u32() & 0xff_ffff;
            let mtu = Mtu::from_raw(u32::from(req.path_mtu)).unwrap_or(b.mtu);
            let rtr = QpAttr {
                qp_state: QpState::Rtr,
                path_mtu: mtu,
                dest_qp_num: req.local_qpn,
                rq_psn: psn,
                ah_attr: Self::ah(
                    b,
                    path.local_gid,
                    path.flow_label,
                    path.hop_limit,
                    path.traffic_class,
                ),
                max_dest_rd_atomic: param.responder_resources,
                min_rnr_timer: 0,
                ..QpAttr::default()
            };
            let rts = QpAttr {
                qp_state: QpState::Rts,
                sq_psn: req.starting_psn,
                timeout: path.local_ack_timeout,
                retry_cnt: req.retry_count,
                rnr_retry: req.rnr_retry_count,
                max_rd_atomic: param.initiator_depth,
                ..QpAttr::default()
            };
            to_rts(qp, &rtr, &rts)?;
            let rep = Rep {
                local_qpn: qp.qpn(),
                starting_psn: psn,
                responder_resources: param.responder_resources,
                initiator_depth: param.initiator_depth,
                target_ack_delay: CA_ACK_DELAY,
                end_to_end_flow_control: param.flow_control,
                rnr_retry_count: param.rnr_retry_count.min(7),
                local_ca_guid: b.dev.node_guid(),
                private_data: Bytes::from_slice(&param.private_data).map_err(|_| EINVAL)?,
                ..Rep::default()
            };
            st.phase = Phase::Connecting;
            (st.conn.clone().ok_or(EINVAL)?, rep)
        };
        conn.accept(rep)
    }

    /// Rejects a connection request with private data (`rdma_reject`;
    /// the REJ's reason is CONSUMER_DEFINED, 28).
    pub fn reject(self: &Arc<Self>, private_data: &[u8]) -> Result {
        let conn = {
            let mut st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return Err(EINVAL);
            }
            st.phase = Phase::Disconnected;
            st.conn.clone().ok_or(EINVAL)?
        };
        conn.reject(RejReason::ConsumerDefined, private_data)
    }

    /// Disconnects (`rdma_disconnect`): the QP to ERR, then a DREQ (or
    /// nothing if the peer's DREQ came first).
    pub fn disconnect(self: &Arc<Self>) -> Result {
        let conn = {
            let mut st = self.st.lock();
            if !matches!(
                st.phase,
                Phase::Established | Phase::Disconnected | Phase::Connecting
            ) {
                return Err(enotconn());
            }
            Self::qp_to_err(&st);
            st.phase = Phase::Disconnected;
            st.conn.clone()
        };
        if let Some(c) = conn {
            // After the peer's DREQ, the CM has answered it already.
            let _ = c.disconnect();
        }
        Ok(())
    }

    fn qp_to_err(st: &State) {
        if let Some(qp) = st.qp.as_ref() {
            let attr = QpAttr {
                qp_state: QpState::Err,
                ..QpAttr::default()
            };
            let _ = qp.modify(&attr, AttrMask::STATE);
        }
    }

    /// Destroys the id (`rdma_destroy_id`): its connection is ended, its
    /// QP destroyed, its listener removed; no event is delivered after.
    pub fn destroy(self: &Arc<Self>) {
        if self.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        let (conn, qp, listener, parent) = {
            let mut st = self.st.lock();
            st.phase = Phase::Destroyed;
            (
                st.conn.take(),
                st.qp.take(),
                st.listener.take(),
                st.parent.take(),
            )
        };
        drop(parent);
        drop(listener);
        if let Some(c) = conn {
            c.set_user(None);
            c.destroy();
        }
        drop(qp);
        // Events still queued are dropped (a new id inside one with them),
        // and a handler running on another task is waited for, so that
        // none runs after this returns (`rdma_destroy_id`); from the
        // handler itself there is nothing to wait for.
        let events = {
            let mut q = self.queue.lock();
            core::mem::take(&mut q.events)
        };
        drop(events);
        let me = current_task();
        loop {
            let busy = {
                let q = self.queue.lock();
                q.running && q.task != 0 && q.task != me
            };
            if !busy {
                break;
            }
            crate::kshim::time::msleep(1);
        }
        self.st.lock().bound = None;
        if let Some(ids) = IDS.get() {
            retain(&mut ids.list.lock(), |i| !Arc::ptr_eq(i, self));
        }
    }

    /// The device goes: tell the handler, then let go of it.
    fn device_removal(self: &Arc<Self>) {
        self.post(CmEvent::new(EventKind::DeviceRemoval, 0));
    }

    /// After the handler saw DeviceRemoval (or never will): the QP and
    /// connection go; the id stays, unusable.
    fn release_device(self: &Arc<Self>) {
        let (conn, qp) = {
            let mut st = self.st.lock();
            Self::qp_to_err(&st);
            st.bound = None;
            (st.conn.take(), st.qp.take())
        };
        if let Some(c) = conn {
            c.set_user(None);
            c.destroy();
        }
        drop(qp);
    }

    fn on_device(&self, dev: &Device) -> bool {
        self.st
            .lock()
            .bound
            .as_ref()
            .is_some_and(|b| core::ptr::eq(&*b.dev, dev))
    }
}

impl ConnUser for CmIdCore {
    fn rep_received(&self, _conn: &Arc<CmConn>, rep: &Rep) -> Result {
        let mut st = self.st.lock();
        let b = st.bound.as_ref().ok_or(ENODEV)?;
        let (src, dst) = (st.src.ok_or(EINVAL)?, st.dst.ok_or(EINVAL)?);
        let qp = st.qp.as_ref().ok_or(EINVAL)?;
        let flow_label = (u32::from(src.port) * 31 + u32::from(dst.port)) & 0xf_ffff;
        let rtr = QpAttr {
            qp_state: QpState::Rtr,
            path_mtu: b.mtu,
            dest_qp_num: rep.local_qpn,
            rq_psn: st.rq_psn,
            ah_attr: Self::ah(b, gid_of(dst.ip), flow_label, 64, 0),
            max_dest_rd_atomic: rep.initiator_depth,
            min_rnr_timer: 0,
            ..QpAttr::default()
        };
        let rts = QpAttr {
            qp_state: QpState::Rts,
            sq_psn: rep.starting_psn,
            timeout: ack_timeout(rep.target_ack_delay, PACKET_LIFE_TIME),
            retry_cnt: st.param_retry,
            rnr_retry: rep.rnr_retry_count,
            max_rd_atomic: rep.responder_resources,
            ..QpAttr::default()
        };
        to_rts(qp, &rtr, &rts)?;
        let mut data = KVec::new();
        data.extend_from_slice(rep.private_data.as_ref(), GFP_KERNEL)?;
        st.rep_data = data;
        Ok(())
    }

    fn event(&self, _conn: &Arc<CmConn>, ev: ConnEvent) {
        let Some(me) = self.me() else { return };
        let out = {
            let mut st = self.st.lock();
            match ev {
                ConnEvent::Established => {
                    st.phase = Phase::Established;
                    let mut e = CmEvent::new(EventKind::Established, 0);
                    e.private_data = core::mem::take(&mut st.rep_data);
                    e
                }
                ConnEvent::Rejected {
                    reason,
                    private_data,
                } => {
                    st.phase = Phase::Disconnected;
                    let mut e = CmEvent::new(EventKind::Rejected, i32::from(reason));
                    let _ = e.private_data.extend_from_slice(&private_data, GFP_KERNEL);
                    e
                }
                ConnEvent::Unreachable => {
                    st.phase = Phase::Disconnected;
                    CmEvent::new(EventKind::Unreachable, etimedout().to_errno())
                }
                ConnEvent::Disconnected => {
                    // As rdma_cm: the QP is left as it is, so that what
                    // arrived before the DREQ still completes; the user's
                    // `disconnect` moves it to ERR.
                    st.phase = Phase::Disconnected;
                    CmEvent::new(EventKind::Disconnected, 0)
                }
                ConnEvent::TimewaitExit => CmEvent::new(EventKind::TimewaitExit, 0),
            }
        };
        me.post(out);
    }
}

impl ListenUser for CmIdCore {
    fn takes(&self, port: &CmPortShared, req: &Req) -> bool {
        let st = self.st.lock();
        if st.phase != Phase::Listening {
            return false;
        }
        let Some(bound) = st.src else { return false };
        let Some(nd) = port.device().netdev(port.port_num()) else {
            return false;
        };
        if nd.net_id() != self.ns.id() {
            return false;
        }
        let Ok(hdr) = req.cma_header() else {
            return false;
        };
        let (_, dst) = hdr_addrs(&hdr);
        match bound.ip {
            IpAddr::V4(a) if a == [0; 4] => matches!(dst, IpAddr::V4(_)),
            IpAddr::V6(a) if a == [0; 16] => true,
            ip => IpAddr::from16(ip.to16()) == dst,
        }
    }

    fn on_req(
        &self,
        port: &Arc<CmPortShared>,
        conn: &Arc<CmConn>,
        req: &Req,
        _from: &MadAddr,
    ) -> Result<Arc<dyn ConnUser>> {
        let hdr = req.cma_header().map_err(|_| EINVAL)?;
        let (src_ip, dst_ip) = hdr_addrs(&hdr);
        let dev = port.device();
        let (_, index) = dev
            .find_gid_on_port(port.port_num(), &gid_of(dst_ip))
            .ok_or_else(eaddrnotavail)?;
        let child = CmIdCore::new(self.ns.try_clone()?, self.handler.clone())?;
        // Before the child's lock: the list of ids comes first.
        let parent = self.me();
        {
            let mut st = child.st.lock();
            st.phase = Phase::ReqRcvd;
            st.src = Some(SockAddr {
                ip: dst_ip,
                port: service_id_port(req.service_id),
            });
            st.dst = Some(SockAddr {
                ip: src_ip,
                port: hdr.port,
            });
            st.bound = Some(Bound {
                dev: dev.clone(),
                port: port.port_num(),
                sgid_index: index as u8,
                mtu: Mtu::from_raw(u32::from(req.path_mtu)).unwrap_or(Mtu::Mtu1024),
            });
            st.req = Some(*req);
            st.conn = Some(conn.clone());
            st.parent = parent;
        }
        let ids = IDS.get().ok_or(ENODEV)?;
        ids.list.lock().push(child.clone(), GFP_KERNEL)?;
        let mut ev = CmEvent::new(EventKind::ConnectRequest, 0);
        ev.private_data
            .extend_from_slice(&req.private_data.as_ref()[CMA_HDR_LEN..], GFP_KERNEL)?;
        ev.param.responder_resources = req.responder_resources;
        ev.param.initiator_depth = req.initiator_depth;
        ev.param.flow_control = req.end_to_end_flow_control;
        ev.param.retry_count = req.retry_count;
        ev.param.rnr_retry_count = req.rnr_retry_count;
        ev.new_id = Some(CmId(child.clone()));
        child.post(ev);
        Ok(child)
    }
}

impl CmIdCore {
    /// An `Arc` of this id, from the list of live ids.
    fn me(&self) -> Option<Arc<CmIdCore>> {
        let ids = IDS.get()?;
        let list = ids.list.lock();
        list.iter().find(|i| core::ptr::eq(&***i, self)).cloned()
    }
}

/// The rdma_cm's internal client: device removal.
struct CmaClient;

impl Client for CmaClient {
    type Data = ();

    fn name(&self) -> &CStr {
        c_str!("rdma_cm")
    }

    fn add(&self, _dev: &Arc<Device>) -> Result<()> {
        Ok(())
    }

    fn remove(&self, dev: &Arc<Device>, _data: &()) {
        let Some(ids) = IDS.get() else { return };
        let on_dev: KVec<Arc<CmIdCore>> = {
            let list = ids.list.lock();
            let mut v = KVec::new();
            for i in list.iter() {
                if i.on_device(dev) {
                    let _ = v.push(i.clone(), GFP_KERNEL);
                }
            }
            v
        };
        for i in on_dev.iter() {
            i.device_removal();
        }
        // Let each handler see the event (bounded: a handler that blocks
        // does not hold the device forever), then let go of the device.
        for i in on_dev.iter() {
            for _ in 0..500 {
                if !i.queue.lock().running {
                    break;
                }
                crate::kshim::time::msleep(10);
            }
            i.release_device();
        }
    }
}

/// Held while the module is loaded; unregisters when dropped.
struct Registration {
    _reg: ClientRegistration<CmaClient>,
}

static CMA: Global<Registration> = Global::new();

/// Sets up the rdma_cm (module init, after the CM).
pub(crate) fn init() -> Result {
    IDS.replace(Some(Arc::pin_init(
        pin_init!(Ids {
            list <- new_mutex!(KVec::new(), "cma::IDS"),
        }),
        GFP_KERNEL,
    )?));
    let reg = ClientRegistration::new(CmaClient)?;
    CMA.replace(Some(Arc::new(Registration { _reg: reg }, GFP_KERNEL)?));
    Ok(())
}

/// Tears it down (module exit).
pub(crate) fn exit() {
    drop(CMA.replace(None));
    drop(IDS.replace(None));
}
