// SPDX-License-Identifier: GPL-2.0

//! The CM on each port: its MAD agent of the CM class, its counters, and
//! the internal client that sets them up and tears them down with the
//! device (after the MAD layer's client, so before it on removal).

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use kernel::error::code::ENODEV;

use crate::cm::conn::CmConn;
use crate::cm::counters::{CmCounters, DropReason, Group};
use crate::cm::sidr::{SidrEvent, SidrReply, SidrRequest, SIDR_COOKIE};
use crate::cm::table;
use crate::device::client::{Client, ClientRegistration};
use crate::device::sysfs::PortGroupsRegistration;
use crate::device::Device;
use crate::kshim::global::Global;
use crate::kshim::sync::SpinLockIrq;
use crate::mad::agent::AgentCore;
use crate::mad::{Agent, MadHandler, RecvMad, SendOpts, SendStatus};
use crate::spec::cm_msg::{
    Bytes, CmError, CmMessage, Drep, MsgResponse, Rej, RejReason, Req, SidrRep, SidrReq, SidrStatus,
};
use crate::spec::cm_sidr::RemoteError;
use crate::spec::mad::{
    CLASS_CM, CM_ATTR_APR, CM_ATTR_LAP, CM_ATTR_SIDR_REP, CM_ATTR_SIDR_REQ, CM_CLASS_VERSION,
    MAD_SIZE, METHOD_SEND,
};

/// What the CM of one port shares with its connections.
#[pin_data]
pub struct CmPortShared {
    dev: Arc<Device>,
    port_num: u32,
    /// The port's counters.
    pub counters: Arc<CmCounters>,
    /// The CM agent, to send through; gone when the device goes.
    #[pin]
    agent: SpinLockIrq<Option<Arc<AgentCore>>>,
}

impl CmPortShared {
    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The port number.
    pub fn port_num(&self) -> u32 {
        self.port_num
    }

    /// The agent, while the port is there.
    pub(crate) fn agent(&self) -> Option<Arc<AgentCore>> {
        self.agent.lock().clone()
    }

    /// A transaction ID of the port's CM agent.
    pub(crate) fn new_tid(&self) -> Result<u64> {
        Ok(self.agent().ok_or(ENODEV)?.new_tid())
    }
}

/// The CM's MAD handler on one port.
pub struct CmAgent {
    shared: Arc<CmPortShared>,
}

impl CmAgent {
    /// Sends `msg` as an answer to `to` (the received MAD), with its
    /// transaction ID, and counts it.
    fn answer(&self, agent: &AgentCore, to: &RecvMad, msg: CmMessage) {
        let mut out = [0u8; MAD_SIZE];
        if msg.write_mad(to.hdr.tid, 0, &mut out).is_err() {
            return;
        }
        // Counted before it goes: the answer to it can come back first.
        self.shared.counters.count(Group::TxMsgs, msg.attr_id());
        if agent.send(&to.addr, &out, SendOpts::default()).is_err()
            && crate::kshim::ratelimit::log_allowed()
        {
            pr_info!(
                "rdma cm: {} port {}: could not send a {:#x}\n",
                agent.device().name(),
                agent.port_num(),
                msg.attr_id()
            );
        }
    }

    /// A REJ of message `rejected` of `to`, whose sender's communication
    /// ID is `their_id`.
    fn reject(
        &self,
        agent: &AgentCore,
        to: &RecvMad,
        their_id: u32,
        ours: u32,
        rejected: MsgResponse,
        reason: RejReason,
    ) {
        let rej = Rej {
            local_comm_id: ours,
            remote_comm_id: their_id,
            message_rejected: rejected as u8,
            reason: reason as u16,
            ..Rej::default()
        };
        self.answer(agent, to, CmMessage::Rej(rej));
    }

    /// A REQ: a duplicate goes to its connection; a new one to the
    /// listener that takes it, or is rejected.
    fn on_req(&self, agent: &AgentCore, mad: &RecvMad, req: &Req) {
        if let Some(conn) = table::find_peer(req.local_comm_id, req.local_ca_guid) {
            conn.on_msg(&CmMessage::Req(*req), mad.hdr.tid);
            return;
        }
        // A new REQ from a QP a connection of ours still holds (the peer
        // must have lost it): REJ STALE_CONN, and the connection that
        // holds it is disconnected (a DREQ, if it is established), as the
        // C CM does (`cm_match_req`, before it looks at the GID).
        if let Some(stale) = table::find_remote_qp(req.local_qpn, req.local_ca_guid) {
            self.reject(
                agent,
                mad,
                req.local_comm_id,
                0,
                MsgResponse::Req,
                RejReason::StaleConn,
            );
            let _ = stale.disconnect();
            return;
        }
        // A REQ for a GID this port does not have: REJ INVALID_GID, the
        // GID in the additional information, as the C CM answers.
        let gid = req.primary_path.remote_gid;
        if self
            .shared
            .device()
            .find_gid_on_port(self.shared.port_num(), &gid)
            .is_none()
        {
            let rej = Rej {
                local_comm_id: 0,
                remote_comm_id: req.local_comm_id,
                message_rejected: MsgResponse::Req as u8,
                reason: RejReason::InvalidGid as u16,
                reject_info_length: 16,
                ari: Bytes::from_slice(&gid.0).unwrap_or_default(),
                ..Rej::default()
            };
            self.answer(agent, mad, CmMessage::Rej(rej));
            return;
        }
        let Some(listener) = table::find_listener(&self.shared, req) else {
            self.reject(
                agent,
                mad,
                req.local_comm_id,
                0,
                MsgResponse::Req,
                RejReason::InvalidServiceId,
            );
            return;
        };
        let Ok(conn) = CmConn::new(self.shared.clone(), mad.addr) else {
            return;
        };
        // Half-open connections are bounded per port and per source: one
        // beyond is refused with NO_RESOURCES, counted.
        match table::admit(&conn, &mad.addr) {
            Ok(()) => {}
            Err(table::Refused::Bound) => {
                self.shared.counters.count_no_resources();
                self.reject(
                    agent,
                    mad,
                    req.local_comm_id,
                    0,
                    MsgResponse::Req,
                    RejReason::NoResources,
                );
                return;
            }
            Err(table::Refused::NoMem) => return,
        }
        if conn.on_new_req(req, mad.hdr.tid).is_err() {
            return;
        }
        match listener.on_req(&self.shared, &conn, req, &mad.addr) {
            Ok(user) => conn.set_user(Some(user)),
            Err(_) => {
                let _ = conn.reject(RejReason::ConsumerDefined, &[]);
            }
        }
    }
}

impl CmAgent {
    /// A SIDR REQ (`cm_sidr_req_handler`): a resend of one that waits for
    /// its answer is dropped, counted as a duplicate; one for a service
    /// ID nobody listens on is answered UNSUPPORTED, one that no listener
    /// of its service ID takes is answered REJECT; else the listener's
    /// user gets it to answer ([`SidrRequest`]).
    fn on_sidr_req(&self, mad: &RecvMad) {
        let Ok((_, req)) = SidrReq::parse_mad(&mad.data) else {
            self.shared.counters.count_drop(DropReason::Malformed);
            return;
        };
        self.shared.counters.count(Group::RxMsgs, SidrReq::ATTR_ID);
        let key = table::sidr_remote_key(&self.shared, &mad.addr, &req);
        match table::sidr_begin_remote(key) {
            Ok(()) => {}
            Err(RemoteError::Duplicate) => {
                self.shared
                    .counters
                    .count(Group::RxDuplicates, SidrReq::ATTR_ID);
                return;
            }
            Err(RemoteError::Full | RemoteError::Map(_)) => {
                self.shared.counters.count_no_resources();
                return;
            }
        }
        let Ok(sr) = SidrRequest::new(self.shared.clone(), mad.addr, mad.hdr.tid, req, key) else {
            table::sidr_end_remote(&key);
            return;
        };
        let (any, taker) = table::find_sidr_listener(&self.shared, &req);
        let status = match taker {
            Some(l) => {
                // Dropped unanswered (here, or by the user later), it is
                // answered REJECT.
                if l.on_sidr_req(sr.clone()).is_ok() {
                    return;
                }
                SidrStatus::Reject
            }
            None if any => SidrStatus::Reject,
            None => SidrStatus::Unsupported,
        };
        let _ = sr.sidr_reply(status, 0, 0, &[]);
    }

    /// A SIDR REP (`cm_sidr_rep_handler`): the answer to a SIDR REQ of
    /// ours with its request ID, from where it went; any other is
    /// dropped.
    fn on_sidr_rep(&self, mad: &RecvMad) {
        let Ok((hdr, rep)) = SidrRep::parse_mad(&mad.data) else {
            self.shared.counters.count_drop(DropReason::Malformed);
            return;
        };
        self.shared.counters.count(Group::RxMsgs, SidrRep::ATTR_ID);
        let Some(a) = table::sidr_take_rep(&self.shared, &mad.addr, &rep) else {
            self.shared.counters.count_drop(DropReason::UnknownCommId);
            return;
        };
        let len = usize::from(rep.additional_info_len).min(rep.additional_info.0.len());
        let mut info = [0u8; crate::spec::cm_msg::SIDR_REP_INFO_LEN];
        info[..len].copy_from_slice(&rep.additional_info.0[..len]);
        a.finish(SidrEvent::Rep(SidrReply {
            status: rep.status,
            qpn: rep.qpn,
            qkey: rep.qkey,
            vendor_id: rep.vendor_id,
            attr_mod: hdr.attr_mod,
            info,
            info_len: len as u8,
            private_data: rep.private_data.0,
        }));
    }
}

impl MadHandler for CmAgent {
    fn recv(&self, agent: &AgentCore, mad: &RecvMad) {
        // Drops are counted by reason (`cm_rx_drops`), not logged: a peer
        // can send any number of them (`Documentation/hostile.rst`).
        let msg = match CmMessage::parse_mad(&mad.data) {
            Ok((_, msg)) => msg,
            Err(CmError::UnknownAttribute(CM_ATTR_SIDR_REQ)) => return self.on_sidr_req(mad),
            Err(CmError::UnknownAttribute(CM_ATTR_SIDR_REP)) => return self.on_sidr_rep(mad),
            Err(e) => {
                let reason = match e {
                    CmError::UnknownAttribute(CM_ATTR_LAP | CM_ATTR_APR) => DropReason::Unsupported,
                    CmError::UnknownAttribute(_) => DropReason::UnknownAttr,
                    _ => DropReason::Malformed,
                };
                self.shared.counters.count_drop(reason);
                return;
            }
        };
        self.shared.counters.count(Group::RxMsgs, mad.hdr.attr_id);
        let ours = match &msg {
            CmMessage::Req(req) => return self.on_req(agent, mad, req),
            CmMessage::Rep(m) => m.remote_comm_id,
            CmMessage::Rtu(m) => m.remote_comm_id,
            CmMessage::Rej(m) => m.remote_comm_id,
            CmMessage::Mra(m) => m.remote_comm_id,
            CmMessage::Dreq(m) => m.remote_comm_id,
            CmMessage::Drep(m) => m.remote_comm_id,
        };
        // A connection with our ID takes the message if the peer's ID in
        // it is the connection's peer's too; if not, it is handled as a
        // message for no connection, as the C CM's lookup fails then.
        // A TIMEOUT REJ names the connection by its sender's ID and node
        // (the GUID in its ARI): its sender may never have known ours.
        let conn = match &msg {
            CmMessage::Rej(m) if m.reason == RejReason::Timeout as u16 => m
                .ari_guid()
                .and_then(|g| table::find_peer(m.local_comm_id, g)),
            _ => table::find_local(&self.shared, ours),
        };
        if let Some(conn) = conn {
            if conn.on_msg(&msg, mad.hdr.tid) {
                return;
            }
        }
        self.shared.counters.count_drop(DropReason::UnknownCommId);
        // A REP is dropped (the C CM's `cm_rep_handler` answers none); a
        // DREQ is answered with a DREP, as the C CM does, and counted as a
        // duplicate (the connection ended here already).
        if let CmMessage::Dreq(dreq) = msg {
            self.shared
                .counters
                .count(Group::RxDuplicates, mad.hdr.attr_id);
            let drep = Drep {
                local_comm_id: dreq.remote_comm_id,
                remote_comm_id: dreq.local_comm_id,
                ..Drep::default()
            };
            self.answer(agent, mad, CmMessage::Drep(drep));
        }
    }

    /// The end of a send: for a SIDR REQ of ours (the only send of the
    /// CM that waits for an answer), no SIDR REP came after its retries
    /// (or it could not go): its user is told, unless the REP came or it
    /// was cancelled first.
    fn send_done(&self, _agent: &AgentCore, cookie: u64, status: SendStatus) {
        if cookie & SIDR_COOKIE == 0 || matches!(status, SendStatus::Sent | SendStatus::Responded) {
            return;
        }
        if let Some(a) = table::sidr_take(cookie as u32) {
            a.finish(SidrEvent::Timeout);
        }
    }

    /// A SIDR REQ of ours went again: counted as a retry.
    fn resent(&self, _agent: &AgentCore, cookie: u64) {
        if cookie & SIDR_COOKIE != 0 {
            self.shared
                .counters
                .count(Group::TxRetries, SidrReq::ATTR_ID);
        }
    }
}

/// The CM of one port.
pub struct CmPort {
    _agent: Agent,
    shared: Arc<CmPortShared>,
}

/// The CM ports of one device, by port number from 1.
pub struct CmPorts(KVec<Option<CmPort>>);

/// The core's internal CM client.
pub struct CmClient;

impl Client for CmClient {
    type Data = CmPorts;

    fn name(&self) -> &CStr {
        c_str!("cm")
    }

    fn add(&self, dev: &Arc<Device>) -> Result<CmPorts> {
        let mut ports = KVec::new();
        for port in 1..=dev.port_count() {
            let p = if dev.has_mad(port) {
                let counters = Arc::new(CmCounters::default(), GFP_KERNEL)?;
                let shared = Arc::pin_init(
                    pin_init!(CmPortShared {
                        dev: dev.clone(),
                        port_num: port,
                        counters,
                        agent <- crate::new_spinlock_irq!(None, "CmPortShared::agent"),
                    }),
                    GFP_KERNEL,
                )?;
                let handler = Arc::new(
                    CmAgent {
                        shared: shared.clone(),
                    },
                    GFP_KERNEL,
                )?;
                Agent::register(dev, port, CLASS_CM, CM_CLASS_VERSION, handler)
                    .ok()
                    .map(|agent| {
                        // SENDs only, as the C CM registers: a GET or SET
                        // of the CM class is answered by the MAD layer.
                        agent.take_only(&[METHOD_SEND]);
                        *shared.agent.lock() = Some(agent.shared());
                        CmPort {
                            _agent: agent,
                            shared,
                        }
                    })
            } else {
                None
            };
            ports.push(p, GFP_KERNEL)?;
        }
        Ok(CmPorts(ports))
    }

    fn remove(&self, _dev: &Arc<Device>, data: &CmPorts) {
        // The rdma_cm's client (registered after this one) has ended its
        // ids on the device already; what is left in the tables of this
        // device's ports goes, and nothing is sent any more. The agents go
        // with the data, when the core drops it after this.
        for p in data.0.iter().flatten() {
            p.shared.agent.lock().take();
            table::remove_port(&p.shared);
        }
    }
}

struct Registration(ClientRegistration<CmClient>);

static CM: Global<Registration> = Global::new();

/// The counters' sysfs files while the CM is loaded. Apart from [`CM`]:
/// their `show` uses `CM`, and they go first at exit, so no `show` holds
/// the last reference to the client's registration.
static COUNTERS_SYSFS: Global<PortGroupsRegistration> = Global::new();

/// The CM of `dev`'s port `port`, if it runs there: what a SIDR REQ goes
/// through ([`crate::cm::sidr::CmSidr::send_req`]).
pub fn shared(dev: &Device, port: u32) -> Option<Arc<CmPortShared>> {
    let reg = CM.get()?;
    let ports = reg.0.data(dev)?;
    let p = ports.0.get(port.checked_sub(1)? as usize)?.as_ref()?;
    Some(p.shared.clone())
}

/// The CM counters of `dev`'s port `port`, if the CM runs there.
pub fn counters(dev: &Device, port: u32) -> Option<Arc<CmCounters>> {
    Some(shared(dev, port)?.counters.clone())
}

/// The half-open connections (REQ received, not yet established) on
/// `dev`'s port `port` (0 where the CM does not run).
pub fn half_open(dev: &Device, port: u32) -> u32 {
    shared(dev, port).map_or(0, |p| table::half_open(&p))
}

/// Registers the CM client and the counters' sysfs files (module init,
/// after the MAD layer's).
pub(crate) fn init() -> Result {
    table::init()?;
    let started = (|| -> Result {
        let files = crate::cm::counters::register_sysfs()?;
        drop(COUNTERS_SYSFS.replace(Some(Arc::new(files, GFP_KERNEL)?)));
        let reg = ClientRegistration::new(CmClient)?;
        drop(CM.replace(Some(Arc::new(Registration(reg), GFP_KERNEL)?)));
        Ok(())
    })();
    if started.is_err() {
        exit();
    }
    started
}

/// Unregisters them (module exit): the counters' files first, so that no
/// `show` of them runs when the client goes.
pub(crate) fn exit() {
    drop(COUNTERS_SYSFS.replace(None));
    drop(CM.replace(None));
    table::exit();
}
