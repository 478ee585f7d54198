// SPDX-License-Identifier: GPL-2.0

//! User QPs: a QP made through uverbs ([`Qp::create_user`]) whose send and
//! receive queues are rings shared with user space (`super::super::uring`,
//! the rxe user ABI), where librxe writes `rxe_send_wqe` and
//! `rxe_recv_wqe` entries with no system call.
//!
//! The core's own queues stay what the provider works from: user entries
//! are pumped into them, each slot copied out once and decoded by
//! [`rdma::spec::uverbs::rxe_ring`](crate::spec::uverbs::rxe_ring) before
//! anything in it is used, then checked and queued by the same code as a
//! kernel ULP's request (`post.rs`). So the provider needs nothing of its
//! own for user QPs, and nothing it reads can change under it.
//!
//! - Send entries are pumped on the `POST_SEND` doorbell
//!   ([`QpCore::doorbell`]), as many as the core's queue takes (it is as
//!   large as the ring). The ring's consumer index, which tells user space
//!   a slot is free again, moves when an entry completes (or is flushed or
//!   discarded), as in rxe.
//! - Receive entries are pumped when the provider looks for one
//!   (`rq_take`): librxe posts receives without a system call.
//! - An entry that does not decode or check out (an opcode the QP may not
//!   use, a bad length, an unknown address handle) ends the QP: it moves
//!   to the error state, what is queued is flushed, the bad entry
//!   completes with `LOC_QP_OP_ERR` and the rest of the ring with
//!   `WR_FLUSH_ERR`. Nothing else is affected: the entry was the QP
//!   owner's own.
//! - The user's index (producer) is untrusted and masked; the kernel's
//!   own (consumer) is kept privately and only published. A pass over a
//!   ring handles at most a ring's worth of entries, whatever user space
//!   does meanwhile.
//!
//! - ATOMIC_WRITE carries its 8 bytes in the entry; they are queued as
//!   the request's inline data. BIND_MW names its window and MR by key
//!   (`mw_rkey`, `mr_lkey`): both are looked up when the entry is taken
//!   and must belong to the QP's PD, else the entry is a bad one; the
//!   bind itself runs in send queue order and fails with `MW_BIND_ERR`
//!   as a kernel ULP's would. The window is found by the index part of
//!   `mw_rkey`: its key byte changes only when an earlier bind of the
//!   same ring runs, so it cannot be checked when the entry is taken.
//!
//! Locks: the rings are read and written under the queue's lock (the
//! send queue's or the receive queue's), as the kernel entries are.

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kshim::mem::Sge;
use crate::spec::opcodes::{WcOpcode, WcStatus, WrOpcode};
use crate::spec::qp_state::QpState;
use crate::spec::uverbs::rxe_ring::{
    decode_recv_wqe, decode_send_wqe, Payload, SqLimits, UserSendOp, UserSendWqe, FLUSH_GLOBAL,
    FLUSH_PERSISTENT, RECV_WQE_DATA, SEND_WQE_DATA,
};
use crate::verbs::ah::AhCore;
use crate::verbs::pd::PdCore;
use crate::verbs::qp::{Qp, QpCore, QpInitAttr, RecvQueue, SendQueue};
use crate::verbs::uring::UserRing;
use crate::verbs::wc::Wc;
use crate::verbs::wr::{
    FlushType, RecvWqe, RecvWr, Ring, SendOp, SendWr, UdDest, MAX_INLINE, MAX_SGE,
};

/// The size of an SGE in a ring entry (`struct rxe_sge`).
const SGE_SIZE: usize = 16;

/// Where the opcode of a send entry lies (`rxe_send_wr.opcode`).
const SEND_OPCODE_OFFSET: usize = 12;

/// The rings of a user QP, for mapping.
pub struct UserQpRings {
    /// The send ring.
    pub sq: Arc<UserRing>,
    /// The receive ring (`None` with an SRQ).
    pub rq: Option<Arc<UserRing>>,
}

/// The send ring of a user QP and the kernel's place in it.
pub(crate) struct UserSq {
    ring: Arc<UserRing>,
    /// Entries pumped into the core's queue.
    taken: u32,
    /// Entries completed, flushed or discarded: the published consumer
    /// index.
    done: u32,
    /// The copy of one slot being decoded.
    scratch: KVec<u8>,
    limits: SqLimits,
    /// The entry at `taken` was bad: its flush reports `LOC_QP_OP_ERR`.
    bad: bool,
}

/// The receive ring of a user QP and the kernel's place in it.
pub(crate) struct UserRq {
    ring: Arc<UserRing>,
    /// Entries taken: the published consumer index.
    cons: u32,
    scratch: KVec<u8>,
    bad: bool,
}

impl UserSq {
    /// An entry left the core's queue (completed, flushed, discarded).
    pub(super) fn retire(&mut self) {
        self.done = self.done.wrapping_add(1);
        self.ring.publish_consumer(self.done);
    }

    /// RESET: the entries taken are discarded.
    pub(super) fn discard_taken(&mut self) {
        self.done = self.taken;
        self.ring.publish_consumer(self.done);
    }
}

fn scratch(len: usize) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
    v.extend_with(len, 0, GFP_KERNEL)?;
    Ok(v)
}

impl crate::verbs::object::Handle<QpCore> {
    /// Creates a QP whose queues are rings user space maps
    /// ([`QpCore::user_rings`]), in the layout of the rxe user ABI. The
    /// request's sizes are checked as [`Qp::create`] checks them; the QP
    /// gets what the rings hold (a power of two less one entries; as many
    /// SGEs and inline bytes as an entry has room for), which
    /// [`QpCore::cap`] reports. May sleep.
    pub fn create_user(pd: &Arc<PdCore>, init: &QpInitAttr<'_>) -> Result<Qp> {
        let dev = pd.device();
        let a = dev.attr();
        let c = init.cap;
        if c.max_send_sge as usize > MAX_SGE
            || c.max_recv_sge as usize > MAX_SGE
            || c.max_inline_data as usize > MAX_INLINE
            || c.max_send_wr > a.max_qp_wr
            || c.max_recv_wr > a.max_qp_wr
        {
            return Err(EINVAL);
        }
        // The send entry's data area: room for the SGEs or the inline
        // bytes, whichever is larger (librxe sizes its posts by it).
        let data = (c.max_send_sge.max(1) as usize * SGE_SIZE).max(c.max_inline_data as usize);
        let send_sge = (data / SGE_SIZE).min(MAX_SGE).min(a.max_send_sge as usize) as u32;
        let inline = data.min(MAX_INLINE) as u32;
        let sq = UserRing::new(c.max_send_wr.max(1), SEND_WQE_DATA + data)?;
        let rq = if init.srq.is_some() {
            None
        } else {
            let n = c.max_recv_sge.max(1) as usize;
            Some(UserRing::new(
                c.max_recv_wr.max(1),
                RECV_WQE_DATA + n * SGE_SIZE,
            )?)
        };
        let mut cap = c;
        cap.max_send_wr = sq.capacity();
        cap.max_send_sge = send_sge.max(c.max_send_sge);
        cap.max_inline_data = inline;
        if let Some(rq) = &rq {
            cap.max_recv_wr = rq.capacity();
        }
        let user_sq = UserSq {
            scratch: scratch(sq.elem_size())?,
            ring: sq,
            taken: 0,
            done: 0,
            limits: SqLimits {
                qp_type: init.qp_type,
                max_sge: cap.max_send_sge,
                max_inline: cap.max_inline_data,
            },
            bad: false,
        };
        let user_rq = match rq {
            Some(ring) => Some(UserRq::new(ring)?),
            None => None,
        };
        let init = QpInitAttr { cap, ..*init };
        Qp::create_inner(pd, &init, Some((user_sq, user_rq)))
    }
}

impl QpCore {
    /// The rings of a user QP (`None` for a kernel QP).
    pub fn user_rings(&self) -> Option<UserQpRings> {
        let sq = self.sq.lock().user.as_ref()?.ring.clone();
        let rq = self.rq.lock().user.as_ref().map(|u| u.ring.clone());
        Some(UserQpRings { sq, rq })
    }

    /// The `POST_SEND` doorbell of a user QP: takes the new entries of its
    /// send ring into the send queue and tells the provider. `EINVAL`
    /// before RTS (as posting is) or for a kernel QP. In the error state
    /// the entries are flushed. Any context; never sleeps.
    pub fn doorbell(self: &Arc<Self>) -> Result {
        let _verb = crate::kshim::verb::Verb::enter();
        let ops = self.ops.access().ok_or(ENODEV)?;
        let state = self.state();
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(EINVAL);
        }
        if state == QpState::Err {
            self.flush_user_sq();
            return Ok(());
        }
        let port = self.attr.lock().port_num;
        let (posted, bad) = {
            let mut guard = self.sq.lock();
            let sq: &mut SendQueue = &mut guard;
            let Some(u) = sq.user.as_mut() else {
                return Err(EINVAL);
            };
            let mut posted = 0usize;
            let mut bad = false;
            let limit = u.ring.capacity();
            while posted < limit as usize {
                let prod = u.ring.producer();
                if u.ring.count(prod, u.taken) == 0 {
                    break;
                }
                let Ok(slot) = sq.ring.next_slot() else {
                    // The queue is as large as the ring: full only while
                    // user space claims more than the ring holds.
                    break;
                };
                if u.ring.read_slot(u.taken, &mut u.scratch).is_err() {
                    bad = true;
                    break;
                }
                let filled = match decode_send_wqe(&u.scratch, &u.limits) {
                    Ok(wqe) => self.fill_user_send(slot, &wqe, port),
                    Err(_) => Err(EINVAL),
                };
                if filled.is_err() {
                    bad = true;
                    break;
                }
                sq.ring.commit();
                u.taken = u.taken.wrapping_add(1);
                posted += 1;
            }
            u.bad = bad;
            (posted, bad)
        };
        if bad {
            self.set_error();
        } else if posted > 0 {
            ops.post_send(&crate::verbs::qp::ProviderQp::new(self.clone()));
        }
        Ok(())
    }

    /// Waits until the provider's run that [`QpCore::doorbell`] scheduled
    /// has finished, so that `POST_SEND` returns with its entries handed to
    /// the transport: a UD send has left and completed, an RC request is
    /// on the wire (as when rxe ran a user QP's requester in the posting
    /// thread). User space may count on it: rdma-core's tests resize a CQ
    /// right after posting and expect the completions to be there.
    ///
    /// Process context, with no lock held that the provider's work or the
    /// events it raises take (the uverbs file's lock among them).
    pub fn wait_doorbell(&self) {
        crate::kshim::verb::might_sleep();
        crate::kshim::work::flush(&self.work);
    }

    /// Checks and queues one decoded send entry as `post_send` does.
    fn fill_user_send(
        &self,
        slot: &mut crate::verbs::wr::SendWqe,
        wqe: &UserSendWqe<'_>,
        port: u32,
    ) -> Result {
        let mut sges = [Sge::default(); MAX_SGE];
        let (sg, inline): (&[Sge], Option<&[u8]>) = match wqe.payload {
            Payload::Sges(list) => {
                let n = list.len();
                if n > MAX_SGE {
                    return Err(EINVAL);
                }
                for (d, s) in sges.iter_mut().zip(list.iter()) {
                    *d = Sge {
                        addr: s.addr,
                        length: s.length,
                        lkey: s.lkey,
                    };
                }
                (&sges[..n], None)
            }
            Payload::Inline(bytes) => (&[], Some(bytes)),
        };
        // ATOMIC_WRITE's 8 bytes travel in the entry, as inline data.
        let inline = match &wqe.op {
            UserSendOp::AtomicWrite { value, .. } => Some(&value[..]),
            _ => inline,
        };
        // A BIND_MW entry names its window and MR by key: they are looked
        // up here, and must be of this QP's PD (`fill_send_from`).
        let bind = match wqe.op {
            UserSendOp::BindMw {
                mw_rkey, mr_lkey, ..
            } => {
                let dev = self.device();
                Some((
                    dev.mw_by_key(mw_rkey).ok_or(EINVAL)?,
                    dev.mr_by_key(mr_lkey).ok_or(EINVAL)?,
                ))
            }
            _ => None,
        };
        let op = match (&wqe.op, &bind) {
            (
                UserSendOp::BindMw {
                    rkey,
                    addr,
                    length,
                    access,
                    ..
                },
                Some((mw, mr)),
            ) => SendOp::BindMw {
                mw,
                mr,
                key: *rkey,
                addr: *addr,
                length: *length,
                access: *access,
            },
            _ => user_send_op(&wqe.op)?,
        };
        let ah: Option<Arc<AhCore>> = match &wqe.ud {
            Some(ud) => Some(self.user_ah(ud.ah_num).ok_or(EINVAL)?),
            None => None,
        };
        let ud = match (&wqe.ud, &ah) {
            (Some(u), Some(ah)) => Some(UdDest {
                ah,
                remote_qpn: u.remote_qpn,
                remote_qkey: u.remote_qkey,
            }),
            _ => None,
        };
        let wr = SendWr {
            wr_id: wqe.wr_id,
            cqe: None,
            op,
            flags: wqe.flags,
            sg,
            ud,
        };
        self.fill_send_from(slot, &wr, port, inline)
    }

    /// The AH a user send entry names by number: one of this QP's PD.
    fn user_ah(&self, ah_num: u32) -> Option<Arc<AhCore>> {
        let ah = self.device().res.ah.get(ah_num.checked_sub(1)?)?;
        core::ptr::eq(&**ah.pd(), &*self.pd).then_some(ah)
    }

    /// Flushes the entries of a user send ring not taken yet (the QP is in
    /// the error state): the first with `LOC_QP_OP_ERR` if it was the bad
    /// one, the others with `WR_FLUSH_ERR`.
    pub(super) fn flush_user_sq(self: &Arc<Self>) {
        let mut left = match self.sq.lock().user.as_ref() {
            Some(u) => u.ring.capacity(),
            None => return,
        };
        while left > 0 {
            left -= 1;
            let wc = {
                let mut sq = self.sq.lock();
                let Some(u) = sq.user.as_mut() else { return };
                let prod = u.ring.producer();
                if u.ring.count(prod, u.taken) == 0 {
                    return;
                }
                let mut head = [0u8; 16];
                let _ = u.ring.read_slot(u.taken, &mut head);
                let wr_id = u64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8]));
                let raw_op = u32::from_le_bytes(
                    head[SEND_OPCODE_OFFSET..SEND_OPCODE_OFFSET + 4]
                        .try_into()
                        .unwrap_or([0; 4]),
                );
                let opcode = WrOpcode::from_raw(raw_op).map_or(WcOpcode::Send, |o| o.wc_opcode());
                let status = if u.bad {
                    WcStatus::LocQpOpErr
                } else {
                    WcStatus::WrFlushErr
                };
                u.bad = false;
                u.taken = u.taken.wrapping_add(1);
                u.retire();
                Wc {
                    status,
                    ..Wc::flushed(wr_id, None, opcode, self.qpn)
                }
            };
            let _ = self.send_cq.push_from_core(wc);
        }
    }

    /// Flushes the entries of a user receive ring (the QP is in the error
    /// state), as [`QpCore::flush_user_sq`] does.
    pub(super) fn flush_user_rq(self: &Arc<Self>) {
        let mut left = match self.rq.lock().user.as_ref() {
            Some(u) => u.ring.capacity(),
            None => return,
        };
        while left > 0 {
            left -= 1;
            let wc = {
                let mut rq = self.rq.lock();
                let Some(u) = rq.user.as_mut() else { return };
                let prod = u.ring.producer();
                if u.ring.count(prod, u.cons) == 0 {
                    return;
                }
                let mut head = [0u8; 8];
                let _ = u.ring.read_slot(u.cons, &mut head);
                let status = if u.bad {
                    WcStatus::LocQpOpErr
                } else {
                    WcStatus::WrFlushErr
                };
                u.bad = false;
                u.cons = u.cons.wrapping_add(1);
                u.ring.publish_consumer(u.cons);
                Wc {
                    status,
                    ..Wc::flushed(u64::from_le_bytes(head), None, WcOpcode::Recv, self.qpn)
                }
            };
            let _ = self.recv_cq.push_from_core(wc);
        }
    }
}

/// What [`UserRq::pump`] found in the ring.
pub(crate) enum Pumped {
    /// As many entries as the queue takes (or the ring held) were moved.
    Done,
    /// The entry at the consumer index is bad (left there, `bad` set).
    Bad,
}

impl UserRq {
    /// The kernel's side of a receive ring (a QP's or an SRQ's).
    pub(crate) fn new(ring: Arc<UserRing>) -> Result<UserRq> {
        Ok(UserRq {
            scratch: scratch(ring.elem_size())?,
            ring,
            cons: 0,
            bad: false,
        })
    }

    /// The ring, for mapping.
    pub(crate) fn ring(&self) -> &Arc<UserRing> {
        &self.ring
    }

    /// Swaps in `next`, a fresh ring's side, for this one (an SRQ's
    /// resize): the entries user space posted that were not taken yet move
    /// to it as written, in order (they are checked when taken, as ever),
    /// at most `room` of them. Returns the old side. `EINVAL`, with
    /// nothing changed, when more wait or this ring met a bad entry.
    pub(crate) fn resize(&mut self, next: UserRq, room: u32) -> Result<UserRq> {
        if self.bad {
            return Err(EINVAL);
        }
        let prod = self.ring.producer();
        self.ring.carry_into(self.cons, prod, &next.ring, room)?;
        Ok(core::mem::replace(self, next))
    }

    /// Moves new entries of the ring into `queue`, as many as it takes,
    /// each checked as `post_recv` checks a request of `max_sge` SGEs.
    pub(crate) fn pump(&mut self, queue: &mut Ring<RecvWqe>, max_sge: u32) -> Pumped {
        let limit = self.ring.capacity();
        for _ in 0..limit {
            let prod = self.ring.producer();
            if self.ring.count(prod, self.cons) == 0 {
                break;
            }
            let Ok(slot) = queue.next_slot() else { break };
            if self.fill_one(slot, max_sge).is_err() {
                self.bad = true;
                return Pumped::Bad;
            }
            queue.commit();
            self.cons = self.cons.wrapping_add(1);
            self.ring.publish_consumer(self.cons);
        }
        Pumped::Done
    }

    /// Copies, decodes and checks the entry at the consumer index.
    fn fill_one(&mut self, slot: &mut RecvWqe, max_sge: u32) -> Result {
        self.ring.read_slot(self.cons, &mut self.scratch)?;
        let w = decode_recv_wqe(&self.scratch, max_sge).map_err(|_| EINVAL)?;
        if w.sges.len() > MAX_SGE {
            return Err(EINVAL);
        }
        let mut sges = [Sge::default(); MAX_SGE];
        for (d, s) in sges.iter_mut().zip(w.sges.iter()) {
            *d = Sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            };
        }
        let wr = RecvWr {
            wr_id: w.wr_id,
            cqe: None,
            sg: &sges[..w.sges.len()],
        };
        slot.fill(&wr, max_sge)
    }

    /// Takes the bad entry at the consumer index off the ring (an SRQ's,
    /// which the QP that met it completes) and returns its `wr_id`.
    pub(crate) fn skip_bad(&mut self) -> u64 {
        let mut head = [0u8; 8];
        let _ = self.ring.read_slot(self.cons, &mut head);
        self.bad = false;
        self.cons = self.cons.wrapping_add(1);
        self.ring.publish_consumer(self.cons);
        u64::from_le_bytes(head)
    }
}

/// Moves new entries of a QP's user receive ring into its receive queue.
/// True if an entry was bad: the caller, with the lock released, moves the
/// QP to the error state (whose flush reports it).
pub(super) fn pump_rq(rq: &mut RecvQueue, max_sge: u32) -> bool {
    let RecvQueue { ring, user, .. } = rq;
    match user.as_mut() {
        Some(u) => matches!(u.pump(ring, max_sge), Pumped::Bad),
        None => false,
    }
}

/// The core's operation for a decoded user one. Immediate data comes as
/// user space wrote it, in network byte order.
fn user_send_op(op: &UserSendOp) -> Result<SendOp<'static>> {
    let imm = |raw: u32| u32::from_be_bytes(raw.to_le_bytes());
    Ok(match *op {
        UserSendOp::Send => SendOp::Send,
        UserSendOp::SendWithImm(raw) => SendOp::SendWithImm(imm(raw)),
        UserSendOp::SendWithInv(k) => SendOp::SendWithInv(k),
        UserSendOp::Write { remote_addr, rkey } => SendOp::Write { remote_addr, rkey },
        UserSendOp::WriteWithImm {
            remote_addr,
            rkey,
            imm: raw,
        } => SendOp::WriteWithImm {
            remote_addr,
            rkey,
            imm: imm(raw),
        },
        UserSendOp::Read { remote_addr, rkey } => SendOp::Read { remote_addr, rkey },
        UserSendOp::CmpAndSwp {
            remote_addr,
            rkey,
            compare,
            swap,
        } => SendOp::CmpAndSwp {
            remote_addr,
            rkey,
            compare,
            swap,
        },
        UserSendOp::FetchAndAdd {
            remote_addr,
            rkey,
            add,
        } => SendOp::FetchAndAdd {
            remote_addr,
            rkey,
            add,
        },
        UserSendOp::LocalInv(k) => SendOp::LocalInv(k),
        UserSendOp::Flush {
            remote_addr,
            rkey,
            length,
            placement,
            whole_mr,
        } => SendOp::Flush {
            remote_addr,
            rkey,
            length: u64::from(length),
            flush: FlushType {
                global: placement & FLUSH_GLOBAL != 0,
                persistent: placement & FLUSH_PERSISTENT != 0,
            },
            whole_mr,
        },
        UserSendOp::AtomicWrite {
            remote_addr, rkey, ..
        } => SendOp::AtomicWrite { remote_addr, rkey },
        // Made by the caller, which looks its objects up.
        UserSendOp::BindMw { .. } => return Err(EINVAL),
    })
}
