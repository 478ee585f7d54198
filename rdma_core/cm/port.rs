// SPDX-License-Identifier: GPL-2.0

//! The CM on each port: its MAD agent of the CM class, its counters, and
//! the internal client that sets them up and tears them down with the
//! device (after the MAD layer's client, so before it on removal).

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::cm::counters::{CmCounters, Group};
use crate::device::client::{Client, ClientRegistration};
use crate::device::Device;
use crate::kshim::global::Global;
use crate::mad::agent::AgentCore;
use crate::mad::{Agent, MadHandler, RecvMad, SendOpts, SendStatus};
use crate::spec::cm_msg::{CmMessage, Drep, MsgResponse, Rej, RejReason};
use crate::spec::mad::{CLASS_CM, CM_CLASS_VERSION, MAD_SIZE};

/// The CM's MAD handler on one port.
pub struct CmAgent {
    counters: Arc<CmCounters>,
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
        self.counters.count(Group::TxMsgs, msg.attr_id());
        if agent.send(&to.addr, &out, SendOpts::default()).is_err()
            && crate::kshim::verb::log_allowed()
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
}

impl MadHandler for CmAgent {
    fn recv(&self, agent: &AgentCore, mad: &RecvMad) {
        let msg = match CmMessage::parse_mad(&mad.data) {
            Ok((_, msg)) => msg,
            Err(e) => {
                if crate::kshim::verb::log_allowed() {
                    pr_info!(
                        "rdma cm: {} port {}: a CM MAD (attribute {:#x}) dropped: {}\n",
                        agent.device().name(),
                        agent.port_num(),
                        mad.hdr.attr_id,
                        e
                    );
                }
                return;
            }
        };
        self.counters.count(Group::RxMsgs, mad.hdr.attr_id);
        match msg {
            CmMessage::Req(req) => self.reject(
                agent,
                mad,
                req.local_comm_id,
                0,
                MsgResponse::Req,
                RejReason::InvalidServiceId,
            ),
            CmMessage::Rep(rep) => self.reject(
                agent,
                mad,
                rep.local_comm_id,
                rep.remote_comm_id,
                MsgResponse::Rep,
                RejReason::InvalidCommId,
            ),
            CmMessage::Dreq(dreq) => {
                // As the C CM: a DREQ for no connection of ours is counted
                // as a duplicate (the connection ended here already).
                self.counters.count(Group::RxDuplicates, mad.hdr.attr_id);
                let drep = Drep {
                    local_comm_id: dreq.remote_comm_id,
                    remote_comm_id: dreq.local_comm_id,
                    ..Drep::default()
                };
                self.answer(agent, mad, CmMessage::Drep(drep));
            }
            CmMessage::Rej(_) | CmMessage::Mra(_) | CmMessage::Rtu(_) | CmMessage::Drep(_) => {}
        }
    }

    fn send_done(&self, _agent: &AgentCore, _cookie: u64, _status: SendStatus) {}
}

/// The CM of one port.
pub struct CmPort {
    _agent: Agent,
    counters: Arc<CmCounters>,
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
                let handler = Arc::new(
                    CmAgent {
                        counters: counters.clone(),
                    },
                    GFP_KERNEL,
                )?;
                Agent::register(dev, port, CLASS_CM, CM_CLASS_VERSION, handler)
                    .ok()
                    .map(|agent| CmPort {
                        _agent: agent,
                        counters,
                    })
            } else {
                None
            };
            ports.push(p, GFP_KERNEL)?;
        }
        Ok(CmPorts(ports))
    }

    fn remove(&self, _dev: &Arc<Device>, _data: &CmPorts) {
        // The agents go with the data, when the core drops it after this.
    }
}

struct Registration(ClientRegistration<CmClient>);

static CM: Global<Registration> = Global::new();

/// The CM counters of `dev`'s port `port`, if the CM runs there.
pub fn counters(dev: &Device, port: u32) -> Option<Arc<CmCounters>> {
    let reg = CM.get()?;
    let ports = reg.0.data(dev)?;
    let p = ports.0.get(port.checked_sub(1)? as usize)?.as_ref()?;
    Some(p.counters.clone())
}

/// Registers the CM client (module init, after the MAD layer's).
pub(crate) fn init() -> Result {
    let reg = ClientRegistration::new(CmClient)?;
    CM.replace(Some(Arc::new(Registration(reg), GFP_KERNEL)?));
    Ok(())
}

/// Unregisters it (module exit).
pub(crate) fn exit() {
    drop(CM.replace(None));
}
