// SPDX-License-Identifier: GPL-2.0

//! InfiniBand connection manager (CM) messages, as a sans-IO codec: REQ,
//! MRA, REJ, REP, RTU, DREQ and DREP, the service ID resolution messages
//! SIDR REQ and SIDR REP ([`SidrReq`], [`SidrRep`]: not in [`CmMessage`],
//! they have no connection), plus the rdma_cm IP header that starts the
//! private data of a REQ or a SIDR REQ.
//!
//! Every CM message fills the [`CM_PAYLOAD_LEN`]-byte data area that follows
//! the 24-byte MAD header (see [`super::mad`]). Each message type here has
//! `parse(payload)`, which reads the first [`CM_PAYLOAD_LEN`] bytes of a
//! payload, and `write(out)`, which writes all [`CM_PAYLOAD_LEN`] bytes of
//! one, reserved bits as zero. [`CmMessage`] dispatches on the MAD attribute
//! ID and handles the MAD header too.
//!
//! # Layout
//!
//! The position of every field is that of include/rdma/ibta_vol1_c12.h
//! (IBA volume 1, chapter 12), which describes a field by a byte offset
//! from the start of the CM payload, a bit offset and a width:
//!
//! - `CM_FIELD_BLOC(msg, byte, bit, width)`: `width` bits starting at bit
//!   `bit` of byte `byte`, bit 0 being the byte's most significant bit;
//! - `CM_FIELD8_LOC`, `CM_FIELD16_LOC`, `CM_FIELD32_LOC(msg, byte, width)`:
//!   `width` bits starting at the most significant bit of byte `byte`,
//!   inside the 8-, 16- or 32-bit big-endian word that holds that byte
//!   (include/rdma/iba.h builds the mask from the byte's place in its
//!   word);
//! - `CM_FIELD64_LOC(msg, byte)`: 64 bits starting at byte `byte`;
//! - `CM_FIELD_MLOC(msg, byte, bits, type)`: `bits / 8` whole bytes from
//!   byte `byte`.
//!
//! All of them therefore name a run of bits counted from the most
//! significant bit of the payload's first byte: it starts at bit
//! `8 * byte + bit` (`bit` is 0 but for `CM_FIELD_BLOC`) and a field value
//! is that run read as a big-endian number. This module keeps a table of
//! such runs, built by constructors named after the C macros (which check,
//! at compile time, that a field fits its word and the payload), and reads
//! and writes the runs bit by bit.
//!
//! # Values
//!
//! Field values are plain integers, in host order, of the smallest type
//! that holds the field's width (one-bit fields are `bool`). Parsing accepts
//! every bit pattern, so every CM payload of the right length parses;
//! writing fails with [`CmError::ValueTooWide`] if a value does not fit its
//! field, and never writes a partial message. Whatever parses writes back
//! to the same bytes, reserved bits aside.
//!
//! Nothing here panics, whatever the input. This module uses only `core`
//! and its siblings [`super::mad`], [`super::attr`] and
//! [`super::qp_state`].

use core::fmt;

use super::attr::{Gid, Mtu};
use super::mad::{self, Mad, MadError, MadHeader, MAD_DATA_LEN, MAD_HDR_LEN, MAD_SIZE};
use super::qp_state::QpType;

/// Length of the payload of every CM message: the MAD data area.
pub const CM_PAYLOAD_LEN: usize = MAD_DATA_LEN;

/// Bits in a CM payload.
const PAYLOAD_BITS: usize = CM_PAYLOAD_LEN * 8;

/// Private data carried by a REQ (`IB_CM_REQ_PRIVATE_DATA_SIZE`).
pub const REQ_PRIVATE_DATA_LEN: usize = 92;
/// Private data carried by an MRA (`IB_CM_MRA_PRIVATE_DATA_SIZE`).
pub const MRA_PRIVATE_DATA_LEN: usize = 222;
/// Private data carried by a REJ (`IB_CM_REJ_PRIVATE_DATA_SIZE`).
pub const REJ_PRIVATE_DATA_LEN: usize = 148;
/// Private data carried by a REP (`IB_CM_REP_PRIVATE_DATA_SIZE`).
pub const REP_PRIVATE_DATA_LEN: usize = 196;
/// Private data carried by an RTU (`IB_CM_RTU_PRIVATE_DATA_SIZE`).
pub const RTU_PRIVATE_DATA_LEN: usize = 224;
/// Private data carried by a DREQ (`IB_CM_DREQ_PRIVATE_DATA_SIZE`).
pub const DREQ_PRIVATE_DATA_LEN: usize = 220;
/// Private data carried by a DREP (`IB_CM_DREP_PRIVATE_DATA_SIZE`).
pub const DREP_PRIVATE_DATA_LEN: usize = 224;
/// Length of the additional rejection information of a REJ
/// (`IB_CM_REJ_ARI_LENGTH`).
pub const REJ_ARI_LEN: usize = 72;

/// REQ transport service type: reliable connection.
pub const TRANSPORT_RC: u8 = 0;
/// REQ transport service type: unreliable connection.
pub const TRANSPORT_UC: u8 = 1;
/// REQ transport service type: reliable datagram.
pub const TRANSPORT_RD: u8 = 2;
/// REQ transport service type: see the extended transport type.
pub const TRANSPORT_EXTENDED: u8 = 3;
/// REQ extended transport type: XRC.
pub const EXT_TRANSPORT_XRC: u8 = 1;

/// Why a CM message or rdma_cm header could not be parsed or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmError {
    /// The buffer is shorter than the message.
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// More bytes than a fixed-size area holds.
    TooLong {
        /// Bytes allowed.
        max: usize,
        /// Bytes given.
        got: usize,
    },
    /// A value does not fit the width of its field.
    ValueTooWide {
        /// The field.
        field: &'static str,
        /// Its width in bits.
        width: u32,
    },
    /// The attribute ID is not that of a message this codec handles.
    UnknownAttribute(u16),
    /// The rdma_cm header's version is not [`CMA_VERSION`].
    BadCmaVersion(u8),
    /// The rdma_cm header's IP version is neither 4 nor 6.
    BadIpVersion(u8),
    /// The MAD around the message is wrong.
    Mad(MadError),
}

impl From<MadError> for CmError {
    fn from(e: MadError) -> CmError {
        CmError::Mad(e)
    }
}

impl fmt::Display for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CmError::TooShort { needed, got } => {
                write!(f, "CM buffer too short: {got} bytes, {needed} needed")
            }
            CmError::TooLong { max, got } => {
                write!(f, "CM data too long: {got} bytes, at most {max}")
            }
            CmError::ValueTooWide { field, width } => {
                write!(f, "CM field {field} holds only {width} bits")
            }
            CmError::UnknownAttribute(id) => write!(f, "unknown CM attribute {id:#06x}"),
            CmError::BadCmaVersion(v) => write!(f, "bad rdma_cm header version {v}"),
            CmError::BadIpVersion(v) => write!(f, "bad rdma_cm IP version {v}"),
            CmError::Mad(e) => e.fmt(f),
        }
    }
}

/// A fixed-size byte area of a message: private data or the REJ's ARI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bytes<const N: usize>(pub [u8; N]);

impl<const N: usize> Default for Bytes<N> {
    fn default() -> Self {
        Bytes([0; N])
    }
}

impl<const N: usize> Bytes<N> {
    /// The size of the area.
    pub const LEN: usize = N;

    /// An area of zeros.
    pub const fn zeroed() -> Self {
        Bytes([0; N])
    }

    /// An area holding `src` followed by zeros, as the C CM fills private
    /// data shorter than the area. Fails if `src` is longer than `N`.
    pub fn from_slice(src: &[u8]) -> Result<Self, CmError> {
        if src.len() > N {
            return Err(CmError::TooLong {
                max: N,
                got: src.len(),
            });
        }
        let mut out = [0u8; N];
        for (d, s) in out.iter_mut().zip(src) {
            *d = *s;
        }
        Ok(Bytes(out))
    }

    /// The bytes.
    pub const fn as_array(&self) -> &[u8; N] {
        &self.0
    }
}

impl<const N: usize> AsRef<[u8]> for Bytes<N> {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Which message a REJ rejects or an MRA acknowledges (`enum
/// cm_msg_response`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsgResponse {
    /// The REQ.
    Req = 0,
    /// The REP.
    Rep = 1,
    /// Another message (a LAP for an MRA, none in particular for a REJ).
    Other = 2,
}

impl MsgResponse {
    /// The value for a 2-bit wire value; 3 is reserved.
    pub const fn from_raw(raw: u8) -> Option<MsgResponse> {
        match raw {
            0 => Some(MsgResponse::Req),
            1 => Some(MsgResponse::Rep),
            2 => Some(MsgResponse::Other),
            _ => None,
        }
    }
}

/// A REJ reason (`enum ib_cm_rej_reason`).
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejReason {
    /// No QP available.
    NoQp = 1,
    /// No EE context available.
    NoEec = 2,
    /// No resources available.
    NoResources = 3,
    /// Timed out.
    Timeout = 4,
    /// Unsupported request.
    Unsupported = 5,
    /// Invalid communication ID.
    InvalidCommId = 6,
    /// Invalid communication instance.
    InvalidCommInstance = 7,
    /// No listener for the service ID.
    InvalidServiceId = 8,
    /// Invalid transport service type.
    InvalidTransportType = 9,
    /// Stale connection.
    StaleConn = 10,
    /// RDC does not exist.
    RdcNotExist = 11,
    /// Invalid primary GID.
    InvalidGid = 12,
    /// Invalid primary LID.
    InvalidLid = 13,
    /// Invalid primary SL.
    InvalidSl = 14,
    /// Invalid primary traffic class.
    InvalidTrafficClass = 15,
    /// Invalid primary hop limit.
    InvalidHopLimit = 16,
    /// Invalid primary packet rate.
    InvalidPacketRate = 17,
    /// Invalid alternate GID.
    InvalidAltGid = 18,
    /// Invalid alternate LID.
    InvalidAltLid = 19,
    /// Invalid alternate SL.
    InvalidAltSl = 20,
    /// Invalid alternate traffic class.
    InvalidAltTrafficClass = 21,
    /// Invalid alternate hop limit.
    InvalidAltHopLimit = 22,
    /// Invalid alternate packet rate.
    InvalidAltPacketRate = 23,
    /// Port CM redirection.
    PortCmRedirect = 24,
    /// Port redirection.
    PortRedirect = 25,
    /// Invalid path MTU.
    InvalidMtu = 26,
    /// Insufficient responder resources.
    InsufficientRespResources = 27,
    /// Rejected by the consumer.
    ConsumerDefined = 28,
    /// Invalid RNR retry count.
    InvalidRnrRetry = 29,
    /// Duplicate local communication ID.
    DuplicateLocalCommId = 30,
    /// Unsupported class version.
    InvalidClassVersion = 31,
    /// Invalid primary flow label.
    InvalidFlowLabel = 32,
    /// Invalid alternate flow label.
    InvalidAltFlowLabel = 33,
    /// Vendor option not supported.
    VendorOptionNotSupported = 35,
}

impl RejReason {
    /// Every reason, in numeric order.
    pub const ALL: [RejReason; 34] = [
        RejReason::NoQp,
        RejReason::NoEec,
        RejReason::NoResources,
        RejReason::Timeout,
        RejReason::Unsupported,
        RejReason::InvalidCommId,
        RejReason::InvalidCommInstance,
        RejReason::InvalidServiceId,
        RejReason::InvalidTransportType,
        RejReason::StaleConn,
        RejReason::RdcNotExist,
        RejReason::InvalidGid,
        RejReason::InvalidLid,
        RejReason::InvalidSl,
        RejReason::InvalidTrafficClass,
        RejReason::InvalidHopLimit,
        RejReason::InvalidPacketRate,
        RejReason::InvalidAltGid,
        RejReason::InvalidAltLid,
        RejReason::InvalidAltSl,
        RejReason::InvalidAltTrafficClass,
        RejReason::InvalidAltHopLimit,
        RejReason::InvalidAltPacketRate,
        RejReason::PortCmRedirect,
        RejReason::PortRedirect,
        RejReason::InvalidMtu,
        RejReason::InsufficientRespResources,
        RejReason::ConsumerDefined,
        RejReason::InvalidRnrRetry,
        RejReason::DuplicateLocalCommId,
        RejReason::InvalidClassVersion,
        RejReason::InvalidFlowLabel,
        RejReason::InvalidAltFlowLabel,
        RejReason::VendorOptionNotSupported,
    ];

    /// The reason with wire value `raw`, if it is one of these.
    pub fn from_raw(raw: u16) -> Option<RejReason> {
        RejReason::ALL.into_iter().find(|r| *r as u16 == raw)
    }
}

// ---------------------------------------------------------------------------
// Bit fields

/// A field: `width` bits from bit `bit` (0 = most significant) of byte
/// `byte` of the payload, most significant bit first.
#[derive(Clone, Copy, Debug)]
struct Field {
    name: &'static str,
    byte: usize,
    bit: usize,
    width: u32,
}

impl Field {
    const fn new(name: &'static str, byte: usize, bit: usize, width: u32) -> Field {
        assert!(width >= 1 && width <= 64);
        assert!(byte * 8 + bit + width as usize <= PAYLOAD_BITS);
        Field {
            name,
            byte,
            bit,
            width,
        }
    }

    /// `CM_FIELD_BLOC`: inside one byte.
    const fn bloc(name: &'static str, byte: usize, bit: usize, width: u32) -> Field {
        assert!(bit + width as usize <= 8);
        Field::new(name, byte, bit, width)
    }

    /// `CM_FIELD8_LOC`.
    const fn f8(name: &'static str, byte: usize, width: u32) -> Field {
        Field::bloc(name, byte, 0, width)
    }

    /// `CM_FIELD16_LOC`: inside the aligned 16-bit word holding `byte`.
    const fn f16(name: &'static str, byte: usize, width: u32) -> Field {
        assert!((byte % 2) * 8 + width as usize <= 16);
        Field::new(name, byte, 0, width)
    }

    /// `CM_FIELD32_LOC`: inside the aligned 32-bit word holding `byte`.
    const fn f32(name: &'static str, byte: usize, width: u32) -> Field {
        assert!((byte % 4) * 8 + width as usize <= 32);
        Field::new(name, byte, 0, width)
    }

    /// `CM_FIELD64_LOC`.
    const fn f64(name: &'static str, byte: usize) -> Field {
        Field::new(name, byte, 0, 64)
    }

    /// The field's value in `p` (bits beyond `p` read as zero).
    fn get(self, p: &[u8]) -> u64 {
        let start = self.byte * 8 + self.bit;
        let mut v = 0u64;
        for pos in start..start + self.width as usize {
            let bit = p.get(pos / 8).map_or(0, |b| (b >> (7 - pos % 8)) & 1);
            v = (v << 1) | u64::from(bit);
        }
        v
    }

    fn get_u8(self, p: &[u8]) -> u8 {
        self.get(p) as u8
    }

    fn get_u16(self, p: &[u8]) -> u16 {
        self.get(p) as u16
    }

    fn get_u32(self, p: &[u8]) -> u32 {
        self.get(p) as u32
    }

    fn get_bool(self, p: &[u8]) -> bool {
        self.get(p) != 0
    }

    /// Stores `v` in the field, leaving the other bits of `p` alone.
    fn put(self, p: &mut [u8], v: u64) -> Result<(), CmError> {
        if self.width < 64 && v >> self.width != 0 {
            return Err(CmError::ValueTooWide {
                field: self.name,
                width: self.width,
            });
        }
        let start = self.byte * 8 + self.bit;
        for i in 0..self.width {
            let pos = start + i as usize;
            let mask = 0x80u8 >> (pos % 8);
            if let Some(b) = p.get_mut(pos / 8) {
                if (v >> (self.width - 1 - i)) & 1 != 0 {
                    *b |= mask;
                } else {
                    *b &= !mask;
                }
            }
        }
        Ok(())
    }
}

/// A run of whole bytes (`CM_FIELD_MLOC`).
#[derive(Clone, Copy, Debug)]
struct Span {
    byte: usize,
    len: usize,
}

impl Span {
    const fn mloc(byte: usize, bits: usize) -> Span {
        assert!(bits & 7 == 0);
        assert!(byte + bits / 8 <= CM_PAYLOAD_LEN);
        Span {
            byte,
            len: bits / 8,
        }
    }

    fn bytes(self, p: &[u8]) -> &[u8] {
        p.get(self.byte..self.byte + self.len).unwrap_or(&[])
    }

    fn read<const N: usize>(self, p: &[u8]) -> [u8; N] {
        let mut out = [0u8; N];
        for (d, s) in out.iter_mut().zip(self.bytes(p)) {
            *d = *s;
        }
        out
    }

    fn write(self, p: &mut [u8], src: &[u8]) {
        if let Some(dst) = p.get_mut(self.byte..self.byte + self.len) {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = *s;
            }
        }
    }
}

/// The first [`CM_PAYLOAD_LEN`] bytes of `payload`.
fn payload_in(payload: &[u8]) -> Result<&[u8; CM_PAYLOAD_LEN], CmError> {
    payload
        .get(..CM_PAYLOAD_LEN)
        .and_then(|p| <&[u8; CM_PAYLOAD_LEN]>::try_from(p).ok())
        .ok_or(CmError::TooShort {
            needed: CM_PAYLOAD_LEN,
            got: payload.len(),
        })
}

/// The first [`CM_PAYLOAD_LEN`] bytes of `out`.
fn payload_out(out: &mut [u8]) -> Result<&mut [u8; CM_PAYLOAD_LEN], CmError> {
    let got = out.len();
    out.get_mut(..CM_PAYLOAD_LEN)
        .and_then(|p| <&mut [u8; CM_PAYLOAD_LEN]>::try_from(p).ok())
        .ok_or(CmError::TooShort {
            needed: CM_PAYLOAD_LEN,
            got,
        })
}

/// A payload being built, from zeros.
struct Writer([u8; CM_PAYLOAD_LEN]);

impl Writer {
    fn new() -> Writer {
        Writer([0; CM_PAYLOAD_LEN])
    }

    fn put(&mut self, f: Field, v: impl Into<u64>) -> Result<(), CmError> {
        f.put(&mut self.0, v.into())
    }

    fn put_bytes(&mut self, s: Span, src: &[u8]) {
        s.write(&mut self.0, src);
    }
}

/// Field tables, named after the C macros of include/rdma/ibta_vol1_c12.h.
mod loc {
    use super::{Field, Span};

    /// The fields of one path of a REQ.
    #[derive(Clone, Copy)]
    pub(super) struct PathLoc {
        pub(super) local_lid: Field,
        pub(super) remote_lid: Field,
        pub(super) local_gid: Span,
        pub(super) remote_gid: Span,
        pub(super) flow_label: Field,
        pub(super) packet_rate: Field,
        pub(super) traffic_class: Field,
        pub(super) hop_limit: Field,
        pub(super) sl: Field,
        pub(super) subnet_local: Field,
        pub(super) local_ack_timeout: Field,
    }

    // Table 106: REQ.
    pub(super) const REQ_LOCAL_COMM_ID: Field = Field::f32("REQ local comm ID", 0, 32);
    pub(super) const REQ_VENDOR_ID: Field = Field::f32("REQ vendor ID", 5, 24);
    pub(super) const REQ_SERVICE_ID: Field = Field::f64("REQ service ID", 8);
    pub(super) const REQ_LOCAL_CA_GUID: Field = Field::f64("REQ local CA GUID", 16);
    pub(super) const REQ_LOCAL_Q_KEY: Field = Field::f32("REQ local Q_Key", 28, 32);
    pub(super) const REQ_LOCAL_QPN: Field = Field::f32("REQ local QPN", 32, 24);
    pub(super) const REQ_RESPONDER_RESOURCES: Field = Field::f8("REQ responder resources", 35, 8);
    pub(super) const REQ_LOCAL_EECN: Field = Field::f32("REQ local EECN", 36, 24);
    pub(super) const REQ_INITIATOR_DEPTH: Field = Field::f8("REQ initiator depth", 39, 8);
    pub(super) const REQ_REMOTE_EECN: Field = Field::f32("REQ remote EECN", 40, 24);
    pub(super) const REQ_REMOTE_CM_RESPONSE_TIMEOUT: Field =
        Field::f8("REQ remote CM response timeout", 43, 5);
    pub(super) const REQ_TRANSPORT_SERVICE_TYPE: Field =
        Field::bloc("REQ transport service type", 43, 5, 2);
    pub(super) const REQ_END_TO_END_FLOW_CONTROL: Field =
        Field::bloc("REQ end-to-end flow control", 43, 7, 1);
    pub(super) const REQ_STARTING_PSN: Field = Field::f32("REQ starting PSN", 44, 24);
    pub(super) const REQ_LOCAL_CM_RESPONSE_TIMEOUT: Field =
        Field::f8("REQ local CM response timeout", 47, 5);
    pub(super) const REQ_RETRY_COUNT: Field = Field::bloc("REQ retry count", 47, 5, 3);
    pub(super) const REQ_PARTITION_KEY: Field = Field::f16("REQ partition key", 48, 16);
    pub(super) const REQ_PATH_PACKET_PAYLOAD_MTU: Field =
        Field::f8("REQ path packet payload MTU", 50, 4);
    pub(super) const REQ_RDC_EXISTS: Field = Field::bloc("REQ RDC exists", 50, 4, 1);
    pub(super) const REQ_RNR_RETRY_COUNT: Field = Field::bloc("REQ RNR retry count", 50, 5, 3);
    pub(super) const REQ_MAX_CM_RETRIES: Field = Field::f8("REQ max CM retries", 51, 4);
    pub(super) const REQ_SRQ: Field = Field::bloc("REQ SRQ", 51, 4, 1);
    pub(super) const REQ_EXTENDED_TRANSPORT_TYPE: Field =
        Field::bloc("REQ extended transport type", 51, 5, 3);
    pub(super) const REQ_PRIMARY: PathLoc = PathLoc {
        local_lid: Field::f16("REQ primary local port LID", 52, 16),
        remote_lid: Field::f16("REQ primary remote port LID", 54, 16),
        local_gid: Span::mloc(56, 128),
        remote_gid: Span::mloc(72, 128),
        flow_label: Field::f32("REQ primary flow label", 88, 20),
        packet_rate: Field::bloc("REQ primary packet rate", 91, 2, 6),
        traffic_class: Field::f8("REQ primary traffic class", 92, 8),
        hop_limit: Field::f8("REQ primary hop limit", 93, 8),
        sl: Field::f8("REQ primary SL", 94, 4),
        subnet_local: Field::bloc("REQ primary subnet local", 94, 4, 1),
        local_ack_timeout: Field::f8("REQ primary local ACK timeout", 95, 5),
    };
    pub(super) const REQ_ALTERNATE: PathLoc = PathLoc {
        local_lid: Field::f16("REQ alternate local port LID", 96, 16),
        remote_lid: Field::f16("REQ alternate remote port LID", 98, 16),
        local_gid: Span::mloc(100, 128),
        remote_gid: Span::mloc(116, 128),
        flow_label: Field::f32("REQ alternate flow label", 132, 20),
        packet_rate: Field::bloc("REQ alternate packet rate", 135, 2, 6),
        traffic_class: Field::f8("REQ alternate traffic class", 136, 8),
        hop_limit: Field::f8("REQ alternate hop limit", 137, 8),
        sl: Field::f8("REQ alternate SL", 138, 4),
        subnet_local: Field::bloc("REQ alternate subnet local", 138, 4, 1),
        local_ack_timeout: Field::f8("REQ alternate local ACK timeout", 139, 5),
    };
    pub(super) const REQ_SAP_SUPPORTED: Field = Field::bloc("REQ SAP supported", 139, 5, 1);
    pub(super) const REQ_PRIVATE_DATA: Span = Span::mloc(140, 736);

    // Table 107: MRA.
    pub(super) const MRA_LOCAL_COMM_ID: Field = Field::f32("MRA local comm ID", 0, 32);
    pub(super) const MRA_REMOTE_COMM_ID: Field = Field::f32("MRA remote comm ID", 4, 32);
    pub(super) const MRA_MESSAGE_MRAED: Field = Field::f8("MRA message MRAed", 8, 2);
    pub(super) const MRA_SERVICE_TIMEOUT: Field = Field::f8("MRA service timeout", 9, 5);
    pub(super) const MRA_PRIVATE_DATA: Span = Span::mloc(10, 1776);

    // Table 108: REJ.
    pub(super) const REJ_LOCAL_COMM_ID: Field = Field::f32("REJ local comm ID", 0, 32);
    pub(super) const REJ_REMOTE_COMM_ID: Field = Field::f32("REJ remote comm ID", 4, 32);
    pub(super) const REJ_MESSAGE_REJECTED: Field = Field::f8("REJ message rejected", 8, 2);
    pub(super) const REJ_REJECTED_INFO_LENGTH: Field = Field::f8("REJ rejected info length", 9, 7);
    pub(super) const REJ_REASON: Field = Field::f16("REJ reason", 10, 16);
    pub(super) const REJ_ARI: Span = Span::mloc(12, 576);
    pub(super) const REJ_PRIVATE_DATA: Span = Span::mloc(84, 1184);

    // Table 110: REP.
    pub(super) const REP_LOCAL_COMM_ID: Field = Field::f32("REP local comm ID", 0, 32);
    pub(super) const REP_REMOTE_COMM_ID: Field = Field::f32("REP remote comm ID", 4, 32);
    pub(super) const REP_LOCAL_Q_KEY: Field = Field::f32("REP local Q_Key", 8, 32);
    pub(super) const REP_LOCAL_QPN: Field = Field::f32("REP local QPN", 12, 24);
    pub(super) const REP_VENDOR_ID_H: Field = Field::f8("REP vendor ID", 15, 8);
    pub(super) const REP_LOCAL_EE_CONTEXT_NUMBER: Field = Field::f32("REP local EECN", 16, 24);
    pub(super) const REP_VENDOR_ID_M: Field = Field::f8("REP vendor ID", 19, 8);
    pub(super) const REP_STARTING_PSN: Field = Field::f32("REP starting PSN", 20, 24);
    pub(super) const REP_VENDOR_ID_L: Field = Field::f8("REP vendor ID", 23, 8);
    pub(super) const REP_RESPONDER_RESOURCES: Field = Field::f8("REP responder resources", 24, 8);
    pub(super) const REP_INITIATOR_DEPTH: Field = Field::f8("REP initiator depth", 25, 8);
    pub(super) const REP_TARGET_ACK_DELAY: Field = Field::f8("REP target ACK delay", 26, 5);
    pub(super) const REP_FAILOVER_ACCEPTED: Field = Field::bloc("REP failover accepted", 26, 5, 2);
    pub(super) const REP_END_TO_END_FLOW_CONTROL: Field =
        Field::bloc("REP end-to-end flow control", 26, 7, 1);
    pub(super) const REP_RNR_RETRY_COUNT: Field = Field::f8("REP RNR retry count", 27, 3);
    pub(super) const REP_SRQ: Field = Field::bloc("REP SRQ", 27, 3, 1);
    pub(super) const REP_LOCAL_CA_GUID: Field = Field::f64("REP local CA GUID", 28);
    pub(super) const REP_PRIVATE_DATA: Span = Span::mloc(36, 1568);

    // Table 111: RTU.
    pub(super) const RTU_LOCAL_COMM_ID: Field = Field::f32("RTU local comm ID", 0, 32);
    pub(super) const RTU_REMOTE_COMM_ID: Field = Field::f32("RTU remote comm ID", 4, 32);
    pub(super) const RTU_PRIVATE_DATA: Span = Span::mloc(8, 1792);

    // Table 112: DREQ.
    pub(super) const DREQ_LOCAL_COMM_ID: Field = Field::f32("DREQ local comm ID", 0, 32);
    pub(super) const DREQ_REMOTE_COMM_ID: Field = Field::f32("DREQ remote comm ID", 4, 32);
    pub(super) const DREQ_REMOTE_QPN_EECN: Field = Field::f32("DREQ remote QPN/EECN", 8, 24);
    pub(super) const DREQ_PRIVATE_DATA: Span = Span::mloc(12, 1760);

    // Table 113: DREP.
    pub(super) const DREP_LOCAL_COMM_ID: Field = Field::f32("DREP local comm ID", 0, 32);
    pub(super) const DREP_REMOTE_COMM_ID: Field = Field::f32("DREP remote comm ID", 4, 32);
    pub(super) const DREP_PRIVATE_DATA: Span = Span::mloc(8, 1792);

    // Table 118 (119 in the C header's numbering): SIDR REQ.
    pub(super) const SIDR_REQ_REQUEST_ID: Field = Field::f32("SIDR REQ request ID", 0, 32);
    pub(super) const SIDR_REQ_PARTITION_KEY: Field = Field::f16("SIDR REQ P_Key", 4, 16);
    pub(super) const SIDR_REQ_SERVICE_ID: Field = Field::f64("SIDR REQ service ID", 8);
    pub(super) const SIDR_REQ_PRIVATE_DATA: Span = Span::mloc(16, 1728);

    // Table 119 (120 in the C header's numbering): SIDR REP.
    pub(super) const SIDR_REP_REQUEST_ID: Field = Field::f32("SIDR REP request ID", 0, 32);
    pub(super) const SIDR_REP_STATUS: Field = Field::f8("SIDR REP status", 4, 8);
    pub(super) const SIDR_REP_ADDITIONAL_INFO_LEN: Field =
        Field::f8("SIDR REP additional information length", 5, 8);
    pub(super) const SIDR_REP_VENDOR_ID_H: Field = Field::f16("SIDR REP vendor ID", 6, 16);
    pub(super) const SIDR_REP_QPN: Field = Field::f32("SIDR REP QPN", 8, 24);
    pub(super) const SIDR_REP_VENDOR_ID_L: Field = Field::f8("SIDR REP vendor ID", 11, 8);
    pub(super) const SIDR_REP_SERVICE_ID: Field = Field::f64("SIDR REP service ID", 12);
    pub(super) const SIDR_REP_Q_KEY: Field = Field::f32("SIDR REP Q_Key", 20, 32);
    pub(super) const SIDR_REP_ADDITIONAL_INFO: Span = Span::mloc(24, 576);
    pub(super) const SIDR_REP_PRIVATE_DATA: Span = Span::mloc(96, 1088);
}

// Every private data area and the ARI have the size the types give them.
const _: () = {
    assert!(loc::REQ_PRIVATE_DATA.len == REQ_PRIVATE_DATA_LEN);
    assert!(loc::MRA_PRIVATE_DATA.len == MRA_PRIVATE_DATA_LEN);
    assert!(loc::REJ_PRIVATE_DATA.len == REJ_PRIVATE_DATA_LEN);
    assert!(loc::REJ_ARI.len == REJ_ARI_LEN);
    assert!(loc::REP_PRIVATE_DATA.len == REP_PRIVATE_DATA_LEN);
    assert!(loc::RTU_PRIVATE_DATA.len == RTU_PRIVATE_DATA_LEN);
    assert!(loc::DREQ_PRIVATE_DATA.len == DREQ_PRIVATE_DATA_LEN);
    assert!(loc::DREP_PRIVATE_DATA.len == DREP_PRIVATE_DATA_LEN);
    // Each private data area runs to the end of the payload.
    assert!(loc::REQ_PRIVATE_DATA.byte + REQ_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::MRA_PRIVATE_DATA.byte + MRA_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::REJ_PRIVATE_DATA.byte + REJ_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::REP_PRIVATE_DATA.byte + REP_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::RTU_PRIVATE_DATA.byte + RTU_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::DREQ_PRIVATE_DATA.byte + DREQ_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::DREP_PRIVATE_DATA.byte + DREP_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::SIDR_REQ_PRIVATE_DATA.len == SIDR_REQ_PRIVATE_DATA_LEN);
    assert!(loc::SIDR_REP_PRIVATE_DATA.len == SIDR_REP_PRIVATE_DATA_LEN);
    assert!(loc::SIDR_REP_ADDITIONAL_INFO.len == SIDR_REP_INFO_LEN);
    assert!(loc::SIDR_REQ_PRIVATE_DATA.byte + SIDR_REQ_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
    assert!(loc::SIDR_REP_PRIVATE_DATA.byte + SIDR_REP_PRIVATE_DATA_LEN == CM_PAYLOAD_LEN);
};

// ---------------------------------------------------------------------------
// Messages

/// One path of a REQ (primary or alternate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReqPath {
    /// Local port LID (0xffff, permissive, when the path leaves the subnet).
    pub local_lid: u16,
    /// Remote port LID.
    pub remote_lid: u16,
    /// Local port GID.
    pub local_gid: Gid,
    /// Remote port GID.
    pub remote_gid: Gid,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Packet rate (6 bits, `enum ib_rate`).
    pub packet_rate: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level (4 bits).
    pub sl: u8,
    /// Whether the path stays in the local subnet.
    pub subnet_local: bool,
    /// Local ACK timeout (5 bits, 4.096 us * 2^n).
    pub local_ack_timeout: u8,
}

impl ReqPath {
    fn parse(p: &[u8], l: &loc::PathLoc) -> ReqPath {
        ReqPath {
            local_lid: l.local_lid.get_u16(p),
            remote_lid: l.remote_lid.get_u16(p),
            local_gid: Gid(l.local_gid.read(p)),
            remote_gid: Gid(l.remote_gid.read(p)),
            flow_label: l.flow_label.get_u32(p),
            packet_rate: l.packet_rate.get_u8(p),
            traffic_class: l.traffic_class.get_u8(p),
            hop_limit: l.hop_limit.get_u8(p),
            sl: l.sl.get_u8(p),
            subnet_local: l.subnet_local.get_bool(p),
            local_ack_timeout: l.local_ack_timeout.get_u8(p),
        }
    }

    fn write(&self, w: &mut Writer, l: &loc::PathLoc) -> Result<(), CmError> {
        w.put(l.local_lid, self.local_lid)?;
        w.put(l.remote_lid, self.remote_lid)?;
        w.put_bytes(l.local_gid, &self.local_gid.0);
        w.put_bytes(l.remote_gid, &self.remote_gid.0);
        w.put(l.flow_label, self.flow_label)?;
        w.put(l.packet_rate, self.packet_rate)?;
        w.put(l.traffic_class, self.traffic_class)?;
        w.put(l.hop_limit, self.hop_limit)?;
        w.put(l.sl, self.sl)?;
        w.put(l.subnet_local, self.subnet_local)?;
        w.put(l.local_ack_timeout, self.local_ack_timeout)
    }
}

/// A ConnectRequest (REQ), IBA table 106.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Req {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// ECE vendor ID (24 bits).
    pub vendor_id: u32,
    /// The service ID to connect to.
    pub service_id: u64,
    /// The sender's CA GUID.
    pub local_ca_guid: u64,
    /// The sender's Q_Key.
    pub local_qkey: u32,
    /// The sender's QPN (24 bits).
    pub local_qpn: u32,
    /// Responder resources (RDMA READ / atomic depth offered).
    pub responder_resources: u8,
    /// The sender's EE context number (24 bits).
    pub local_eecn: u32,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// The receiver's EE context number (24 bits).
    pub remote_eecn: u32,
    /// Remote CM response timeout (5 bits).
    pub remote_cm_response_timeout: u8,
    /// Transport service type (2 bits, `TRANSPORT_*`).
    pub transport_service_type: u8,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Local CM response timeout (5 bits).
    pub local_cm_response_timeout: u8,
    /// Retry count (3 bits).
    pub retry_count: u8,
    /// Partition key.
    pub partition_key: u16,
    /// Path packet payload MTU (4 bits, `enum ib_mtu`).
    pub path_mtu: u8,
    /// RDC exists.
    pub rdc_exists: bool,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// Max CM retries (4 bits).
    pub max_cm_retries: u8,
    /// The sender uses an SRQ.
    pub srq: bool,
    /// Extended transport type (3 bits, `EXT_TRANSPORT_*`).
    pub extended_transport_type: u8,
    /// The primary path.
    pub primary_path: ReqPath,
    /// The alternate path (all zero when there is none).
    pub alternate_path: ReqPath,
    /// SAP supported.
    pub sap_supported: bool,
    /// Private data; an rdma_cm REQ starts it with a [`CmaHeader`].
    pub private_data: Bytes<REQ_PRIVATE_DATA_LEN>,
}

impl Req {
    /// The MAD attribute ID of a REQ.
    pub const ATTR_ID: u16 = mad::CM_ATTR_REQ;

    /// Parses a REQ from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Req, CmError> {
        let p = payload_in(payload)?;
        Ok(Req {
            local_comm_id: loc::REQ_LOCAL_COMM_ID.get_u32(p),
            vendor_id: loc::REQ_VENDOR_ID.get_u32(p),
            service_id: loc::REQ_SERVICE_ID.get(p),
            local_ca_guid: loc::REQ_LOCAL_CA_GUID.get(p),
            local_qkey: loc::REQ_LOCAL_Q_KEY.get_u32(p),
            local_qpn: loc::REQ_LOCAL_QPN.get_u32(p),
            responder_resources: loc::REQ_RESPONDER_RESOURCES.get_u8(p),
            local_eecn: loc::REQ_LOCAL_EECN.get_u32(p),
            initiator_depth: loc::REQ_INITIATOR_DEPTH.get_u8(p),
            remote_eecn: loc::REQ_REMOTE_EECN.get_u32(p),
            remote_cm_response_timeout: loc::REQ_REMOTE_CM_RESPONSE_TIMEOUT.get_u8(p),
            transport_service_type: loc::REQ_TRANSPORT_SERVICE_TYPE.get_u8(p),
            end_to_end_flow_control: loc::REQ_END_TO_END_FLOW_CONTROL.get_bool(p),
            starting_psn: loc::REQ_STARTING_PSN.get_u32(p),
            local_cm_response_timeout: loc::REQ_LOCAL_CM_RESPONSE_TIMEOUT.get_u8(p),
            retry_count: loc::REQ_RETRY_COUNT.get_u8(p),
            partition_key: loc::REQ_PARTITION_KEY.get_u16(p),
            path_mtu: loc::REQ_PATH_PACKET_PAYLOAD_MTU.get_u8(p),
            rdc_exists: loc::REQ_RDC_EXISTS.get_bool(p),
            rnr_retry_count: loc::REQ_RNR_RETRY_COUNT.get_u8(p),
            max_cm_retries: loc::REQ_MAX_CM_RETRIES.get_u8(p),
            srq: loc::REQ_SRQ.get_bool(p),
            extended_transport_type: loc::REQ_EXTENDED_TRANSPORT_TYPE.get_u8(p),
            primary_path: ReqPath::parse(p, &loc::REQ_PRIMARY),
            alternate_path: ReqPath::parse(p, &loc::REQ_ALTERNATE),
            sap_supported: loc::REQ_SAP_SUPPORTED.get_bool(p),
            private_data: Bytes(loc::REQ_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the REQ into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::REQ_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::REQ_VENDOR_ID, self.vendor_id)?;
        w.put(loc::REQ_SERVICE_ID, self.service_id)?;
        w.put(loc::REQ_LOCAL_CA_GUID, self.local_ca_guid)?;
        w.put(loc::REQ_LOCAL_Q_KEY, self.local_qkey)?;
        w.put(loc::REQ_LOCAL_QPN, self.local_qpn)?;
        w.put(loc::REQ_RESPONDER_RESOURCES, self.responder_resources)?;
        w.put(loc::REQ_LOCAL_EECN, self.local_eecn)?;
        w.put(loc::REQ_INITIATOR_DEPTH, self.initiator_depth)?;
        w.put(loc::REQ_REMOTE_EECN, self.remote_eecn)?;
        w.put(
            loc::REQ_REMOTE_CM_RESPONSE_TIMEOUT,
            self.remote_cm_response_timeout,
        )?;
        w.put(loc::REQ_TRANSPORT_SERVICE_TYPE, self.transport_service_type)?;
        w.put(
            loc::REQ_END_TO_END_FLOW_CONTROL,
            self.end_to_end_flow_control,
        )?;
        w.put(loc::REQ_STARTING_PSN, self.starting_psn)?;
        w.put(
            loc::REQ_LOCAL_CM_RESPONSE_TIMEOUT,
            self.local_cm_response_timeout,
        )?;
        w.put(loc::REQ_RETRY_COUNT, self.retry_count)?;
        w.put(loc::REQ_PARTITION_KEY, self.partition_key)?;
        w.put(loc::REQ_PATH_PACKET_PAYLOAD_MTU, self.path_mtu)?;
        w.put(loc::REQ_RDC_EXISTS, self.rdc_exists)?;
        w.put(loc::REQ_RNR_RETRY_COUNT, self.rnr_retry_count)?;
        w.put(loc::REQ_MAX_CM_RETRIES, self.max_cm_retries)?;
        w.put(loc::REQ_SRQ, self.srq)?;
        w.put(
            loc::REQ_EXTENDED_TRANSPORT_TYPE,
            self.extended_transport_type,
        )?;
        self.primary_path.write(&mut w, &loc::REQ_PRIMARY)?;
        self.alternate_path.write(&mut w, &loc::REQ_ALTERNATE)?;
        w.put(loc::REQ_SAP_SUPPORTED, self.sap_supported)?;
        w.put_bytes(loc::REQ_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }

    /// The QP type the receiver of this REQ connects, as
    /// `cm_req_get_qp_type` decides: RC, UC, or an XRC target for the
    /// extended XRC transport; `None` for anything else.
    pub const fn qp_type(&self) -> Option<QpType> {
        match self.transport_service_type {
            TRANSPORT_RC => Some(QpType::Rc),
            TRANSPORT_UC => Some(QpType::Uc),
            TRANSPORT_EXTENDED if self.extended_transport_type == EXT_TRANSPORT_XRC => {
                Some(QpType::XrcTgt)
            }
            _ => None,
        }
    }

    /// The path MTU, if the field holds a valid `enum ib_mtu`.
    pub const fn mtu(&self) -> Option<Mtu> {
        Mtu::from_raw(self.path_mtu as u32)
    }

    /// The rdma_cm header at the start of the private data.
    pub fn cma_header(&self) -> Result<CmaHeader, CmError> {
        CmaHeader::parse(&self.private_data.0)
    }
}

/// A MsgRcptAck (MRA), IBA table 107.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mra {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The receiver's communication ID (0 when acknowledging a REQ).
    pub remote_comm_id: u32,
    /// The message acknowledged (2 bits, [`MsgResponse`]).
    pub message_mraed: u8,
    /// Service timeout (5 bits, 4.096 us * 2^n).
    pub service_timeout: u8,
    /// Private data.
    pub private_data: Bytes<MRA_PRIVATE_DATA_LEN>,
}

impl Mra {
    /// The MAD attribute ID of an MRA.
    pub const ATTR_ID: u16 = mad::CM_ATTR_MRA;

    /// Parses an MRA from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Mra, CmError> {
        let p = payload_in(payload)?;
        Ok(Mra {
            local_comm_id: loc::MRA_LOCAL_COMM_ID.get_u32(p),
            remote_comm_id: loc::MRA_REMOTE_COMM_ID.get_u32(p),
            message_mraed: loc::MRA_MESSAGE_MRAED.get_u8(p),
            service_timeout: loc::MRA_SERVICE_TIMEOUT.get_u8(p),
            private_data: Bytes(loc::MRA_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the MRA into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::MRA_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::MRA_REMOTE_COMM_ID, self.remote_comm_id)?;
        w.put(loc::MRA_MESSAGE_MRAED, self.message_mraed)?;
        w.put(loc::MRA_SERVICE_TIMEOUT, self.service_timeout)?;
        w.put_bytes(loc::MRA_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }

    /// The message acknowledged, if the field holds a defined value.
    pub const fn mraed(&self) -> Option<MsgResponse> {
        MsgResponse::from_raw(self.message_mraed)
    }
}

/// A ConnectReject (REJ), IBA table 108.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rej {
    /// The sender's communication ID (0 if it has none).
    pub local_comm_id: u32,
    /// The receiver's communication ID.
    pub remote_comm_id: u32,
    /// The message rejected (2 bits, [`MsgResponse`]).
    pub message_rejected: u8,
    /// Length of the ARI in bytes (7 bits).
    pub reject_info_length: u8,
    /// The reason ([`RejReason`]).
    pub reason: u16,
    /// Additional rejection information.
    pub ari: Bytes<REJ_ARI_LEN>,
    /// Private data.
    pub private_data: Bytes<REJ_PRIVATE_DATA_LEN>,
}

impl Rej {
    /// The MAD attribute ID of a REJ.
    pub const ATTR_ID: u16 = mad::CM_ATTR_REJ;

    /// The node GUID a TIMEOUT REJ carries in its ARI (big-endian, the
    /// first 8 bytes), if the ARI is that long.
    pub fn ari_guid(&self) -> Option<u64> {
        if self.reject_info_length < 8 {
            return None;
        }
        let b = self.ari.as_ref().get(..8)?;
        let mut g = [0u8; 8];
        g.copy_from_slice(b);
        Some(u64::from_be_bytes(g))
    }

    /// Puts node GUID `guid` in the ARI (a TIMEOUT REJ's).
    pub fn set_ari_guid(&mut self, guid: u64) {
        if let Ok(b) = Bytes::from_slice(&guid.to_be_bytes()) {
            self.ari = b;
            self.reject_info_length = 8;
        }
    }

    /// Parses a REJ from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Rej, CmError> {
        let p = payload_in(payload)?;
        Ok(Rej {
            local_comm_id: loc::REJ_LOCAL_COMM_ID.get_u32(p),
            remote_comm_id: loc::REJ_REMOTE_COMM_ID.get_u32(p),
            message_rejected: loc::REJ_MESSAGE_REJECTED.get_u8(p),
            reject_info_length: loc::REJ_REJECTED_INFO_LENGTH.get_u8(p),
            reason: loc::REJ_REASON.get_u16(p),
            ari: Bytes(loc::REJ_ARI.read(p)),
            private_data: Bytes(loc::REJ_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the REJ into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::REJ_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::REJ_REMOTE_COMM_ID, self.remote_comm_id)?;
        w.put(loc::REJ_MESSAGE_REJECTED, self.message_rejected)?;
        w.put(loc::REJ_REJECTED_INFO_LENGTH, self.reject_info_length)?;
        w.put(loc::REJ_REASON, self.reason)?;
        w.put_bytes(loc::REJ_ARI, &self.ari.0);
        w.put_bytes(loc::REJ_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }

    /// The message rejected, if the field holds a defined value.
    pub const fn rejected(&self) -> Option<MsgResponse> {
        MsgResponse::from_raw(self.message_rejected)
    }

    /// The reason, if it is one of [`RejReason`].
    pub fn reason_code(&self) -> Option<RejReason> {
        RejReason::from_raw(self.reason)
    }

    /// The first `reject_info_length` bytes of the ARI (all of it if the
    /// length claims more).
    pub fn ari_bytes(&self) -> &[u8] {
        self.ari
            .0
            .get(..usize::from(self.reject_info_length))
            .unwrap_or(&self.ari.0)
    }
}

/// A ConnectReply (REP), IBA table 110.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rep {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The receiver's communication ID.
    pub remote_comm_id: u32,
    /// The sender's Q_Key.
    pub local_qkey: u32,
    /// The sender's QPN (24 bits).
    pub local_qpn: u32,
    /// ECE vendor ID (24 bits, carried in three separate bytes).
    pub vendor_id: u32,
    /// The sender's EE context number (24 bits; the QPN of an XRC target).
    pub local_eecn: u32,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Target ACK delay (5 bits).
    pub target_ack_delay: u8,
    /// Failover accepted (2 bits).
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// The sender uses an SRQ.
    pub srq: bool,
    /// The sender's CA GUID.
    pub local_ca_guid: u64,
    /// Private data.
    pub private_data: Bytes<REP_PRIVATE_DATA_LEN>,
}

impl Rep {
    /// The MAD attribute ID of a REP.
    pub const ATTR_ID: u16 = mad::CM_ATTR_REP;

    /// Parses a REP from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Rep, CmError> {
        let p = payload_in(payload)?;
        let vendor_id = (loc::REP_VENDOR_ID_H.get_u32(p) << 16)
            | (loc::REP_VENDOR_ID_M.get_u32(p) << 8)
            | loc::REP_VENDOR_ID_L.get_u32(p);
        Ok(Rep {
            local_comm_id: loc::REP_LOCAL_COMM_ID.get_u32(p),
            remote_comm_id: loc::REP_REMOTE_COMM_ID.get_u32(p),
            local_qkey: loc::REP_LOCAL_Q_KEY.get_u32(p),
            local_qpn: loc::REP_LOCAL_QPN.get_u32(p),
            vendor_id,
            local_eecn: loc::REP_LOCAL_EE_CONTEXT_NUMBER.get_u32(p),
            starting_psn: loc::REP_STARTING_PSN.get_u32(p),
            responder_resources: loc::REP_RESPONDER_RESOURCES.get_u8(p),
            initiator_depth: loc::REP_INITIATOR_DEPTH.get_u8(p),
            target_ack_delay: loc::REP_TARGET_ACK_DELAY.get_u8(p),
            failover_accepted: loc::REP_FAILOVER_ACCEPTED.get_u8(p),
            end_to_end_flow_control: loc::REP_END_TO_END_FLOW_CONTROL.get_bool(p),
            rnr_retry_count: loc::REP_RNR_RETRY_COUNT.get_u8(p),
            srq: loc::REP_SRQ.get_bool(p),
            local_ca_guid: loc::REP_LOCAL_CA_GUID.get(p),
            private_data: Bytes(loc::REP_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the REP into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        if self.vendor_id >> 24 != 0 {
            return Err(CmError::ValueTooWide {
                field: "REP vendor ID",
                width: 24,
            });
        }
        let [_, vendor_h, vendor_m, vendor_l] = self.vendor_id.to_be_bytes();
        let mut w = Writer::new();
        w.put(loc::REP_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::REP_REMOTE_COMM_ID, self.remote_comm_id)?;
        w.put(loc::REP_LOCAL_Q_KEY, self.local_qkey)?;
        w.put(loc::REP_LOCAL_QPN, self.local_qpn)?;
        w.put(loc::REP_VENDOR_ID_H, vendor_h)?;
        w.put(loc::REP_LOCAL_EE_CONTEXT_NUMBER, self.local_eecn)?;
        w.put(loc::REP_VENDOR_ID_M, vendor_m)?;
        w.put(loc::REP_STARTING_PSN, self.starting_psn)?;
        w.put(loc::REP_VENDOR_ID_L, vendor_l)?;
        w.put(loc::REP_RESPONDER_RESOURCES, self.responder_resources)?;
        w.put(loc::REP_INITIATOR_DEPTH, self.initiator_depth)?;
        w.put(loc::REP_TARGET_ACK_DELAY, self.target_ack_delay)?;
        w.put(loc::REP_FAILOVER_ACCEPTED, self.failover_accepted)?;
        w.put(
            loc::REP_END_TO_END_FLOW_CONTROL,
            self.end_to_end_flow_control,
        )?;
        w.put(loc::REP_RNR_RETRY_COUNT, self.rnr_retry_count)?;
        w.put(loc::REP_SRQ, self.srq)?;
        w.put(loc::REP_LOCAL_CA_GUID, self.local_ca_guid)?;
        w.put_bytes(loc::REP_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }
}

/// A ReadyToUse (RTU), IBA table 111.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rtu {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The receiver's communication ID.
    pub remote_comm_id: u32,
    /// Private data.
    pub private_data: Bytes<RTU_PRIVATE_DATA_LEN>,
}

impl Rtu {
    /// The MAD attribute ID of an RTU.
    pub const ATTR_ID: u16 = mad::CM_ATTR_RTU;

    /// Parses an RTU from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Rtu, CmError> {
        let p = payload_in(payload)?;
        Ok(Rtu {
            local_comm_id: loc::RTU_LOCAL_COMM_ID.get_u32(p),
            remote_comm_id: loc::RTU_REMOTE_COMM_ID.get_u32(p),
            private_data: Bytes(loc::RTU_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the RTU into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::RTU_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::RTU_REMOTE_COMM_ID, self.remote_comm_id)?;
        w.put_bytes(loc::RTU_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }
}

/// A DisconnectRequest (DREQ), IBA table 112.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dreq {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The receiver's communication ID.
    pub remote_comm_id: u32,
    /// The receiver's QPN or EECN (24 bits).
    pub remote_qpn_eecn: u32,
    /// Private data.
    pub private_data: Bytes<DREQ_PRIVATE_DATA_LEN>,
}

impl Dreq {
    /// The MAD attribute ID of a DREQ.
    pub const ATTR_ID: u16 = mad::CM_ATTR_DREQ;

    /// Parses a DREQ from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Dreq, CmError> {
        let p = payload_in(payload)?;
        Ok(Dreq {
            local_comm_id: loc::DREQ_LOCAL_COMM_ID.get_u32(p),
            remote_comm_id: loc::DREQ_REMOTE_COMM_ID.get_u32(p),
            remote_qpn_eecn: loc::DREQ_REMOTE_QPN_EECN.get_u32(p),
            private_data: Bytes(loc::DREQ_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the DREQ into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::DREQ_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::DREQ_REMOTE_COMM_ID, self.remote_comm_id)?;
        w.put(loc::DREQ_REMOTE_QPN_EECN, self.remote_qpn_eecn)?;
        w.put_bytes(loc::DREQ_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }
}

/// A DisconnectReply (DREP), IBA table 113.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Drep {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The receiver's communication ID.
    pub remote_comm_id: u32,
    /// Private data.
    pub private_data: Bytes<DREP_PRIVATE_DATA_LEN>,
}

impl Drep {
    /// The MAD attribute ID of a DREP.
    pub const ATTR_ID: u16 = mad::CM_ATTR_DREP;

    /// Parses a DREP from the first [`CM_PAYLOAD_LEN`] bytes of `payload`.
    pub fn parse(payload: &[u8]) -> Result<Drep, CmError> {
        let p = payload_in(payload)?;
        Ok(Drep {
            local_comm_id: loc::DREP_LOCAL_COMM_ID.get_u32(p),
            remote_comm_id: loc::DREP_REMOTE_COMM_ID.get_u32(p),
            private_data: Bytes(loc::DREP_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the DREP into the first [`CM_PAYLOAD_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::DREP_LOCAL_COMM_ID, self.local_comm_id)?;
        w.put(loc::DREP_REMOTE_COMM_ID, self.remote_comm_id)?;
        w.put_bytes(loc::DREP_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }
}

/// Any CM message this codec handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmMessage {
    /// ConnectRequest.
    Req(Req),
    /// MsgRcptAck.
    Mra(Mra),
    /// ConnectReject.
    Rej(Rej),
    /// ConnectReply.
    Rep(Rep),
    /// ReadyToUse.
    Rtu(Rtu),
    /// DisconnectRequest.
    Dreq(Dreq),
    /// DisconnectReply.
    Drep(Drep),
}

impl CmMessage {
    /// The MAD attribute ID of the message.
    pub const fn attr_id(&self) -> u16 {
        match self {
            CmMessage::Req(_) => Req::ATTR_ID,
            CmMessage::Mra(_) => Mra::ATTR_ID,
            CmMessage::Rej(_) => Rej::ATTR_ID,
            CmMessage::Rep(_) => Rep::ATTR_ID,
            CmMessage::Rtu(_) => Rtu::ATTR_ID,
            CmMessage::Dreq(_) => Dreq::ATTR_ID,
            CmMessage::Drep(_) => Drep::ATTR_ID,
        }
    }

    /// Parses the payload of a CM MAD with attribute ID `attr_id`.
    ///
    /// Fails with [`CmError::UnknownAttribute`] for SIDR_REQ, SIDR_REP,
    /// LAP, APR, ClassPortInfo and anything else outside the seven.
    pub fn parse(attr_id: u16, payload: &[u8]) -> Result<CmMessage, CmError> {
        Ok(match attr_id {
            Req::ATTR_ID => CmMessage::Req(Req::parse(payload)?),
            Mra::ATTR_ID => CmMessage::Mra(Mra::parse(payload)?),
            Rej::ATTR_ID => CmMessage::Rej(Rej::parse(payload)?),
            Rep::ATTR_ID => CmMessage::Rep(Rep::parse(payload)?),
            Rtu::ATTR_ID => CmMessage::Rtu(Rtu::parse(payload)?),
            Dreq::ATTR_ID => CmMessage::Dreq(Dreq::parse(payload)?),
            Drep::ATTR_ID => CmMessage::Drep(Drep::parse(payload)?),
            other => return Err(CmError::UnknownAttribute(other)),
        })
    }

    /// Writes the message's payload into the first [`CM_PAYLOAD_LEN`]
    /// bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        match self {
            CmMessage::Req(m) => m.write(out),
            CmMessage::Mra(m) => m.write(out),
            CmMessage::Rej(m) => m.write(out),
            CmMessage::Rep(m) => m.write(out),
            CmMessage::Rtu(m) => m.write(out),
            CmMessage::Dreq(m) => m.write(out),
            CmMessage::Drep(m) => m.write(out),
        }
    }

    /// Parses a whole CM MAD: the header (base version 1, class CM, class
    /// version 2) and the message its attribute ID names.
    pub fn parse_mad(buf: &[u8]) -> Result<(MadHeader, CmMessage), CmError> {
        let mad = Mad::parse(buf)?;
        let header = *mad.header();
        header.check_class(mad::CLASS_CM, mad::CM_CLASS_VERSION)?;
        Ok((header, CmMessage::parse(header.attr_id, mad.data())?))
    }

    /// Writes a whole CM MAD into the first [`MAD_SIZE`] bytes of `out`,
    /// with the header the C CM gives its messages
    /// ([`MadHeader::cm`]). `attr_mod` carries the ECE options of a REQ or
    /// REP; it is 0 otherwise.
    pub fn write_mad(&self, tid: u64, attr_mod: u32, out: &mut [u8]) -> Result<(), CmError> {
        if out.len() < MAD_SIZE {
            return Err(CmError::TooShort {
                needed: MAD_SIZE,
                got: out.len(),
            });
        }
        let mut payload = [0u8; CM_PAYLOAD_LEN];
        self.write(&mut payload)?;
        MadHeader::cm(self.attr_id(), tid, attr_mod).write(out)?;
        if let Some(data) = out.get_mut(MAD_HDR_LEN..MAD_SIZE) {
            for (d, s) in data.iter_mut().zip(&payload) {
                *d = *s;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// SIDR

/// Length of a SIDR REQ's private data (`IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE`).
pub const SIDR_REQ_PRIVATE_DATA_LEN: usize = 216;
/// Length of a SIDR REP's private data (`IB_CM_SIDR_REP_PRIVATE_DATA_SIZE`).
pub const SIDR_REP_PRIVATE_DATA_LEN: usize = 136;
/// Length of a SIDR REP's additional information
/// (`IB_CM_SIDR_REP_INFO_LENGTH`).
pub const SIDR_REP_INFO_LEN: usize = 72;

/// The status of a SIDR REP (IBA table 119, `enum ib_cm_sidr_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SidrStatus {
    /// The service ID is resolved: the QPN and Q_Key are valid.
    Success = 0,
    /// Nobody here provides the service ID.
    Unsupported = 1,
    /// The service provider refused.
    Reject = 2,
    /// The service has no QP now.
    NoQp = 3,
    /// Ask elsewhere (the additional information says where).
    Redirect = 4,
    /// The service does not support the version asked for.
    UnsupportedVersion = 5,
}

impl SidrStatus {
    /// Every status, in wire value order.
    pub const ALL: [SidrStatus; 6] = [
        SidrStatus::Success,
        SidrStatus::Unsupported,
        SidrStatus::Reject,
        SidrStatus::NoQp,
        SidrStatus::Redirect,
        SidrStatus::UnsupportedVersion,
    ];

    /// The status with wire value `raw`, if it is one of these.
    pub const fn from_raw(raw: u8) -> Option<SidrStatus> {
        if (raw as usize) < Self::ALL.len() {
            Some(Self::ALL[raw as usize])
        } else {
            None
        }
    }
}

/// SIDR REP status UNSUPPORTED (`IB_SIDR_UNSUPPORTED`), the answer to a
/// SIDR REQ nobody listens for.
pub const SIDR_UNSUPPORTED: u8 = SidrStatus::Unsupported as u8;
/// SIDR REP status REJECT (`IB_SIDR_REJECT`): a listener refused.
pub const SIDR_REJECT: u8 = SidrStatus::Reject as u8;

/// Writes a whole CM MAD of attribute `attr_id` whose payload `write`
/// fills (from zeros) into the first [`MAD_SIZE`] bytes of `out`; `out`
/// is left alone on an error.
fn write_cm_mad(
    attr_id: u16,
    tid: u64,
    attr_mod: u32,
    out: &mut [u8],
    write: impl FnOnce(&mut [u8]) -> Result<(), CmError>,
) -> Result<(), CmError> {
    if out.len() < MAD_SIZE {
        return Err(CmError::TooShort {
            needed: MAD_SIZE,
            got: out.len(),
        });
    }
    let mut payload = [0u8; CM_PAYLOAD_LEN];
    write(&mut payload)?;
    MadHeader::cm(attr_id, tid, attr_mod).write(out)?;
    if let Some(data) = out.get_mut(MAD_HDR_LEN..MAD_SIZE) {
        for (d, s) in data.iter_mut().zip(&payload) {
            *d = *s;
        }
    }
    Ok(())
}

/// Parses the header of a whole CM MAD of attribute `attr_id` and hands
/// its payload to `parse`.
fn parse_cm_mad<M>(
    buf: &[u8],
    attr_id: u16,
    parse: impl FnOnce(&[u8]) -> Result<M, CmError>,
) -> Result<(MadHeader, M), CmError> {
    let mad = Mad::parse(buf)?;
    let header = *mad.header();
    header.check_class(mad::CLASS_CM, mad::CM_CLASS_VERSION)?;
    if header.attr_id != attr_id {
        return Err(CmError::UnknownAttribute(header.attr_id));
    }
    Ok((header, parse(mad.data())?))
}

/// A ServiceIDResReq (SIDR REQ), IBA table 118. SIDR is not in
/// [`CmMessage`]: it has no communication IDs and no connection state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SidrReq {
    /// The sender's request ID (the C CM gives its id's local
    /// communication ID).
    pub request_id: u32,
    /// The partition key.
    pub partition_key: u16,
    /// The service ID asked for.
    pub service_id: u64,
    /// Private data; an rdma_cm SIDR REQ starts it with a [`CmaHeader`].
    pub private_data: Bytes<SIDR_REQ_PRIVATE_DATA_LEN>,
}

impl SidrReq {
    /// The MAD attribute ID of a SIDR REQ.
    pub const ATTR_ID: u16 = mad::CM_ATTR_SIDR_REQ;

    /// Parses a SIDR REQ from the first [`CM_PAYLOAD_LEN`] bytes of
    /// `payload`.
    pub fn parse(payload: &[u8]) -> Result<SidrReq, CmError> {
        let p = payload_in(payload)?;
        Ok(SidrReq {
            request_id: loc::SIDR_REQ_REQUEST_ID.get_u32(p),
            partition_key: loc::SIDR_REQ_PARTITION_KEY.get_u16(p),
            service_id: loc::SIDR_REQ_SERVICE_ID.get(p),
            private_data: Bytes(loc::SIDR_REQ_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the SIDR REQ into the first [`CM_PAYLOAD_LEN`] bytes of
    /// `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        let mut w = Writer::new();
        w.put(loc::SIDR_REQ_REQUEST_ID, self.request_id)?;
        w.put(loc::SIDR_REQ_PARTITION_KEY, self.partition_key)?;
        w.put(loc::SIDR_REQ_SERVICE_ID, self.service_id)?;
        w.put_bytes(loc::SIDR_REQ_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }

    /// Parses a whole SIDR REQ MAD (CM class and version, attribute SIDR
    /// REQ).
    pub fn parse_mad(buf: &[u8]) -> Result<(MadHeader, SidrReq), CmError> {
        parse_cm_mad(buf, Self::ATTR_ID, SidrReq::parse)
    }

    /// Writes a whole SIDR REQ MAD with transaction ID `tid` into the
    /// first [`MAD_SIZE`] bytes of `out`, with the header the C CM gives
    /// it.
    pub fn write_mad(&self, tid: u64, out: &mut [u8]) -> Result<(), CmError> {
        write_cm_mad(Self::ATTR_ID, tid, 0, out, |p| self.write(p))
    }

    /// The rdma_cm header at the start of the private data.
    pub fn cma_header(&self) -> Result<CmaHeader, CmError> {
        CmaHeader::parse(&self.private_data.0)
    }
}

/// A ServiceIDResReqResp (SIDR REP), IBA table 119.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SidrRep {
    /// The request ID of the SIDR REQ answered.
    pub request_id: u32,
    /// The status ([`SidrStatus`]).
    pub status: u8,
    /// Length of the additional information in bytes.
    pub additional_info_len: u8,
    /// ECE vendor ID (24 bits: the high 16 in bytes 6-7, the low 8 in
    /// byte 11).
    pub vendor_id: u32,
    /// The QPN of the service (24 bits).
    pub qpn: u32,
    /// The service ID of the SIDR REQ.
    pub service_id: u64,
    /// The Q_Key of the service.
    pub qkey: u32,
    /// Additional information (a redirection's class port info).
    pub additional_info: Bytes<SIDR_REP_INFO_LEN>,
    /// Private data.
    pub private_data: Bytes<SIDR_REP_PRIVATE_DATA_LEN>,
}

impl SidrRep {
    /// The MAD attribute ID of a SIDR REP.
    pub const ATTR_ID: u16 = mad::CM_ATTR_SIDR_REP;

    /// The answer to `req` with `status`, no QP, no Q_Key, no data.
    pub fn answer(req: &SidrReq, status: u8) -> SidrRep {
        SidrRep {
            request_id: req.request_id,
            status,
            service_id: req.service_id,
            ..SidrRep::default()
        }
    }

    /// The status, if it is one of [`SidrStatus`].
    pub const fn status_code(&self) -> Option<SidrStatus> {
        SidrStatus::from_raw(self.status)
    }

    /// The first `additional_info_len` bytes of the additional
    /// information (all of it if the length claims more).
    pub fn info_bytes(&self) -> &[u8] {
        self.additional_info
            .0
            .get(..usize::from(self.additional_info_len))
            .unwrap_or(&self.additional_info.0)
    }

    /// Parses a SIDR REP from the first [`CM_PAYLOAD_LEN`] bytes of
    /// `payload`.
    pub fn parse(payload: &[u8]) -> Result<SidrRep, CmError> {
        let p = payload_in(payload)?;
        Ok(SidrRep {
            request_id: loc::SIDR_REP_REQUEST_ID.get_u32(p),
            status: loc::SIDR_REP_STATUS.get_u8(p),
            additional_info_len: loc::SIDR_REP_ADDITIONAL_INFO_LEN.get_u8(p),
            vendor_id: (loc::SIDR_REP_VENDOR_ID_H.get_u32(p) << 8)
                | loc::SIDR_REP_VENDOR_ID_L.get_u32(p),
            qpn: loc::SIDR_REP_QPN.get_u32(p),
            service_id: loc::SIDR_REP_SERVICE_ID.get(p),
            qkey: loc::SIDR_REP_Q_KEY.get_u32(p),
            additional_info: Bytes(loc::SIDR_REP_ADDITIONAL_INFO.read(p)),
            private_data: Bytes(loc::SIDR_REP_PRIVATE_DATA.read(p)),
        })
    }

    /// Writes the SIDR REP into the first [`CM_PAYLOAD_LEN`] bytes of
    /// `out`; fails if the QPN or the vendor ID is wider than 24 bits.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let out = payload_out(out)?;
        if self.vendor_id >> 24 != 0 {
            return Err(CmError::ValueTooWide {
                field: "SIDR REP vendor ID",
                width: 24,
            });
        }
        let mut w = Writer::new();
        w.put(loc::SIDR_REP_REQUEST_ID, self.request_id)?;
        w.put(loc::SIDR_REP_STATUS, self.status)?;
        w.put(loc::SIDR_REP_ADDITIONAL_INFO_LEN, self.additional_info_len)?;
        w.put(loc::SIDR_REP_VENDOR_ID_H, self.vendor_id >> 8)?;
        w.put(loc::SIDR_REP_QPN, self.qpn)?;
        w.put(loc::SIDR_REP_VENDOR_ID_L, self.vendor_id & 0xff)?;
        w.put(loc::SIDR_REP_SERVICE_ID, self.service_id)?;
        w.put(loc::SIDR_REP_Q_KEY, self.qkey)?;
        w.put_bytes(loc::SIDR_REP_ADDITIONAL_INFO, &self.additional_info.0);
        w.put_bytes(loc::SIDR_REP_PRIVATE_DATA, &self.private_data.0);
        *out = w.0;
        Ok(())
    }

    /// Parses a whole SIDR REP MAD (CM class and version, attribute SIDR
    /// REP).
    pub fn parse_mad(buf: &[u8]) -> Result<(MadHeader, SidrRep), CmError> {
        parse_cm_mad(buf, Self::ATTR_ID, SidrRep::parse)
    }

    /// Writes a whole SIDR REP MAD with transaction ID `tid` (the SIDR
    /// REQ's) into the first [`MAD_SIZE`] bytes of `out`; `attr_mod`
    /// carries the ECE options, as the C CM's header of a SIDR REP does.
    pub fn write_mad(&self, tid: u64, attr_mod: u32, out: &mut [u8]) -> Result<(), CmError> {
        write_cm_mad(Self::ATTR_ID, tid, attr_mod, out, |p| self.write(p))
    }
}

// ---------------------------------------------------------------------------
// rdma_cm

/// The version of the rdma_cm header (`CMA_VERSION`).
pub const CMA_VERSION: u8 = 0;
/// Length of the rdma_cm header (`struct cma_hdr`).
pub const CMA_HDR_LEN: usize = 36;

/// The bits of a service ID that name the rdma_cm port space
/// (`RDMA_IB_IP_PS_MASK`).
pub const RDMA_IB_IP_PS_MASK: u64 = 0xffff_ffff_ffff_0000;
/// Service IDs of the TCP port space (`RDMA_IB_IP_PS_TCP`).
pub const RDMA_IB_IP_PS_TCP: u64 = 0x0000_0000_0106_0000;
/// Service IDs of the UDP port space (`RDMA_IB_IP_PS_UDP`).
pub const RDMA_IB_IP_PS_UDP: u64 = 0x0000_0000_0111_0000;
/// Service IDs of the IB port space (`RDMA_IB_IP_PS_IB`).
pub const RDMA_IB_IP_PS_IB: u64 = 0x0000_0000_013f_0000;

/// The service ID of TCP port space port `port`, as `rdma_get_service_id`
/// builds it for an `RDMA_PS_TCP` listener on an IP address.
pub const fn tcp_service_id(port: u16) -> u64 {
    RDMA_IB_IP_PS_TCP | port as u64
}

/// The port of an rdma_cm service ID (its low 16 bits).
pub const fn service_id_port(service_id: u64) -> u16 {
    (service_id & 0xffff) as u16
}

/// The port space of an rdma_cm service ID (`RDMA_IB_IP_PS_*`).
pub const fn service_id_port_space(service_id: u64) -> u64 {
    service_id & RDMA_IB_IP_PS_MASK
}

/// The rdma_cm header at the start of the private data of a REQ (`struct
/// cma_hdr`): version, IP version, the active side's port and the two IP
/// addresses.
///
/// Byte 0 is the version, the upper 4 bits of byte 1 the IP version (4 or
/// 6), bytes 2-3 the source port, big-endian, then the source and the
/// destination address, 16 bytes each; an IPv4 address fills the last 4
/// bytes of its 16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CmaHeader {
    /// 4 or 6.
    pub ip_version: u8,
    /// The sender's (source) port.
    pub port: u16,
    /// The sender's address.
    pub src_addr: [u8; 16],
    /// The receiver's address.
    pub dst_addr: [u8; 16],
}

impl CmaHeader {
    /// The header of an IPv4 connection (the padding before each address
    /// zero, as the C rdma_cm leaves it).
    pub const fn ipv4(port: u16, src: [u8; 4], dst: [u8; 4]) -> CmaHeader {
        CmaHeader {
            ip_version: 4,
            port,
            src_addr: [
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, src[0], src[1], src[2], src[3],
            ],
            dst_addr: [
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, dst[0], dst[1], dst[2], dst[3],
            ],
        }
    }

    /// The header of an IPv6 connection.
    pub const fn ipv6(port: u16, src: [u8; 16], dst: [u8; 16]) -> CmaHeader {
        CmaHeader {
            ip_version: 6,
            port,
            src_addr: src,
            dst_addr: dst,
        }
    }

    fn last4(addr: &[u8; 16]) -> [u8; 4] {
        let [.., a, b, c, d] = *addr;
        [a, b, c, d]
    }

    /// The source IPv4 address, for an IPv4 header.
    pub fn src_ipv4(&self) -> Option<[u8; 4]> {
        (self.ip_version == 4).then(|| CmaHeader::last4(&self.src_addr))
    }

    /// The destination IPv4 address, for an IPv4 header.
    pub fn dst_ipv4(&self) -> Option<[u8; 4]> {
        (self.ip_version == 4).then(|| CmaHeader::last4(&self.dst_addr))
    }

    /// Parses the header at the start of `buf` (a REQ's private data).
    ///
    /// Fails, as the C rdma_cm does, unless the version is
    /// [`CMA_VERSION`] and the IP version is 4 or 6.
    pub fn parse(buf: &[u8]) -> Result<CmaHeader, CmError> {
        let too_short = CmError::TooShort {
            needed: CMA_HDR_LEN,
            got: buf.len(),
        };
        let h = buf
            .get(..CMA_HDR_LEN)
            .and_then(|h| <&[u8; CMA_HDR_LEN]>::try_from(h).ok())
            .ok_or(too_short)?;
        let [version, ip, port_hi, port_lo, addrs @ ..] = *h;
        if version != CMA_VERSION {
            return Err(CmError::BadCmaVersion(version));
        }
        let ip_version = ip >> 4;
        if ip_version != 4 && ip_version != 6 {
            return Err(CmError::BadIpVersion(ip_version));
        }
        let mut src_addr = [0u8; 16];
        let mut dst_addr = [0u8; 16];
        let (src, dst) = addrs.split_at(16);
        for (d, s) in src_addr.iter_mut().zip(src) {
            *d = *s;
        }
        for (d, s) in dst_addr.iter_mut().zip(dst) {
            *d = *s;
        }
        Ok(CmaHeader {
            ip_version,
            port: u16::from_be_bytes([port_hi, port_lo]),
            src_addr,
            dst_addr,
        })
    }

    /// Writes the header into the first [`CMA_HDR_LEN`] bytes of `out`.
    ///
    /// Fails, leaving `out` untouched, if `out` is too short or the IP
    /// version is neither 4 nor 6.
    pub fn write(&self, out: &mut [u8]) -> Result<(), CmError> {
        let got = out.len();
        let h = out.get_mut(..CMA_HDR_LEN).ok_or(CmError::TooShort {
            needed: CMA_HDR_LEN,
            got,
        })?;
        if self.ip_version != 4 && self.ip_version != 6 {
            return Err(CmError::BadIpVersion(self.ip_version));
        }
        let [port_hi, port_lo] = self.port.to_be_bytes();
        let head = [CMA_VERSION, self.ip_version << 4, port_hi, port_lo];
        let bytes = head.iter().chain(&self.src_addr).chain(&self.dst_addr);
        for (d, s) in h.iter_mut().zip(bytes) {
            *d = *s;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny xorshift generator for the fuzz loops.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn fill(&mut self, buf: &mut [u8]) {
            for b in buf {
                *b = self.next() as u8;
            }
        }
    }

    fn bytes<const N: usize>(seed: u8) -> Bytes<N> {
        let mut a = [0u8; N];
        for (i, b) in a.iter_mut().enumerate() {
            *b = seed.wrapping_add(i as u8) | 1;
        }
        Bytes(a)
    }

    fn gid(seed: u8) -> Gid {
        Gid(bytes::<16>(seed).0)
    }

    fn sample_req() -> Req {
        Req {
            local_comm_id: 0x1122_3344,
            vendor_id: 0x00ab_cdef,
            service_id: tcp_service_id(4791),
            local_ca_guid: 0x0202_c9ff_fe01_0203,
            local_qkey: 0x8001_0000,
            local_qpn: 0x00_0123,
            responder_resources: 16,
            local_eecn: 0x00_4567,
            initiator_depth: 15,
            remote_eecn: 0x00_89ab,
            remote_cm_response_timeout: 20,
            transport_service_type: TRANSPORT_UC,
            end_to_end_flow_control: true,
            starting_psn: 0xfe_dcba,
            local_cm_response_timeout: 19,
            retry_count: 7,
            partition_key: 0xffff,
            path_mtu: 3,
            rdc_exists: true,
            rnr_retry_count: 6,
            max_cm_retries: 15,
            srq: true,
            extended_transport_type: 5,
            primary_path: ReqPath {
                local_lid: 0x0102,
                remote_lid: 0x0304,
                local_gid: gid(0x10),
                remote_gid: gid(0x20),
                flow_label: 0xa_bcde,
                packet_rate: 0x2a,
                traffic_class: 0x66,
                hop_limit: 64,
                sl: 9,
                subnet_local: true,
                local_ack_timeout: 18,
            },
            alternate_path: ReqPath {
                local_lid: 0x0506,
                remote_lid: 0x0708,
                local_gid: gid(0x30),
                remote_gid: gid(0x40),
                flow_label: 0x5_4321,
                packet_rate: 0x15,
                traffic_class: 0x77,
                hop_limit: 2,
                sl: 5,
                subnet_local: true,
                local_ack_timeout: 13,
            },
            sap_supported: true,
            private_data: bytes(0x50),
        }
    }

    fn sample_rep() -> Rep {
        Rep {
            local_comm_id: 0x5566_7788,
            remote_comm_id: 0x1122_3344,
            local_qkey: 0x1234_5678,
            local_qpn: 0x00_0456,
            vendor_id: 0x12_3456,
            local_eecn: 0x00_0789,
            starting_psn: 0x00_abcd,
            responder_resources: 4,
            initiator_depth: 3,
            target_ack_delay: 17,
            failover_accepted: 2,
            end_to_end_flow_control: true,
            rnr_retry_count: 5,
            srq: true,
            local_ca_guid: 0x0011_2233_4455_6677,
            private_data: bytes(0x60),
        }
    }

    fn sample_rej() -> Rej {
        Rej {
            local_comm_id: 0x0bad_cafe,
            remote_comm_id: 0x1122_3344,
            message_rejected: MsgResponse::Rep as u8,
            reject_info_length: 16,
            reason: RejReason::ConsumerDefined as u16,
            ari: bytes(0x70),
            private_data: bytes(0x80),
        }
    }

    fn sample_mra() -> Mra {
        Mra {
            local_comm_id: 0x5566_7788,
            remote_comm_id: 0x1122_3344,
            message_mraed: MsgResponse::Other as u8,
            service_timeout: 23,
            private_data: bytes(0x90),
        }
    }

    fn sample_rtu() -> Rtu {
        Rtu {
            local_comm_id: 0x0101_0202,
            remote_comm_id: 0x0303_0404,
            private_data: bytes(0xa0),
        }
    }

    fn sample_dreq() -> Dreq {
        Dreq {
            local_comm_id: 0x0505_0606,
            remote_comm_id: 0x0707_0808,
            remote_qpn_eecn: 0x00_0999,
            private_data: bytes(0xb0),
        }
    }

    fn sample_drep() -> Drep {
        Drep {
            local_comm_id: 0x0a0a_0b0b,
            remote_comm_id: 0x0c0c_0d0d,
            private_data: bytes(0xc0),
        }
    }

    fn samples() -> [CmMessage; 7] {
        [
            CmMessage::Req(sample_req()),
            CmMessage::Mra(sample_mra()),
            CmMessage::Rej(sample_rej()),
            CmMessage::Rep(sample_rep()),
            CmMessage::Rtu(sample_rtu()),
            CmMessage::Dreq(sample_dreq()),
            CmMessage::Drep(sample_drep()),
        ]
    }

    /// The C definition of a field: the word it is read through (offset
    /// and size in bytes) and the mask inside that word, as
    /// include/rdma/iba.h computes them.
    fn c_loc(byte: usize, size: usize, bit_in_byte: usize, width: usize) -> (usize, usize, u64) {
        let word = byte - byte % size;
        let hi = size * 8 - 1 - (byte % size) * 8 - bit_in_byte;
        let lo = hi + 1 - width;
        let mask = if width == 64 {
            u64::MAX
        } else {
            ((1u64 << width) - 1) << lo
        };
        (word, size, mask)
    }

    /// The payload with the C field set to all ones.
    fn c_image(byte: usize, size: usize, bit_in_byte: usize, width: usize) -> [u8; 232] {
        let (word, size, mask) = c_loc(byte, size, bit_in_byte, width);
        let mut p = [0u8; 232];
        let be = mask.to_be_bytes();
        p[word..word + size].copy_from_slice(&be[8 - size..]);
        p
    }

    fn ones(width: u32) -> u64 {
        if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        }
    }

    fn image_of(f: Field) -> [u8; 232] {
        let mut p = [0u8; 232];
        f.put(&mut p, ones(f.width)).unwrap();
        p
    }

    #[test]
    fn constructors_follow_the_c_masks() {
        // Every place and width each constructor accepts gives the bits the
        // C macro's word and GENMASK give.
        for byte in 0..CM_PAYLOAD_LEN {
            for bit in 0..8 {
                for width in 1..=8 - bit {
                    let f = Field::bloc("t", byte, bit, width as u32);
                    assert_eq!(image_of(f), c_image(byte, 1, bit, width));
                }
            }
            for width in 1..=16 - (byte % 2) * 8 {
                if byte * 8 + width <= PAYLOAD_BITS {
                    let f = Field::f16("t", byte, width as u32);
                    assert_eq!(image_of(f), c_image(byte, 2, 0, width), "16 {byte} {width}");
                }
            }
            for width in 1..=32 - (byte % 4) * 8 {
                if byte * 8 + width <= PAYLOAD_BITS {
                    let f = Field::f32("t", byte, width as u32);
                    assert_eq!(image_of(f), c_image(byte, 4, 0, width), "32 {byte} {width}");
                }
            }
            if byte + 8 <= CM_PAYLOAD_LEN {
                let f = Field::f64("t", byte);
                let mut want = [0u8; 232];
                want[byte..byte + 8].fill(0xff);
                assert_eq!(image_of(f), want);
            }
        }
    }

    #[test]
    fn field_get_put() {
        let mut p = [0u8; 232];
        // CM_REQ_PRIMARY_FLOW_LABEL: 20 bits from the top of the word at 88.
        loc::REQ_PRIMARY.flow_label.put(&mut p, 0xa_bcde).unwrap();
        assert_eq!(&p[88..92], &[0xab, 0xcd, 0xe0, 0x00]);
        assert_eq!(loc::REQ_PRIMARY.flow_label.get(&p), 0xa_bcde);
        // CM_REQ_TRANSPORT_SERVICE_TYPE: bits 5-6 of byte 43.
        loc::REQ_TRANSPORT_SERVICE_TYPE.put(&mut p, 3).unwrap();
        assert_eq!(p[43], 0x06);
        loc::REQ_TRANSPORT_SERVICE_TYPE.put(&mut p, 1).unwrap();
        assert_eq!(p[43], 0x02);
        // Neighbours are left alone.
        p[43] = 0xff;
        loc::REQ_TRANSPORT_SERVICE_TYPE.put(&mut p, 0).unwrap();
        assert_eq!(p[43], 0xf9);
        assert_eq!(
            loc::REQ_TRANSPORT_SERVICE_TYPE.put(&mut p, 4),
            Err(CmError::ValueTooWide {
                field: "REQ transport service type",
                width: 2
            })
        );
        assert_eq!(p[43], 0xf9);
        loc::REP_LOCAL_CA_GUID
            .put(&mut p, 0x0102_0304_0506_0708)
            .unwrap();
        assert_eq!(&p[28..36], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(loc::REP_LOCAL_CA_GUID.get(&p), 0x0102_0304_0506_0708);
        loc::REP_LOCAL_CA_GUID.put(&mut p, u64::MAX).unwrap();
        assert_eq!(loc::REP_LOCAL_CA_GUID.get(&p), u64::MAX);
        // Short buffers read zeros and take no writes.
        assert_eq!(loc::REQ_LOCAL_QPN.get(&[0xff; 33]), 0xff_0000);
        let mut short = [0u8; 2];
        loc::REQ_LOCAL_QPN.put(&mut short, 0xff_ffff).unwrap();
        assert_eq!(short, [0, 0]);
    }

    #[test]
    fn round_trips() {
        for m in samples() {
            let mut p = [0u8; CM_PAYLOAD_LEN];
            m.write(&mut p).unwrap();
            assert_eq!(CmMessage::parse(m.attr_id(), &p), Ok(m));
        }
        // The typed entry points agree with the enum.
        let mut p = [0u8; CM_PAYLOAD_LEN];
        sample_req().write(&mut p).unwrap();
        assert_eq!(Req::parse(&p), Ok(sample_req()));
        sample_rep().write(&mut p).unwrap();
        assert_eq!(Rep::parse(&p), Ok(sample_rep()));
        sample_rej().write(&mut p).unwrap();
        assert_eq!(Rej::parse(&p), Ok(sample_rej()));
        sample_mra().write(&mut p).unwrap();
        assert_eq!(Mra::parse(&p), Ok(sample_mra()));
        sample_rtu().write(&mut p).unwrap();
        assert_eq!(Rtu::parse(&p), Ok(sample_rtu()));
        sample_dreq().write(&mut p).unwrap();
        assert_eq!(Dreq::parse(&p), Ok(sample_dreq()));
        sample_drep().write(&mut p).unwrap();
        assert_eq!(Drep::parse(&p), Ok(sample_drep()));
    }

    #[test]
    fn sample_values_are_distinct_and_non_zero() {
        // Every scalar of the REQ sample differs from every other, so a
        // field read from the wrong place cannot go unnoticed.
        let r = sample_req();
        let mut v = [
            r.local_comm_id as u64,
            r.vendor_id as u64,
            r.service_id,
            r.local_ca_guid,
            r.local_qkey as u64,
            r.local_qpn as u64,
            r.responder_resources as u64,
            r.local_eecn as u64,
            r.initiator_depth as u64,
            r.remote_eecn as u64,
            r.remote_cm_response_timeout as u64,
            r.starting_psn as u64,
            r.local_cm_response_timeout as u64,
            r.partition_key as u64,
            r.primary_path.local_lid as u64,
            r.primary_path.remote_lid as u64,
            r.primary_path.flow_label as u64,
            r.primary_path.packet_rate as u64,
            r.primary_path.traffic_class as u64,
            r.primary_path.hop_limit as u64,
            r.alternate_path.local_lid as u64,
            r.alternate_path.remote_lid as u64,
            r.alternate_path.flow_label as u64,
            r.alternate_path.packet_rate as u64,
            r.alternate_path.traffic_class as u64,
            r.alternate_path.local_ack_timeout as u64,
        ];
        v.sort_unstable();
        assert!(v[0] != 0);
        assert!(v.windows(2).all(|w| w[0] != w[1]));
    }

    #[test]
    fn write_errors_leave_out_alone() {
        let mut out = [0x5au8; CM_PAYLOAD_LEN];
        let mut r = sample_req();
        r.local_qpn = 0x0100_0000;
        assert_eq!(
            r.write(&mut out),
            Err(CmError::ValueTooWide {
                field: "REQ local QPN",
                width: 24
            })
        );
        r = sample_req();
        r.primary_path.sl = 16;
        assert!(matches!(
            r.write(&mut out),
            Err(CmError::ValueTooWide {
                field: "REQ primary SL",
                ..
            })
        ));
        let mut rep = sample_rep();
        rep.vendor_id = 0x0100_0000;
        assert!(matches!(
            rep.write(&mut out),
            Err(CmError::ValueTooWide { width: 24, .. })
        ));
        let mut rej = sample_rej();
        rej.reject_info_length = 0x80;
        assert!(rej.write(&mut out).is_err());
        let mut mra = sample_mra();
        mra.service_timeout = 32;
        assert!(mra.write(&mut out).is_err());
        let mut dreq = sample_dreq();
        dreq.remote_qpn_eecn = 0x0100_0000;
        assert!(dreq.write(&mut out).is_err());
        assert_eq!(out, [0x5au8; CM_PAYLOAD_LEN]);

        for m in samples() {
            assert_eq!(
                m.write(&mut [0u8; CM_PAYLOAD_LEN - 1]),
                Err(CmError::TooShort {
                    needed: CM_PAYLOAD_LEN,
                    got: CM_PAYLOAD_LEN - 1
                })
            );
            assert_eq!(
                CmMessage::parse(m.attr_id(), &[0u8; 100]),
                Err(CmError::TooShort {
                    needed: CM_PAYLOAD_LEN,
                    got: 100
                })
            );
        }
    }

    #[test]
    fn longer_buffers() {
        // parse reads and write writes exactly the first 232 bytes.
        let mut out = [0xeeu8; 300];
        sample_rtu().write(&mut out).unwrap();
        assert!(out[CM_PAYLOAD_LEN..].iter().all(|b| *b == 0xee));
        assert_eq!(Rtu::parse(&out), Ok(sample_rtu()));
    }

    #[test]
    fn whole_mads() {
        for m in samples() {
            let mut mad = [0u8; MAD_SIZE];
            m.write_mad(0x0000_0001_2345_6789, 7, &mut mad).unwrap();
            assert_eq!(&mad[..4], &[1, 0x07, 2, 0x03]);
            assert_eq!(&mad[16..18], &m.attr_id().to_be_bytes());
            assert_eq!(&mad[20..24], &[0, 0, 0, 7]);
            let (h, back) = CmMessage::parse_mad(&mad).unwrap();
            assert_eq!(back, m);
            assert_eq!(h, MadHeader::cm(m.attr_id(), 0x0000_0001_2345_6789, 7));
        }
        let mut mad = [0u8; MAD_SIZE];
        CmMessage::Rtu(sample_rtu())
            .write_mad(1, 0, &mut mad)
            .unwrap();
        mad[1] = mad::CLASS_SUBN_ADM;
        assert_eq!(
            CmMessage::parse_mad(&mad),
            Err(CmError::Mad(MadError::WrongClass {
                expected: mad::CLASS_CM,
                got: mad::CLASS_SUBN_ADM
            }))
        );
        mad[1] = mad::CLASS_CM;
        mad[2] = 1;
        assert!(matches!(
            CmMessage::parse_mad(&mad),
            Err(CmError::Mad(MadError::BadClassVersion { .. }))
        ));
        mad[2] = 2;
        for id in [
            mad::ATTR_CLASS_PORT_INFO,
            mad::CM_ATTR_SIDR_REQ,
            mad::CM_ATTR_SIDR_REP,
            mad::CM_ATTR_LAP,
            mad::CM_ATTR_APR,
        ] {
            mad[16..18].copy_from_slice(&id.to_be_bytes());
            assert_eq!(
                CmMessage::parse_mad(&mad),
                Err(CmError::UnknownAttribute(id))
            );
        }
        assert!(matches!(
            CmMessage::parse_mad(&mad[..255]),
            Err(CmError::Mad(MadError::TooShort { .. }))
        ));
        assert!(matches!(
            CmMessage::Rtu(sample_rtu()).write_mad(1, 0, &mut [0u8; 255]),
            Err(CmError::TooShort { .. })
        ));
    }

    #[test]
    fn attribute_ids() {
        let ids = samples().map(|m| m.attr_id());
        assert_eq!(ids, [0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16]);
    }

    #[test]
    fn helpers() {
        let r = sample_req();
        assert_eq!(r.qp_type(), Some(QpType::Uc));
        let mut x = r;
        x.transport_service_type = TRANSPORT_RC;
        assert_eq!(x.qp_type(), Some(QpType::Rc));
        x.transport_service_type = TRANSPORT_RD;
        assert_eq!(x.qp_type(), None);
        x.transport_service_type = TRANSPORT_EXTENDED;
        assert_eq!(x.qp_type(), None);
        x.extended_transport_type = EXT_TRANSPORT_XRC;
        assert_eq!(x.qp_type(), Some(QpType::XrcTgt));
        assert_eq!(r.mtu(), Some(Mtu::Mtu1024));
        x.path_mtu = 0;
        assert_eq!(x.mtu(), None);

        let rej = sample_rej();
        assert_eq!(rej.rejected(), Some(MsgResponse::Rep));
        assert_eq!(rej.reason_code(), Some(RejReason::ConsumerDefined));
        assert_eq!(rej.ari_bytes(), &rej.ari.0[..16]);
        let mut long = rej;
        long.reject_info_length = 100;
        assert_eq!(long.ari_bytes().len(), REJ_ARI_LEN);
        long.message_rejected = 3;
        assert_eq!(long.rejected(), None);
        assert_eq!(sample_mra().mraed(), Some(MsgResponse::Other));

        assert_eq!(RejReason::from_raw(8), Some(RejReason::InvalidServiceId));
        assert_eq!(RejReason::from_raw(10), Some(RejReason::StaleConn));
        assert_eq!(RejReason::from_raw(12), Some(RejReason::InvalidGid));
        assert_eq!(RejReason::from_raw(28), Some(RejReason::ConsumerDefined));
        assert_eq!(RejReason::from_raw(34), None);
        assert_eq!(RejReason::from_raw(0), None);
        for r in RejReason::ALL {
            assert_eq!(RejReason::from_raw(r as u16), Some(r));
        }
        assert!(RejReason::ALL
            .windows(2)
            .all(|w| (w[0] as u16) < (w[1] as u16)));

        let pd = Bytes::<REQ_PRIVATE_DATA_LEN>::from_slice(&[1, 2, 3]).unwrap();
        assert_eq!(&pd.0[..4], &[1, 2, 3, 0]);
        assert_eq!(pd.as_ref().len(), 92);
        assert_eq!(Bytes::<92>::LEN, 92);
        assert_eq!(
            Bytes::<4>::from_slice(&[0; 5]),
            Err(CmError::TooLong { max: 4, got: 5 })
        );
        assert_eq!(Bytes::<4>::default(), Bytes::zeroed());
        assert_eq!(Bytes::<4>::from_slice(&[9; 4]).unwrap().as_array(), &[9; 4]);
    }

    #[test]
    fn cma_header() {
        let h = CmaHeader::ipv4(0xc000, [10, 0, 0, 1], [10, 0, 0, 2]);
        let mut b = [0xffu8; CMA_HDR_LEN];
        h.write(&mut b).unwrap();
        let mut want = [0u8; CMA_HDR_LEN];
        want[1] = 0x40;
        want[2] = 0xc0;
        want[3] = 0x00;
        want[16..20].copy_from_slice(&[10, 0, 0, 1]);
        want[32..36].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(b, want);
        assert_eq!(CmaHeader::parse(&b), Ok(h));
        assert_eq!(h.src_ipv4(), Some([10, 0, 0, 1]));
        assert_eq!(h.dst_ipv4(), Some([10, 0, 0, 2]));

        let src6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let dst6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
        let h6 = CmaHeader::ipv6(18515, src6, dst6);
        h6.write(&mut b).unwrap();
        assert_eq!(&b[..4], &[0, 0x60, 0x48, 0x53]);
        assert_eq!(&b[4..20], &src6);
        assert_eq!(&b[20..36], &dst6);
        assert_eq!(CmaHeader::parse(&b), Ok(h6));
        assert_eq!(h6.src_ipv4(), None);

        // The low nibble of byte 1 is ignored, as the C rdma_cm ignores it.
        b[1] = 0x6f;
        assert_eq!(CmaHeader::parse(&b), Ok(h6));
        b[1] = 0x50;
        assert_eq!(CmaHeader::parse(&b), Err(CmError::BadIpVersion(5)));
        b[1] = 0x40;
        b[0] = 1;
        assert_eq!(CmaHeader::parse(&b), Err(CmError::BadCmaVersion(1)));
        assert!(matches!(
            CmaHeader::parse(&b[..35]),
            Err(CmError::TooShort {
                needed: 36,
                got: 35
            })
        ));
        let mut out = [0x11u8; 40];
        let bad = CmaHeader { ip_version: 5, ..h };
        assert_eq!(bad.write(&mut out), Err(CmError::BadIpVersion(5)));
        assert_eq!(out, [0x11u8; 40]);
        assert!(h.write(&mut [0u8; 35]).is_err());

        // Carried in a REQ.
        let mut req = sample_req();
        h.write(&mut req.private_data.0).unwrap();
        assert_eq!(req.cma_header(), Ok(h));
    }

    #[test]
    fn service_ids() {
        assert_eq!(tcp_service_id(4791), 0x0000_0000_0106_12b7);
        assert_eq!(tcp_service_id(0), RDMA_IB_IP_PS_TCP);
        assert_eq!(service_id_port(0x0000_0000_0106_12b7), 4791);
        assert_eq!(
            service_id_port_space(tcp_service_id(65535)),
            RDMA_IB_IP_PS_TCP
        );
        assert_eq!(
            service_id_port_space(0x0000_0000_0111_0005),
            RDMA_IB_IP_PS_UDP
        );
        assert_eq!(
            service_id_port_space(0x0000_0000_013f_0005),
            RDMA_IB_IP_PS_IB
        );
    }

    /// The bits some field of each message covers: the image of a message
    /// with every field all ones.
    fn used_bits(attr_id: u16) -> [u8; CM_PAYLOAD_LEN] {
        let mut p = [0xffu8; CM_PAYLOAD_LEN];
        let m = CmMessage::parse(attr_id, &p).unwrap();
        m.write(&mut p).unwrap();
        p
    }

    #[test]
    fn reserved_bits() {
        // What the tables of include/rdma/ibta_vol1_c12.h leave unnamed.
        let req = used_bits(Req::ATTR_ID);
        assert_eq!(req[4], 0x00); // reserved before the vendor ID
        assert_eq!(&req[24..28], &[0, 0, 0, 0]);
        assert_eq!(req[90], 0xf0);
        assert_eq!(req[91], 0x3f);
        assert_eq!(req[95], 0xf8);
        assert_eq!(req[139], 0xfc);
        let zeros = req.iter().map(|b| b.count_zeros()).sum::<u32>();
        // Byte 4 and bytes 24-27; in each path 4+2 bits around the packet
        // rate and 3 after subnet local; 3 bits after the primary ACK
        // timeout, 2 after SAP supported.
        assert_eq!(req[94], 0xf8);
        assert_eq!(req[138], 0xf8);
        assert_eq!(zeros, 8 + 32 + 2 * (6 + 3) + 3 + 2);
        let mra = used_bits(Mra::ATTR_ID);
        assert_eq!(&mra[8..10], &[0xc0, 0xf8]);
        let rej = used_bits(Rej::ATTR_ID);
        assert_eq!(&rej[8..10], &[0xc0, 0xfe]);
        let rep = used_bits(Rep::ATTR_ID);
        assert_eq!(&rep[26..28], &[0xff, 0xf0]);
        let dreq = used_bits(Dreq::ATTR_ID);
        assert_eq!(dreq[11], 0);
        for id in [Rtu::ATTR_ID, Drep::ATTR_ID] {
            assert!(used_bits(id).iter().all(|b| *b == 0xff));
        }
    }

    #[test]
    fn never_panics_and_rewrites_what_it_reads() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let ids = [
            Req::ATTR_ID,
            Mra::ATTR_ID,
            Rej::ATTR_ID,
            Rep::ATTR_ID,
            Rtu::ATTR_ID,
            Dreq::ATTR_ID,
            Drep::ATTR_ID,
        ];
        let masks = ids.map(used_bits);
        let mut buf = [0u8; 300];
        for len in 0..300 {
            for round in 0..12 {
                rng.fill(&mut buf);
                if round % 3 == 0 {
                    buf[..24].copy_from_slice(&[
                        1, 7, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0,
                    ]);
                    buf[17] = [0x10, 0x13, 0x16, 0x11, 0x17, 0x18][(round / 3 + len) % 6];
                }
                let input = &buf[..len];
                for (id, mask) in ids.iter().zip(&masks) {
                    match CmMessage::parse(*id, input) {
                        Ok(m) => {
                            assert!(len >= CM_PAYLOAD_LEN);
                            let mut out = [0u8; CM_PAYLOAD_LEN];
                            m.write(&mut out).unwrap();
                            for i in 0..CM_PAYLOAD_LEN {
                                assert_eq!(out[i], input[i] & mask[i]);
                            }
                            assert_eq!(CmMessage::parse(*id, &out), Ok(m));
                        }
                        Err(e) => {
                            assert!(len < CM_PAYLOAD_LEN);
                            assert!(matches!(e, CmError::TooShort { .. }));
                        }
                    }
                }
                let _ = CmMessage::parse(rng.next() as u16, input);
                if let Ok((h, m)) = CmMessage::parse_mad(input) {
                    let mut out = [0u8; MAD_SIZE];
                    m.write_mad(h.tid, h.attr_mod, &mut out).unwrap();
                    assert_eq!(
                        CmMessage::parse_mad(&out),
                        Ok((MadHeader::cm(m.attr_id(), h.tid, h.attr_mod), m))
                    );
                }
                // SIDR REQ and REP: every field is named but the reserved
                // bits of the REQ (bytes 6-7) and the REP (none), so what
                // parses writes back to the input, reserved bits zero.
                if let Ok(r) = SidrReq::parse(input) {
                    let mut out = [0u8; CM_PAYLOAD_LEN];
                    r.write(&mut out).unwrap();
                    assert_eq!(&out[..6], &input[..6]);
                    assert_eq!(&out[6..8], &[0, 0]);
                    assert_eq!(&out[8..], &input[8..CM_PAYLOAD_LEN]);
                    assert_eq!(SidrReq::parse(&out), Ok(r));
                }
                if let Ok(r) = SidrRep::parse(input) {
                    let mut out = [0u8; CM_PAYLOAD_LEN];
                    r.write(&mut out).unwrap();
                    assert_eq!(&out[..], &input[..CM_PAYLOAD_LEN]);
                }
                if let Ok((h, r)) = SidrRep::parse_mad(input) {
                    let mut out = [0u8; MAD_SIZE];
                    r.write_mad(h.tid, h.attr_mod, &mut out).unwrap();
                    assert_eq!(SidrRep::parse_mad(&out), Ok((h, r)));
                }
                if let Ok((h, r)) = SidrReq::parse_mad(input) {
                    let mut out = [0u8; MAD_SIZE];
                    r.write_mad(h.tid, &mut out).unwrap();
                    assert_eq!(SidrReq::parse_mad(&out).map(|x| x.1), Ok(r));
                }
                if let Ok(h) = CmaHeader::parse(input) {
                    let mut out = [0u8; CMA_HDR_LEN];
                    h.write(&mut out).unwrap();
                    assert_eq!(CmaHeader::parse(&out), Ok(h));
                }
            }
        }
    }
}
