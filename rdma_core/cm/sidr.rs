// SPDX-License-Identifier: GPL-2.0

//! Service ID resolution (SIDR): the CM's answer for UD services
//! (`ib_send_cm_sidr_req`, `ib_send_cm_sidr_rep` and their handlers in
//! cm.c), what the rdma_cm's UD ids are built on.
//!
//! Active side: [`CmSidr::send_req`] sends a SIDR REQ to the peer's CM and
//! has the MAD layer resend it until a SIDR REP with its request ID comes
//! from that peer on that port, or the retries run out; the user
//! ([`SidrUser`]) is told once: [`SidrEvent::Rep`] or
//! [`SidrEvent::Timeout`]. Dropping the [`CmSidr`] cancels it: no event
//! comes after the drop returns (it waits for one being delivered on
//! another task; the user's own event handler may drop it).
//!
//! Passive side: a SIDR REQ for a service ID with a listener that takes it
//! ([`ListenUser::takes_sidr`](super::table::ListenUser::takes_sidr)) goes
//! to the listener's user as a [`SidrRequest`]
//! ([`ListenUser::on_sidr_req`](super::table::ListenUser::on_sidr_req));
//! the user answers it once ([`SidrRequest::sidr_reply`]); a request
//! dropped unanswered is answered REJECT, as the C CM does when its id is
//! destroyed. While it waits, a resend of it (same request ID, sender and
//! port) is dropped and counted as a duplicate. The bookkeeping of both
//! sides is the host-tested [`crate::spec::cm_sidr`].

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};

use crate::cm::counters::Group;
use crate::cm::port::CmPortShared;
use crate::cm::table;
use crate::mad::{MadAddr, Retry, SendOpts};
use crate::spec::cm_msg::{
    Bytes, SidrRep, SidrReq, SidrStatus, SIDR_REP_INFO_LEN, SIDR_REP_PRIVATE_DATA_LEN,
    SIDR_REQ_PRIVATE_DATA_LEN,
};
use crate::spec::cm_sidr::RemoteKey;
use crate::spec::mad::MAD_SIZE;

/// The bit that marks the cookie of a SIDR REQ's send (the low 32 bits
/// are its request ID); the CM's other sends have cookie 0.
pub(crate) const SIDR_COOKIE: u64 = 1 << 32;

/// A SIDR REP, as the active side's user gets it.
#[derive(Clone, Copy, Debug)]
pub struct SidrReply {
    /// The status ([`SidrStatus`] as a number: the peer may send others).
    pub status: u8,
    /// The service's QPN (valid with status SUCCESS).
    pub qpn: u32,
    /// The service's Q_Key (valid with status SUCCESS).
    pub qkey: u32,
    /// The ECE vendor ID.
    pub vendor_id: u32,
    /// The MAD's attribute modifier.
    pub attr_mod: u32,
    /// The additional information (its length is `info_len`).
    pub info: [u8; SIDR_REP_INFO_LEN],
    /// The length of the additional information the REP gives.
    pub info_len: u8,
    /// All of the private data.
    pub private_data: [u8; SIDR_REP_PRIVATE_DATA_LEN],
}

/// What the active side's user is told, once.
// One event per request, moved once: boxing the REP would cost an
// allocation on the receive path for nothing.
#[expect(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub enum SidrEvent {
    /// The SIDR REP came.
    Rep(SidrReply),
    /// No SIDR REP after the retries (or the REQ could not be sent, or
    /// the device went): `IB_CM_SIDR_REQ_ERROR` of the C CM.
    Timeout,
}

/// The user of a SIDR REQ of ours (the rdma_cm's UD id).
pub trait SidrUser: Send + Sync {
    /// The answer, or its absence. CM context (process), no CM lock held;
    /// may drop the [`CmSidr`], must not wait for the CM.
    fn sidr_event(&self, ev: SidrEvent);
}

/// What a SIDR REQ of ours asks ([`CmSidr::send_req`]).
#[derive(Clone, Copy, Debug)]
pub struct SidrReqParams<'a> {
    /// The service ID to resolve.
    pub service_id: u64,
    /// The partition key (the path's).
    pub pkey: u16,
    /// Private data, at most [`SIDR_REQ_PRIVATE_DATA_LEN`] bytes (the
    /// rdma_cm puts its header first).
    pub private_data: &'a [u8],
    /// How long to wait for the SIDR REP after each send (ms, not 0).
    pub timeout_ms: u32,
    /// How many times to send it again before [`SidrEvent::Timeout`].
    pub max_retries: u8,
}

struct ActiveState {
    /// Taken by the one delivery, or by the cancel.
    user: Option<Arc<dyn SidrUser>>,
    /// The task delivering the event, while it does (0: none).
    task: usize,
}

/// A SIDR REQ of ours, as the CM's table holds it.
#[pin_data]
pub struct SidrActive {
    port: Arc<CmPortShared>,
    request_id: u32,
    tid: u64,
    #[pin]
    st: Mutex<ActiveState>,
    #[pin]
    idle: CondVar,
}

/// A SIDR REQ of ours under way; dropping it cancels it.
pub struct CmSidr(Arc<SidrActive>);

/// The calling task, as a number.
fn current_task() -> usize {
    let t = kernel::current!();
    core::ptr::from_ref::<kernel::task::Task>(t) as usize
}

impl CmSidr {
    /// Sends a SIDR REQ for `p.service_id` through `port`'s CM to the CM
    /// at `to` (the peer's GSI QP: `remote_qpn` 1, the path's address, as
    /// a REQ's MAD goes) and waits for its SIDR REP
    /// (`ib_send_cm_sidr_req`). `user` is told the outcome once. Fails
    /// with `EINVAL` (private data too long, zero timeout), `ENODEV` (the
    /// port's CM is gone), `EBUSY` (the port's CM agent has as many
    /// requests waiting as it takes), `ENOMEM`.
    pub fn send_req(
        port: &Arc<CmPortShared>,
        to: &MadAddr,
        p: &SidrReqParams<'_>,
        user: Arc<dyn SidrUser>,
    ) -> Result<CmSidr> {
        if p.private_data.len() > SIDR_REQ_PRIVATE_DATA_LEN || p.timeout_ms == 0 {
            return Err(EINVAL);
        }
        let agent = port.agent().ok_or(ENODEV)?;
        let tid = agent.new_tid();
        let request_id = table::new_comm_id();
        let active = Arc::pin_init(
            pin_init!(SidrActive {
                port: port.clone(),
                request_id,
                tid,
                st <- new_mutex!(ActiveState { user: Some(user), task: 0 }, "SidrActive::st"),
                idle <- new_condvar!("SidrActive::idle"),
            }),
            GFP_KERNEL,
        )?;
        let req = SidrReq {
            request_id,
            partition_key: p.pkey,
            service_id: p.service_id,
            private_data: Bytes::from_slice(p.private_data).map_err(|_| EINVAL)?,
        };
        let mut mad = [0u8; MAD_SIZE];
        req.write_mad(tid, &mut mad).map_err(|_| EINVAL)?;
        // In the table before the REQ goes: its answer may come first.
        table::sidr_start(&active, to)?;
        let sidr = CmSidr(active);
        port.counters.count(Group::TxMsgs, SidrReq::ATTR_ID);
        agent.send(
            to,
            &mad,
            SendOpts {
                cookie: SIDR_COOKIE | u64::from(request_id),
                retry: Some(Retry {
                    timeout_ms: p.timeout_ms,
                    retries: p.max_retries,
                }),
            },
        )?;
        Ok(sidr)
    }

    /// The request ID of the SIDR REQ (from the space of our
    /// communication IDs, as the C CM's).
    pub fn request_id(&self) -> u32 {
        self.0.request_id
    }
}

impl Drop for CmSidr {
    fn drop(&mut self) {
        let a = &self.0;
        drop(table::sidr_take(a.request_id));
        if let Some(agent) = a.port.agent() {
            agent.cancel(a.tid);
        }
        let me = current_task();
        let mut st = a.st.lock();
        let user = st.user.take();
        while st.task != 0 && st.task != me {
            a.idle.wait(&mut st);
        }
        drop(st);
        drop(user);
    }
}

impl SidrActive {
    /// Its request ID.
    pub(crate) fn request_id_of(&self) -> u32 {
        self.request_id
    }

    /// The port.
    pub(crate) fn port(&self) -> &Arc<CmPortShared> {
        &self.port
    }

    /// The table took it (answered, timed out, or its device went): the
    /// MAD layer stops resending it and its user is told, unless it was
    /// cancelled meanwhile.
    pub(crate) fn finish(&self, ev: SidrEvent) {
        if let (SidrEvent::Rep(_), Some(agent)) = (&ev, self.port.agent()) {
            agent.cancel(self.tid);
        }
        let user = {
            let mut st = self.st.lock();
            let Some(u) = st.user.take() else { return };
            st.task = current_task();
            u
        };
        user.sidr_event(ev);
        drop(user);
        let mut st = self.st.lock();
        st.task = 0;
        drop(st);
        self.idle.notify_all();
    }
}

/// A received SIDR REQ, handed to the listener's user, who answers it
/// once; answered REJECT if dropped unanswered.
pub struct SidrRequest {
    port: Arc<CmPortShared>,
    from: MadAddr,
    tid: u64,
    req: SidrReq,
    key: RemoteKey,
    answered: AtomicBool,
}

impl SidrRequest {
    pub(crate) fn new(
        port: Arc<CmPortShared>,
        from: MadAddr,
        tid: u64,
        req: SidrReq,
        key: RemoteKey,
    ) -> Result<Arc<SidrRequest>> {
        Ok(Arc::new(
            SidrRequest {
                port,
                from,
                tid,
                req,
                key,
                answered: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?)
    }

    /// The SIDR REQ (request ID, P_Key, service ID, all of its private
    /// data).
    pub fn req(&self) -> &SidrReq {
        &self.req
    }

    /// Its request ID.
    pub fn request_id(&self) -> u32 {
        self.req.request_id
    }

    /// The service ID asked for.
    pub fn service_id(&self) -> u64 {
        self.req.service_id
    }

    /// The P_Key it names.
    pub fn pkey(&self) -> u16 {
        self.req.partition_key
    }

    /// Its private data (all [`SIDR_REQ_PRIVATE_DATA_LEN`] bytes).
    pub fn private_data(&self) -> &[u8; SIDR_REQ_PRIVATE_DATA_LEN] {
        &self.req.private_data.0
    }

    /// Where it came from (the sender's GID is `ah.grh.dgid`): the
    /// address of the answer, and of the sender's UD QP's port.
    pub fn from(&self) -> &MadAddr {
        &self.from
    }

    /// The port it came on.
    pub fn port(&self) -> &Arc<CmPortShared> {
        &self.port
    }

    /// Answers it (`ib_send_cm_sidr_rep`): `status` and, for SUCCESS, the
    /// service's UD QP number and Q_Key, with at most
    /// [`SIDR_REP_PRIVATE_DATA_LEN`] bytes of private data. Once: a second
    /// answer is `EINVAL`, as is too much private data or a QPN wider
    /// than 24 bits; `ENODEV` if the port's CM is gone (it is answered
    /// then, as far as this side goes).
    pub fn sidr_reply(
        &self,
        status: SidrStatus,
        qpn: u32,
        qkey: u32,
        private_data: &[u8],
    ) -> Result {
        let rep = SidrRep {
            request_id: self.req.request_id,
            status: status as u8,
            qpn,
            qkey,
            service_id: self.req.service_id,
            private_data: Bytes::from_slice(private_data).map_err(|_| EINVAL)?,
            ..SidrRep::default()
        };
        let mut mad = [0u8; MAD_SIZE];
        rep.write_mad(self.tid, 0, &mut mad).map_err(|_| EINVAL)?;
        if self.answered.swap(true, Ordering::AcqRel) {
            return Err(EINVAL);
        }
        self.send(&mad)
    }

    /// Sends the answer; then a resend of the request is a new one (as
    /// the C CM forgets a request once its answer is posted).
    fn send(&self, mad: &[u8; MAD_SIZE]) -> Result {
        let r = match self.port.agent() {
            Some(agent) => {
                self.port.counters.count(Group::TxMsgs, SidrRep::ATTR_ID);
                agent.send(&self.from, mad, SendOpts::default())
            }
            None => Err(ENODEV),
        };
        table::sidr_end_remote(&self.key);
        r
    }
}

impl Drop for SidrRequest {
    fn drop(&mut self) {
        if *self.answered.get_mut() {
            return;
        }
        let mut mad = [0u8; MAD_SIZE];
        let rep = SidrRep::answer(&self.req, SidrStatus::Reject as u8);
        if rep.write_mad(self.tid, 0, &mut mad).is_ok() {
            let _ = self.send(&mad);
        } else {
            table::sidr_end_remote(&self.key);
        }
    }
}
