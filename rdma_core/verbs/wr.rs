// SPDX-License-Identifier: GPL-2.0

//! Work requests as ULPs post them, and the queue entries providers execute.
//!
//! A ULP posts [`SendWr`]s and [`RecvWr`]s: borrowed, typed per opcode
//! ([`SendOp`]), so a WRITE without a remote address or a UD send without
//! an address handle cannot be written down. The core validates them and
//! copies them into the QP's rings as [`SendWqe`]s and [`RecvWqe`]s, fixed
//! size entries allocated with the queue, so posting never allocates. A
//! provider takes entries out of the rings (`rdma::verbs::qp`) and owns its copy.

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kshim::mem::Sge;
use crate::spec::opcodes::{Access, SendFlags, WrOpcode};
use crate::verbs::ah::AhCore;
use crate::verbs::mr::MrCore;
use crate::verbs::mw::MwCore;
use crate::verbs::wc::CqeDone;

/// The most SGEs a work request can have, whatever the device says.
pub const MAX_SGE: usize = 8;

/// The most inline data a send work request can carry.
pub const MAX_INLINE: usize = 256;

/// What a send operation does, with what it needs: as posted ([`SendOp`],
/// borrowing the MR and window it names) and as queued ([`WqeOp`], holding
/// them, since a queue entry outlives the work request it came from).
#[derive(Clone, Copy, Default)]
pub enum SendOperation<M, W> {
    /// SEND.
    #[default]
    Send,
    /// SEND with immediate data.
    SendWithImm(u32),
    /// SEND that invalidates the given rkey at the responder.
    SendWithInv(u32),
    /// RDMA WRITE.
    Write {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate data.
    WriteWithImm {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ.
    Read {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA READ that invalidates the local key `invalidate` when done.
    ReadWithInv {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Local key to invalidate.
        invalidate: u32,
    },
    /// Make earlier writes to a remote range (or whole MR) globally visible
    /// and/or persistent.
    Flush {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Length of the range.
        length: u64,
        /// Placement: visibility, persistence, or both.
        flush: FlushType,
        /// Flush the whole MR, not just the range.
        whole_mr: bool,
    },
    /// Store the 8 bytes of the SGE list at a remote address, atomically.
    AtomicWrite {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare and swap of 8 bytes.
    CmpAndSwp {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to compare with.
        compare: u64,
        /// Value to store if equal.
        swap: u64,
    },
    /// Atomic fetch and add of 8 bytes.
    FetchAndAdd {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to add.
        add: u64,
    },
    /// Invalidate a local key.
    LocalInv(u32),
    /// Bind a memory window to part of an MR.
    BindMw {
        /// The window.
        mw: W,
        /// The MR it opens onto.
        mr: M,
        /// The window's new key (index part unchanged).
        key: u32,
        /// First address of the window.
        addr: u64,
        /// Length of the window.
        length: u64,
        /// Rights granted through the window.
        access: Access,
    },
    /// Register the pages mapped into a fast-registration MR.
    RegMr {
        /// The MR.
        mr: M,
        /// Its new key (index part unchanged, new low byte).
        key: u32,
        /// Access rights it gets.
        access: Access,
    },
}

/// A send operation as a ULP posts it.
pub type SendOp<'a> = SendOperation<&'a Arc<MrCore>, &'a Arc<MwCore>>;

/// A send operation as queued in a [`SendWqe`]: every field has one
/// meaning, the one its variant says.
pub type WqeOp = SendOperation<Arc<MrCore>, Arc<MwCore>>;

impl<M, W> SendOperation<M, W> {
    /// The opcode.
    pub fn opcode(&self) -> WrOpcode {
        match self {
            SendOperation::Send => WrOpcode::Send,
            SendOperation::SendWithImm(_) => WrOpcode::SendWithImm,
            SendOperation::SendWithInv(_) => WrOpcode::SendWithInv,
            SendOperation::Write { .. } => WrOpcode::RdmaWrite,
            SendOperation::WriteWithImm { .. } => WrOpcode::RdmaWriteWithImm,
            SendOperation::Read { .. } => WrOpcode::RdmaRead,
            SendOperation::ReadWithInv { .. } => WrOpcode::RdmaReadWithInv,
            SendOperation::Flush { .. } => WrOpcode::Flush,
            SendOperation::AtomicWrite { .. } => WrOpcode::AtomicWrite,
            SendOperation::CmpAndSwp { .. } => WrOpcode::AtomicCmpAndSwp,
            SendOperation::FetchAndAdd { .. } => WrOpcode::AtomicFetchAndAdd,
            SendOperation::LocalInv(_) => WrOpcode::LocalInv,
            SendOperation::RegMr { .. } => WrOpcode::RegMr,
            SendOperation::BindMw { .. } => WrOpcode::BindMw,
        }
    }

    /// The remote address and key of an RDMA or atomic operation.
    pub fn remote(&self) -> Option<(u64, u32)> {
        match *self {
            SendOperation::Write { remote_addr, rkey }
            | SendOperation::WriteWithImm {
                remote_addr, rkey, ..
            }
            | SendOperation::Read { remote_addr, rkey }
            | SendOperation::ReadWithInv {
                remote_addr, rkey, ..
            }
            | SendOperation::Flush {
                remote_addr, rkey, ..
            }
            | SendOperation::AtomicWrite { remote_addr, rkey }
            | SendOperation::CmpAndSwp {
                remote_addr, rkey, ..
            }
            | SendOperation::FetchAndAdd {
                remote_addr, rkey, ..
            } => Some((remote_addr, rkey)),
            _ => None,
        }
    }

    /// The immediate data of a SEND or WRITE with immediate.
    pub fn imm(&self) -> Option<u32> {
        match *self {
            SendOperation::SendWithImm(imm) | SendOperation::WriteWithImm { imm, .. } => Some(imm),
            _ => None,
        }
    }

    /// The key a SEND with invalidate names (the responder's).
    pub fn send_invalidate(&self) -> Option<u32> {
        match *self {
            SendOperation::SendWithInv(k) => Some(k),
            _ => None,
        }
    }
}

impl SendOp<'_> {
    /// The queued form: the MR and window it names held, the rest copied.
    pub(crate) fn to_wqe_op(self) -> WqeOp {
        match self {
            SendOperation::Send => SendOperation::Send,
            SendOperation::SendWithImm(imm) => SendOperation::SendWithImm(imm),
            SendOperation::SendWithInv(k) => SendOperation::SendWithInv(k),
            SendOperation::Write { remote_addr, rkey } => {
                SendOperation::Write { remote_addr, rkey }
            }
            SendOperation::WriteWithImm {
                remote_addr,
                rkey,
                imm,
            } => SendOperation::WriteWithImm {
                remote_addr,
                rkey,
                imm,
            },
            SendOperation::Read { remote_addr, rkey } => SendOperation::Read { remote_addr, rkey },
            SendOperation::ReadWithInv {
                remote_addr,
                rkey,
                invalidate,
            } => SendOperation::ReadWithInv {
                remote_addr,
                rkey,
                invalidate,
            },
            SendOperation::Flush {
                remote_addr,
                rkey,
                length,
                flush,
                whole_mr,
            } => SendOperation::Flush {
                remote_addr,
                rkey,
                length,
                flush,
                whole_mr,
            },
            SendOperation::AtomicWrite { remote_addr, rkey } => {
                SendOperation::AtomicWrite { remote_addr, rkey }
            }
            SendOperation::CmpAndSwp {
                remote_addr,
                rkey,
                compare,
                swap,
            } => SendOperation::CmpAndSwp {
                remote_addr,
                rkey,
                compare,
                swap,
            },
            SendOperation::FetchAndAdd {
                remote_addr,
                rkey,
                add,
            } => SendOperation::FetchAndAdd {
                remote_addr,
                rkey,
                add,
            },
            SendOperation::LocalInv(k) => SendOperation::LocalInv(k),
            SendOperation::BindMw {
                mw,
                mr,
                key,
                addr,
                length,
                access,
            } => SendOperation::BindMw {
                mw: mw.clone(),
                mr: mr.clone(),
                key,
                addr,
                length,
                access,
            },
            SendOperation::RegMr { mr, key, access } => SendOperation::RegMr {
                mr: mr.clone(),
                key,
                access,
            },
        }
    }
}

/// What a FLUSH makes of the data (`IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushType {
    /// Visible to every agent of the responder.
    pub global: bool,
    /// Persistent across power loss.
    pub persistent: bool,
}

impl FlushType {
    /// The MR rights the flush needs.
    pub fn access(self) -> Access {
        let mut a = Access::NONE;
        if self.global {
            a = a | Access::FLUSH_GLOBAL;
        }
        if self.persistent {
            a = a | Access::FLUSH_PERSISTENT;
        }
        a
    }
}

/// Where a UD send goes.
#[derive(Clone, Copy)]
pub struct UdDest<'a> {
    /// The address.
    pub ah: &'a Arc<AhCore>,
    /// The destination QP.
    pub remote_qpn: u32,
    /// Its Q_Key.
    pub remote_qkey: u32,
}

/// A send work request (`struct ib_send_wr` and its extensions).
pub struct SendWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Called with the completion (CQs of `Cq::alloc`).
    pub cqe: Option<Arc<dyn CqeDone>>,
    /// The operation.
    pub op: SendOp<'a>,
    /// Flags.
    pub flags: SendFlags,
    /// Local memory: gathered for SEND and WRITE, scattered for READ and
    /// atomics (8 bytes).
    pub sg: &'a [Sge],
    /// Destination of a UD send.
    pub ud: Option<UdDest<'a>>,
}

impl<'a> SendWr<'a> {
    /// A signaled request with no UD destination and no callback.
    pub fn new(wr_id: u64, op: SendOp<'a>, sg: &'a [Sge]) -> Self {
        SendWr {
            wr_id,
            cqe: None,
            op,
            flags: SendFlags::SIGNALED,
            sg,
            ud: None,
        }
    }
}

/// A receive work request (`struct ib_recv_wr`).
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Called with the completion (CQs of `Cq::alloc`).
    pub cqe: Option<Arc<dyn CqeDone>>,
    /// Where received data goes.
    pub sg: &'a [Sge],
}

/// Where a UD send entry goes.
#[derive(Clone)]
pub struct UdWqe {
    /// The address.
    pub ah: Arc<AhCore>,
    /// The destination QP.
    pub remote_qpn: u32,
    /// Its Q_Key.
    pub remote_qkey: u32,
}

/// A posted send work request, as the provider executes it.
#[derive(Clone)]
pub struct SendWqe {
    /// The request's identifier.
    pub wr_id: u64,
    /// Its completion callback.
    pub cqe: Option<Arc<dyn CqeDone>>,
    /// The operation, with what it needs.
    pub op: WqeOp,
    /// Flags as posted.
    pub flags: SendFlags,
    /// Whether a successful completion is reported (SIGNALED or the QP
    /// signals all).
    pub signaled: bool,
    /// The destination of a UD or GSI send.
    pub ud: Option<UdWqe>,
    /// Total data length.
    pub length: u32,
    /// Number of valid entries in `sge` (0 for inline data).
    pub num_sge: usize,
    /// The SGEs.
    pub sge: [Sge; MAX_SGE],
    /// Whether the data is in `inline_data`.
    pub inline: bool,
    /// Inline data (first `length` bytes).
    pub inline_data: [u8; MAX_INLINE],
    /// Not a ULP's request: a step of a TM SRQ's rendezvous, queued by
    /// the core ([`TmJob`]).
    pub tm: TmJob,
}

/// A send queue entry the core queues for a rendezvous message that
/// matched a tagged buffer of a TM SRQ: it completes to the SRQ's CQ as
/// the tagged buffer's, never to the send CQ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TmJob {
    /// A ULP's request.
    #[default]
    None,
    /// The RDMA READ of the sender's data into the tagged buffer of this
    /// handle (the entry's `wr_id`, `cqe` and SGEs are the buffer's).
    RndvRead {
        /// The tagged buffer's entry in the list.
        handle: u32,
    },
    /// The FIN that tells the sender its data was read.
    Fin,
}

impl Default for SendWqe {
    fn default() -> Self {
        SendWqe {
            wr_id: 0,
            cqe: None,
            op: WqeOp::Send,
            flags: SendFlags::NONE,
            signaled: false,
            ud: None,
            length: 0,
            num_sge: 0,
            sge: [Sge::default(); MAX_SGE],
            inline: false,
            inline_data: [0; MAX_INLINE],
            tm: TmJob::None,
        }
    }
}

impl SendWqe {
    /// The SGEs in use.
    pub fn sges(&self) -> &[Sge] {
        &self.sge[..self.num_sge]
    }

    /// The opcode.
    pub fn opcode(&self) -> WrOpcode {
        self.op.opcode()
    }
}

/// A posted receive work request.
#[derive(Clone, Default)]
pub struct RecvWqe {
    /// The request's identifier.
    pub wr_id: u64,
    /// Its completion callback.
    pub cqe: Option<Arc<dyn CqeDone>>,
    /// Total length of the SGEs.
    pub length: u32,
    /// Number of valid entries in `sge`.
    pub num_sge: usize,
    /// The SGEs.
    pub sge: [Sge; MAX_SGE],
}

impl RecvWqe {
    /// The SGEs in use.
    pub fn sges(&self) -> &[Sge] {
        &self.sge[..self.num_sge]
    }

    pub(crate) fn fill(&mut self, wr: &RecvWr<'_>, max_sge: u32) -> Result {
        if wr.sg.len() > max_sge as usize || wr.sg.len() > MAX_SGE {
            return Err(EINVAL);
        }
        self.wr_id = wr.wr_id;
        self.cqe = wr.cqe.clone();
        self.length = crate::verbs::mr::sge_len(wr.sg)?;
        self.num_sge = wr.sg.len();
        self.sge[..wr.sg.len()].copy_from_slice(wr.sg);
        Ok(())
    }
}

/// A ring of fixed-size entries: `count` entries from `head`.
pub(crate) struct Ring<T> {
    slots: KVec<T>,
    head: usize,
    count: usize,
    /// The number of entries the owner asked for (at most `slots.len()`).
    limit: usize,
}

impl<T: Default> Ring<T> {
    pub(crate) fn new(size: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(size, GFP_KERNEL)?;
        for _ in 0..size {
            slots.push(T::default(), GFP_KERNEL)?;
        }
        Ok(Ring {
            slots,
            head: 0,
            count: 0,
            limit: size,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The slot a new entry goes to (`ENOMEM` when full, as the C verbs
    /// report a full queue); call [`Ring::commit`] once it is filled.
    pub(crate) fn next_slot(&mut self) -> Result<&mut T> {
        if self.count >= self.limit {
            return Err(ENOMEM);
        }
        let at = (self.head + self.count) % self.slots.len().max(1);
        Ok(&mut self.slots[at])
    }

    pub(crate) fn commit(&mut self) {
        self.count += 1;
    }

    /// The `i`-th entry from the head.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        (i < self.count).then(|| &self.slots[(self.head + i) % self.slots.len().max(1)])
    }

    /// Takes the oldest entry out.
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.count == 0 {
            return None;
        }
        let item = core::mem::take(&mut self.slots[self.head]);
        self.head = (self.head + 1) % self.slots.len().max(1);
        self.count -= 1;
        Some(item)
    }

    /// Moves every entry into `fresh`, an empty ring allocated beforehand
    /// (`EINVAL` if they do not fit).
    pub(crate) fn transfer_to(&mut self, fresh: &mut Ring<T>) -> Result {
        if fresh.limit < self.count || fresh.count != 0 {
            return Err(EINVAL);
        }
        while let Some(item) = self.pop() {
            *fresh.next_slot()? = item;
            fresh.commit();
        }
        Ok(())
    }
}
