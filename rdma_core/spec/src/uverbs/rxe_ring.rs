// SPDX-License-Identifier: GPL-2.0

//! The rings the Soft-RoCE (rxe) provider shares with user space
//! (`include/uapi/rdma/rdma_user_rxe.h`): their geometry, their index
//! arithmetic, the decoding of the send and receive work queue entries
//! librxe (rdma-core 44) writes into them, and the encoding of the
//! completions the kernel writes into a CQ ring.
//!
//! # The rings
//!
//! A ring is one buffer mapped by both sides: the header
//! (`struct rxe_queue_buf`, see [`super::rxe::queue_buf`]) and, from
//! [`QUEUE_DATA_OFFSET`], a power of two of slots of one element size
//! (itself a power of two, at least [`MIN_ELEM_SIZE`]). One slot is always
//! left empty, so a ring of `n` slots holds `n - 1` entries and "full" and
//! "empty" differ. [`RingGeometry::new`] computes all of this, with checked
//! arithmetic, within [`MAX_SLOTS`] slots, [`MAX_ELEM_SIZE`] bytes per
//! element and [`MAX_BUF_SIZE`] bytes per buffer.
//!
//! # Untrusted indexes and entries
//!
//! User space can write any bytes into the ring at any time. The kernel
//! therefore keeps its own copy of the index it owns, reads the other
//! side's index once, and masks it with [`RingGeometry::index_mask`]
//! before any use: every `u32` is then a valid slot, [`RingGeometry::count`]
//! is at most the capacity and [`RingGeometry::slot_offset`] is always
//! inside the buffer. A lying index can only make the kernel see entries
//! that hold garbage (which the decoders refuse) or fewer free CQ slots:
//! it hurts the lying process only.
//!
//! The indexes the kernel publishes must be masked ones, as
//! [`RingGeometry::next`] returns them: librxe stores its own indexes
//! masked and tests emptiness by comparing the raw values.
//!
//! An entry is copied once out of the ring into a kernel buffer of the
//! element size, and only that copy is decoded, so it cannot change
//! between the checks and the use. [`decode_send_wqe`] and
//! [`decode_recv_wqe`] accept exactly what librxe writes and refuse the
//! rest with a [`RingError`]; they never panic, never index out of range
//! and never overflow. What they return borrows the copy (the SGE list or
//! the inline bytes), so decoding allocates nothing.
//!
//! Integers are native-endian C integers, as in the rest of [`super`];
//! immediate data (`__be32`) is kept as the raw value read.
//!
//! This module uses only `core`.

use core::fmt;

use super::super::opcodes::{Access, SendFlags, WcFlags, WcOpcode, WcStatus, WrOpcode};
use super::super::qp_state::QpType;
use super::cq::Wc;
use super::rxe::QUEUE_DATA_OFFSET;
use super::{Errno, Wire, WireStruct};

/// The smallest element size: the kernel's rxe rounds elements up to a
/// cache line.
pub const MIN_ELEM_SIZE: usize = 64;

/// The largest element size accepted (a send WQE with 32 SGEs or 512
/// bytes of inline data takes 1 KiB).
pub const MAX_ELEM_SIZE: usize = 1 << 14;

/// The most slots a ring may have (so at most `MAX_SLOTS - 1` entries).
pub const MAX_SLOTS: u32 = 1 << 20;

/// The largest ring buffer, header included, after rounding to pages.
pub const MAX_BUF_SIZE: usize = 1 << 28;

/// The page size used when the caller has no other (x86-64, arm64 4K).
pub const PAGE_SIZE: usize = 4096;

/// The largest total length of a work request's data (rxe's
/// `max_msg_sz`, 2 GiB).
pub const MAX_WQE_LENGTH: u32 = 1 << 31;

/// Why a ring could not be sized or an entry was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// A ring of zero entries was requested.
    NoEntries,
    /// More entries were requested than [`MAX_SLOTS`] allows.
    TooManyEntries(u32),
    /// The element size is zero or above [`MAX_ELEM_SIZE`].
    BadElemSize(usize),
    /// The page size is not a power of two.
    BadPageSize(usize),
    /// The buffer would exceed [`MAX_BUF_SIZE`].
    BufferTooLarge,
    /// The element is shorter than the structure decoded from it.
    ElemTooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// The opcode is not one user space may post.
    BadOpcode(u32),
    /// The opcode is not allowed on this QP type.
    OpcodeNotAllowed(WrOpcode),
    /// The send flags have unknown bits.
    BadSendFlags(u32),
    /// Inline data was asked for an operation that sends no local data.
    InlineNotAllowed,
    /// More SGEs than the queue allows.
    TooManySge {
        /// The entry's `num_sge`.
        num_sge: u32,
        /// The most allowed.
        max: u32,
    },
    /// The SGE list runs past the end of the element.
    SgeBeyondElem,
    /// The SGE lengths add up to more than [`MAX_WQE_LENGTH`].
    LengthOverflow,
    /// The inline data is longer than the queue allows.
    InlineTooLong {
        /// The entry's length.
        length: u32,
        /// The most allowed.
        max: u32,
    },
    /// The inline data runs past the end of the element.
    InlineBeyondElem,
    /// `dma.length`, `dma.resid`, `cur_sge` or `sge_offset` disagree with
    /// the data (librxe writes `length == resid == total`, zeros).
    BadDmaState,
    /// An operation that takes no data (local invalidate, bind, flush)
    /// has some.
    UnexpectedData,
    /// An atomic names an unaligned address or less than 8 bytes.
    BadAtomic,
    /// A UD send names no address handle or a QP number above 24 bits.
    BadUdAddress,
    /// A FLUSH names an unknown placement type or level.
    BadFlush,
    /// A memory window bind names unknown access bits.
    BadAccess(u32),
    /// A completion slot is shorter than `struct ib_uverbs_wc`.
    SlotTooShort(usize),
    /// A resize would leave fewer entries than are waiting.
    WontFit {
        /// Entries waiting in the old ring.
        waiting: u32,
        /// Entries the new ring may hold.
        room: u32,
    },
    /// A resize between rings of different element sizes.
    ElemSizeMismatch,
}

impl RingError {
    /// The errno for this error (the create path's sizing errors and a
    /// malformed entry alike are `EINVAL`, as in the C rxe).
    pub fn errno(&self) -> Errno {
        Errno::Inval
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RingError::NoEntries => write!(f, "ring of zero entries"),
            RingError::TooManyEntries(n) => write!(f, "ring of {n} entries too large"),
            RingError::BadElemSize(s) => write!(f, "bad ring element size {s}"),
            RingError::BadPageSize(s) => write!(f, "bad page size {s}"),
            RingError::BufferTooLarge => write!(f, "ring buffer too large"),
            RingError::ElemTooShort { needed, got } => {
                write!(f, "ring element {got} bytes, {needed} needed")
            }
            RingError::BadOpcode(o) => write!(f, "bad work request opcode {o}"),
            RingError::OpcodeNotAllowed(o) => write!(f, "opcode {o:?} not allowed on this QP"),
            RingError::BadSendFlags(s) => write!(f, "bad send flags {s:#x}"),
            RingError::InlineNotAllowed => write!(f, "inline data on an operation without data"),
            RingError::TooManySge { num_sge, max } => write!(f, "{num_sge} SGEs, at most {max}"),
            RingError::SgeBeyondElem => write!(f, "SGE list beyond the ring element"),
            RingError::LengthOverflow => write!(f, "work request length overflow"),
            RingError::InlineTooLong { length, max } => {
                write!(f, "{length} bytes inline, at most {max}")
            }
            RingError::InlineBeyondElem => write!(f, "inline data beyond the ring element"),
            RingError::BadDmaState => write!(f, "inconsistent dma lengths"),
            RingError::UnexpectedData => write!(f, "data on an operation that takes none"),
            RingError::BadAtomic => write!(f, "bad atomic address or length"),
            RingError::BadUdAddress => write!(f, "bad UD address"),
            RingError::BadFlush => write!(f, "bad flush type or level"),
            RingError::BadAccess(a) => write!(f, "bad window access {a:#x}"),
            RingError::SlotTooShort(l) => write!(f, "completion slot of {l} bytes"),
            RingError::WontFit { waiting, room } => {
                write!(f, "{waiting} entries waiting, room for {room}")
            }
            RingError::ElemSizeMismatch => write!(f, "resize between element sizes"),
        }
    }
}

/// The size of a ring: slots, element size, buffer size.
///
/// # Invariants
///
/// `slots` is a power of two in `2..=MAX_SLOTS`; `log2_elem_size` is
/// within `6..=14`; `buf_size` is a multiple of the page size, at most
/// [`MAX_BUF_SIZE`], and at least `QUEUE_DATA_OFFSET + slots * elem_size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingGeometry {
    slots: u32,
    log2_elem_size: u32,
    buf_size: usize,
}

impl RingGeometry {
    /// Sizes a ring for at least `num_elem` entries of `elem_size` bytes
    /// with pages of `page_size` bytes (a power of two; [`PAGE_SIZE`]
    /// usually), as the C rxe does: the element size rounded up to a power
    /// of two of at least [`MIN_ELEM_SIZE`], `num_elem + 1` slots rounded
    /// up to a power of two.
    pub fn new(num_elem: u32, elem_size: usize, page_size: usize) -> Result<Self, RingError> {
        if num_elem == 0 {
            return Err(RingError::NoEntries);
        }
        if num_elem >= MAX_SLOTS {
            return Err(RingError::TooManyEntries(num_elem));
        }
        if elem_size == 0 || elem_size > MAX_ELEM_SIZE {
            return Err(RingError::BadElemSize(elem_size));
        }
        if !page_size.is_power_of_two() {
            return Err(RingError::BadPageSize(page_size));
        }
        let elem = elem_size.max(MIN_ELEM_SIZE).next_power_of_two();
        // num_elem < MAX_SLOTS, so neither the +1 nor the rounding can
        // exceed MAX_SLOTS.
        let slots = (num_elem + 1).next_power_of_two();
        let buf_size = (slots as usize)
            .checked_mul(elem)
            .and_then(|d| d.checked_add(QUEUE_DATA_OFFSET))
            .and_then(|s| s.checked_add(page_size - 1))
            .map(|s| s & !(page_size - 1))
            .filter(|s| *s <= MAX_BUF_SIZE)
            .ok_or(RingError::BufferTooLarge)?;
        // INVARIANT: checked above.
        Ok(RingGeometry {
            slots,
            log2_elem_size: elem.trailing_zeros(),
            buf_size,
        })
    }

    /// The number of slots (a power of two).
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// The number of entries the ring holds (`slots - 1`): what the
    /// create command reports back as the queue's size.
    pub fn capacity(&self) -> u32 {
        self.slots - 1
    }

    /// The header's `index_mask`: `slots - 1`.
    pub fn index_mask(&self) -> u32 {
        self.slots - 1
    }

    /// The header's `log2_elem_size`.
    pub fn log2_elem_size(&self) -> u32 {
        self.log2_elem_size
    }

    /// The element size in bytes (a power of two).
    pub fn elem_size(&self) -> usize {
        1 << self.log2_elem_size
    }

    /// The buffer size in bytes, header included, in whole pages: the
    /// size to allocate and to report in `mminfo.size`.
    pub fn buf_size(&self) -> usize {
        self.buf_size
    }

    /// The number of entries between a consumer and a producer index.
    /// Either may come from user space: both are masked, so the result
    /// is at most [`Self::capacity`].
    pub fn count(&self, prod: u32, cons: u32) -> u32 {
        prod.wrapping_sub(cons) & self.index_mask()
    }

    /// Whether the ring is full (one slot is kept empty).
    pub fn is_full(&self, prod: u32, cons: u32) -> bool {
        self.count(prod, cons) == self.index_mask()
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self, prod: u32, cons: u32) -> bool {
        self.count(prod, cons) == 0
    }

    /// The index after `index`, masked.
    pub fn next(&self, index: u32) -> u32 {
        index.wrapping_add(1) & self.index_mask()
    }

    /// The byte offset in the buffer of slot `index` (masked first, so
    /// any value gives a slot inside the buffer: the slot ends at or
    /// before [`Self::buf_size`]).
    pub fn slot_offset(&self, index: u32) -> usize {
        QUEUE_DATA_OFFSET + (((index & self.index_mask()) as usize) << self.log2_elem_size)
    }

    /// What a resize into `new` carries over: the entries between the
    /// consumer index `cons` (untrusted, masked here) and the producer
    /// index `prod`, in order, to the slots of `new` from 0. `room` is the
    /// number of entries the owner asked for; more entries waiting than
    /// `room` or than `new` holds is [`RingError::WontFit`]. A count
    /// computed from a wild index is at most [`Self::capacity`], so the
    /// moves never name a slot outside either ring.
    pub fn carry_into(
        &self,
        prod: u32,
        cons: u32,
        new: &RingGeometry,
        room: u32,
    ) -> Result<Carry, RingError> {
        if self.log2_elem_size != new.log2_elem_size {
            return Err(RingError::ElemSizeMismatch);
        }
        let waiting = self.count(prod, cons);
        let room = room.min(new.capacity());
        if waiting > room {
            return Err(RingError::WontFit { waiting, room });
        }
        Ok(Carry {
            from: cons & self.index_mask(),
            old_mask: self.index_mask(),
            count: waiting,
        })
    }
}

/// The moves of a resize ([`RingGeometry::carry_into`]).
///
/// # Invariants
///
/// `count` fits in the new ring (`count <= capacity`, so every `to`
/// index is below its slots) and `from` is masked by `old_mask`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carry {
    from: u32,
    old_mask: u32,
    count: u32,
}

impl Carry {
    /// The number of entries carried over.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The new ring's producer index once they are moved (its consumer
    /// index is 0).
    pub fn producer(&self) -> u32 {
        self.count
    }

    /// Each move, oldest first: `(slot in the old ring, slot in the new)`,
    /// both masked.
    pub fn moves(&self) -> impl Iterator<Item = (u32, u32)> {
        let (from, mask) = (self.from, self.old_mask);
        (0..self.count).map(move |i| (from.wrapping_add(i) & mask, i))
    }
}

wire_struct! {
    /// A scatter/gather element of a work queue entry.
    pub struct RxeSge = "rxe_sge" {
        addr: u64,
        length: u32,
        lkey: u32,
    }
}

wire_struct! {
    /// The data state of a work queue entry; the SGE array or the inline
    /// bytes follow it (a C flexible array union).
    pub struct RxeDmaInfo = "rxe_dma_info" {
        /// Total length of the data.
        length: u32,
        /// Bytes left to transfer (librxe: equal to `length`).
        resid: u32,
        /// Current SGE (librxe: zero).
        cur_sge: u32,
        /// Number of SGEs (for inline data librxe may leave the number
        /// of user buffers the data came from here; it is ignored then).
        num_sge: u32,
        /// Offset in the current SGE (librxe: zero).
        sge_offset: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// The fixed part of a send work request (`struct rxe_send_wr`); `wr`
    /// is the C union of the operation's fields, read at the offsets of
    /// [`send_wr`] from the element's bytes.
    pub struct RxeSendWr = "rxe_send_wr" {
        wr_id: u64,
        reserved: u32,
        /// `enum ib_wr_opcode`.
        opcode: u32,
        /// `enum ib_send_flags`.
        send_flags: u32,
        /// Immediate data (big-endian, raw) or the rkey to invalidate: a
        /// C union.
        ex: u32,
        /// The operation union (120 bytes).
        wr: [u64; 15],
    }
}

wire_struct! {
    /// A send work queue entry (`struct rxe_send_wqe`); the SGEs or the
    /// inline data follow `dma`.
    pub struct RxeSendWqe = "rxe_send_wqe" {
        wr: RxeSendWr,
        status: u32,
        state: u32,
        iova: u64,
        mask: u32,
        first_psn: u32,
        last_psn: u32,
        ack_length: u32,
        ssn: u32,
        has_rd_atomic: u32,
        dma: RxeDmaInfo,
    }
}

wire_struct! {
    /// A receive work queue entry (`struct rxe_recv_wqe`); the SGEs follow
    /// `dma`.
    pub struct RxeRecvWqe = "rxe_recv_wqe" {
        wr_id: u64,
        reserved: u32,
        padding: u32,
        dma: RxeDmaInfo,
    }
}

/// Offsets in `struct rxe_send_wr` of the members of its `wr` union
/// (checked against the C header by the layout test).
pub mod send_wr {
    /// The union `wr`.
    pub const WR: usize = 24;
    /// `wr.rdma.remote_addr`.
    pub const RDMA_REMOTE_ADDR: usize = WR;
    /// `wr.rdma.rkey`.
    pub const RDMA_RKEY: usize = WR + 8;
    /// `wr.atomic.remote_addr`.
    pub const ATOMIC_REMOTE_ADDR: usize = WR;
    /// `wr.atomic.compare_add`.
    pub const ATOMIC_COMPARE_ADD: usize = WR + 8;
    /// `wr.atomic.swap`.
    pub const ATOMIC_SWAP: usize = WR + 16;
    /// `wr.atomic.rkey`.
    pub const ATOMIC_RKEY: usize = WR + 24;
    /// `wr.flush.remote_addr`.
    pub const FLUSH_REMOTE_ADDR: usize = WR;
    /// `wr.flush.length`.
    pub const FLUSH_LENGTH: usize = WR + 8;
    /// `wr.flush.rkey`.
    pub const FLUSH_RKEY: usize = WR + 12;
    /// `wr.flush.type`.
    pub const FLUSH_TYPE: usize = WR + 16;
    /// `wr.flush.level`.
    pub const FLUSH_LEVEL: usize = WR + 17;
    /// `wr.ud.remote_qpn`.
    pub const UD_REMOTE_QPN: usize = WR;
    /// `wr.ud.remote_qkey`.
    pub const UD_REMOTE_QKEY: usize = WR + 4;
    /// `wr.ud.pkey_index`.
    pub const UD_PKEY_INDEX: usize = WR + 8;
    /// `wr.ud.ah_num`.
    pub const UD_AH_NUM: usize = WR + 12;
    /// `wr.ud.av` (the address vector old kernels took; refused here).
    pub const UD_AV: usize = WR + 32;
    /// `wr.mw.addr`.
    pub const MW_ADDR: usize = WR;
    /// `wr.mw.length`.
    pub const MW_LENGTH: usize = WR + 8;
    /// `wr.mw.mr_lkey`.
    pub const MW_MR_LKEY: usize = WR + 16;
    /// `wr.mw.mw_rkey`.
    pub const MW_MW_RKEY: usize = WR + 20;
    /// `wr.mw.rkey`.
    pub const MW_RKEY: usize = WR + 24;
    /// `wr.mw.access`.
    pub const MW_ACCESS: usize = WR + 28;
}

/// The offset of the SGE array (or inline data) in a send WQE.
pub const SEND_WQE_DATA: usize = RxeSendWqe::SIZE;

/// The offset of the SGE array in a receive WQE.
pub const RECV_WQE_DATA: usize = RxeRecvWqe::SIZE;

/// `IB_FLUSH_GLOBAL`.
pub const FLUSH_GLOBAL: u8 = 1 << 0;
/// `IB_FLUSH_PERSISTENT`.
pub const FLUSH_PERSISTENT: u8 = 1 << 1;
/// `IB_FLUSH_RANGE`: flush the range.
pub const FLUSH_RANGE: u8 = 0;
/// `IB_FLUSH_MR`: flush the whole MR.
pub const FLUSH_MR: u8 = 1;

/// A send operation from a user ring, with its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserSendOp {
    /// SEND.
    Send,
    /// SEND with immediate data (raw `__be32`).
    SendWithImm(u32),
    /// SEND invalidating the given rkey at the responder.
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
        /// Immediate data (raw `__be32`).
        imm: u32,
    },
    /// RDMA READ.
    Read {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare and swap (8-byte aligned address).
    CmpAndSwp {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to compare with.
        compare: u64,
        /// Value stored if equal.
        swap: u64,
    },
    /// Atomic fetch and add (8-byte aligned address).
    FetchAndAdd {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to add.
        add: u64,
    },
    /// Invalidate a local key.
    LocalInv(u32),
    /// Bind a memory window (type 2) to part of an MR.
    BindMw {
        /// The window's current rkey.
        mw_rkey: u32,
        /// The MR's lkey.
        mr_lkey: u32,
        /// The window's new rkey.
        rkey: u32,
        /// First address of the window.
        addr: u64,
        /// Length of the window.
        length: u64,
        /// Rights granted through the window.
        access: Access,
    },
    /// FLUSH a remote range or MR (no local data).
    Flush {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Length of the range.
        length: u32,
        /// Placement: [`FLUSH_GLOBAL`] and/or [`FLUSH_PERSISTENT`], not
        /// zero.
        placement: u8,
        /// [`FLUSH_MR`]: the whole MR, not the range.
        whole_mr: bool,
    },
    /// Store 8 bytes atomically (8-byte aligned address).
    AtomicWrite {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// The 8 bytes, as user space wrote them (`dma.atomic_wr`).
        value: [u8; 8],
    },
}

impl UserSendOp {
    /// The opcode.
    pub fn opcode(&self) -> WrOpcode {
        match self {
            UserSendOp::Send => WrOpcode::Send,
            UserSendOp::SendWithImm(_) => WrOpcode::SendWithImm,
            UserSendOp::SendWithInv(_) => WrOpcode::SendWithInv,
            UserSendOp::Write { .. } => WrOpcode::RdmaWrite,
            UserSendOp::WriteWithImm { .. } => WrOpcode::RdmaWriteWithImm,
            UserSendOp::Read { .. } => WrOpcode::RdmaRead,
            UserSendOp::CmpAndSwp { .. } => WrOpcode::AtomicCmpAndSwp,
            UserSendOp::FetchAndAdd { .. } => WrOpcode::AtomicFetchAndAdd,
            UserSendOp::LocalInv(_) => WrOpcode::LocalInv,
            UserSendOp::BindMw { .. } => WrOpcode::BindMw,
            UserSendOp::Flush { .. } => WrOpcode::Flush,
            UserSendOp::AtomicWrite { .. } => WrOpcode::AtomicWrite,
        }
    }
}

/// The destination of a UD send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdAddr {
    /// The destination QP (24 bits).
    pub remote_qpn: u32,
    /// Its Q_Key.
    pub remote_qkey: u32,
    /// The address handle number `CREATE_AH` returned (not zero).
    pub ah_num: u32,
}

/// A validated list of SGEs, borrowed from the element copy.
///
/// # Invariants
///
/// `bytes.len()` is a multiple of `RxeSge::SIZE`, the entries'
/// lengths add up to `total`, at most [`MAX_WQE_LENGTH`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgeList<'a> {
    bytes: &'a [u8],
    total: u32,
}

impl<'a> SgeList<'a> {
    /// Validates `num_sge` SGEs at `at` in `elem`.
    fn parse(elem: &'a [u8], at: usize, num_sge: u32, max_sge: u32) -> Result<Self, RingError> {
        if num_sge > max_sge {
            return Err(RingError::TooManySge {
                num_sge,
                max: max_sge,
            });
        }
        let bytes = (num_sge as usize)
            .checked_mul(RxeSge::SIZE)
            .and_then(|n| elem.get(at..)?.get(..n))
            .ok_or(RingError::SgeBeyondElem)?;
        let mut total: u32 = 0;
        for c in bytes.chunks_exact(RxeSge::SIZE) {
            total = total
                .checked_add(RxeSge::read_from(c).length)
                .filter(|t| *t <= MAX_WQE_LENGTH)
                .ok_or(RingError::LengthOverflow)?;
        }
        // INVARIANT: whole SGEs, total checked.
        Ok(SgeList { bytes, total })
    }

    /// The number of SGEs.
    pub fn len(&self) -> usize {
        self.bytes.len() / RxeSge::SIZE
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The sum of the SGE lengths (at most [`MAX_WQE_LENGTH`]).
    pub fn total_len(&self) -> u32 {
        self.total
    }

    /// The SGE at `i`.
    pub fn get(&self, i: usize) -> Option<RxeSge> {
        let at = i.checked_mul(RxeSge::SIZE)?;
        let b = self.bytes.get(at..)?.get(..RxeSge::SIZE)?;
        Some(RxeSge::read_from(b))
    }

    /// The SGEs in order.
    pub fn iter(&self) -> impl Iterator<Item = RxeSge> + 'a {
        self.bytes.chunks_exact(RxeSge::SIZE).map(RxeSge::read_from)
    }
}

/// The local data of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload<'a> {
    /// Gathered from (or, for READ and atomics, scattered into) the SGEs.
    Sges(SgeList<'a>),
    /// Carried in the entry (`IB_SEND_INLINE`); at most the queue's
    /// `max_inline` bytes.
    Inline(&'a [u8]),
}

impl Payload<'_> {
    /// The total data length.
    pub fn len(&self) -> u32 {
        match self {
            Payload::Sges(s) => s.total_len(),
            // The length was checked against a u32 bound when decoding.
            Payload::Inline(b) => b.len() as u32,
        }
    }

    /// Whether there is no data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a send queue allows: the QP type and the limits it was created
/// with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqLimits {
    /// The QP's type (decides which opcodes are allowed and whether the
    /// union holds a UD address).
    pub qp_type: QpType,
    /// The most SGEs per entry.
    pub max_sge: u32,
    /// The most inline bytes per entry.
    pub max_inline: u32,
}

/// A decoded, validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserSendWqe<'a> {
    /// The request's identifier.
    pub wr_id: u64,
    /// The operation.
    pub op: UserSendOp,
    /// The flags (only known ones).
    pub flags: SendFlags,
    /// The destination, for UD (and GSI) QPs.
    pub ud: Option<UdAddr>,
    /// The local data.
    pub payload: Payload<'a>,
}

/// A decoded, validated receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserRecvWqe<'a> {
    /// The request's identifier.
    pub wr_id: u64,
    /// Where received data goes.
    pub sges: SgeList<'a>,
}

fn u8_at(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::read_from(b.get(at..).unwrap_or(&[]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::read_from(b.get(at..).unwrap_or(&[]))
}

/// Checks the data state librxe writes: `length == resid == total`,
/// `cur_sge == sge_offset == 0`.
fn check_dma(dma: &RxeDmaInfo, total: u32) -> Result<(), RingError> {
    if dma.length != total || dma.resid != total || dma.cur_sge != 0 || dma.sge_offset != 0 {
        return Err(RingError::BadDmaState);
    }
    Ok(())
}

/// Decodes one send WQE from `elem`, a kernel copy of one ring element
/// (of the ring's element size).
///
/// Accepted opcodes: the ones librxe posts (SEND, SEND_WITH_IMM,
/// SEND_WITH_INV, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, the two
/// atomics, ATOMIC_WRITE, LOCAL_INV, BIND_MW) and FLUSH, which the 6.12
/// rxe takes from user space too, each only on the QP types
/// [`WrOpcode::allowed_on`] allows. Refused: LSO and REG_MR (no user
/// form; REG_MR's union holds a kernel pointer), 11 (RDMA_READ_WITH_INV
/// in the kernel, a driver-private opcode in user space), anything else.
///
/// The data is inline bytes if `IB_SEND_INLINE` is set (length
/// `dma.length`, at most `max_inline` and within the element), else
/// `dma.num_sge` SGEs (at most `max_sge`, within the element, lengths
/// adding up to at most [`MAX_WQE_LENGTH`], equal to `dma.length`).
/// ATOMIC_WRITE carries its 8 bytes in the entry, LOCAL_INV, BIND_MW
/// and FLUSH carry no data.
pub fn decode_send_wqe<'a>(elem: &'a [u8], lim: &SqLimits) -> Result<UserSendWqe<'a>, RingError> {
    let wqe = RxeSendWqe::decode(elem).map_err(|_| RingError::ElemTooShort {
        needed: RxeSendWqe::SIZE,
        got: elem.len(),
    })?;
    let wr = &wqe.wr;
    let opcode = match WrOpcode::from_raw(wr.opcode) {
        Some(WrOpcode::RegMr | WrOpcode::RdmaReadWithInv) | None => {
            return Err(RingError::BadOpcode(wr.opcode))
        }
        Some(op) => op,
    };
    if !opcode.allowed_on(lim.qp_type) {
        return Err(RingError::OpcodeNotAllowed(opcode));
    }
    let flags = SendFlags(wr.send_flags);
    if flags.has_unknown() {
        return Err(RingError::BadSendFlags(wr.send_flags));
    }
    let inline = flags.contains(SendFlags::INLINE);
    let gathers = opcode.gathers() && opcode != WrOpcode::AtomicWrite;
    if inline && !gathers {
        return Err(RingError::InlineNotAllowed);
    }
    let dma = &wqe.dma;
    let payload = if inline {
        let max = lim.max_inline;
        if dma.length > max {
            return Err(RingError::InlineTooLong {
                length: dma.length,
                max,
            });
        }
        let data = elem
            .get(SEND_WQE_DATA..)
            .and_then(|d| d.get(..dma.length as usize))
            .ok_or(RingError::InlineBeyondElem)?;
        check_dma(dma, dma.length)?;
        Payload::Inline(data)
    } else if opcode == WrOpcode::AtomicWrite {
        check_dma(dma, 8)?;
        if dma.num_sge != 0 {
            return Err(RingError::BadDmaState);
        }
        Payload::Sges(SgeList::parse(elem, SEND_WQE_DATA, 0, 0)?)
    } else {
        let sges = SgeList::parse(elem, SEND_WQE_DATA, dma.num_sge, lim.max_sge)?;
        check_dma(dma, sges.total_len())?;
        Payload::Sges(sges)
    };
    if (opcode.is_local() || opcode == WrOpcode::Flush) && (dma.num_sge != 0 || dma.length != 0) {
        return Err(RingError::UnexpectedData);
    }
    let b = elem;
    let rdma = || {
        (
            u64_at(b, send_wr::RDMA_REMOTE_ADDR),
            u32_at(b, send_wr::RDMA_RKEY),
        )
    };
    let atomic_addr = || {
        let a = u64_at(b, send_wr::ATOMIC_REMOTE_ADDR);
        if a & 7 != 0 {
            return Err(RingError::BadAtomic);
        }
        Ok(a)
    };
    let op = match opcode {
        WrOpcode::Send => UserSendOp::Send,
        WrOpcode::SendWithImm => UserSendOp::SendWithImm(wr.ex),
        WrOpcode::SendWithInv => UserSendOp::SendWithInv(wr.ex),
        WrOpcode::RdmaWrite => {
            let (remote_addr, rkey) = rdma();
            UserSendOp::Write { remote_addr, rkey }
        }
        WrOpcode::RdmaWriteWithImm => {
            let (remote_addr, rkey) = rdma();
            UserSendOp::WriteWithImm {
                remote_addr,
                rkey,
                imm: wr.ex,
            }
        }
        WrOpcode::RdmaRead => {
            let (remote_addr, rkey) = rdma();
            UserSendOp::Read { remote_addr, rkey }
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            let remote_addr = atomic_addr()?;
            if payload.len() < 8 {
                return Err(RingError::BadAtomic);
            }
            let rkey = u32_at(b, send_wr::ATOMIC_RKEY);
            let compare_add = u64_at(b, send_wr::ATOMIC_COMPARE_ADD);
            if opcode == WrOpcode::AtomicCmpAndSwp {
                UserSendOp::CmpAndSwp {
                    remote_addr,
                    rkey,
                    compare: compare_add,
                    swap: u64_at(b, send_wr::ATOMIC_SWAP),
                }
            } else {
                UserSendOp::FetchAndAdd {
                    remote_addr,
                    rkey,
                    add: compare_add,
                }
            }
        }
        WrOpcode::AtomicWrite => {
            let (remote_addr, rkey) = rdma();
            if remote_addr & 7 != 0 {
                return Err(RingError::BadAtomic);
            }
            let mut value = [0u8; 8];
            for (d, s) in value.iter_mut().zip(b.iter().skip(SEND_WQE_DATA)) {
                *d = *s;
            }
            UserSendOp::AtomicWrite {
                remote_addr,
                rkey,
                value,
            }
        }
        WrOpcode::LocalInv => UserSendOp::LocalInv(wr.ex),
        WrOpcode::BindMw => {
            let raw = u32_at(b, send_wr::MW_ACCESS);
            let access = Access(raw);
            if access.has_unknown() {
                return Err(RingError::BadAccess(raw));
            }
            UserSendOp::BindMw {
                mw_rkey: u32_at(b, send_wr::MW_MW_RKEY),
                mr_lkey: u32_at(b, send_wr::MW_MR_LKEY),
                rkey: u32_at(b, send_wr::MW_RKEY),
                addr: u64_at(b, send_wr::MW_ADDR),
                length: u64_at(b, send_wr::MW_LENGTH),
                access,
            }
        }
        WrOpcode::Flush => {
            let placement = u8_at(b, send_wr::FLUSH_TYPE);
            let level = u8_at(b, send_wr::FLUSH_LEVEL);
            let known = FLUSH_GLOBAL | FLUSH_PERSISTENT;
            if placement == 0 || placement & !known != 0 || level > FLUSH_MR {
                return Err(RingError::BadFlush);
            }
            UserSendOp::Flush {
                remote_addr: u64_at(b, send_wr::FLUSH_REMOTE_ADDR),
                rkey: u32_at(b, send_wr::FLUSH_RKEY),
                length: u32_at(b, send_wr::FLUSH_LENGTH),
                placement,
                whole_mr: level == FLUSH_MR,
            }
        }
        WrOpcode::RegMr | WrOpcode::RdmaReadWithInv => return Err(RingError::BadOpcode(wr.opcode)),
    };
    let ud = if matches!(lim.qp_type, QpType::Ud | QpType::Gsi) {
        let addr = UdAddr {
            remote_qpn: u32_at(b, send_wr::UD_REMOTE_QPN),
            remote_qkey: u32_at(b, send_wr::UD_REMOTE_QKEY),
            ah_num: u32_at(b, send_wr::UD_AH_NUM),
        };
        if addr.ah_num == 0 || addr.remote_qpn > 0x00ff_ffff {
            return Err(RingError::BadUdAddress);
        }
        Some(addr)
    } else {
        None
    };
    Ok(UserSendWqe {
        wr_id: wr.wr_id,
        op,
        flags,
        ud,
        payload,
    })
}

/// Decodes one receive WQE from `elem`, a kernel copy of one ring
/// element: `dma.num_sge` SGEs (at most `max_sge`, within the element,
/// lengths adding up to at most [`MAX_WQE_LENGTH`] and to `dma.length`).
pub fn decode_recv_wqe(elem: &[u8], max_sge: u32) -> Result<UserRecvWqe<'_>, RingError> {
    let wqe = RxeRecvWqe::decode(elem).map_err(|_| RingError::ElemTooShort {
        needed: RxeRecvWqe::SIZE,
        got: elem.len(),
    })?;
    let sges = SgeList::parse(elem, RECV_WQE_DATA, wqe.dma.num_sge, max_sge)?;
    check_dma(&wqe.dma, sges.total_len())?;
    Ok(UserRecvWqe {
        wr_id: wqe.wr_id,
        sges,
    })
}

/// A completion as the kernel reports it to a user CQ ring: the fields of
/// `struct ib_uverbs_wc`, typed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The work request's identifier.
    pub wr_id: u64,
    /// The status.
    pub status: WcStatus,
    /// The opcode.
    pub opcode: WcOpcode,
    /// Vendor error (rxe: zero).
    pub vendor_err: u32,
    /// Bytes transferred (receives).
    pub byte_len: u32,
    /// Immediate data (raw `__be32`) or the invalidated rkey, as
    /// `wc_flags` says.
    pub ex: u32,
    /// The local QP number.
    pub qp_num: u32,
    /// The source QP (UD receives).
    pub src_qp: u32,
    /// The flags.
    pub wc_flags: WcFlags,
    /// P_Key index (UD receives).
    pub pkey_index: u16,
    /// Source LID.
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// Destination LID path bits.
    pub dlid_path_bits: u8,
    /// Port number.
    pub port_num: u8,
}

impl Completion {
    /// The wire form.
    pub fn to_wc(&self) -> Wc {
        Wc {
            wr_id: self.wr_id,
            status: self.status.as_raw(),
            opcode: self.opcode.as_raw(),
            vendor_err: self.vendor_err,
            byte_len: self.byte_len,
            ex: self.ex,
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            wc_flags: self.wc_flags.bits(),
            pkey_index: self.pkey_index,
            slid: self.slid,
            sl: self.sl,
            dlid_path_bits: self.dlid_path_bits,
            port_num: self.port_num,
            reserved: 0,
        }
    }
}

/// Writes `c` into a CQ ring slot (`slot` is the whole element): the
/// `struct ib_uverbs_wc`, then zeros to the end of the slot.
pub fn encode_cqe(c: &Completion, slot: &mut [u8]) -> Result<(), RingError> {
    if slot.len() < Wc::SIZE {
        return Err(RingError::SlotTooShort(slot.len()));
    }
    slot.fill(0);
    c.to_wc().write_to(slot);
    Ok(())
}
