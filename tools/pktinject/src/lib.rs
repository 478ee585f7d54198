// SPDX-License-Identifier: GPL-2.0

//! pktinject: hostile RoCE v2 packets, crafted with our codec (`rxe-wire`).
//!
//! The library makes the packets; `src/main.rs` sends each one as the
//! payload of one UDP datagram, from an ordinary UDP socket, to port 4791
//! of a device's address. Each packet is made as the whole frame that the
//! receiver's UDP tunnel hands to its RoCE code (IP header, UDP header,
//! BTH .. ICRC), so that the ICRC is computed over exactly the bytes the
//! receiver computes it over. Only the UDP payload is sent; the kernel
//! writes IP and UDP headers that agree with ours in every field the ICRC
//! covers (`rxe_wire::icrc` masks the others):
//!
//! - IPv4: 20 bytes without options, identification 0 and DF (what Linux
//!   writes for an unconnected UDP socket with `IP_PMTUDISC_DO`), total
//!   length, protocol 17 and the two addresses. TOS, TTL and header
//!   checksum are masked; we write 0, 64 and the right checksum so that
//!   the frame also parses on the host.
//! - IPv6: 40 bytes, payload length, next header 17 and the addresses;
//!   traffic class, flow label and hop limit are masked. A datagram that
//!   Linux fragments is reassembled, fragment header removed, before the
//!   tunnel sees it, so IPv6 needs nothing more.
//! - UDP: the socket's bound source port, 4791 and the length; the
//!   checksum is masked.
//!
//! [`Kind`] lists what can be sent, [`Injector`] makes one packet after
//! another into one reused buffer, and [`parse_args`] reads the command
//! line. The QP1 kinds (`mad-*`, `cm-*`) carry MADs to QP1 in UD SEND
//! ONLY packets with a good ICRC; their payloads are made in [`qp1`].

#![forbid(unsafe_code)]

use std::fmt;
use std::net::IpAddr;

pub mod qp1;

use rdma_spec::mad::MAD_SIZE;

use rxe_wire::headers::{
    Aeth, AtomicAckEth, AtomicEth, Bth, Deth, ExtHeaders, Feth, Ieth, ImmDt, Rdeth, Reth,
};
use rxe_wire::icrc::{self, crc32_le, ICRC_SEED};
use rxe_wire::opcode::{Class, ExtHeader, Opcode, BTH_LEN, ICRC_LEN, MAX_HEADER_LEN};
use rxe_wire::packet::{
    pad_for, IPPROTO_UDP, IPV4_HEADER_LEN, IPV6_HEADER_LEN, ROCE_V2_UDP_PORT, UDP_HEADER_LEN,
};

/// The largest InfiniBand path MTU, hence the largest payload of a packet.
pub const IB_MAX_MTU: usize = 4096;
/// The payload length of a `too-long` packet when `--len` is not larger
/// than [`IB_MAX_MTU`]: the next multiple of four above it.
pub const TOO_LONG_PAYLOAD: usize = IB_MAX_MTU + 4;
/// Random bytes (in the `random` mix) are shorter than this.
pub const RANDOM_MAX_LEN: u64 = 512;
/// The P_Key of a `bad-pkey` packet when `--pkey` is not given.
pub const BAD_PKEY: u16 = 0x1234;
/// The P_Key of every other packet when `--pkey` is not given.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// The source QP in the DETH of a `bad-qkey` packet.
pub const UD_SRC_QPN: u32 = 1234;
/// The TTL and hop limit written into our copy of the IP header (masked
/// by the ICRC; the kernel writes its own).
pub const TTL: u8 = 64;
/// A buffer of this size holds any frame [`Injector`] makes.
pub const FRAME_MAX: usize = IPV6_HEADER_LEN + 0xffff;

const MASK24: u32 = 0x00ff_ffff;
const IPV4_DF: u16 = 0x4000;

/// What to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A well-formed RC SEND ONLY whose ICRC is wrong.
    BadIcrc,
    /// A packet cut inside its extension headers; good ICRC over what is
    /// there.
    Truncated,
    /// Fewer bytes than a BTH and an ICRC.
    Short,
    /// A BTH opcode that no transport defines; good ICRC.
    UnknownOpcode,
    /// A pad count that does not fit the payload; good ICRC.
    BadPad,
    /// A SEND ONLY with a payload above the largest MTU; good ICRC.
    TooLong,
    /// An RC SEND ONLY with another P_Key.
    BadPkey,
    /// A UD SEND ONLY with a DETH Q_Key.
    BadQkey,
    /// An RC SEND ONLY to a QPN (meant to be one no QP has).
    WrongQpn,
    /// An RC RDMA WRITE ONLY with a RETH (meant with a bad R_Key).
    BadRkeyWrite,
    /// The same packet as `BadRkeyWrite`, meant with a valid R_Key and a
    /// range outside the MR.
    OobWrite,
    /// An RC RDMA READ REQUEST with a RETH.
    BadRead,
    /// On the command line: a pseudo-random mix of every other kind and of
    /// random bytes. As the kind of one crafted packet: random bytes.
    Random,
    /// One RC request packet of the opcode `--op` (a first, middle, last
    /// or only packet of a SEND or WRITE, an atomic, a READ), its headers
    /// filled from the command line, with the ICRC right: well-formed but
    /// out of place (a middle packet with no message begun, an atomic at
    /// a misaligned address) at a live QP's expected PSN.
    RcOp,
    /// QP1: a MAD shorter than 256 bytes (a DREQ cut short).
    MadShort,
    /// QP1: a datagram longer than a MAD (a DREQ and more bytes).
    MadLong,
    /// QP1: a MAD whose base version is not 1.
    MadBadVersion,
    /// QP1: a GET or SET of a management class (or class version) that
    /// no agent takes.
    MadUnknownClass,
    /// QP1: a CM SEND with an attribute ID no CM message has.
    CmUnknownAttr,
    /// QP1: CM messages (REQ to APR, SIDR included) with unknown comm IDs
    /// and private data of every length.
    CmMsg,
    /// QP1: one CM message (`--msg`) with the comm IDs, QPN and other
    /// fields the command line gives ([`CmAt`]): well-formed but wrong
    /// messages aimed at live connections.
    CmAt,
}

impl Kind {
    /// Every kind, in the order of the usage text.
    pub const ALL: [Kind; 21] = [
        Kind::BadIcrc,
        Kind::Truncated,
        Kind::Short,
        Kind::UnknownOpcode,
        Kind::BadPad,
        Kind::TooLong,
        Kind::BadPkey,
        Kind::BadQkey,
        Kind::WrongQpn,
        Kind::BadRkeyWrite,
        Kind::OobWrite,
        Kind::BadRead,
        Kind::Random,
        Kind::RcOp,
        Kind::MadShort,
        Kind::MadLong,
        Kind::MadBadVersion,
        Kind::MadUnknownClass,
        Kind::CmUnknownAttr,
        Kind::CmMsg,
        Kind::CmAt,
    ];

    /// The kinds that go to QP1 (default `--qpn` 1 and `--qkey`
    /// [`qp1::QP1_QKEY`]).
    pub const fn is_qp1(self) -> bool {
        matches!(
            self,
            Kind::MadShort
                | Kind::MadLong
                | Kind::MadBadVersion
                | Kind::MadUnknownClass
                | Kind::CmUnknownAttr
                | Kind::CmMsg
                | Kind::CmAt
        )
    }

    /// What `random` picks from, uniformly: every shape once (`oob-write`
    /// is `bad-rkey-write`'s shape) and `Random` for random bytes.
    pub const MIX: [Kind; 12] = [
        Kind::BadIcrc,
        Kind::Truncated,
        Kind::Short,
        Kind::UnknownOpcode,
        Kind::BadPad,
        Kind::TooLong,
        Kind::BadPkey,
        Kind::BadQkey,
        Kind::WrongQpn,
        Kind::BadRkeyWrite,
        Kind::BadRead,
        Kind::Random,
    ];

    /// The name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::BadIcrc => "bad-icrc",
            Kind::Truncated => "truncated",
            Kind::Short => "short",
            Kind::UnknownOpcode => "unknown-opcode",
            Kind::BadPad => "bad-pad",
            Kind::TooLong => "too-long",
            Kind::BadPkey => "bad-pkey",
            Kind::BadQkey => "bad-qkey",
            Kind::WrongQpn => "wrong-qpn",
            Kind::BadRkeyWrite => "bad-rkey-write",
            Kind::OobWrite => "oob-write",
            Kind::BadRead => "bad-read",
            Kind::Random => "random",
            Kind::RcOp => "rc-op",
            Kind::MadShort => "mad-short",
            Kind::MadLong => "mad-long",
            Kind::MadBadVersion => "mad-bad-version",
            Kind::MadUnknownClass => "mad-unknown-class",
            Kind::CmUnknownAttr => "cm-unknown-attr",
            Kind::CmMsg => "cm-msg",
            Kind::CmAt => "cm-at",
        }
    }

    /// The kind named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The header fields and lengths the command line sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Destination QPN (24 bits).
    pub qpn: u32,
    /// PSN (24 bits).
    pub psn: u32,
    /// BTH P_Key.
    pub pkey: u16,
    /// DETH Q_Key.
    pub qkey: u32,
    /// RETH R_Key.
    pub rkey: u32,
    /// RETH virtual address.
    pub va: u64,
    /// Payload length, and the RETH DMA length unless `dma_len` says.
    pub len: usize,
    /// The RETH DMA length, when not `len` (a READ request asks for more
    /// than a datagram holds).
    pub dma_len: Option<u32>,
    /// Added to the PSN from one packet to the next (not `random`).
    pub psn_step: u32,
    /// The message of `cm-at`.
    pub cm: qp1::CmAt,
    /// The opcode of `rc-op`.
    pub op: Opcode,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            qpn: 0x11,
            psn: 0,
            pkey: DEFAULT_PKEY,
            qkey: 0,
            rkey: 0,
            va: 0,
            len: 64,
            dma_len: None,
            psn_step: 0,
            cm: qp1::CmAt::default(),
            op: Opcode::RcSendOnly,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Addrs {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

/// The addresses and source port of the datagrams, which the ICRC covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    addrs: Addrs,
    sport: u16,
}

/// Why a [`Flow`] cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowError {
    /// One address is IPv4 and the other IPv6.
    MixedFamilies,
    /// The source is the unspecified address: the kernel would pick one,
    /// and the ICRC would not cover it.
    UnspecifiedSource,
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlowError::MixedFamilies => "--src and --dst must both be IPv4 or both IPv6",
            FlowError::UnspecifiedSource => {
                "--src must be an address of this host, not 0.0.0.0 or ::"
            }
        })
    }
}

impl Flow {
    /// A flow from `src` port `sport` to `dst` port 4791.
    pub fn new(src: IpAddr, dst: IpAddr, sport: u16) -> Result<Flow, FlowError> {
        if src.is_unspecified() {
            return Err(FlowError::UnspecifiedSource);
        }
        let addrs = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Addrs::V4(s.octets(), d.octets()),
            (IpAddr::V6(s), IpAddr::V6(d)) => Addrs::V6(s.octets(), d.octets()),
            _ => return Err(FlowError::MixedFamilies),
        };
        Ok(Flow { addrs, sport })
    }

    /// The UDP source port.
    pub const fn sport(&self) -> u16 {
        self.sport
    }

    /// Whether the flow is IPv4.
    pub const fn is_ipv4(&self) -> bool {
        matches!(self.addrs, Addrs::V4(..))
    }

    /// Length of the IP header.
    pub const fn ip_header_len(&self) -> usize {
        if self.is_ipv4() {
            IPV4_HEADER_LEN
        } else {
            IPV6_HEADER_LEN
        }
    }

    /// Where the UDP payload (the BTH) starts in a frame.
    pub const fn transport_offset(&self) -> usize {
        self.ip_header_len() + UDP_HEADER_LEN
    }

    /// The largest UDP payload one datagram carries: the IPv4 total length
    /// or the UDP length is a 16-bit field.
    pub const fn max_transport(&self) -> usize {
        if self.is_ipv4() {
            0xffff - IPV4_HEADER_LEN - UDP_HEADER_LEN
        } else {
            0xffff - UDP_HEADER_LEN
        }
    }

    /// The largest payload (a multiple of four) of a SEND ONLY.
    pub const fn max_payload(&self) -> usize {
        (self.max_transport() - BTH_LEN - ICRC_LEN) & !3
    }
}

/// Why a packet could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CraftError {
    /// The packet does not fit one datagram (`--len` too large).
    TooLong {
        /// Length of the UDP payload it would need.
        len: usize,
        /// The most one datagram carries.
        max: usize,
    },
    /// The frame buffer is smaller than [`FRAME_MAX`].
    Buffer,
}

impl fmt::Display for CraftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CraftError::TooLong { len, max } => write!(
                f,
                "the packet would be {len} bytes, more than one datagram carries ({max})"
            ),
            CraftError::Buffer => f.write_str("frame buffer too small"),
        }
    }
}

/// A small deterministic PRNG (SplitMix64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub const fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// The ICRC of `datagram` (IP header to ICRC field, whose contents are
/// ignored) as a receiver computes it: [`icrc::compute`] where it applies,
/// else [`icrc_lenient`].
pub fn icrc_of(datagram: &[u8]) -> u32 {
    icrc::compute(&crc32_le, datagram).unwrap_or_else(|_| icrc_lenient(datagram))
}

/// The ICRC over whatever `datagram` holds, for packets too short for
/// [`icrc::compute`] (headers cut off): the same masks on the IP, UDP and
/// BTH bytes that are there, then every further byte up to the ICRC field.
/// For a complete packet this is [`icrc::compute`]'s value (except for
/// rxe's three payload-less opcodes that cover their header twice).
pub fn icrc_lenient(datagram: &[u8]) -> u32 {
    let covered = datagram
        .get(..datagram.len().saturating_sub(ICRC_LEN))
        .unwrap_or(&[]);
    let v4 = covered.first().is_some_and(|b| b >> 4 == 4);
    let ip_len = if v4 { IPV4_HEADER_LEN } else { IPV6_HEADER_LEN };
    let fixed = covered.len().min(ip_len + UDP_HEADER_LEN + BTH_LEN);
    let mut pseudo = [0u8; IPV6_HEADER_LEN + UDP_HEADER_LEN + BTH_LEN];
    for (d, s) in pseudo.iter_mut().zip(covered) {
        *d = *s;
    }
    // (offset, bits set to one): the fields the ICRC masks.
    let ip_masks: &[(usize, u8)] = if v4 {
        &[(1, 0xff), (8, 0xff), (10, 0xff), (11, 0xff)]
    } else {
        &[(0, 0x0f), (1, 0xff), (2, 0xff), (3, 0xff), (7, 0xff)]
    };
    let udp = ip_len;
    let bth = ip_len + UDP_HEADER_LEN;
    let more = [(udp + 6, 0xff), (udp + 7, 0xff), (bth + 4, 0xff)];
    for &(at, bits) in ip_masks.iter().chain(more.iter()) {
        if at < fixed {
            if let Some(b) = pseudo.get_mut(at) {
                *b |= bits;
            }
        }
    }
    let c = crc32_le(ICRC_SEED, pseudo.get(..fixed).unwrap_or(&[]));
    !crc32_le(c, covered.get(fixed..).unwrap_or(&[]))
}

/// Writes the IP and UDP headers of `flow` for a UDP payload of
/// `transport_len` bytes (already in place after them) to the front of
/// `frame`; returns the frame's length.
pub fn seal(flow: &Flow, frame: &mut [u8], transport_len: usize) -> Result<usize, CraftError> {
    let max = flow.max_transport();
    if transport_len > max {
        return Err(CraftError::TooLong {
            len: transport_len,
            max,
        });
    }
    let total = flow.transport_offset() + transport_len;
    let frame = frame.get_mut(..total).ok_or(CraftError::Buffer)?;
    let udp_len = (UDP_HEADER_LEN + transport_len) as u16;
    let ip_len = flow.ip_header_len();
    match flow.addrs {
        Addrs::V4(src, dst) => {
            let mut h = [0u8; IPV4_HEADER_LEN];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            // Identification 0 (bytes 4 and 5), DF, fragment offset 0.
            h[6..8].copy_from_slice(&IPV4_DF.to_be_bytes());
            h[8] = TTL;
            h[9] = IPPROTO_UDP;
            h[12..16].copy_from_slice(&src);
            h[16..20].copy_from_slice(&dst);
            let sum = ipv4_checksum(&h);
            h[10..12].copy_from_slice(&sum.to_be_bytes());
            frame[..IPV4_HEADER_LEN].copy_from_slice(&h);
        }
        Addrs::V6(src, dst) => {
            let mut h = [0u8; IPV6_HEADER_LEN];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&udp_len.to_be_bytes());
            h[6] = IPPROTO_UDP;
            h[7] = TTL;
            h[8..24].copy_from_slice(&src);
            h[24..40].copy_from_slice(&dst);
            frame[..IPV6_HEADER_LEN].copy_from_slice(&h);
        }
    }
    let mut u = [0u8; UDP_HEADER_LEN];
    u[0..2].copy_from_slice(&flow.sport.to_be_bytes());
    u[2..4].copy_from_slice(&ROCE_V2_UDP_PORT.to_be_bytes());
    u[4..6].copy_from_slice(&udp_len.to_be_bytes());
    // Checksum 0: masked by the ICRC, and the kernel computes its own.
    frame[ip_len..ip_len + UDP_HEADER_LEN].copy_from_slice(&u);
    Ok(total)
}

/// The header checksum of an IPv4 header whose checksum field is zero.
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What goes into the ICRC field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IcrcMode {
    /// The right ICRC ([`icrc_of`]).
    Good,
    /// The right ICRC with these bits flipped.
    Flipped(u32),
}

/// The transport part of a packet: BTH as given (its pad count is not
/// recomputed), extension header bytes, payload and `pad` zero bytes.
struct Parts<'a> {
    bth: Bth,
    ext: &'a [u8],
    payload: &'a [u8],
    pad: usize,
}

/// Writes `parts`, an ICRC as `mode` says and the IP and UDP headers into
/// `frame`; returns the frame's length.
fn assemble(
    flow: &Flow,
    frame: &mut [u8],
    parts: &Parts<'_>,
    mode: IcrcMode,
) -> Result<usize, CraftError> {
    let tlen = BTH_LEN + parts.ext.len() + parts.payload.len() + parts.pad + ICRC_LEN;
    let max = flow.max_transport();
    if tlen > max {
        return Err(CraftError::TooLong { len: tlen, max });
    }
    let off = flow.transport_offset();
    let t = frame.get_mut(off..off + tlen).ok_or(CraftError::Buffer)?;
    parts.bth.write(t).map_err(|_| CraftError::Buffer)?;
    let (ext, rest) = t[BTH_LEN..].split_at_mut(parts.ext.len());
    ext.copy_from_slice(parts.ext);
    let (payload, rest) = rest.split_at_mut(parts.payload.len());
    payload.copy_from_slice(parts.payload);
    rest.fill(0);
    let len = seal(flow, frame, tlen)?;
    let datagram = frame.get_mut(..len).ok_or(CraftError::Buffer)?;
    let icrc = match mode {
        IcrcMode::Good => icrc_of(datagram),
        IcrcMode::Flipped(bits) => icrc_of(datagram) ^ bits,
    };
    datagram[len - ICRC_LEN..].copy_from_slice(&icrc.to_le_bytes());
    Ok(len)
}

/// A BTH as rxe sends it for `op`, with `p`'s QPN, PSN and P_Key.
fn bth(op: Opcode, p: &Params, ack_req: bool) -> Bth {
    let mut b = Bth::new(op, p.qpn, p.psn);
    b.pkey = p.pkey;
    b.ack_req = ack_req;
    b
}

/// The extension headers of `op`, filled from `p`; written to `buf`, and
/// their length returned.
fn ext_bytes(op: Opcode, p: &Params, buf: &mut [u8; MAX_HEADER_LEN]) -> Result<usize, CraftError> {
    let mut ext = ExtHeaders::default();
    for h in op.info().headers.iter() {
        match h {
            ExtHeader::Rdeth => ext.rdeth = Some(Rdeth { resv8: 0, een: 1 }),
            ExtHeader::Deth => {
                ext.deth = Some(Deth {
                    qkey: p.qkey,
                    resv8: 0,
                    src_qpn: UD_SRC_QPN,
                })
            }
            ExtHeader::Feth => ext.feth = Some(Feth::new(0, 1)),
            ExtHeader::Reth => {
                ext.reth = Some(Reth {
                    va: p.va,
                    rkey: p.rkey,
                    len: p.dma_len.unwrap_or(p.len as u32),
                })
            }
            ExtHeader::Aeth => {
                ext.aeth = Some(Aeth {
                    syndrome: 0,
                    msn: p.psn & MASK24,
                })
            }
            ExtHeader::AtomicEth => {
                ext.atomic_eth = Some(AtomicEth {
                    va: p.va,
                    rkey: p.rkey,
                    swap_add: 1,
                    compare: 0,
                })
            }
            ExtHeader::AtomicAckEth => ext.atomic_ack_eth = Some(AtomicAckEth { orig: 0 }),
            ExtHeader::ImmDt => ext.immdt = Some(ImmDt { imm: 0x1234_5678 }),
            ExtHeader::Ieth => ext.ieth = Some(Ieth { rkey: p.rkey }),
        }
    }
    ext.write(buf).map_err(|_| CraftError::Buffer)
}

/// Opcodes with extension headers that `truncated` cuts, in turn.
const TRUNCATED_OPCODES: [Opcode; 7] = [
    Opcode::RcRdmaWriteFirst,
    Opcode::RcRdmaReadRequest,
    Opcode::UdSendOnly,
    Opcode::RcCompareSwap,
    Opcode::RcRdmaWriteOnlyWithImmediate,
    Opcode::RcSendOnlyWithImmediate,
    Opcode::RcAcknowledge,
];

/// Opcode bytes that no transport defines, which `unknown-opcode` sends in
/// turn: RC 0x1f first, then other holes of RC, UC, RD and UD, and the
/// reserved (0x80 and up, CNP included) and manufacturer transports.
pub const UNKNOWN_OPCODES: [u8; 18] = [
    0x1f, 0x15, 0x18, 0x19, 0x1a, 0x1b, 0x1e, 0x2c, 0x3f, 0x55, 0x60, 0x63, 0x66, 0x7f, 0x80, 0x81,
    0xc0, 0xff,
];

/// A byte of the payload pattern (never zero, so a pad count that takes
/// payload bytes as pad is always seen).
const fn pattern_byte(i: usize) -> u8 {
    (i % 251) as u8 + 1
}

/// Makes packet number `variant` of `kind` (variants differ where a kind
/// has several forms; see the usage text) into `frame`, whose UDP payload
/// is `frame[flow.transport_offset()..len]`; returns `len`. `pattern` is
/// the payload source (see [`Injector`]). `Kind::Random` makes random
/// bytes from a generator seeded with `variant`.
fn craft(
    flow: &Flow,
    kind: Kind,
    p: &Params,
    variant: u64,
    pattern: &[u8],
    frame: &mut [u8],
) -> Result<usize, CraftError> {
    let payload_of = |len: usize| {
        pattern.get(..len).ok_or(CraftError::TooLong {
            len,
            max: flow.max_payload(),
        })
    };
    let mut ext = [0u8; MAX_HEADER_LEN];
    // A packet with the pad its payload calls for.
    let padded = |mut bth: Bth, ext: &[u8], payload: &[u8], frame: &mut [u8], mode| {
        bth.pad = pad_for(payload.len());
        let parts = Parts {
            bth,
            ext,
            payload,
            pad: usize::from(bth.pad),
        };
        assemble(flow, frame, &parts, mode)
    };
    let good = |bth, ext: &[u8], payload: &[u8], frame: &mut [u8]| {
        padded(bth, ext, payload, frame, IcrcMode::Good)
    };
    match kind {
        Kind::BadIcrc => {
            let b = bth(Opcode::RcSendOnly, p, true);
            let bits = 1 << (variant % 32);
            padded(b, &[], payload_of(p.len)?, frame, IcrcMode::Flipped(bits))
        }
        Kind::Truncated => {
            let n = TRUNCATED_OPCODES.len() as u64;
            let op = TRUNCATED_OPCODES[(variant % n) as usize];
            let ext_len = ext_bytes(op, p, &mut ext)?;
            // The first one is WRITE FIRST with half of its RETH.
            let cut = ((ext_len as u64 / 2 + variant / n) % ext_len as u64) as usize;
            let parts = Parts {
                bth: bth(op, p, true),
                ext: &ext[..cut],
                payload: &[],
                pad: 0,
            };
            assemble(flow, frame, &parts, IcrcMode::Good)
        }
        Kind::Short => {
            let n = 15 - (variant % 16) as usize;
            let mut b = [0u8; BTH_LEN];
            bth(Opcode::RcSendOnly, p, true)
                .write(&mut b)
                .map_err(|_| CraftError::Buffer)?;
            let off = flow.transport_offset();
            let t = frame.get_mut(off..off + n).ok_or(CraftError::Buffer)?;
            for (i, d) in t.iter_mut().enumerate() {
                *d = b.get(i).copied().unwrap_or(0);
            }
            seal(flow, frame, n)
        }
        Kind::UnknownOpcode => {
            let n = UNKNOWN_OPCODES.len() as u64;
            let mut b = bth(Opcode::RcSendOnly, p, true);
            b.opcode = UNKNOWN_OPCODES[(variant % n) as usize];
            good(b, &[], payload_of(p.len)?, frame)
        }
        Kind::BadPad => {
            let (op, bth_pad, payload_len, pad) = match variant % 4 {
                // No payload but a pad of three: a negative payload length.
                0 => (Opcode::RcSendOnly, 3, 0, 0),
                // Three pad bytes claimed, none there: payload bytes would
                // be taken as (non-zero) pad.
                1 => (Opcode::RcSendOnly, 3, p.len.next_multiple_of(4).max(4), 0),
                // Payload and pad not a multiple of four.
                2 => (Opcode::RcSendOnly, 0, p.len | 1, 0),
                // Pad on an opcode that carries no payload.
                _ => (Opcode::RcRdmaReadRequest, 2, 0, 2),
            };
            let ext_len = ext_bytes(op, p, &mut ext)?;
            let mut b = bth(op, p, true);
            b.pad = bth_pad;
            let parts = Parts {
                bth: b,
                ext: &ext[..ext_len],
                payload: payload_of(payload_len)?,
                pad,
            };
            assemble(flow, frame, &parts, IcrcMode::Good)
        }
        Kind::TooLong => {
            let len = if p.len > IB_MAX_MTU {
                p.len
            } else {
                TOO_LONG_PAYLOAD
            };
            let len = len.min(flow.max_payload());
            good(
                bth(Opcode::RcSendOnly, p, true),
                &[],
                payload_of(len)?,
                frame,
            )
        }
        Kind::BadPkey | Kind::WrongQpn => good(
            bth(Opcode::RcSendOnly, p, true),
            &[],
            payload_of(p.len)?,
            frame,
        ),
        Kind::BadQkey => {
            let n = ext_bytes(Opcode::UdSendOnly, p, &mut ext)?;
            let b = bth(Opcode::UdSendOnly, p, false);
            good(b, &ext[..n], payload_of(p.len)?, frame)
        }
        Kind::BadRkeyWrite | Kind::OobWrite => {
            let n = ext_bytes(Opcode::RcRdmaWriteOnly, p, &mut ext)?;
            let b = bth(Opcode::RcRdmaWriteOnly, p, true);
            good(b, &ext[..n], payload_of(p.len)?, frame)
        }
        Kind::BadRead => {
            let n = ext_bytes(Opcode::RcRdmaReadRequest, p, &mut ext)?;
            let b = bth(Opcode::RcRdmaReadRequest, p, true);
            good(b, &ext[..n], &[], frame)
        }
        Kind::Random => random_bytes(flow, p, variant, frame),
        Kind::RcOp => {
            let n = ext_bytes(p.op, p, &mut ext)?;
            let payload = if p.op.info().payload {
                payload_of(p.len)?
            } else {
                &[]
            };
            good(bth(p.op, p, true), &ext[..n], payload, frame)
        }
        Kind::MadShort
        | Kind::MadLong
        | Kind::MadBadVersion
        | Kind::MadUnknownClass
        | Kind::CmUnknownAttr
        | Kind::CmMsg
        | Kind::CmAt => {
            let mut mad = [0u8; MAD_SIZE];
            let len = match kind {
                Kind::MadShort => {
                    qp1::base_mad(variant, &mut mad);
                    qp1::short_len(variant)
                }
                Kind::MadLong => {
                    qp1::base_mad(variant, &mut mad);
                    qp1::long_len(variant)
                }
                Kind::MadBadVersion => {
                    qp1::bad_version_mad(variant, &mut mad);
                    MAD_SIZE
                }
                Kind::MadUnknownClass => {
                    qp1::unknown_class_mad(variant, &mut mad);
                    MAD_SIZE
                }
                Kind::CmUnknownAttr => {
                    qp1::unknown_attr_mad(variant, &mut mad);
                    MAD_SIZE
                }
                Kind::CmAt => {
                    p.cm.mad(variant, &mut mad);
                    MAD_SIZE
                }
                _ => {
                    qp1::cm_msg_mad(variant, &mut mad);
                    MAD_SIZE
                }
            };
            // The MAD, then (mad-long) the pattern after it.
            let mut payload = [0u8; qp1::MAD_LONG_MAX];
            for (i, x) in payload.iter_mut().enumerate() {
                *x = mad.get(i).copied().unwrap_or_else(|| pattern_byte(i));
            }
            // The DETH's source QP is the GSI, where answers go.
            let e = ExtHeaders {
                deth: Some(Deth {
                    qkey: p.qkey,
                    resv8: 0,
                    src_qpn: qp1::QP1_SRC_QPN,
                }),
                ..ExtHeaders::default()
            };
            let n = e.write(&mut ext).map_err(|_| CraftError::Buffer)?;
            let b = bth(Opcode::UdSendOnly, p, false);
            good(b, &ext[..n], &payload[..len], frame)
        }
    }
}

/// Random bytes of a random length below [`RANDOM_MAX_LEN`], with the
/// destination QPN of `p` where a BTH has it. Every other one that is long
/// enough starts with a known opcode and transport version 0 and ends in a
/// good ICRC, so that it gets past those checks.
fn random_bytes(flow: &Flow, p: &Params, seed: u64, frame: &mut [u8]) -> Result<usize, CraftError> {
    let mut rng = Rng::new(seed);
    let n = rng.below(RANDOM_MAX_LEN) as usize;
    let off = flow.transport_offset();
    let t = frame.get_mut(off..off + n).ok_or(CraftError::Buffer)?;
    for chunk in t.chunks_mut(8) {
        let r = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    if n >= 8 {
        t[5..8].copy_from_slice(&p.qpn.to_be_bytes()[1..]);
    }
    let fix = n >= BTH_LEN + ICRC_LEN && rng.next_u64() & 1 == 1;
    if fix {
        let all = Opcode::ALL;
        t[0] = all[rng.below(all.len() as u64) as usize].value();
        t[1] &= 0xf0;
    }
    let len = seal(flow, frame, n)?;
    if fix {
        let datagram = frame.get_mut(..len).ok_or(CraftError::Buffer)?;
        let icrc = icrc_of(datagram);
        datagram[len - ICRC_LEN..].copy_from_slice(&icrc.to_le_bytes());
    }
    Ok(len)
}

/// One packet made by [`Injector::next`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crafted {
    /// The kind of this packet (in the `random` mix, the one picked;
    /// `Random` for random bytes).
    pub kind: Kind,
    /// Length of the frame (IP header to ICRC) in the buffer.
    pub len: usize,
}

/// Makes the packets of one run, one after another, into one buffer.
#[derive(Clone, Debug)]
pub struct Injector {
    flow: Flow,
    kind: Kind,
    params: Params,
    rng: Rng,
    frame: Vec<u8>,
    pattern: Vec<u8>,
    too_long: bool,
}

impl Injector {
    /// An injector of `kind` packets over `flow`; `seed` seeds the
    /// `random` mix.
    pub fn new(flow: Flow, kind: Kind, params: Params, seed: u64) -> Injector {
        Injector {
            flow,
            kind,
            params,
            rng: Rng::new(seed),
            frame: vec![0; FRAME_MAX],
            pattern: (0..0xffff).map(pattern_byte).collect(),
            too_long: true,
        }
    }

    /// Makes packet number `index` (which picks the variant of kinds that
    /// have several; the `random` mix draws from its generator instead).
    pub fn next(&mut self, index: u64) -> Result<Crafted, CraftError> {
        let (kind, params, variant) = if self.kind == Kind::Random {
            self.pick()
        } else {
            let step = (index as u32).wrapping_mul(self.params.psn_step);
            let params = Params {
                psn: self.params.psn.wrapping_add(step) & MASK24,
                ..self.params
            };
            (self.kind, params, index)
        };
        let len = craft(
            &self.flow,
            kind,
            &params,
            variant,
            &self.pattern,
            &mut self.frame,
        )?;
        Ok(Crafted { kind, len })
    }

    /// One draw of the `random` mix: a kind, its parameters (random PSN,
    /// keys, address and length; `--qpn` kept) and its variant.
    fn pick(&mut self) -> (Kind, Params, u64) {
        let rng = &mut self.rng;
        let kind = loop {
            let k = Kind::MIX[rng.below(Kind::MIX.len() as u64) as usize];
            if k != Kind::TooLong || self.too_long {
                break k;
            }
        };
        let mut p = self.params;
        p.psn = rng.next_u64() as u32 & MASK24;
        p.qkey = rng.next_u64() as u32;
        p.rkey = rng.next_u64() as u32;
        p.va = rng.next_u64();
        p.len = rng.below(RANDOM_MAX_LEN + 1) as usize;
        match kind {
            Kind::BadPkey => {
                p.pkey = rng.next_u64() as u16;
                if p.pkey & 0x7fff == 0x7fff {
                    p.pkey = BAD_PKEY;
                }
            }
            Kind::TooLong => p.len = IB_MAX_MTU + 1 + rng.below(256) as usize,
            _ => {}
        }
        (kind, p, rng.next_u64())
    }

    /// Stops the `random` mix from picking `too-long` (when the path MTU
    /// is too small for it to be sent).
    pub fn leave_out_too_long(&mut self) {
        self.too_long = false;
    }

    /// The flow.
    pub const fn flow(&self) -> &Flow {
        &self.flow
    }

    /// The frame of `c` as the receiver sees it (IP header to ICRC).
    pub fn datagram(&self, c: &Crafted) -> &[u8] {
        self.frame.get(..c.len).unwrap_or(&[])
    }

    /// The UDP payload of `c`: what is sent.
    pub fn udp_payload(&self, c: &Crafted) -> &[u8] {
        self.frame
            .get(self.flow.transport_offset()..c.len)
            .unwrap_or(&[])
    }
}

/// The usage text.
pub const USAGE: &str = "\
usage: pktinject --src IP --dst IP --kind KIND [--qpn N] [--psn N] [--pkey N]
                 [--qkey N] [--rkey N] [--va N] [--len N] [--dma-len N]
                 [--count N] [--psn-step N] [--seed N] [--sport N]
                 [--msg M] [--local-id N] [--remote-id N] [--msg-qpn N]
                 [--of M] [--guid N] [--service-id N] [--op N]

Sends --count hostile RoCE v2 packets of KIND from --src (UDP port --sport,
0 for any) to --dst port 4791, one datagram each. Numbers are decimal or
0x-hex; defaults: qpn 0x11, psn 0, pkey 0xffff (0x1234 for bad-pkey), qkey 0,
rkey 0, va 0, len 64, count 1, seed 1. --dma-len sets the RETH length apart
from the payload's (default --len); --psn-step is added to the PSN from one
packet to the next (default 0; not for random).

kinds:
  bad-icrc        RC SEND ONLY, --len bytes, wrong ICRC
  truncated       cut inside its extension headers (RDMA WRITE FIRST in its
                  RETH, then other opcodes and cuts), good ICRC
  short           0 to 15 bytes: less than a BTH and an ICRC
  unknown-opcode  an opcode no transport defines (RC 0x1f, then others)
  bad-pad         pad count inconsistent with the payload, good ICRC
  too-long        RC SEND ONLY with more than 4096 bytes (--len if larger,
                  else 4100), good ICRC
  bad-pkey        RC SEND ONLY to --qpn at --psn with P_Key --pkey
  bad-qkey        UD SEND ONLY to --qpn, DETH Q_Key --qkey, source QP 1234
  wrong-qpn       RC SEND ONLY to --qpn
  bad-rkey-write  RC RDMA WRITE ONLY, RETH --va --rkey --len, --len bytes
  oob-write       the same packet, meant with a valid rkey out of range
  bad-read        RC RDMA READ REQUEST, RETH --va --rkey --len
  random          a --seed-determined mix of all of them and random bytes,
                  to --qpn with random PSNs
  rc-op           one RC request of BTH opcode --op (0x00 to 0x14: SEND
                  FIRST 0x00, MIDDLE 0x01, LAST 0x02, ONLY 0x04, WRITE
                  FIRST 0x06, MIDDLE 0x07, LAST 0x08, ONLY 0x0a, READ
                  0x0c, COMPARE_SWAP 0x13, FETCH_ADD 0x14, ...) to --qpn
                  at --psn, AckReq set, RETH or AtomicETH from --va --rkey
                  --len (--dma-len), --len bytes of payload where the
                  opcode has one, good ICRC

QP1 kinds: a UD SEND ONLY to --qpn (default 1) with DETH Q_Key --qkey
(default 0x80010000, QP1's) and source QP 1, P_Key --pkey, carrying:
  mad-short          a CM DREQ MAD cut to 0..255 bytes (every length in 256)
  mad-long           a CM DREQ MAD and more: 257 to 1024 bytes
  mad-bad-version    a CM DREQ MAD with base version 0, 2, 3, 0x80, 0xff
  mad-unknown-class  a GET (even) or SET (odd) of a class or class version
                     nobody takes (SA, PMA, device management, reserved,
                     vendor, CM version 1 and 3)
  cm-unknown-attr    a CM SEND with an attribute ID no CM message has
  cm-msg             REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR REQ, SIDR REP,
                     LAP, APR in turn, random comm IDs (a REQ for a service
                     nobody listens on), private data of every length
  cm-at              one CM message, --msg req, mra, rej, rep, rtu, dreq,
                     drep, sidr-req, lap or apr, from comm ID --local-id to
                     --remote-id (default 0), with --msg-qpn as the REQ's or
                     REP's local QPN or the DREQ's remote QPN, --of req, rep
                     or other as the message a REJ rejects or an MRA MRAs,
                     --guid as the REQ's or REP's local CA GUID, and
                     --service-id as the REQ's or SIDR REQ's service ID
                     (the SIDR REQ's request ID is --local-id); no private
                     data; transaction ID 0xfeed0000 + the packet's number
";

/// What the command line asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Source address (bound).
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// What to send.
    pub kind: Kind,
    /// Header fields and lengths.
    pub params: Params,
    /// How many packets.
    pub count: u64,
    /// Seed of the `random` mix.
    pub seed: u64,
    /// UDP source port (0: any).
    pub sport: u16,
}

/// What to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Send.
    Run(Options),
    /// Print the usage text.
    Help,
}

/// A decimal or 0x-hex number.
pub fn parse_number(s: &str) -> Option<u64> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn number(opt: &str, value: &str, max: u64) -> Result<u64, String> {
    match parse_number(value) {
        Some(n) if n <= max => Ok(n),
        Some(_) => Err(format!("{opt} {value}: at most {max:#x}")),
        None => Err(format!("{opt} {value}: not a number")),
    }
}

/// Reads the command line (without the program name). An error is a
/// message for bad usage.
pub fn parse_args<I, S>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut src = None;
    let mut dst = None;
    let mut kind = None;
    let mut pkey = None;
    let mut qkey = None;
    let mut qpn = None;
    let mut p = Params::default();
    let mut count = 1;
    let mut seed = 1;
    let mut sport = 0;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let arg = arg.as_ref();
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (opt, inline) = match arg.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
            _ => (arg, None),
        };
        if !opt.starts_with("--") {
            return Err(format!("unexpected argument {arg}"));
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .map(|v| v.as_ref().to_string())
                .ok_or_else(|| format!("{opt} needs a value"))?,
        };
        let v = value.as_str();
        let addr = |v: &str| {
            v.parse::<IpAddr>()
                .map_err(|_| format!("{opt} {v}: not an IP address"))
        };
        match opt {
            "--src" => src = Some(addr(v)?),
            "--dst" => dst = Some(addr(v)?),
            "--kind" => kind = Some(Kind::from_name(v).ok_or_else(|| format!("unknown kind {v}"))?),
            "--qpn" => qpn = Some(number(opt, v, MASK24.into())? as u32),
            "--psn" => p.psn = number(opt, v, MASK24.into())? as u32,
            "--pkey" => pkey = Some(number(opt, v, 0xffff)? as u16),
            "--qkey" => qkey = Some(number(opt, v, u32::MAX.into())? as u32),
            "--rkey" => p.rkey = number(opt, v, u32::MAX.into())? as u32,
            "--va" => p.va = number(opt, v, u64::MAX)?,
            "--len" => p.len = number(opt, v, 0xffff)? as usize,
            "--dma-len" => p.dma_len = Some(number(opt, v, u32::MAX.into())? as u32),
            "--psn-step" => p.psn_step = number(opt, v, MASK24.into())? as u32,
            "--count" => count = number(opt, v, u64::MAX)?,
            "--seed" => seed = number(opt, v, u64::MAX)?,
            "--sport" => sport = number(opt, v, 0xffff)? as u16,
            "--msg" => {
                p.cm.attr = qp1::CmAt::attr_of(v).ok_or_else(|| format!("unknown message {v}"))?
            }
            "--local-id" => p.cm.local_id = number(opt, v, u32::MAX.into())? as u32,
            "--remote-id" => p.cm.remote_id = number(opt, v, u32::MAX.into())? as u32,
            "--msg-qpn" => p.cm.qpn = number(opt, v, MASK24.into())? as u32,
            "--of" => {
                p.cm.of = match v {
                    "req" => 0,
                    "rep" => 1,
                    "other" => 2,
                    _ => return Err(format!("--of {v}: req, rep or other")),
                }
            }
            "--guid" => p.cm.guid = number(opt, v, u64::MAX)?,
            "--service-id" => p.cm.service_id = number(opt, v, u64::MAX)?,
            "--op" => {
                p.op = Opcode::from_u8(number(opt, v, 0x1f)? as u8)
                    .filter(|o| o.info().class == Class::Request)
                    .ok_or_else(|| format!("--op {v}: not an RC request opcode"))?
            }
            _ => return Err(format!("unknown option {opt}")),
        }
    }
    let src = src.ok_or("--src is required")?;
    let dst = dst.ok_or("--dst is required")?;
    let kind = kind.ok_or("--kind is required")?;
    let qp1 = kind.is_qp1();
    p.qpn = qpn.unwrap_or(if qp1 { 1 } else { p.qpn });
    p.qkey = qkey.unwrap_or(if qp1 { qp1::QP1_QKEY } else { p.qkey });
    p.pkey = pkey.unwrap_or(if kind == Kind::BadPkey {
        BAD_PKEY
    } else {
        DEFAULT_PKEY
    });
    Ok(Command::Run(Options {
        src,
        dst,
        kind,
        params: p,
        count,
        seed,
        sport,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxe_wire::packet::{build, parse, IpHeader, ParseError};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn flows() -> [Flow; 2] {
        [
            Flow::new(
                IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
                IpAddr::V4(Ipv4Addr::new(10, 1, 2, 4)),
                49152,
            )
            .unwrap(),
            Flow::new(
                IpAddr::V6("fd00::1".parse::<Ipv6Addr>().unwrap()),
                IpAddr::V6("fd00::2".parse::<Ipv6Addr>().unwrap()),
                33333,
            )
            .unwrap(),
        ]
    }

    fn params() -> Params {
        Params {
            qpn: 0x12_3456,
            psn: 0xab_cdef,
            pkey: 0x8001,
            qkey: 0x1111_2222,
            rkey: 0xdead_beef,
            va: 0x0123_4567_89ab_cdef,
            len: 64,
            dma_len: None,
            psn_step: 0,
            cm: qp1::CmAt::default(),
            op: Opcode::RcSendOnly,
        }
    }

    /// `cm-at`: the message and fields the command line names, parsed back
    /// with the codec of `rdma-spec`.
    #[test]
    fn cm_at_messages() {
        use rdma_spec::cm_msg::{CmMessage, MsgResponse, SidrReq};
        let o = match parse_args([
            "--src",
            "10.0.0.1",
            "--dst",
            "10.0.0.2",
            "--kind",
            "cm-at",
            "--msg",
            "rej",
            "--of",
            "req",
            "--local-id",
            "0x1234",
            "--remote-id",
            "0x80000001",
        ])
        .unwrap()
        {
            Command::Run(o) => o,
            Command::Help => panic!(),
        };
        assert_eq!((o.params.qpn, o.params.qkey), (1, qp1::QP1_QKEY));
        let mut mad = [0u8; MAD_SIZE];
        o.params.cm.mad(0, &mut mad);
        match CmMessage::parse_mad(&mad).unwrap().1 {
            CmMessage::Rej(r) => {
                assert_eq!((r.local_comm_id, r.remote_comm_id), (0x1234, 0x8000_0001));
                assert_eq!(r.rejected(), Some(MsgResponse::Req));
            }
            m => panic!("{m:?}"),
        }
        let mut cm = qp1::CmAt {
            attr: qp1::CmAt::attr_of("dreq").unwrap(),
            local_id: 5,
            remote_id: 6,
            qpn: 0x11,
            ..qp1::CmAt::default()
        };
        cm.mad(0, &mut mad);
        match CmMessage::parse_mad(&mad).unwrap().1 {
            CmMessage::Dreq(d) => assert_eq!(
                (d.local_comm_id, d.remote_comm_id, d.remote_qpn_eecn),
                (5, 6, 0x11)
            ),
            m => panic!("{m:?}"),
        }
        cm.attr = qp1::CmAt::attr_of("req").unwrap();
        cm.guid = 0xabcd;
        cm.mad(0, &mut mad);
        match CmMessage::parse_mad(&mad).unwrap().1 {
            CmMessage::Req(r) => assert_eq!(
                (r.local_comm_id, r.local_qpn, r.local_ca_guid),
                (5, 0x11, 0xabcd)
            ),
            m => panic!("{m:?}"),
        }
        cm.attr = qp1::CmAt::attr_of("sidr-req").unwrap();
        cm.mad(0, &mut mad);
        let (_, r) = SidrReq::parse_mad(&mad).unwrap();
        assert_eq!((r.request_id, r.service_id), (5, cm.service_id));
    }

    /// `rc-op`: the opcode asked for, its headers from the command line,
    /// a payload only where the opcode has one, parsing with a good ICRC;
    /// opcodes that are not RC requests are refused.
    #[test]
    fn rc_op_packets() {
        let run = |op: &str, extra: &[&str]| {
            let mut args = vec![
                "--src", "10.0.0.1", "--dst", "10.0.0.2", "--kind", "rc-op", "--qpn", "0x12",
                "--psn", "0x1234", "--op", op,
            ];
            args.extend_from_slice(extra);
            match parse_args(args) {
                Ok(Command::Run(o)) => Ok(o),
                Ok(Command::Help) => panic!(),
                Err(e) => Err(e),
            }
        };
        let flow = flows()[0];
        for (op, want, len) in [
            ("0x01", Opcode::RcSendMiddle, 1024),
            ("0x08", Opcode::RcRdmaWriteLast, 100),
            ("0x13", Opcode::RcCompareSwap, 0),
            ("0x14", Opcode::RcFetchAdd, 0),
        ] {
            let o = run(op, &["--len", "1024", "--va", "0x1004", "--rkey", "0x77"]).unwrap();
            let o = Options {
                params: Params {
                    len: if len == 100 { 100 } else { o.params.len },
                    ..o.params
                },
                ..o
            };
            let mut inj = Injector::new(flow, o.kind, o.params, 1);
            let c = inj.next(0).unwrap();
            let pkt = parse(inj.datagram(&c), 4096, &crc32_le).unwrap();
            assert_eq!(pkt.headers.bth.opcode, want as u8);
            assert_eq!(
                (pkt.headers.bth.dest_qpn, pkt.headers.bth.psn),
                (0x12, 0x1234)
            );
            assert!(pkt.headers.bth.ack_req);
            assert_eq!(
                pkt.payload.len(),
                if want.info().payload { o.params.len } else { 0 }
            );
            if let Some(a) = pkt.headers.ext.atomic_eth {
                assert_eq!((a.va, a.rkey), (0x1004, 0x77));
            }
        }
        assert!(run("0x11", &[]).is_err(), "an ACK is not a request");
        assert!(run("0x1f", &[]).is_err(), "no such opcode");
        assert!(run("0x24", &[]).is_err(), "UC is not RC");
    }

    #[test]
    fn dma_len_and_psn_step() {
        let flow = Flow::new(
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            49152,
        )
        .unwrap();
        let p = Params {
            dma_len: Some(1 << 20),
            psn_step: 1024,
            psn: 0xff_fc00,
            ..params()
        };
        let mut inj = Injector::new(flow, Kind::BadRead, p, 1);
        let mut got = std::vec::Vec::new();
        for i in 0..3 {
            let c = inj.next(i).unwrap();
            let frame = inj.datagram(&c).to_vec();
            let pkt = parse(&frame, usize::MAX, &crc32_le).unwrap();
            got.push((pkt.psn(), pkt.headers.ext.reth.unwrap().len));
        }
        assert_eq!(got, [(0xff_fc00, 1 << 20), (0, 1 << 20), (0x400, 1 << 20)]);
        let o = match parse_args([
            "--src",
            "::1",
            "--dst",
            "::1",
            "--kind",
            "bad-read",
            "--dma-len",
            "0x100000",
            "--psn-step",
            "7",
        ])
        .unwrap()
        {
            Command::Run(o) => o,
            Command::Help => panic!(),
        };
        assert_eq!((o.params.dma_len, o.params.psn_step), (Some(1 << 20), 7));
    }

    fn one(flow: Flow, kind: Kind, p: Params, variant: u64) -> Vec<u8> {
        let mut inj = Injector::new(flow, kind, p, 1);
        let c = inj.next(variant).unwrap();
        assert_eq!(c.kind, kind);
        let d = inj.datagram(&c).to_vec();
        assert_eq!(
            inj.udp_payload(&c),
            &d[flow.transport_offset()..],
            "the UDP payload is the frame after the IP and UDP headers"
        );
        d
    }

    fn parse4096(frame: &[u8]) -> Result<rxe_wire::Packet<'_>, ParseError> {
        parse(frame, IB_MAX_MTU, &crc32_le)
    }

    /// The stored ICRC is what the receiver computes: `icrc::compute`
    /// where it applies, and the lenient one always.
    fn assert_good_icrc(frame: &[u8]) {
        let stored = icrc::stored(frame).unwrap();
        assert_eq!(stored, icrc_lenient(frame));
        if let Ok(c) = icrc::compute(&crc32_le, frame) {
            assert_eq!(stored, c);
        }
    }

    /// A parsed packet builds again to the same bytes: our IP and UDP
    /// headers are the codec's.
    fn assert_rebuilds(frame: &[u8], max: usize) {
        let pkt = parse(frame, max, &crc32_le).unwrap();
        let mut out = vec![0u8; frame.len()];
        let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out).unwrap();
        assert_eq!(&out[..n], frame);
    }

    /// The UD payload of QP1 packet `variant` of `kind`, checked to be a
    /// UD SEND ONLY to QP1 with QP1's Q_Key, from the GSI, good ICRC.
    fn qp1_payload(flow: Flow, kind: Kind, variant: u64) -> Vec<u8> {
        let p = match parse_args([
            "--src",
            "10.0.0.1",
            "--dst",
            "10.0.0.2",
            "--kind",
            kind.name(),
        ])
        .unwrap()
        {
            Command::Run(o) => o.params,
            Command::Help => panic!(),
        };
        let f = one(flow, kind, p, variant);
        assert_good_icrc(&f);
        let pkt = parse4096(&f).unwrap();
        assert_eq!(pkt.opcode, Opcode::UdSendOnly);
        assert_eq!(pkt.headers.bth.dest_qpn, 1);
        assert_eq!(pkt.headers.bth.pkey, DEFAULT_PKEY);
        let deth = pkt.headers.ext.deth.unwrap();
        assert_eq!((deth.qkey, deth.src_qpn), (qp1::QP1_QKEY, 1));
        pkt.payload.to_vec()
    }

    #[test]
    fn qp1_kinds_go_to_qp1_with_its_qkey_unless_told() {
        for k in Kind::ALL {
            assert_eq!(
                k.is_qp1(),
                k.name().starts_with("mad-") || k.name().starts_with("cm-")
            );
        }
        let o = match parse_args([
            "--src", "::1", "--dst", "::1", "--kind", "cm-msg", "--qkey", "0x600d", "--qpn", "7",
            "--pkey", "0x1234",
        ])
        .unwrap()
        {
            Command::Run(o) => o,
            Command::Help => panic!(),
        };
        assert_eq!(
            (o.params.qkey, o.params.qpn, o.params.pkey),
            (0x600d, 7, 0x1234)
        );
        let f = one(flows()[1], Kind::CmMsg, o.params, 3);
        let pkt = parse4096(&f).unwrap();
        assert_eq!(pkt.headers.ext.deth.unwrap().qkey, 0x600d);
        assert_eq!(
            (pkt.headers.bth.dest_qpn, pkt.headers.bth.pkey),
            (7, 0x1234)
        );
    }

    #[test]
    fn mad_short_and_long_have_every_length_around_a_mad() {
        use rdma_spec::mad::MadHeader;
        let [v4, v6] = flows();
        let mut seen = [false; MAD_SIZE];
        for i in 0..MAD_SIZE as u64 {
            let pl = qp1_payload(if i % 2 == 0 { v4 } else { v6 }, Kind::MadShort, i);
            assert!(pl.len() < MAD_SIZE);
            assert_eq!(pl.len(), qp1::short_len(i));
            seen[pl.len()] = true;
            // What there is of it is a good DREQ's beginning.
            let mut base = [0u8; MAD_SIZE];
            qp1::base_mad(i, &mut base);
            assert_eq!(pl[..], base[..pl.len()]);
        }
        assert!(seen.iter().all(|&s| s), "every length below 256");
        for i in 0..100 {
            let pl = qp1_payload(v4, Kind::MadLong, i);
            assert!(pl.len() > MAD_SIZE && pl.len() <= qp1::MAD_LONG_MAX);
            let h = MadHeader::parse(&pl).unwrap();
            assert_eq!((h.mgmt_class, h.attr_id), (0x07, 0x15));
        }
    }

    #[test]
    fn mad_bad_version_is_only_wrong_in_its_base_version() {
        use rdma_spec::cm_msg::CmMessage;
        use rdma_spec::mad::{MadError, MadHeader};
        for i in 0..10 {
            let mut pl = qp1_payload(flows()[0], Kind::MadBadVersion, i);
            assert_eq!(pl.len(), MAD_SIZE);
            let v = pl[0];
            assert_eq!(MadHeader::parse(&pl), Err(MadError::BadBaseVersion(v)));
            assert_eq!(v, qp1::BAD_BASE_VERSIONS[i as usize % 5]);
            pl[0] = 1;
            assert!(matches!(
                CmMessage::parse_mad(&pl),
                Ok((_, CmMessage::Dreq(_)))
            ));
        }
    }

    #[test]
    fn mad_unknown_class_gets_and_sets_classes_nobody_takes() {
        use rdma_spec::mad::{MadHeader, METHOD_GET, METHOD_SET};
        let mut classes = std::collections::HashSet::new();
        for i in 0..32 {
            let pl = qp1_payload(flows()[0], Kind::MadUnknownClass, i);
            let h = MadHeader::parse(&pl).unwrap();
            assert_eq!(h.method, if i % 2 == 0 { METHOD_GET } else { METHOD_SET });
            assert!(qp1::UNKNOWN_CLASSES.contains(&(h.mgmt_class, h.class_version)));
            classes.insert((h.mgmt_class, h.class_version));
        }
        assert_eq!(classes.len(), qp1::UNKNOWN_CLASSES.len());
    }

    #[test]
    fn cm_unknown_attr_is_a_cm_mad_no_codec_knows() {
        use rdma_spec::cm_msg::{CmError, CmMessage};
        use rdma_spec::mad::MadHeader;
        for i in 0..16 {
            let pl = qp1_payload(flows()[0], Kind::CmUnknownAttr, i);
            let h = MadHeader::parse(&pl).unwrap();
            assert_eq!((h.mgmt_class, h.class_version, h.method), (0x07, 2, 0x03));
            assert_eq!(h.attr_id, qp1::UNKNOWN_CM_ATTRS[i as usize % 8]);
            assert_eq!(
                CmMessage::parse_mad(&pl).err(),
                Some(CmError::UnknownAttribute(h.attr_id))
            );
        }
    }

    #[test]
    fn cm_msg_sends_every_message_with_every_private_data_length() {
        use rdma_spec::cm_msg::{CmError, CmMessage, RDMA_IB_IP_PS_MASK};
        use rdma_spec::mad::MadHeader;
        let n = qp1::CM_MSGS.len() as u64;
        let mut lens: std::collections::HashMap<u16, std::collections::HashSet<usize>> =
            Default::default();
        let mut ids = std::collections::HashSet::new();
        for i in 0..n * 230 {
            let pl = qp1_payload(flows()[(i % 2) as usize], Kind::CmMsg, i);
            let h = MadHeader::parse(&pl).unwrap();
            let attr = qp1::CM_MSGS[(i % n) as usize];
            assert_eq!(h.attr_id, attr);
            let len = qp1::cm_pdata_len(attr, i / n);
            lens.entry(attr).or_default().insert(len);
            if qp1::cm_unsupported(attr) {
                assert_eq!(
                    CmMessage::parse_mad(&pl).err(),
                    Some(CmError::UnknownAttribute(attr))
                );
                continue;
            }
            let (_, msg) = CmMessage::parse_mad(&pl).unwrap();
            let (local, pd): (u32, &[u8]) = match &msg {
                CmMessage::Req(m) => {
                    assert_ne!(
                        m.service_id & RDMA_IB_IP_PS_MASK,
                        0x0000_0000_0106_0000,
                        "no rdma_cm TCP service"
                    );
                    (m.local_comm_id, &m.private_data.0)
                }
                CmMessage::Mra(m) => (m.local_comm_id, &m.private_data.0),
                CmMessage::Rej(m) => (m.local_comm_id, &m.private_data.0),
                CmMessage::Rep(m) => (m.local_comm_id, &m.private_data.0),
                CmMessage::Rtu(m) => (m.local_comm_id, &m.private_data.0),
                CmMessage::Dreq(m) => (m.local_comm_id, &m.private_data.0),
                CmMessage::Drep(m) => (m.local_comm_id, &m.private_data.0),
            };
            assert!(pd[..len].iter().all(|&b| b != 0), "{len} bytes of data");
            assert!(pd[len..].iter().all(|&b| b == 0), "then zeros");
            ids.insert(local);
        }
        for attr in qp1::CM_MSGS {
            let want: std::collections::HashSet<usize> =
                (0..=qp1::cm_pdata_max(attr).min(229)).collect();
            assert_eq!(lens[&attr], want, "{attr:#x}: every length from 0");
        }
        assert!(
            ids.len() > 1000,
            "comm IDs differ from one message to the next"
        );
    }

    #[test]
    fn kind_names_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
            assert!(USAGE.contains(k.name()), "{k} in the usage text");
        }
        assert_eq!(Kind::from_name("nope"), None);
        for k in Kind::MIX {
            assert!(Kind::ALL.contains(&k));
        }
    }

    #[test]
    fn ip_and_udp_headers_are_what_the_receiver_sees() {
        let [v4, v6] = flows();
        let f = one(v4, Kind::WrongQpn, params(), 0);
        assert_eq!(f[0], 0x45);
        assert_eq!(usize::from(u16::from_be_bytes([f[2], f[3]])), f.len());
        assert_eq!(&f[4..6], &[0, 0], "identification 0");
        assert_eq!(&f[6..8], &[0x40, 0], "DF, offset 0");
        assert_eq!(f[9], 17);
        assert_eq!(&f[12..20], &[10, 1, 2, 3, 10, 1, 2, 4]);
        assert_eq!(u16::from_be_bytes([f[20], f[21]]), 49152);
        assert_eq!(u16::from_be_bytes([f[22], f[23]]), 4791);
        assert_eq!(
            usize::from(u16::from_be_bytes([f[24], f[25]])),
            f.len() - 20
        );
        match parse4096(&f).unwrap().headers.ip {
            IpHeader::V4(ip) => {
                assert_eq!((ip.id, ip.dont_fragment), (0, true));
            }
            IpHeader::V6(_) => panic!("not IPv4"),
        }

        let f = one(v6, Kind::WrongQpn, params(), 0);
        assert_eq!(f[0] >> 4, 6);
        assert_eq!(usize::from(u16::from_be_bytes([f[4], f[5]])), f.len() - 40);
        assert_eq!(f[6], 17);
        assert_eq!(u16::from_be_bytes([f[40], f[41]]), 33333);
        assert_eq!(u16::from_be_bytes([f[42], f[43]]), 4791);
        assert_eq!(
            usize::from(u16::from_be_bytes([f[44], f[45]])),
            f.len() - 40
        );
    }

    #[test]
    fn icrc_ignores_the_fields_the_network_changes() {
        for flow in flows() {
            let f = one(flow, Kind::BadRkeyWrite, params(), 0);
            let mut g = f.clone();
            let ip = flow.ip_header_len();
            if flow.is_ipv4() {
                g[1] = 0x02; // ECN
                g[8] = 1; // TTL
                g[10] ^= 0x55; // checksum
            } else {
                g[1] = 0xa5; // traffic class and flow label
                g[3] = 0x77;
                g[7] = 1; // hop limit
            }
            g[ip + 6] = 0x12; // UDP checksum
            g[ip + 7] = 0x34;
            g[ip + UDP_HEADER_LEN + 4] |= 0xc0; // FECN, BECN
            assert!(icrc::verify(&crc32_le, &g).unwrap());
            assert_eq!(icrc_lenient(&g), icrc::stored(&g).unwrap());
            // The UDP source port is covered: it must be the bound one.
            let mut h = f.clone();
            h[ip + 1] ^= 1;
            assert!(!icrc::verify(&crc32_le, &h).unwrap());
            // So is the IPv4 identification.
            if flow.is_ipv4() {
                let mut h = f.clone();
                h[5] = 1;
                assert!(!icrc::verify(&crc32_le, &h).unwrap());
            }
        }
    }

    #[test]
    fn well_formed_kinds_parse_with_their_fields() {
        for flow in flows() {
            let p = params();
            for kind in [Kind::BadPkey, Kind::WrongQpn] {
                let f = one(flow, kind, p, 0);
                let pkt = parse4096(&f).unwrap();
                assert_eq!(pkt.opcode, Opcode::RcSendOnly);
                assert_eq!((pkt.dest_qpn(), pkt.psn()), (p.qpn, p.psn));
                assert_eq!(pkt.headers.bth.pkey, p.pkey);
                assert!(pkt.headers.bth.ack_req);
                assert_eq!(pkt.payload.len(), p.len);
                assert_rebuilds(&f, IB_MAX_MTU);
            }

            let f = one(flow, Kind::BadQkey, p, 0);
            let pkt = parse4096(&f).unwrap();
            assert_eq!(pkt.opcode, Opcode::UdSendOnly);
            assert_eq!(pkt.dest_qpn(), p.qpn);
            let deth = pkt.headers.ext.deth.unwrap();
            assert_eq!((deth.qkey, deth.src_qpn), (p.qkey, UD_SRC_QPN));
            assert_rebuilds(&f, IB_MAX_MTU);

            for kind in [Kind::BadRkeyWrite, Kind::OobWrite] {
                let f = one(flow, kind, p, 0);
                let pkt = parse4096(&f).unwrap();
                assert_eq!(pkt.opcode, Opcode::RcRdmaWriteOnly);
                assert_eq!((pkt.dest_qpn(), pkt.psn()), (p.qpn, p.psn));
                assert!(pkt.headers.bth.ack_req);
                let reth = pkt.headers.ext.reth.unwrap();
                assert_eq!((reth.va, reth.rkey, reth.len), (p.va, p.rkey, 64));
                assert_eq!(pkt.payload.len(), 64);
                assert!(pkt.payload.iter().all(|&b| b != 0));
                assert_rebuilds(&f, IB_MAX_MTU);
            }

            let f = one(flow, Kind::BadRead, p, 0);
            let pkt = parse4096(&f).unwrap();
            assert_eq!(pkt.opcode, Opcode::RcRdmaReadRequest);
            assert_eq!((pkt.dest_qpn(), pkt.psn()), (p.qpn, p.psn));
            let reth = pkt.headers.ext.reth.unwrap();
            assert_eq!((reth.va, reth.rkey, reth.len), (p.va, p.rkey, 64));
            assert!(pkt.payload.is_empty());
            assert_rebuilds(&f, IB_MAX_MTU);

            // Odd payload lengths get their pad.
            for len in [0, 1, 2, 3, 5, 4096] {
                let q = Params { len, ..p };
                let f = one(flow, Kind::WrongQpn, q, 0);
                assert_eq!(parse4096(&f).unwrap().payload.len(), len);
                assert_rebuilds(&f, IB_MAX_MTU);
            }
        }
    }

    #[test]
    fn bad_icrc_is_only_wrong_in_its_icrc() {
        for flow in flows() {
            for variant in 0..40 {
                let f = one(flow, Kind::BadIcrc, params(), variant);
                assert!(matches!(parse4096(&f), Err(ParseError::BadIcrc { .. })));
                let mut g = f.clone();
                icrc::fill(&crc32_le, &mut g).unwrap();
                let pkt = parse4096(&g).unwrap();
                assert_eq!(pkt.opcode, Opcode::RcSendOnly);
                assert_eq!(pkt.dest_qpn(), params().qpn);
            }
        }
    }

    #[test]
    fn truncated_packets_are_cut_inside_their_headers() {
        for flow in flows() {
            let f = one(flow, Kind::Truncated, params(), 0);
            let t = &f[flow.transport_offset()..];
            assert_eq!(t[0], Opcode::RcRdmaWriteFirst.value());
            assert_eq!(t.len(), BTH_LEN + 8 + ICRC_LEN, "half of the RETH");
            for variant in 0..100 {
                let f = one(flow, Kind::Truncated, params(), variant);
                let t = &f[flow.transport_offset()..];
                let op = Opcode::from_u8(t[0]).unwrap();
                assert!(t.len() < op.info().header_len + ICRC_LEN);
                assert!(t.len() >= BTH_LEN + ICRC_LEN);
                assert_eq!(parse4096(&f), Err(ParseError::TooShort));
                assert_good_icrc(&f);
            }
        }
    }

    #[test]
    fn short_packets_are_shorter_than_bth_and_icrc() {
        for flow in flows() {
            let mut lens = Vec::new();
            for variant in 0..16 {
                let f = one(flow, Kind::Short, params(), variant);
                let t = &f[flow.transport_offset()..];
                assert!(t.len() < BTH_LEN + ICRC_LEN);
                lens.push(t.len());
                assert_eq!(parse4096(&f), Err(ParseError::TooShort));
            }
            lens.sort_unstable();
            assert_eq!(lens, (0..16).collect::<Vec<_>>());
        }
    }

    #[test]
    fn unknown_opcodes_are_unknown_with_a_good_icrc() {
        assert_eq!(UNKNOWN_OPCODES[0], 0x1f);
        for op in UNKNOWN_OPCODES {
            assert_eq!(Opcode::from_u8(op), None, "{op:#x}");
        }
        for flow in flows() {
            for variant in 0..UNKNOWN_OPCODES.len() as u64 {
                let f = one(flow, Kind::UnknownOpcode, params(), variant);
                let op = UNKNOWN_OPCODES[variant as usize];
                assert_eq!(parse4096(&f), Err(ParseError::UnknownOpcode(op)));
                assert!(icrc::verify(&crc32_le, &f).unwrap());
                assert_good_icrc(&f);
            }
        }
    }

    #[test]
    fn bad_pads_are_rejected_for_their_pad() {
        for flow in flows() {
            for len in [0, 1, 3, 4, 64, 65] {
                for variant in 0..8 {
                    let p = Params { len, ..params() };
                    let f = one(flow, Kind::BadPad, p, variant);
                    assert_eq!(parse4096(&f), Err(ParseError::BadPad), "{len} {variant}");
                    assert_good_icrc(&f);
                }
            }
            // The first: no payload, three pad bytes claimed.
            let f = one(flow, Kind::BadPad, params(), 0);
            let t = &f[flow.transport_offset()..];
            assert_eq!(t.len(), BTH_LEN + ICRC_LEN);
            assert_eq!((t[1] >> 4) & 3, 3);
        }
    }

    #[test]
    fn too_long_exceeds_the_largest_mtu_within_one_datagram() {
        for flow in flows() {
            let f = one(flow, Kind::TooLong, params(), 0);
            assert_eq!(
                parse4096(&f),
                Err(ParseError::PayloadTooLarge {
                    len: TOO_LONG_PAYLOAD,
                    max: IB_MAX_MTU
                })
            );
            assert_rebuilds(&f, usize::MAX);
            let p = Params {
                len: 0xffff,
                ..params()
            };
            let f = one(flow, Kind::TooLong, p, 0);
            let pkt = parse(&f, usize::MAX, &crc32_le).unwrap();
            assert_eq!(pkt.payload.len(), flow.max_payload());
            assert!(f.len() - flow.transport_offset() <= flow.max_transport());
            assert!(flow.max_transport() - (f.len() - flow.transport_offset()) < 4);
            assert_rebuilds(&f, usize::MAX);
        }
        assert_eq!(flows()[0].max_transport(), 65507);
    }

    #[test]
    fn a_payload_too_large_for_a_datagram_is_an_error() {
        for flow in flows() {
            let p = Params {
                len: 0xffff,
                ..params()
            };
            let mut inj = Injector::new(flow, Kind::BadRkeyWrite, p, 1);
            assert!(matches!(inj.next(0), Err(CraftError::TooLong { .. })));
            let mut inj = Injector::new(flow, Kind::WrongQpn, p, 1);
            assert!(matches!(inj.next(0), Err(CraftError::TooLong { .. })));
        }
    }

    #[test]
    fn lenient_icrc_is_the_codecs_on_whole_packets() {
        for flow in flows() {
            for kind in [
                Kind::WrongQpn,
                Kind::BadQkey,
                Kind::BadRead,
                Kind::BadRkeyWrite,
            ] {
                let f = one(flow, kind, params(), 0);
                assert_eq!(
                    icrc_lenient(&f),
                    icrc::compute(&crc32_le, &f).unwrap(),
                    "{kind}"
                );
            }
        }
    }

    #[test]
    fn random_is_deterministic_and_mixes_everything() {
        for flow in flows() {
            let p = params();
            let run = |seed| {
                let mut inj = Injector::new(flow, Kind::Random, p, seed);
                (0..3000)
                    .map(|i| {
                        let c = inj.next(i).unwrap();
                        (c.kind, inj.datagram(&c).to_vec())
                    })
                    .collect::<Vec<_>>()
            };
            let a = run(1);
            assert_eq!(a, run(1));
            assert_ne!(a, run(2));
            for k in Kind::MIX {
                assert!(a.iter().any(|(kind, _)| *kind == k), "{k} in the mix");
            }
            let mut psns = std::collections::HashSet::new();
            for (kind, f) in &a {
                let t = &f[flow.transport_offset()..];
                let parsed = parse4096(f);
                if *kind == Kind::Random {
                    assert!(t.len() < RANDOM_MAX_LEN as usize);
                } else if t.len() >= BTH_LEN {
                    let b = Bth::parse(t).unwrap();
                    assert_eq!(b.dest_qpn, p.qpn, "{kind} to --qpn");
                    psns.insert(b.psn);
                }
                if t.len() >= 8 {
                    assert_eq!(&t[5..8], &p.qpn.to_be_bytes()[1..]);
                }
                match kind {
                    Kind::BadIcrc => {
                        assert!(matches!(parsed, Err(ParseError::BadIcrc { .. })))
                    }
                    Kind::Truncated | Kind::Short => assert_eq!(parsed, Err(ParseError::TooShort)),
                    Kind::UnknownOpcode => {
                        assert!(matches!(parsed, Err(ParseError::UnknownOpcode(_))))
                    }
                    Kind::BadPad => assert_eq!(parsed, Err(ParseError::BadPad)),
                    Kind::TooLong => {
                        assert!(matches!(parsed, Err(ParseError::PayloadTooLarge { .. })))
                    }
                    Kind::BadPkey => {
                        let pk = parsed.unwrap().headers.bth.pkey;
                        assert_ne!(pk & 0x7fff, 0x7fff);
                    }
                    Kind::BadQkey | Kind::WrongQpn | Kind::BadRkeyWrite | Kind::BadRead => {
                        assert!(parsed.is_ok(), "{kind}")
                    }
                    Kind::Random => {}
                    _ => panic!("{kind} is not in the mix"),
                }
            }
            assert!(psns.len() > 1000, "random PSNs");
        }
    }

    #[test]
    fn random_bytes_with_a_known_opcode_carry_a_good_icrc() {
        let flow = flows()[0];
        let mut fixed = 0;
        let mut frame = vec![0u8; FRAME_MAX];
        for seed in 0..500 {
            let len = craft(&flow, Kind::Random, &params(), seed, &[], &mut frame).unwrap();
            let f = &frame[..len];
            let t = &f[flow.transport_offset()..];
            let known = t.len() >= 16 && Opcode::from_u8(t[0]).is_some() && t[1] & 0x0f == 0;
            if known && icrc::stored(f).unwrap() == icrc_of(f) {
                fixed += 1;
            }
        }
        assert!(fixed > 150, "{fixed}");
    }

    #[test]
    fn too_long_can_be_left_out_of_the_mix() {
        let mut inj = Injector::new(flows()[0], Kind::Random, params(), 7);
        inj.leave_out_too_long();
        for i in 0..2000 {
            assert_ne!(inj.next(i).unwrap().kind, Kind::TooLong);
        }
    }

    #[test]
    fn flows_need_one_family_and_a_source() {
        let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(Flow::new(v4, v6, 0), Err(FlowError::MixedFamilies));
        assert_eq!(Flow::new(v6, v4, 0), Err(FlowError::MixedFamilies));
        assert_eq!(
            Flow::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), v4, 0),
            Err(FlowError::UnspecifiedSource)
        );
        assert!(Flow::new(v6, v6, 1).unwrap().transport_offset() == 48);
    }

    #[test]
    fn rng_is_splitmix64() {
        // The first outputs of SplitMix64 seeded with 0.
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut r = Rng::new(3);
        assert!((0..1000).all(|_| r.below(7) < 7));
        assert_eq!(r.below(0), 0);
    }

    fn run(args: &[&str]) -> Result<Options, String> {
        match parse_args(args.iter().copied())? {
            Command::Run(o) => Ok(o),
            Command::Help => Err("help".into()),
        }
    }

    #[test]
    fn command_line() {
        let o = run(&[
            "--src",
            "10.0.0.1",
            "--dst",
            "10.0.0.2",
            "--kind",
            "wrong-qpn",
        ])
        .unwrap();
        assert_eq!(o.params, Params::default());
        assert_eq!((o.count, o.seed, o.sport), (1, 1, 0));
        assert_eq!(o.kind, Kind::WrongQpn);

        let o = run(&[
            "--src",
            "::1",
            "--dst=::1",
            "--kind",
            "bad-pkey",
            "--qpn",
            "0x1f",
        ])
        .unwrap();
        assert_eq!(o.params.pkey, BAD_PKEY);
        assert_eq!(o.params.qpn, 0x1f);
        let o = run(&[
            "--src", "::1", "--dst", "::1", "--kind", "bad-pkey", "--pkey", "0x7fff",
        ])
        .unwrap();
        assert_eq!(o.params.pkey, 0x7fff);

        let o = run(&[
            "--src",
            "1.2.3.4",
            "--dst",
            "5.6.7.8",
            "--kind",
            "random",
            "--psn",
            "0xffffff",
            "--qkey",
            "0x80010000",
            "--rkey",
            "4294967295",
            "--va",
            "0xFFFFFFFFFFFFFFFF",
            "--len",
            "4096",
            "--count",
            "100000",
            "--seed",
            "42",
            "--sport",
            "0xc000",
        ])
        .unwrap();
        assert_eq!(o.params.psn, 0xff_ffff);
        assert_eq!(o.params.qkey, 0x8001_0000);
        assert_eq!(o.params.rkey, u32::MAX);
        assert_eq!(o.params.va, u64::MAX);
        assert_eq!(o.params.len, 4096);
        assert_eq!((o.count, o.seed, o.sport), (100_000, 42, 0xc000));

        assert_eq!(parse_args(["--help"]), Ok(Command::Help));
        let base = ["--src", "10.0.0.1", "--dst", "10.0.0.2"];
        for bad in [
            &["--kind", "nope"][..],
            &["--kind", "short", "--qpn", "0x1000000"],
            &["--kind", "short", "--pkey", "65536"],
            &["--kind", "short", "--len", "-1"],
            &["--kind", "short", "--len", "0x"],
            &["--kind", "short", "--len", "12a"],
            &["--kind", "short", "--count"],
            &["--kind", "short", "--bogus", "1"],
            &["--kind", "short", "stray"],
            &[],
        ] {
            let args: Vec<&str> = base.iter().chain(bad.iter()).copied().collect();
            assert!(run(&args).is_err(), "{args:?}");
        }
        assert!(run(&["--dst", "10.0.0.2", "--kind", "short"]).is_err());
        assert!(run(&[
            "--src",
            "10.0.0.300",
            "--dst",
            "10.0.0.2",
            "--kind",
            "short"
        ])
        .is_err());
        assert_eq!(parse_number("0x10"), Some(16));
        assert_eq!(parse_number("010"), Some(10));
        assert_eq!(parse_number("+1"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("18446744073709551616"), None);
    }
}
