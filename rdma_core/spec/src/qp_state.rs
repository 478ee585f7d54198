// SPDX-License-Identifier: GPL-2.0

//! The IBTA queue pair state machine, as enforced on `modify_qp`.
//!
//! A `modify_qp` call names a current state, a next state and an attribute
//! mask (which fields of the attribute structure the caller filled in). For
//! each legal transition and each QP type the IBTA specification fixes which
//! attributes must be supplied and which may be; anything else is an error.
//! [`check_modify`] applies those rules with the same outcome as the Linux
//! 6.12 kernel's `ib_modify_qp_is_ok()` (drivers/infiniband/core/verbs.c),
//! which every provider calls before touching hardware state. Where the
//! kernel answers a bare "no" (and its callers return `-EINVAL`), this
//! module says why: [`ModifyError`].
//!
//! The numeric values of [`QpState`], [`QpType`] and [`AttrMask`] are those of
//! `enum ib_qp_state`, `enum ib_qp_type` and `enum ib_qp_attr_mask` in
//! include/rdma/ib_verbs.h, so values can cross the C boundary unchanged.
//!
//! Legal transitions (every one of them for every QP type):
//!
//! | from  | to                         |
//! | ----- | -------------------------- |
//! | RESET | RESET, INIT                |
//! | INIT  | RESET, INIT, RTR, ERR      |
//! | RTR   | RESET, RTS, ERR            |
//! | RTS   | RESET, RTS, SQD, ERR       |
//! | SQD   | RESET, RTS, SQD, ERR       |
//! | SQE   | RESET, RTS, ERR            |
//! | ERR   | RESET, ERR                 |
//!
//! Moving to RESET is legal from every state and moving to ERR from every
//! state except RESET; both take no attributes besides
//! [`AttrMask::STATE`].
//!
//! This module uses only `core` and has no dependencies on the rest of its
//! crate, so it can be compiled as a module of another crate.

use core::ops::{BitAnd, BitOr};

/// A queue pair state (`enum ib_qp_state`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpState {
    /// Reset: freshly created or reset; no work requests are processed.
    Reset = 0,
    /// Initialized: receive requests may be posted but are not processed.
    Init = 1,
    /// Ready to receive: incoming messages are processed.
    Rtr = 2,
    /// Ready to send: both queues are processed.
    Rts = 3,
    /// Send queue drain: outstanding sends complete, new ones wait.
    Sqd = 4,
    /// Send queue error: a send failed on an unreliable QP (UD, UC).
    Sqe = 5,
    /// Error: all outstanding work requests complete with a flush error.
    Err = 6,
}

impl QpState {
    /// Every state, in numeric order.
    pub const ALL: [QpState; 7] = [
        QpState::Reset,
        QpState::Init,
        QpState::Rtr,
        QpState::Rts,
        QpState::Sqd,
        QpState::Sqe,
        QpState::Err,
    ];

    /// Converts a raw `enum ib_qp_state` value, or returns `None` if it names no state.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => QpState::Reset,
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            _ => return None,
        })
    }

    /// Returns the raw `enum ib_qp_state` value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    /// Returns whether a modify from this state may carry [`AttrMask::CUR_STATE`].
    ///
    /// Only RTR, RTS, SQD and SQE qualify. From any other state the attribute
    /// is rejected before the transition itself is even looked at.
    pub const fn accepts_cur_state(self) -> bool {
        matches!(
            self,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        )
    }
}

/// A queue pair transport type (`enum ib_qp_type`).
///
/// The kernel's legacy `IB_QPT_RAW_IPV6` (5) and `IB_QPT_RAW_ETHERTYPE` (6)
/// are left out (so [`QpType::from_raw`] rejects them): its table gives them
/// no attribute in any transition, and no consumer creates them through the
/// core verbs. Driver-private types (`IB_QPT_DRIVER` and above) lie outside
/// the table altogether.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Subnet management QP (QP0).
    Smi = 0,
    /// General services QP (QP1).
    Gsi = 1,
    /// Reliable connected.
    Rc = 2,
    /// Unreliable connected.
    Uc = 3,
    /// Unreliable datagram.
    Ud = 4,
    /// Raw packet (Ethernet frames).
    RawPacket = 8,
    /// XRC initiator.
    XrcIni = 9,
    /// XRC target.
    XrcTgt = 10,
}

impl QpType {
    /// Every type, in numeric order.
    pub const ALL: [QpType; 8] = [
        QpType::Smi,
        QpType::Gsi,
        QpType::Rc,
        QpType::Uc,
        QpType::Ud,
        QpType::RawPacket,
        QpType::XrcIni,
        QpType::XrcTgt,
    ];

    /// Converts a raw `enum ib_qp_type` value, or returns `None` if it names no modelled type.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => QpType::Smi,
            1 => QpType::Gsi,
            2 => QpType::Rc,
            3 => QpType::Uc,
            4 => QpType::Ud,
            8 => QpType::RawPacket,
            9 => QpType::XrcIni,
            10 => QpType::XrcTgt,
            _ => return None,
        })
    }

    /// Returns the raw `enum ib_qp_type` value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }
}

/// A set of `modify_qp` attributes (`enum ib_qp_attr_mask`).
///
/// The field is the raw mask; bits with no constant here (the kernel's
/// reserved bits 21 to 24, and bits 26 and up) are never accepted by
/// [`check_modify`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AttrMask(pub u32);

impl AttrMask {
    /// The empty set.
    pub const NONE: Self = Self(0);
    /// The target state (`IB_QP_STATE`); always accepted, never required.
    pub const STATE: Self = Self(1 << 0);
    /// The caller's idea of the current state (`IB_QP_CUR_STATE`).
    pub const CUR_STATE: Self = Self(1 << 1);
    /// Ask for an event when the send queue has drained (`IB_QP_EN_SQD_ASYNC_NOTIFY`).
    pub const EN_SQD_ASYNC_NOTIFY: Self = Self(1 << 2);
    /// Remote access rights (`IB_QP_ACCESS_FLAGS`).
    pub const ACCESS_FLAGS: Self = Self(1 << 3);
    /// Partition key table index (`IB_QP_PKEY_INDEX`).
    pub const PKEY_INDEX: Self = Self(1 << 4);
    /// Physical port number (`IB_QP_PORT`).
    pub const PORT: Self = Self(1 << 5);
    /// Queue key (`IB_QP_QKEY`).
    pub const QKEY: Self = Self(1 << 6);
    /// Primary path address vector (`IB_QP_AV`).
    pub const AV: Self = Self(1 << 7);
    /// Path MTU (`IB_QP_PATH_MTU`).
    pub const PATH_MTU: Self = Self(1 << 8);
    /// Local ACK timeout (`IB_QP_TIMEOUT`).
    pub const TIMEOUT: Self = Self(1 << 9);
    /// Transport retry count (`IB_QP_RETRY_CNT`).
    pub const RETRY_CNT: Self = Self(1 << 10);
    /// RNR NAK retry count (`IB_QP_RNR_RETRY`).
    pub const RNR_RETRY: Self = Self(1 << 11);
    /// Receive queue starting PSN (`IB_QP_RQ_PSN`).
    pub const RQ_PSN: Self = Self(1 << 12);
    /// Outstanding RDMA reads and atomics as initiator (`IB_QP_MAX_QP_RD_ATOMIC`).
    pub const MAX_QP_RD_ATOMIC: Self = Self(1 << 13);
    /// Alternate path (`IB_QP_ALT_PATH`).
    pub const ALT_PATH: Self = Self(1 << 14);
    /// Minimum RNR NAK timer (`IB_QP_MIN_RNR_TIMER`).
    pub const MIN_RNR_TIMER: Self = Self(1 << 15);
    /// Send queue starting PSN (`IB_QP_SQ_PSN`).
    pub const SQ_PSN: Self = Self(1 << 16);
    /// Outstanding RDMA reads and atomics as responder (`IB_QP_MAX_DEST_RD_ATOMIC`).
    pub const MAX_DEST_RD_ATOMIC: Self = Self(1 << 17);
    /// Path migration state (`IB_QP_PATH_MIG_STATE`).
    pub const PATH_MIG_STATE: Self = Self(1 << 18);
    /// Queue capacities (`IB_QP_CAP`); no transition accepts it.
    pub const CAP: Self = Self(1 << 19);
    /// Destination QP number (`IB_QP_DEST_QPN`).
    pub const DEST_QPN: Self = Self(1 << 20);
    /// Packet pacing rate limit (`IB_QP_RATE_LIMIT`).
    pub const RATE_LIMIT: Self = Self(1 << 25);

    /// Returns the raw mask.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Returns whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Returns whether every bit of `other` is also set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Returns the bits set in either mask (usable in `const` context, unlike `|`).
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Returns the bits of `self` that are not set in `other`.
    pub const fn difference(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl BitOr for AttrMask {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl BitAnd for AttrMask {
    type Output = Self;

    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

/// Why a `modify_qp` request was refused.
///
/// The kernel's check only answers yes or no, and its callers turn every
/// refusal into `-EINVAL`; the variants here tell the cases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModifyError {
    /// The state machine has no transition from the current to the next state.
    IllegalTransition,
    /// The transition requires these attributes and the mask lacks them.
    MissingAttrs(AttrMask),
    /// The mask carries these attributes, which the transition does not accept.
    ForbiddenAttrs(AttrMask),
    /// The mask carries [`AttrMask::CUR_STATE`] but the current state is not RTR, RTS, SQD or SQE.
    BadCurState,
}

/// Checks a `modify_qp` request against the state machine.
///
/// `mask` is the full attribute mask of the request. The outcome matches
/// the kernel's `ib_modify_qp_is_ok()`: `Ok` exactly when the kernel says
/// yes. When several things are wrong, the error reported is the first the
/// kernel would trip over, in this order:
///
/// 1. [`ModifyError::BadCurState`]: `mask` has [`AttrMask::CUR_STATE`] and
///    `cur` is not RTR, RTS, SQD or SQE (checked even before the transition
///    itself). From those four states the bit is still refused as
///    [`ModifyError::ForbiddenAttrs`] by transitions that do not list it as
///    optional, such as RTS to SQD or any transition to RESET or ERR.
/// 2. [`ModifyError::IllegalTransition`]: the pair is not in the table.
/// 3. [`ModifyError::MissingAttrs`]: some required attribute is absent.
/// 4. [`ModifyError::ForbiddenAttrs`]: some bit is neither required, nor
///    optional, nor [`AttrMask::STATE`].
///
/// [`AttrMask::STATE`] is never required: callers that leave it out mean
/// "stay in the current state", and pass `next == cur`.
///
/// Unlike older kernels, the 6.12 check takes no link-layer argument: the
/// rules are the same for InfiniBand, RoCE and iWARP ports.
pub fn check_modify(
    cur: QpState,
    next: QpState,
    qp_type: QpType,
    mask: AttrMask,
) -> Result<(), ModifyError> {
    if mask.contains(AttrMask::CUR_STATE) && !cur.accepts_cur_state() {
        return Err(ModifyError::BadCurState);
    }
    let (required, optional) = lookup(cur, next, qp_type).ok_or(ModifyError::IllegalTransition)?;
    let missing = required.difference(mask);
    if !missing.is_empty() {
        return Err(ModifyError::MissingAttrs(missing));
    }
    let forbidden = mask.difference(required | optional | AttrMask::STATE);
    if !forbidden.is_empty() {
        return Err(ModifyError::ForbiddenAttrs(forbidden));
    }
    Ok(())
}

/// Returns the attributes a transition requires for a QP type, or `None` if the transition is illegal.
pub fn required_attrs(cur: QpState, next: QpState, qp_type: QpType) -> Option<AttrMask> {
    lookup(cur, next, qp_type).map(|(required, _)| required)
}

/// Returns the attributes a transition accepts but does not require, or `None` if it is illegal.
///
/// [`AttrMask::STATE`] is accepted everywhere and is not included.
pub fn optional_attrs(cur: QpState, next: QpState, qp_type: QpType) -> Option<AttrMask> {
    lookup(cur, next, qp_type).map(|(_, optional)| optional)
}

/// Short alias for the table below.
type A = AttrMask;

/// One cell of the transition table: `(required, optional)`, or `None` for an illegal pair.
fn lookup(cur: QpState, next: QpState, ty: QpType) -> Option<(AttrMask, AttrMask)> {
    use QpState as S;
    let cell = match (cur, next) {
        // Reset from anywhere, error from anywhere but RESET: no attributes.
        (_, S::Reset) => (A::NONE, A::NONE),
        (S::Reset, S::Err) => return None,
        (_, S::Err) => (A::NONE, A::NONE),
        (S::Reset, S::Init) => (reset_to_init(ty), A::NONE),
        (S::Init, S::Init) => (A::NONE, init_to_init(ty)),
        (S::Init, S::Rtr) => init_to_rtr(ty),
        (S::Rtr, S::Rts) => (rtr_to_rts(ty), into_rts(ty, true)),
        (S::Rts, S::Rts) => (A::NONE, into_rts(ty, true)),
        (S::Rts, S::Sqd) => (A::NONE, rts_to_sqd(ty)),
        (S::Sqd, S::Rts) => (A::NONE, into_rts(ty, false)),
        (S::Sqd, S::Sqd) => (A::NONE, sqd_to_sqd(ty)),
        (S::Sqe, S::Rts) => (A::NONE, sqe_to_rts(ty)),
        _ => return None,
    };
    Some(cell)
}

/// RESET to INIT, required: where the QP lives (port, partition) and how peers may reach it.
fn reset_to_init(ty: QpType) -> AttrMask {
    match ty {
        QpType::Rc | QpType::Uc | QpType::XrcIni | QpType::XrcTgt => {
            A::PKEY_INDEX | A::PORT | A::ACCESS_FLAGS
        }
        QpType::Ud => A::PKEY_INDEX | A::PORT | A::QKEY,
        // The special QPs are bound to their port at creation.
        QpType::Smi | QpType::Gsi => A::PKEY_INDEX | A::QKEY,
        QpType::RawPacket => A::PORT,
    }
}

/// INIT to INIT, optional: the same attributes RESET to INIT sets, except for raw packet QPs.
fn init_to_init(ty: QpType) -> AttrMask {
    match ty {
        QpType::Rc | QpType::Uc | QpType::XrcIni | QpType::XrcTgt => {
            A::PKEY_INDEX | A::PORT | A::ACCESS_FLAGS
        }
        QpType::Ud => A::PKEY_INDEX | A::PORT | A::QKEY,
        QpType::Smi | QpType::Gsi => A::PKEY_INDEX | A::QKEY,
        QpType::RawPacket => A::NONE,
    }
}

/// INIT to RTR: `(required, optional)`; connected types learn their peer and receive PSN here.
fn init_to_rtr(ty: QpType) -> (AttrMask, AttrMask) {
    let peer = A::AV | A::PATH_MTU | A::DEST_QPN | A::RQ_PSN;
    let responder = A::MAX_DEST_RD_ATOMIC | A::MIN_RNR_TIMER;
    let connected_opt = A::ALT_PATH | A::ACCESS_FLAGS | A::PKEY_INDEX;
    match ty {
        QpType::Rc | QpType::XrcTgt => (peer | responder, connected_opt),
        QpType::Uc | QpType::XrcIni => (peer, connected_opt),
        QpType::Ud | QpType::Smi | QpType::Gsi => (A::NONE, A::PKEY_INDEX | A::QKEY),
        QpType::RawPacket => (A::NONE, A::NONE),
    }
}

/// RTR to RTS, required: the send PSN, plus the requester's retry parameters where acknowledged.
fn rtr_to_rts(ty: QpType) -> AttrMask {
    match ty {
        QpType::Rc | QpType::XrcIni => {
            A::SQ_PSN | A::TIMEOUT | A::RETRY_CNT | A::RNR_RETRY | A::MAX_QP_RD_ATOMIC
        }
        QpType::XrcTgt => A::SQ_PSN | A::TIMEOUT,
        QpType::Uc | QpType::Ud | QpType::Smi | QpType::Gsi => A::SQ_PSN,
        QpType::RawPacket => A::NONE,
    }
}

/// Optional attributes when entering or staying in RTS from RTR, RTS or SQD.
///
/// The three transitions agree for every type except raw packet QPs, which
/// may change their rate limit from RTR and RTS (`raw_rate_limit`) but not
/// from SQD.
fn into_rts(ty: QpType, raw_rate_limit: bool) -> AttrMask {
    let paths = A::CUR_STATE | A::ALT_PATH | A::ACCESS_FLAGS | A::PATH_MIG_STATE;
    match ty {
        QpType::Rc | QpType::XrcTgt => paths | A::MIN_RNR_TIMER,
        QpType::Uc | QpType::XrcIni => paths,
        QpType::Ud | QpType::Smi | QpType::Gsi => A::CUR_STATE | A::QKEY,
        QpType::RawPacket if raw_rate_limit => A::RATE_LIMIT,
        QpType::RawPacket => A::NONE,
    }
}

/// RTS to SQD, optional: the drain notification request, for all but raw packet QPs.
fn rts_to_sqd(ty: QpType) -> AttrMask {
    match ty {
        QpType::RawPacket => A::NONE,
        _ => A::EN_SQD_ASYNC_NOTIFY,
    }
}

/// SQD to SQD, optional: a drained send queue may have its path and requester parameters changed.
fn sqd_to_sqd(ty: QpType) -> AttrMask {
    let common = A::AV | A::ALT_PATH | A::ACCESS_FLAGS | A::PKEY_INDEX | A::PATH_MIG_STATE;
    match ty {
        QpType::Rc => {
            common
                | A::PORT
                | A::TIMEOUT
                | A::RETRY_CNT
                | A::RNR_RETRY
                | A::MAX_QP_RD_ATOMIC
                | A::MAX_DEST_RD_ATOMIC
                | A::MIN_RNR_TIMER
        }
        QpType::XrcIni => {
            common | A::PORT | A::TIMEOUT | A::RETRY_CNT | A::RNR_RETRY | A::MAX_QP_RD_ATOMIC
        }
        QpType::XrcTgt => common | A::PORT | A::TIMEOUT | A::MAX_DEST_RD_ATOMIC | A::MIN_RNR_TIMER,
        QpType::Uc => common,
        QpType::Ud | QpType::Smi | QpType::Gsi => A::PKEY_INDEX | A::QKEY,
        QpType::RawPacket => A::NONE,
    }
}

/// SQE to RTS, optional: only the unreliable types can be in SQE, and only they take attributes.
fn sqe_to_rts(ty: QpType) -> AttrMask {
    match ty {
        QpType::Uc => A::CUR_STATE | A::ACCESS_FLAGS,
        QpType::Ud | QpType::Smi | QpType::Gsi => A::CUR_STATE | A::QKEY,
        QpType::Rc | QpType::XrcIni | QpType::XrcTgt | QpType::RawPacket => A::NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use QpState as S;
    use QpType as T;

    /// Builds a mask from a list of bits, in `const` context.
    const fn m(bits: &[AttrMask]) -> AttrMask {
        let mut acc = AttrMask::NONE;
        let mut i = 0;
        while i < bits.len() {
            acc = acc.union(bits[i]);
            i += 1;
        }
        acc
    }

    /// Every single-bit mask of a `u32`.
    fn each_bit() -> impl Iterator<Item = AttrMask> {
        (0..32).map(|n| AttrMask(1 << n))
    }

    /// Every single bit set in `mask`.
    fn bits_of(mask: AttrMask) -> impl Iterator<Item = AttrMask> {
        each_bit().filter(move |b| mask.contains(*b))
    }

    /// Every legal `(cur, next)` pair, written down independently of `lookup` (verbs.c 6.12).
    const LEGAL: [[bool; 7]; 7] = {
        const X: bool = true;
        const O: bool = false;
        [
            // to: RESET INIT RTR RTS SQD SQE ERR
            [X, X, O, O, O, O, O], // from RESET
            [X, X, X, O, O, O, X], // from INIT
            [X, O, O, X, O, O, X], // from RTR
            [X, O, O, X, X, O, X], // from RTS
            [X, O, O, X, X, O, X], // from SQD
            [X, O, O, X, O, O, X], // from SQE
            [X, O, O, O, O, O, X], // from ERR
        ]
    };

    fn is_legal(cur: QpState, next: QpState) -> bool {
        LEGAL[cur as usize][next as usize]
    }

    /// A second transcription of the kernel's table, organised by QP type rather than by
    /// transition: `(type, from, to, required, optional)`. Legal cells not listed take
    /// no attributes at all.
    const ORACLE: &[(QpType, QpState, QpState, AttrMask, AttrMask)] = {
        use AttrMask as B;
        const NONE: AttrMask = AttrMask::NONE;
        &[
            // RC
            (
                T::Rc,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
                NONE,
            ),
            (
                T::Rc,
                S::Init,
                S::Init,
                NONE,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
            ),
            (
                T::Rc,
                S::Init,
                S::Rtr,
                m(&[
                    B::AV,
                    B::PATH_MTU,
                    B::DEST_QPN,
                    B::RQ_PSN,
                    B::MAX_DEST_RD_ATOMIC,
                    B::MIN_RNR_TIMER,
                ]),
                m(&[B::ALT_PATH, B::ACCESS_FLAGS, B::PKEY_INDEX]),
            ),
            (
                T::Rc,
                S::Rtr,
                S::Rts,
                m(&[
                    B::TIMEOUT,
                    B::RETRY_CNT,
                    B::RNR_RETRY,
                    B::SQ_PSN,
                    B::MAX_QP_RD_ATOMIC,
                ]),
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::MIN_RNR_TIMER,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::Rc,
                S::Rts,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ACCESS_FLAGS,
                    B::ALT_PATH,
                    B::PATH_MIG_STATE,
                    B::MIN_RNR_TIMER,
                ]),
            ),
            (T::Rc, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (
                T::Rc,
                S::Sqd,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::MIN_RNR_TIMER,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::Rc,
                S::Sqd,
                S::Sqd,
                NONE,
                m(&[
                    B::PORT,
                    B::AV,
                    B::TIMEOUT,
                    B::RETRY_CNT,
                    B::RNR_RETRY,
                    B::MAX_QP_RD_ATOMIC,
                    B::MAX_DEST_RD_ATOMIC,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PKEY_INDEX,
                    B::MIN_RNR_TIMER,
                    B::PATH_MIG_STATE,
                ]),
            ),
            // UC
            (
                T::Uc,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
                NONE,
            ),
            (
                T::Uc,
                S::Init,
                S::Init,
                NONE,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
            ),
            (
                T::Uc,
                S::Init,
                S::Rtr,
                m(&[B::AV, B::PATH_MTU, B::DEST_QPN, B::RQ_PSN]),
                m(&[B::ALT_PATH, B::ACCESS_FLAGS, B::PKEY_INDEX]),
            ),
            (
                T::Uc,
                S::Rtr,
                S::Rts,
                B::SQ_PSN,
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::Uc,
                S::Rts,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ACCESS_FLAGS,
                    B::ALT_PATH,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (T::Uc, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (
                T::Uc,
                S::Sqd,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::Uc,
                S::Sqd,
                S::Sqd,
                NONE,
                m(&[
                    B::AV,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PKEY_INDEX,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::Uc,
                S::Sqe,
                S::Rts,
                NONE,
                m(&[B::CUR_STATE, B::ACCESS_FLAGS]),
            ),
            // UD
            (
                T::Ud,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::PORT, B::QKEY]),
                NONE,
            ),
            (
                T::Ud,
                S::Init,
                S::Init,
                NONE,
                m(&[B::PKEY_INDEX, B::PORT, B::QKEY]),
            ),
            (T::Ud, S::Init, S::Rtr, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (
                T::Ud,
                S::Rtr,
                S::Rts,
                B::SQ_PSN,
                m(&[B::CUR_STATE, B::QKEY]),
            ),
            (T::Ud, S::Rts, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            (T::Ud, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (T::Ud, S::Sqd, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            (T::Ud, S::Sqd, S::Sqd, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (T::Ud, S::Sqe, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            // SMI
            (
                T::Smi,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::QKEY]),
                NONE,
            ),
            (T::Smi, S::Init, S::Init, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (T::Smi, S::Init, S::Rtr, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (
                T::Smi,
                S::Rtr,
                S::Rts,
                B::SQ_PSN,
                m(&[B::CUR_STATE, B::QKEY]),
            ),
            (T::Smi, S::Rts, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            (T::Smi, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (T::Smi, S::Sqd, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            (T::Smi, S::Sqd, S::Sqd, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (T::Smi, S::Sqe, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            // GSI
            (
                T::Gsi,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::QKEY]),
                NONE,
            ),
            (T::Gsi, S::Init, S::Init, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (T::Gsi, S::Init, S::Rtr, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (
                T::Gsi,
                S::Rtr,
                S::Rts,
                B::SQ_PSN,
                m(&[B::CUR_STATE, B::QKEY]),
            ),
            (T::Gsi, S::Rts, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            (T::Gsi, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (T::Gsi, S::Sqd, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            (T::Gsi, S::Sqd, S::Sqd, NONE, m(&[B::PKEY_INDEX, B::QKEY])),
            (T::Gsi, S::Sqe, S::Rts, NONE, m(&[B::CUR_STATE, B::QKEY])),
            // RAW_PACKET
            (T::RawPacket, S::Reset, S::Init, B::PORT, NONE),
            (T::RawPacket, S::Rtr, S::Rts, NONE, B::RATE_LIMIT),
            (T::RawPacket, S::Rts, S::Rts, NONE, B::RATE_LIMIT),
            // XRC_INI
            (
                T::XrcIni,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
                NONE,
            ),
            (
                T::XrcIni,
                S::Init,
                S::Init,
                NONE,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
            ),
            (
                T::XrcIni,
                S::Init,
                S::Rtr,
                m(&[B::AV, B::PATH_MTU, B::DEST_QPN, B::RQ_PSN]),
                m(&[B::ALT_PATH, B::ACCESS_FLAGS, B::PKEY_INDEX]),
            ),
            (
                T::XrcIni,
                S::Rtr,
                S::Rts,
                m(&[
                    B::TIMEOUT,
                    B::RETRY_CNT,
                    B::RNR_RETRY,
                    B::SQ_PSN,
                    B::MAX_QP_RD_ATOMIC,
                ]),
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::XrcIni,
                S::Rts,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ACCESS_FLAGS,
                    B::ALT_PATH,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (T::XrcIni, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (
                T::XrcIni,
                S::Sqd,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::XrcIni,
                S::Sqd,
                S::Sqd,
                NONE,
                m(&[
                    B::PORT,
                    B::AV,
                    B::TIMEOUT,
                    B::RETRY_CNT,
                    B::RNR_RETRY,
                    B::MAX_QP_RD_ATOMIC,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PKEY_INDEX,
                    B::PATH_MIG_STATE,
                ]),
            ),
            // XRC_TGT
            (
                T::XrcTgt,
                S::Reset,
                S::Init,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
                NONE,
            ),
            (
                T::XrcTgt,
                S::Init,
                S::Init,
                NONE,
                m(&[B::PKEY_INDEX, B::PORT, B::ACCESS_FLAGS]),
            ),
            (
                T::XrcTgt,
                S::Init,
                S::Rtr,
                m(&[
                    B::AV,
                    B::PATH_MTU,
                    B::DEST_QPN,
                    B::RQ_PSN,
                    B::MAX_DEST_RD_ATOMIC,
                    B::MIN_RNR_TIMER,
                ]),
                m(&[B::ALT_PATH, B::ACCESS_FLAGS, B::PKEY_INDEX]),
            ),
            (
                T::XrcTgt,
                S::Rtr,
                S::Rts,
                m(&[B::TIMEOUT, B::SQ_PSN]),
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::MIN_RNR_TIMER,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::XrcTgt,
                S::Rts,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ACCESS_FLAGS,
                    B::ALT_PATH,
                    B::PATH_MIG_STATE,
                    B::MIN_RNR_TIMER,
                ]),
            ),
            (T::XrcTgt, S::Rts, S::Sqd, NONE, B::EN_SQD_ASYNC_NOTIFY),
            (
                T::XrcTgt,
                S::Sqd,
                S::Rts,
                NONE,
                m(&[
                    B::CUR_STATE,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::MIN_RNR_TIMER,
                    B::PATH_MIG_STATE,
                ]),
            ),
            (
                T::XrcTgt,
                S::Sqd,
                S::Sqd,
                NONE,
                m(&[
                    B::PORT,
                    B::AV,
                    B::TIMEOUT,
                    B::MAX_DEST_RD_ATOMIC,
                    B::ALT_PATH,
                    B::ACCESS_FLAGS,
                    B::PKEY_INDEX,
                    B::MIN_RNR_TIMER,
                    B::PATH_MIG_STATE,
                ]),
            ),
        ]
    };

    /// What the oracle says about one cell: `None` if illegal, else `(required, optional)`.
    fn oracle(cur: QpState, next: QpState, ty: QpType) -> Option<(AttrMask, AttrMask)> {
        if !is_legal(cur, next) {
            return None;
        }
        let hit = ORACLE
            .iter()
            .find(|(t, c, n, _, _)| *t == ty && *c == cur && *n == next);
        Some(hit.map_or((AttrMask::NONE, AttrMask::NONE), |&(_, _, _, r, o)| (r, o)))
    }

    fn all_cells() -> impl Iterator<Item = (QpState, QpState, QpType)> {
        S::ALL.into_iter().flat_map(|cur| {
            S::ALL
                .into_iter()
                .flat_map(move |next| T::ALL.into_iter().map(move |ty| (cur, next, ty)))
        })
    }

    fn legal_cells() -> impl Iterator<Item = (QpState, QpState, QpType)> {
        all_cells().filter(|&(cur, next, _)| is_legal(cur, next))
    }

    #[test]
    fn qp_state_values_match_header() {
        let expected = [
            (S::Reset, 0),
            (S::Init, 1),
            (S::Rtr, 2),
            (S::Rts, 3),
            (S::Sqd, 4),
            (S::Sqe, 5),
            (S::Err, 6),
        ];
        for (state, raw) in expected {
            assert_eq!(state as u32, raw);
            assert_eq!(state.as_raw(), raw);
            assert_eq!(QpState::from_raw(raw), Some(state));
        }
        assert_eq!(QpState::from_raw(7), None);
        assert_eq!(QpState::from_raw(u32::MAX), None);
        for (i, state) in S::ALL.into_iter().enumerate() {
            assert_eq!(state as usize, i);
        }
    }

    #[test]
    fn qp_type_values_match_header() {
        let expected = [
            (T::Smi, 0),
            (T::Gsi, 1),
            (T::Rc, 2),
            (T::Uc, 3),
            (T::Ud, 4),
            (T::RawPacket, 8),
            (T::XrcIni, 9),
            (T::XrcTgt, 10),
        ];
        for (ty, raw) in expected {
            assert_eq!(ty as u32, raw);
            assert_eq!(ty.as_raw(), raw);
            assert_eq!(QpType::from_raw(raw), Some(ty));
        }
        // RAW_IPV6, RAW_ETHERTYPE, the unused 7, IB_QPT_MAX and IB_QPT_DRIVER.
        for raw in [5, 6, 7, 11, 0xff, 0x1000] {
            assert_eq!(QpType::from_raw(raw), None, "raw {raw}");
        }
        assert_eq!(T::ALL.len(), 8);
    }

    #[test]
    fn attr_mask_values_match_header() {
        let expected = [
            (AttrMask::STATE, 1),
            (AttrMask::CUR_STATE, 1 << 1),
            (AttrMask::EN_SQD_ASYNC_NOTIFY, 1 << 2),
            (AttrMask::ACCESS_FLAGS, 1 << 3),
            (AttrMask::PKEY_INDEX, 1 << 4),
            (AttrMask::PORT, 1 << 5),
            (AttrMask::QKEY, 1 << 6),
            (AttrMask::AV, 1 << 7),
            (AttrMask::PATH_MTU, 1 << 8),
            (AttrMask::TIMEOUT, 1 << 9),
            (AttrMask::RETRY_CNT, 1 << 10),
            (AttrMask::RNR_RETRY, 1 << 11),
            (AttrMask::RQ_PSN, 1 << 12),
            (AttrMask::MAX_QP_RD_ATOMIC, 1 << 13),
            (AttrMask::ALT_PATH, 1 << 14),
            (AttrMask::MIN_RNR_TIMER, 1 << 15),
            (AttrMask::SQ_PSN, 1 << 16),
            (AttrMask::MAX_DEST_RD_ATOMIC, 1 << 17),
            (AttrMask::PATH_MIG_STATE, 1 << 18),
            (AttrMask::CAP, 1 << 19),
            (AttrMask::DEST_QPN, 1 << 20),
            (AttrMask::RATE_LIMIT, 1 << 25),
        ];
        let mut all = 0u32;
        for (mask, raw) in expected {
            assert_eq!(mask.bits(), raw);
            assert_eq!(raw.count_ones(), 1);
            assert_eq!(all & raw, 0, "duplicate bit {raw:#x}");
            all |= raw;
        }
        // IB_QP_ATTR_STANDARD_BITS is GENMASK(20, 0): the standard bits are all here.
        assert_eq!(all & 0x1f_ffff, 0x1f_ffff);
        assert_eq!(AttrMask::NONE.bits(), 0);
    }

    #[test]
    fn attr_mask_operations() {
        let a = AttrMask::PORT | AttrMask::QKEY;
        assert_eq!(a.bits(), (1 << 5) | (1 << 6));
        assert!(a.contains(AttrMask::PORT));
        assert!(a.contains(a));
        assert!(a.contains(AttrMask::NONE));
        assert!(!a.contains(AttrMask::PORT | AttrMask::AV));
        assert_eq!(a & AttrMask::QKEY, AttrMask::QKEY);
        assert_eq!(a & AttrMask::AV, AttrMask::NONE);
        assert!((a & AttrMask::AV).is_empty());
        assert!(!a.is_empty());
        assert!(AttrMask::default().is_empty());
        assert_eq!(a.union(AttrMask::AV), a | AttrMask::AV);
        assert_eq!(a.difference(AttrMask::PORT), AttrMask::QKEY);
    }

    #[test]
    fn lookup_matches_independent_transcription() {
        for (cur, next, ty) in all_cells() {
            let want = oracle(cur, next, ty);
            let got = lookup(cur, next, ty);
            assert_eq!(got, want, "{cur:?} -> {next:?} for {ty:?}");
            assert_eq!(required_attrs(cur, next, ty), want.map(|(r, _)| r));
            assert_eq!(optional_attrs(cur, next, ty), want.map(|(_, o)| o));
        }
        // Every oracle row names a legal pair and appears once.
        for (i, &(ty, cur, next, _, _)) in ORACLE.iter().enumerate() {
            assert!(is_legal(cur, next), "row {i}");
            let same = ORACLE
                .iter()
                .filter(|r| r.0 == ty && r.1 == cur && r.2 == next)
                .count();
            assert_eq!(same, 1, "row {i}");
        }
    }

    #[test]
    fn illegal_pairs_are_refused() {
        let mut illegal = 0;
        for (cur, next, ty) in all_cells() {
            if is_legal(cur, next) {
                continue;
            }
            illegal += 1;
            assert_eq!(required_attrs(cur, next, ty), None);
            assert_eq!(optional_attrs(cur, next, ty), None);
            for mask in [
                AttrMask::NONE,
                AttrMask::STATE,
                AttrMask(!AttrMask::CUR_STATE.0),
            ] {
                assert_eq!(
                    check_modify(cur, next, ty, mask),
                    Err(ModifyError::IllegalTransition),
                    "{cur:?} -> {next:?} for {ty:?} mask {mask:?}"
                );
            }
        }
        // 49 pairs: 22 legal (2 + 4 + 3 + 4 + 4 + 3 + 2), 27 illegal; 8 types each.
        assert_eq!(illegal, 27 * 8);
        assert_eq!(legal_cells().count(), 22 * 8);
    }

    #[test]
    fn exact_required_attrs_are_accepted() {
        for (cur, next, ty) in legal_cells() {
            let req = required_attrs(cur, next, ty).unwrap();
            let opt = optional_attrs(cur, next, ty).unwrap();
            assert!((req & opt).is_empty(), "{cur:?} -> {next:?} for {ty:?}");
            assert!(!(req | opt).contains(AttrMask::STATE));
            for mask in [
                req,
                req | AttrMask::STATE,
                req | opt,
                req | opt | AttrMask::STATE,
            ] {
                assert_eq!(
                    check_modify(cur, next, ty, mask),
                    Ok(()),
                    "{cur:?} -> {next:?} for {ty:?} mask {mask:?}"
                );
            }
            for bit in bits_of(opt) {
                assert_eq!(
                    check_modify(cur, next, ty, req | bit | AttrMask::STATE),
                    Ok(())
                );
            }
        }
    }

    #[test]
    fn each_missing_required_bit_is_reported() {
        let mut checked = 0;
        for (cur, next, ty) in legal_cells() {
            let req = required_attrs(cur, next, ty).unwrap();
            let opt = optional_attrs(cur, next, ty).unwrap();
            for bit in bits_of(req) {
                let mask = req.difference(bit) | AttrMask::STATE;
                assert_eq!(
                    check_modify(cur, next, ty, mask),
                    Err(ModifyError::MissingAttrs(bit)),
                    "{cur:?} -> {next:?} for {ty:?} without {bit:?}"
                );
                // Still missing with every optional bit present.
                assert_eq!(
                    check_modify(cur, next, ty, mask | opt),
                    Err(ModifyError::MissingAttrs(bit))
                );
                checked += 1;
            }
            if !req.is_empty() {
                assert_eq!(
                    check_modify(cur, next, ty, AttrMask::STATE),
                    Err(ModifyError::MissingAttrs(req))
                );
            }
        }
        assert!(checked > 0);
    }

    #[test]
    fn each_extra_bit_is_refused() {
        for (cur, next, ty) in legal_cells() {
            let req = required_attrs(cur, next, ty).unwrap();
            let allowed = req | optional_attrs(cur, next, ty).unwrap() | AttrMask::STATE;
            for bit in each_bit().filter(|b| !allowed.contains(*b)) {
                let want = if bit == AttrMask::CUR_STATE && !cur.accepts_cur_state() {
                    ModifyError::BadCurState
                } else {
                    ModifyError::ForbiddenAttrs(bit)
                };
                assert_eq!(
                    check_modify(cur, next, ty, req | bit | AttrMask::STATE),
                    Err(want),
                    "{cur:?} -> {next:?} for {ty:?} with {bit:?}"
                );
            }
        }
    }

    #[test]
    fn cur_state_is_optional_only_from_rtr_rts_sqd_sqe() {
        for (cur, next, ty) in legal_cells() {
            let opt = optional_attrs(cur, next, ty).unwrap();
            if opt.contains(AttrMask::CUR_STATE) {
                assert!(cur.accepts_cur_state(), "{cur:?} -> {next:?} for {ty:?}");
            }
            assert!(!required_attrs(cur, next, ty)
                .unwrap()
                .contains(AttrMask::CUR_STATE));
        }
        let accepting: [bool; 7] = S::ALL.map(QpState::accepts_cur_state);
        assert_eq!(accepting, [false, false, true, true, true, true, false]);
    }

    #[test]
    fn cur_state_rule_comes_first() {
        let cs = AttrMask::CUR_STATE | AttrMask::STATE;
        // From RESET, INIT or ERR the bit is refused whatever else is right or wrong.
        let rc_init = AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS;
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Rc, rc_init | cs),
            Err(ModifyError::BadCurState)
        );
        assert_eq!(
            check_modify(S::Reset, S::Rts, T::Rc, cs),
            Err(ModifyError::BadCurState)
        );
        assert_eq!(
            check_modify(S::Init, S::Err, T::Ud, cs),
            Err(ModifyError::BadCurState)
        );
        assert_eq!(
            check_modify(S::Err, S::Reset, T::Ud, cs),
            Err(ModifyError::BadCurState)
        );
        assert_eq!(
            check_modify(S::Init, S::Rtr, T::Rc, cs),
            Err(ModifyError::BadCurState)
        );
        // From RTR, RTS, SQD and SQE it passes the first check; the transition decides.
        assert_eq!(check_modify(S::Rts, S::Rts, T::Ud, cs), Ok(()));
        assert_eq!(check_modify(S::Sqd, S::Rts, T::Rc, cs), Ok(()));
        assert_eq!(check_modify(S::Sqe, S::Rts, T::Uc, cs), Ok(()));
        assert_eq!(
            check_modify(S::Rtr, S::Rts, T::Ud, cs | AttrMask::SQ_PSN),
            Ok(())
        );
        let forbidden = Err(ModifyError::ForbiddenAttrs(AttrMask::CUR_STATE));
        assert_eq!(check_modify(S::Rtr, S::Err, T::Rc, cs), forbidden);
        assert_eq!(check_modify(S::Rts, S::Reset, T::Rc, cs), forbidden);
        assert_eq!(check_modify(S::Rts, S::Sqd, T::Rc, cs), forbidden);
        assert_eq!(check_modify(S::Sqd, S::Sqd, T::Rc, cs), forbidden);
        assert_eq!(check_modify(S::Sqe, S::Rts, T::Rc, cs), forbidden);
        assert_eq!(check_modify(S::Rts, S::Rts, T::RawPacket, cs), forbidden);
        // ... and an illegal pair is still illegal.
        assert_eq!(
            check_modify(S::Rtr, S::Init, T::Rc, cs),
            Err(ModifyError::IllegalTransition)
        );
    }

    #[test]
    fn missing_is_reported_before_forbidden() {
        let mask = AttrMask::STATE | AttrMask::PORT | AttrMask::AV;
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Rc, mask),
            Err(ModifyError::MissingAttrs(
                AttrMask::PKEY_INDEX | AttrMask::ACCESS_FLAGS
            ))
        );
        let mask = AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS;
        let extra = AttrMask::AV | AttrMask::CAP | AttrMask(1 << 22) | AttrMask(1 << 31);
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Rc, mask | extra),
            Err(ModifyError::ForbiddenAttrs(extra))
        );
    }

    #[test]
    fn rc_reset_to_init() {
        let req = AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS;
        assert_eq!(required_attrs(S::Reset, S::Init, T::Rc), Some(req));
        assert_eq!(
            optional_attrs(S::Reset, S::Init, T::Rc),
            Some(AttrMask::NONE)
        );
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Rc, req | AttrMask::STATE),
            Ok(())
        );
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Rc, req | AttrMask::QKEY),
            Err(ModifyError::ForbiddenAttrs(AttrMask::QKEY))
        );
    }

    #[test]
    fn ud_reset_to_init() {
        let req = AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::QKEY;
        assert_eq!(required_attrs(S::Reset, S::Init, T::Ud), Some(req));
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Ud, req | AttrMask::STATE),
            Ok(())
        );
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Ud, req | AttrMask::ACCESS_FLAGS),
            Err(ModifyError::ForbiddenAttrs(AttrMask::ACCESS_FLAGS))
        );
        // GSI and SMI are bound to a port at creation: PORT is not accepted.
        assert_eq!(
            check_modify(S::Reset, S::Init, T::Gsi, req),
            Err(ModifyError::ForbiddenAttrs(AttrMask::PORT))
        );
        assert_eq!(
            check_modify(
                S::Reset,
                S::Init,
                T::Gsi,
                AttrMask::PKEY_INDEX | AttrMask::QKEY
            ),
            Ok(())
        );
    }

    #[test]
    fn rc_init_to_rtr() {
        let req = AttrMask::AV
            | AttrMask::PATH_MTU
            | AttrMask::DEST_QPN
            | AttrMask::RQ_PSN
            | AttrMask::MAX_DEST_RD_ATOMIC
            | AttrMask::MIN_RNR_TIMER;
        assert_eq!(required_attrs(S::Init, S::Rtr, T::Rc), Some(req));
        assert_eq!(
            check_modify(S::Init, S::Rtr, T::Rc, req | AttrMask::STATE),
            Ok(())
        );
        assert_eq!(
            check_modify(
                S::Init,
                S::Rtr,
                T::Rc,
                req.difference(AttrMask::MIN_RNR_TIMER)
            ),
            Err(ModifyError::MissingAttrs(AttrMask::MIN_RNR_TIMER))
        );
        // UC has no responder resources.
        let uc = AttrMask::AV | AttrMask::PATH_MTU | AttrMask::DEST_QPN | AttrMask::RQ_PSN;
        assert_eq!(required_attrs(S::Init, S::Rtr, T::Uc), Some(uc));
        assert_eq!(
            check_modify(S::Init, S::Rtr, T::Uc, req),
            Err(ModifyError::ForbiddenAttrs(
                AttrMask::MAX_DEST_RD_ATOMIC | AttrMask::MIN_RNR_TIMER
            ))
        );
    }

    #[test]
    fn rc_rtr_to_rts() {
        let req = AttrMask::SQ_PSN
            | AttrMask::TIMEOUT
            | AttrMask::RETRY_CNT
            | AttrMask::RNR_RETRY
            | AttrMask::MAX_QP_RD_ATOMIC;
        assert_eq!(required_attrs(S::Rtr, S::Rts, T::Rc), Some(req));
        assert_eq!(
            check_modify(S::Rtr, S::Rts, T::Rc, req | AttrMask::STATE),
            Ok(())
        );
        assert_eq!(
            check_modify(S::Rtr, S::Rts, T::Rc, AttrMask::STATE | AttrMask::SQ_PSN),
            Err(ModifyError::MissingAttrs(req.difference(AttrMask::SQ_PSN)))
        );
        assert_eq!(
            required_attrs(S::Rtr, S::Rts, T::Ud),
            Some(AttrMask::SQ_PSN)
        );
        assert_eq!(
            required_attrs(S::Rtr, S::Rts, T::XrcTgt),
            Some(AttrMask::SQ_PSN | AttrMask::TIMEOUT)
        );
    }

    #[test]
    fn any_to_reset_takes_no_attributes() {
        for cur in S::ALL {
            for ty in T::ALL {
                assert_eq!(required_attrs(cur, S::Reset, ty), Some(AttrMask::NONE));
                assert_eq!(optional_attrs(cur, S::Reset, ty), Some(AttrMask::NONE));
                assert_eq!(check_modify(cur, S::Reset, ty, AttrMask::STATE), Ok(()));
                assert_eq!(check_modify(cur, S::Reset, ty, AttrMask::NONE), Ok(()));
                assert_eq!(
                    check_modify(cur, S::Reset, ty, AttrMask::STATE | AttrMask::PORT),
                    Err(ModifyError::ForbiddenAttrs(AttrMask::PORT))
                );
            }
        }
    }

    #[test]
    fn any_but_reset_to_err_takes_no_attributes() {
        for cur in S::ALL {
            for ty in T::ALL {
                if cur == S::Reset {
                    // The kernel's table has no RESET -> ERR entry.
                    assert_eq!(required_attrs(cur, S::Err, ty), None);
                    assert_eq!(
                        check_modify(cur, S::Err, ty, AttrMask::STATE),
                        Err(ModifyError::IllegalTransition)
                    );
                    continue;
                }
                assert_eq!(required_attrs(cur, S::Err, ty), Some(AttrMask::NONE));
                assert_eq!(optional_attrs(cur, S::Err, ty), Some(AttrMask::NONE));
                assert_eq!(check_modify(cur, S::Err, ty, AttrMask::STATE), Ok(()));
                assert_eq!(
                    check_modify(cur, S::Err, ty, AttrMask::STATE | AttrMask::QKEY),
                    Err(ModifyError::ForbiddenAttrs(AttrMask::QKEY))
                );
            }
        }
    }

    #[test]
    fn raw_packet_rate_limit() {
        let rl = AttrMask::STATE | AttrMask::RATE_LIMIT;
        assert_eq!(check_modify(S::Rtr, S::Rts, T::RawPacket, rl), Ok(()));
        assert_eq!(check_modify(S::Rts, S::Rts, T::RawPacket, rl), Ok(()));
        assert_eq!(
            check_modify(S::Sqd, S::Rts, T::RawPacket, rl),
            Err(ModifyError::ForbiddenAttrs(AttrMask::RATE_LIMIT))
        );
        assert_eq!(
            check_modify(S::Rts, S::Rts, T::Rc, rl),
            Err(ModifyError::ForbiddenAttrs(AttrMask::RATE_LIMIT))
        );
        assert_eq!(
            check_modify(S::Reset, S::Init, T::RawPacket, AttrMask::PORT),
            Ok(())
        );
    }

    #[test]
    fn cap_is_never_accepted() {
        for (cur, next, ty) in legal_cells() {
            assert!(!optional_attrs(cur, next, ty)
                .unwrap()
                .contains(AttrMask::CAP));
            assert!(!required_attrs(cur, next, ty)
                .unwrap()
                .contains(AttrMask::CAP));
        }
    }
}
