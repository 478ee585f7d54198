// SPDX-License-Identifier: GPL-2.0

//! Work request and completion vocabulary, and the checks on it.
//!
//! The numeric values are those of `enum ib_wr_opcode`, `enum ib_wc_opcode`,
//! `enum ib_wc_status`, `enum ib_send_flags`, `enum ib_wc_flags` and
//! `enum ib_access_flags` in include/rdma/ib_verbs.h (and the uverbs ABI they
//! alias), so values can cross to C and to the wire code unchanged.
//!
//! Besides the types, this file decides what a work request may be: which
//! opcodes each QP type accepts ([`WrOpcode::allowed_on`]), which completion
//! opcode a send work request produces ([`WrOpcode::wc_opcode`]) and which
//! memory access flag combinations are legal ([`Access::check`]). Only
//! [`super::qp_state::QpType`] is used from the rest of the crate.

use core::ops::BitOr;

use super::qp_state::QpType;

/// A send work request opcode (`enum ib_wr_opcode`): the ones a software
/// RoCE device implements.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WrOpcode {
    /// RDMA WRITE.
    RdmaWrite = 0,
    /// RDMA WRITE with immediate data.
    RdmaWriteWithImm = 1,
    /// SEND.
    Send = 2,
    /// SEND with immediate data.
    SendWithImm = 3,
    /// RDMA READ.
    RdmaRead = 4,
    /// Atomic compare and swap.
    AtomicCmpAndSwp = 5,
    /// Atomic fetch and add.
    AtomicFetchAndAdd = 6,
    /// Local invalidate of an MR or MW key.
    LocalInv = 7,
    /// Bind a memory window.
    BindMw = 8,
    /// SEND that invalidates a key on the responder.
    SendWithInv = 9,
    /// RDMA READ that invalidates a local key when it completes.
    RdmaReadWithInv = 11,
    /// Make earlier RDMA WRITEs to a remote range visible or persistent.
    Flush = 14,
    /// Write 8 bytes to remote memory as one atomic store.
    AtomicWrite = 15,
    /// Fast registration of an MR whose pages were set by `map_mr_sg`.
    RegMr = 0x20,
}

impl WrOpcode {
    /// Every opcode, in numeric order.
    pub const ALL: [WrOpcode; 14] = [
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaWriteWithImm,
        WrOpcode::Send,
        WrOpcode::SendWithImm,
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::LocalInv,
        WrOpcode::BindMw,
        WrOpcode::SendWithInv,
        WrOpcode::RdmaReadWithInv,
        WrOpcode::Flush,
        WrOpcode::AtomicWrite,
        WrOpcode::RegMr,
    ];

    /// Converts a raw `enum ib_wr_opcode` value.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => WrOpcode::RdmaWrite,
            1 => WrOpcode::RdmaWriteWithImm,
            2 => WrOpcode::Send,
            3 => WrOpcode::SendWithImm,
            4 => WrOpcode::RdmaRead,
            5 => WrOpcode::AtomicCmpAndSwp,
            6 => WrOpcode::AtomicFetchAndAdd,
            7 => WrOpcode::LocalInv,
            8 => WrOpcode::BindMw,
            9 => WrOpcode::SendWithInv,
            11 => WrOpcode::RdmaReadWithInv,
            14 => WrOpcode::Flush,
            15 => WrOpcode::AtomicWrite,
            0x20 => WrOpcode::RegMr,
            _ => return None,
        })
    }

    /// The raw value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    /// Whether a QP of type `qp_type` accepts this opcode on its send queue,
    /// as the kernel's rxe decides (`rxe_wr_opcode_info`): RC takes
    /// everything; UC the SENDs, RDMA WRITEs and memory window binds; UD
    /// the SENDs (with invalidate too); GSI plain SENDs.
    pub const fn allowed_on(self, qp_type: QpType) -> bool {
        match qp_type {
            QpType::Rc => true,
            QpType::Uc => matches!(
                self,
                WrOpcode::Send
                    | WrOpcode::SendWithImm
                    | WrOpcode::SendWithInv
                    | WrOpcode::RdmaWrite
                    | WrOpcode::RdmaWriteWithImm
                    | WrOpcode::BindMw
            ),
            QpType::Ud => matches!(
                self,
                WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv
            ),
            QpType::Gsi => matches!(self, WrOpcode::Send | WrOpcode::SendWithImm),
            _ => false,
        }
    }

    /// Whether the request names remote memory (`remote_addr` and `rkey`).
    pub const fn is_rdma(self) -> bool {
        matches!(
            self,
            WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
                | WrOpcode::RdmaRead
                | WrOpcode::RdmaReadWithInv
                | WrOpcode::AtomicCmpAndSwp
                | WrOpcode::AtomicFetchAndAdd
                | WrOpcode::Flush
                | WrOpcode::AtomicWrite
        )
    }

    /// Whether the request is an 8-byte atomic that returns the old value.
    pub const fn is_atomic(self) -> bool {
        matches!(
            self,
            WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd
        )
    }

    /// Whether the request consumes a receive WQE at the responder.
    pub const fn consumes_recv(self) -> bool {
        matches!(
            self,
            WrOpcode::Send
                | WrOpcode::SendWithImm
                | WrOpcode::SendWithInv
                | WrOpcode::RdmaWriteWithImm
        )
    }

    /// Whether the request carries immediate data.
    pub const fn has_imm(self) -> bool {
        matches!(self, WrOpcode::SendWithImm | WrOpcode::RdmaWriteWithImm)
    }

    /// Whether the request acts on local keys only and sends nothing.
    pub const fn is_local(self) -> bool {
        matches!(
            self,
            WrOpcode::LocalInv | WrOpcode::RegMr | WrOpcode::BindMw
        )
    }

    /// Whether the local data is gathered from the SGE list (as opposed to
    /// scattered into it, or not used).
    pub const fn gathers(self) -> bool {
        matches!(
            self,
            WrOpcode::Send
                | WrOpcode::SendWithImm
                | WrOpcode::SendWithInv
                | WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
                | WrOpcode::AtomicWrite
        )
    }

    /// The opcode of the requester's completion.
    pub const fn wc_opcode(self) -> WcOpcode {
        match self {
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv => WcOpcode::Send,
            WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv => WcOpcode::RdmaRead,
            WrOpcode::Flush => WcOpcode::Flush,
            WrOpcode::AtomicWrite => WcOpcode::AtomicWrite,
            WrOpcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
            WrOpcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            WrOpcode::LocalInv => WcOpcode::LocalInv,
            WrOpcode::BindMw => WcOpcode::BindMw,
            WrOpcode::RegMr => WcOpcode::RegMr,
        }
    }
}

/// A work completion opcode (`enum ib_wc_opcode`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    /// A SEND completed.
    #[default]
    Send = 0,
    /// An RDMA WRITE completed.
    RdmaWrite = 1,
    /// An RDMA READ completed.
    RdmaRead = 2,
    /// A compare and swap completed.
    CompSwap = 3,
    /// A fetch and add completed.
    FetchAdd = 4,
    /// A memory window bind completed.
    BindMw = 5,
    /// A local invalidate completed.
    LocalInv = 6,
    /// A FLUSH completed.
    Flush = 8,
    /// An atomic write completed.
    AtomicWrite = 9,
    /// A fast registration completed.
    RegMr = 10,
    /// A receive WQE was consumed by a SEND.
    Recv = 128,
    /// A receive WQE was consumed by an RDMA WRITE with immediate data.
    RecvRdmaWithImm = 129,
    /// A tag-matching SRQ's `TAG_ADD` completed (rdma-core's
    /// `IBV_WC_TM_ADD`; the kernel's verbs have no tag matching).
    TmAdd = 130,
    /// A `TAG_DEL` completed.
    TmDel = 131,
    /// A `TAG_SYNC` completed.
    TmSync = 132,
    /// A tagged message: matched (with the TM flags), or unexpected.
    TmRecv = 133,
    /// A NO_TAG message, in an ordinary receive of a TM SRQ.
    TmNoTag = 134,
}

impl WcOpcode {
    /// The raw value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    /// Whether this completes a receive (`opcode & IB_WC_RECV`).
    pub const fn is_recv(self) -> bool {
        self.as_raw() & 128 != 0
    }
}

/// A work completion status (`enum ib_wc_status`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum WcStatus {
    #[default]
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
    /// A tag-matching list operation failed (a `TAG_DEL` of an entry a
    /// message consumed); rdma-core's `IBV_WC_TM_ERR`.
    TmErr = 22,
    /// A rendezvous whose tagged buffer is too small: its headers were
    /// scattered into it, software takes over.
    TmRndvIncomplete = 23,
}

impl WcStatus {
    /// The raw value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    /// The kernel's text for the status (`ib_wc_status_msg`).
    pub const fn msg(self) -> &'static str {
        match self {
            WcStatus::Success => "success",
            WcStatus::LocLenErr => "local length error",
            WcStatus::LocQpOpErr => "local QP operation error",
            WcStatus::LocEecOpErr => "local EE context operation error",
            WcStatus::LocProtErr => "local protection error",
            WcStatus::WrFlushErr => "WR flushed",
            WcStatus::MwBindErr => "memory bind operation error",
            WcStatus::BadRespErr => "bad response error",
            WcStatus::LocAccessErr => "local access error",
            WcStatus::RemInvReqErr => "remote invalid request error",
            WcStatus::RemAccessErr => "remote access error",
            WcStatus::RemOpErr => "remote operation error",
            WcStatus::RetryExcErr => "transport retry counter exceeded",
            WcStatus::RnrRetryExcErr => "RNR retry counter exceeded",
            WcStatus::LocRddViolErr => "local RDD violation error",
            WcStatus::RemInvRdReqErr => "remote invalid RD request",
            WcStatus::RemAbortErr => "operation aborted",
            WcStatus::InvEecnErr => "invalid EE context number",
            WcStatus::InvEecStateErr => "invalid EE context state",
            WcStatus::FatalErr => "fatal error",
            WcStatus::RespTimeoutErr => "response timeout error",
            WcStatus::GeneralErr => "general error",
            WcStatus::TmErr => "tag matching error",
            WcStatus::TmRndvIncomplete => "tag matching rendezvous incomplete",
        }
    }
}

macro_rules! flag_set {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $flag:ident = $val:expr,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The empty set.
            pub const NONE: Self = Self(0);
            $($(#[$fm])* pub const $flag: Self = Self($val);)*
            /// Every flag this type names.
            pub const KNOWN: Self = Self(0 $(| $val)*);

            /// The raw bits.
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// Whether every flag of `other` is set.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether any flag of `other` is set.
            pub const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }

            /// Whether a bit is set that this type does not name.
            pub const fn has_unknown(self) -> bool {
                self.0 & !Self::KNOWN.0 != 0
            }
        }

        impl BitOr for $name {
            type Output = Self;

            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }
    };
}

flag_set! {
    /// Send work request flags (`enum ib_send_flags`).
    SendFlags {
        /// Wait for earlier RDMA READs and atomics before this request.
        FENCE = 1,
        /// Generate a completion even if the QP signals selectively.
        SIGNALED = 1 << 1,
        /// Set the solicited event bit.
        SOLICITED = 1 << 2,
        /// Copy the data at post time; the SGEs need no key.
        INLINE = 1 << 3,
    }
}

flag_set! {
    /// Work completion flags (`enum ib_wc_flags`).
    WcFlags {
        /// A GRH precedes the data (UD receives).
        GRH = 1,
        /// `imm_data` is valid.
        WITH_IMM = 1 << 1,
        /// `invalidate_rkey` is valid.
        WITH_INVALIDATE = 1 << 2,
        /// `network_hdr_type` is valid.
        WITH_NETWORK_HDR_TYPE = 1 << 6,
        /// A tag-matching SRQ wants a `TAG_SYNC` (rdma-core's
        /// `IBV_WC_TM_SYNC_REQ`, 1 << 4, which the kernel's flags use for
        /// `IB_WC_WITH_SMAC`: uverbs translates).
        TM_SYNC_REQ = 1 << 8,
        /// A tagged message matched an entry (`IBV_WC_TM_MATCH`).
        TM_MATCH = 1 << 9,
        /// All of a matched message's data is in place
        /// (`IBV_WC_TM_DATA_VALID`).
        TM_DATA_VALID = 1 << 10,
    }
}

flag_set! {
    /// Memory access rights (`enum ib_access_flags`).
    Access {
        /// The device may write the memory for local operations.
        LOCAL_WRITE = 1,
        /// Peers may RDMA WRITE the memory.
        REMOTE_WRITE = 1 << 1,
        /// Peers may RDMA READ the memory.
        REMOTE_READ = 1 << 2,
        /// Peers may run atomics on the memory.
        REMOTE_ATOMIC = 1 << 3,
        /// Memory windows may be bound to the region.
        MW_BIND = 1 << 4,
        /// The region is addressed from offset 0, not its virtual address.
        ZERO_BASED = 1 << 5,
        /// Peers may FLUSH the memory to global visibility.
        FLUSH_GLOBAL = 1 << 8,
        /// Peers may FLUSH the memory to persistence.
        FLUSH_PERSISTENT = 1 << 9,
    }
}

impl Access {
    /// Whether the flags are a legal combination for a memory region: the
    /// IBTA requires local write access whenever remote write or remote
    /// atomic access is granted, and no unknown bit may be set.
    pub const fn check(self) -> bool {
        if self.has_unknown() {
            return false;
        }
        let needs_local = Self::REMOTE_WRITE.0 | Self::REMOTE_ATOMIC.0;
        self.0 & needs_local == 0 || self.contains(Self::LOCAL_WRITE)
    }

    /// The rights a QP may grant its peers (`qp_access_flags`): RDMA
    /// write, read, atomics, and the FLUSH types (which the responder
    /// checks on the QP as well as on the MR, as the C rxe does).
    pub const QP_REMOTE: Self = Self(
        Self::REMOTE_WRITE.0
            | Self::REMOTE_READ.0
            | Self::REMOTE_ATOMIC.0
            | Self::FLUSH_GLOBAL.0
            | Self::FLUSH_PERSISTENT.0,
    );
}

flag_set! {
    /// What `req_notify_cq` arms (`enum ib_cq_notify_flags`).
    NotifyFlags {
        /// Signal on the next solicited (or error) completion only.
        SOLICITED = 1,
        /// Signal on the next completion.
        NEXT_COMP = 1 << 1,
        /// Return whether completions arrived that the caller has not polled.
        REPORT_MISSED_EVENTS = 1 << 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_raw_round_trip() {
        for op in WrOpcode::ALL {
            assert_eq!(WrOpcode::from_raw(op.as_raw()), Some(op));
        }
        assert_eq!(WrOpcode::from_raw(10), None);
        assert_eq!(WrOpcode::from_raw(12), None);
        assert_eq!(WrOpcode::from_raw(0x21), None);
    }

    #[test]
    fn ud_takes_sends_only() {
        let ok: usize = WrOpcode::ALL
            .iter()
            .filter(|op| op.allowed_on(QpType::Ud))
            .count();
        assert_eq!(ok, 3);
        assert!(WrOpcode::SendWithImm.allowed_on(QpType::Gsi));
        assert!(!WrOpcode::SendWithInv.allowed_on(QpType::Gsi));
        assert!(!WrOpcode::RdmaWrite.allowed_on(QpType::Ud));
    }

    #[test]
    fn uc_has_no_read_or_atomics() {
        assert!(WrOpcode::RdmaWriteWithImm.allowed_on(QpType::Uc));
        assert!(!WrOpcode::RdmaRead.allowed_on(QpType::Uc));
        assert!(!WrOpcode::AtomicFetchAndAdd.allowed_on(QpType::Uc));
        assert!(!WrOpcode::LocalInv.allowed_on(QpType::Uc));
        assert!(WrOpcode::BindMw.allowed_on(QpType::Uc));
        assert!(!WrOpcode::Flush.allowed_on(QpType::Uc));
        assert!(WrOpcode::ALL.iter().all(|op| op.allowed_on(QpType::Rc)));
        assert!(!WrOpcode::Send.allowed_on(QpType::Smi));
    }

    #[test]
    fn completion_opcodes() {
        assert_eq!(WrOpcode::SendWithInv.wc_opcode(), WcOpcode::Send);
        assert_eq!(WrOpcode::RdmaWriteWithImm.wc_opcode(), WcOpcode::RdmaWrite);
        assert_eq!(WrOpcode::RegMr.wc_opcode().as_raw(), 10);
        assert_eq!(WrOpcode::RdmaReadWithInv.wc_opcode(), WcOpcode::RdmaRead);
        assert_eq!(WrOpcode::Flush.wc_opcode().as_raw(), 8);
        assert_eq!(WrOpcode::AtomicWrite.wc_opcode().as_raw(), 9);
        assert!(WcOpcode::RecvRdmaWithImm.is_recv());
        assert!(!WcOpcode::RdmaRead.is_recv());
    }

    #[test]
    fn opcode_classes() {
        for op in WrOpcode::ALL {
            assert!(!(op.is_local() && op.is_rdma()), "{op:?}");
            assert!(!(op.gathers() && matches!(op, WrOpcode::RdmaRead | WrOpcode::Flush)));
            if op.has_imm() {
                assert!(op.consumes_recv());
            }
            if op.is_atomic() {
                assert!(op.is_rdma());
            }
        }
        assert!(!WrOpcode::RdmaWrite.consumes_recv());
    }

    #[test]
    fn access_rules() {
        assert!(Access::NONE.check());
        assert!(Access::REMOTE_READ.check());
        assert!(!Access::REMOTE_WRITE.check());
        assert!(!Access::REMOTE_ATOMIC.check());
        assert!((Access::REMOTE_WRITE | Access::LOCAL_WRITE).check());
        assert!((Access::REMOTE_ATOMIC | Access::LOCAL_WRITE | Access::REMOTE_READ).check());
        assert!(!Access(1 << 20).check());
    }

    #[test]
    fn flag_sets() {
        let f = SendFlags::SIGNALED | SendFlags::INLINE;
        assert!(f.contains(SendFlags::INLINE));
        assert!(!f.contains(SendFlags::FENCE | SendFlags::INLINE));
        assert!(f.intersects(SendFlags::FENCE | SendFlags::INLINE));
        assert!(!f.has_unknown());
        assert!(SendFlags(1 << 4).has_unknown());
        assert_eq!(NotifyFlags::KNOWN.bits(), 7);
    }

    #[test]
    fn status_values_and_text() {
        assert_eq!(WcStatus::WrFlushErr.as_raw(), 5);
        assert_eq!(WcStatus::GeneralErr.as_raw(), 21);
        assert_eq!(WcStatus::RemAccessErr.msg(), "remote access error");
    }
}
