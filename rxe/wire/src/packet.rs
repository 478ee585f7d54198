// SPDX-License-Identifier: GPL-2.0

//! Whole RoCE v2 packets: IPv4 or IPv6, UDP to port 4791, BTH, extension
//! headers, payload, pad and ICRC.
//!
//! [`parse`] checks a received frame, starting at its IP header, and
//! returns a [`Packet`]: the decoded headers and the payload, borrowed from
//! the frame. Every frame is treated as hostile: each length is checked
//! against the others and against the buffer before it is used, and a
//! frame that fails a check is a [`ParseError`] saying which. What is
//! checked, in order:
//!
//! 1. IP: version 4 or 6; IPv4 without options, with a valid header
//!    checksum, not a fragment and with the reserved flag clear; IPv6 with
//!    UDP as next header (extension headers are not supported) and a
//!    non-zero payload length; the length the header declares fits in the
//!    buffer (bytes past it, such as Ethernet padding, are ignored).
//! 2. UDP: destination port 4791 and a length equal to the IP payload
//!    length. The UDP checksum is not checked (the network stack does that
//!    before a UDP tunnel sees the packet; rxe sends zero).
//! 3. BTH: an opcode rxe knows, transport header version 0, and room for
//!    the opcode's extension headers and the ICRC.
//! 4. Pad: payload plus pad is a multiple of four bytes, the pad bytes are
//!    zero, and opcodes without payload have neither payload nor pad.
//! 5. ICRC, computed as rxe does (see the `icrc` module).
//! 6. The payload is at most the caller's limit (the path MTU).
//!
//! Not checked, because they depend on QP state: the destination QPN
//! (rxe drops QPN 0 and treats 0xffffff as multicast), P_Key, Q_Key,
//! addresses, PSN, and opcode sequencing.
//!
//! [`build`] does the opposite into a caller's buffer: IP header (IPv4
//! checksum computed), UDP header (checksum as given; rxe sends zero for
//! IPv4 and IPv6 alike), BTH with the pad count computed from the payload
//! length, extension headers, payload, zeroed pad and ICRC.
//!
//! This module uses only `core` and its sibling modules `opcode`,
//! `headers` and `icrc` (`super::`), so the four must be compiled as
//! modules of the same parent.

use super::headers::{Bth, ByteReader, ByteWriter, ExtHeaders, Truncated, BTH_TVER};
use super::icrc::{self, Crc32};
use super::opcode::{HeaderSet, Opcode, OpcodeInfo, BTH_LEN, ICRC_LEN};

/// The UDP destination port of RoCE v2.
pub const ROCE_V2_UDP_PORT: u16 = 4791;
/// Length of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of an IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;
/// Length of a UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// The IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;

const IPV4_DF: u16 = 0x4000;
const IPV4_MF: u16 = 0x2000;
const IPV4_RESERVED: u16 = 0x8000;
const IPV4_OFFSET: u16 = 0x1fff;

/// The fields of an IPv4 header that are not implied by the packet.
///
/// Version, header length, total length, protocol and checksum are
/// computed when building and checked when parsing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ipv4 {
    /// Type of service (DSCP and ECN).
    pub tos: u8,
    /// Identification.
    pub id: u16,
    /// Don't fragment (rxe sets it).
    pub dont_fragment: bool,
    /// Time to live.
    pub ttl: u8,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

/// The fields of an IPv6 header that are not implied by the packet.
///
/// Version, payload length and next header are computed when building and
/// checked when parsing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ipv6 {
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits; rxe sends 0).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
}

/// The IP header of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpHeader {
    /// IPv4.
    V4(Ipv4),
    /// IPv6.
    V6(Ipv6),
}

impl IpHeader {
    /// Length of the header on the wire.
    pub const fn header_len(&self) -> usize {
        match self {
            IpHeader::V4(_) => IPV4_HEADER_LEN,
            IpHeader::V6(_) => IPV6_HEADER_LEN,
        }
    }
}

/// The fields of the UDP header that are not implied by the packet (the
/// destination port is 4791 and the length is computed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Udp {
    /// Source port (rxe derives it from the QPN or the flow label).
    pub src_port: u16,
    /// Checksum, as sent: rxe sends 0 over IPv4 and IPv6.
    pub checksum: u16,
}

/// Every header of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Headers {
    /// The IP header.
    pub ip: IpHeader,
    /// The UDP header.
    pub udp: Udp,
    /// The base transport header. When building, its pad count is
    /// replaced by the one the payload length calls for.
    pub bth: Bth,
    /// The extension headers; exactly those of the opcode must be present.
    pub ext: ExtHeaders,
}

/// A checked packet, borrowing its payload from the frame it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The headers.
    pub headers: Headers,
    /// The opcode of the BTH, known to be valid.
    pub opcode: Opcode,
    /// The payload, without pad.
    pub payload: &'a [u8],
    /// The ICRC, as [`icrc::compute`] returns it (verified).
    pub icrc: u32,
    /// Length of the packet in the frame (the IP datagram length); the
    /// frame may have had more bytes after it.
    pub len: usize,
}

impl Packet<'_> {
    /// What the opcode implies.
    pub const fn info(&self) -> &'static OpcodeInfo {
        self.opcode.info()
    }

    /// The destination QPN.
    pub const fn dest_qpn(&self) -> u32 {
        self.headers.bth.dest_qpn
    }

    /// The PSN.
    pub const fn psn(&self) -> u32 {
        self.headers.bth.psn
    }
}

/// Why a received frame was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The buffer ends before a fixed header does, or before the length
    /// the IP header declares.
    Truncated,
    /// The IP version is neither 4 nor 6.
    BadIpVersion(u8),
    /// An IPv4 header with options (IHL other than 5) or with the reserved
    /// flag set.
    BadIpHeader,
    /// The IPv4 header checksum is wrong.
    BadIpChecksum,
    /// An IPv4 fragment (more-fragments flag or non-zero offset).
    Fragmented,
    /// The IP length field is too small for the IP and UDP headers.
    BadIpLength,
    /// The IP protocol or IPv6 next header is not UDP.
    NotUdp(u8),
    /// The UDP destination port is not 4791.
    WrongPort(u16),
    /// The UDP length disagrees with the IP length.
    LengthMismatch,
    /// The UDP payload is too short for the BTH, the opcode's extension
    /// headers and the ICRC.
    TooShort,
    /// The opcode is not one rxe knows.
    UnknownOpcode(u8),
    /// The transport header version is not 0.
    BadTver(u8),
    /// The pad count does not fit the payload, the pad bytes are not zero,
    /// or an opcode without payload has a pad.
    BadPad,
    /// An opcode without payload is followed by payload bytes.
    UnexpectedPayload,
    /// The ICRC is wrong.
    BadIcrc {
        /// The ICRC the frame should carry.
        computed: u32,
        /// The ICRC it carries.
        received: u32,
    },
    /// The payload is larger than the limit given to [`parse`].
    PayloadTooLarge {
        /// The payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl From<Truncated> for ParseError {
    fn from(_: Truncated) -> ParseError {
        ParseError::Truncated
    }
}

/// Why a packet could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The output buffer is too small; the packet needs `needed` bytes.
    BufferTooSmall {
        /// The packet length.
        needed: usize,
    },
    /// The BTH opcode is not one rxe knows.
    UnknownOpcode(u8),
    /// The extension headers given are not those of the opcode.
    HeaderMismatch {
        /// The opcode's headers.
        expected: HeaderSet,
        /// The headers given.
        found: HeaderSet,
    },
    /// A payload was given for an opcode without payload.
    UnexpectedPayload,
    /// The packet would not fit the 16-bit IP or UDP length field.
    TooLong,
}

/// The one's-complement sum of big-endian 16-bit words, folded.
fn ones_complement_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let hi = pair.first().copied().unwrap_or(0);
        let lo = pair.get(1).copied().unwrap_or(0);
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([hi, lo])));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

struct IpParsed {
    ip: IpHeader,
    header_len: usize,
    datagram_len: usize,
}

fn parse_ipv4(frame: &[u8]) -> Result<IpParsed, ParseError> {
    let hdr = frame.get(..IPV4_HEADER_LEN).ok_or(ParseError::Truncated)?;
    let mut r = ByteReader::new(hdr);
    let ver_ihl = r.u8()?;
    let tos = r.u8()?;
    let total_len = r.u16()?;
    let id = r.u16()?;
    let frag = r.u16()?;
    let ttl = r.u8()?;
    let protocol = r.u8()?;
    let _checksum = r.u16()?;
    let src = r.array::<4>()?;
    let dst = r.array::<4>()?;
    if ver_ihl & 0x0f != 5 || frag & IPV4_RESERVED != 0 {
        return Err(ParseError::BadIpHeader);
    }
    if ones_complement_sum(hdr) != 0xffff {
        return Err(ParseError::BadIpChecksum);
    }
    if frag & (IPV4_MF | IPV4_OFFSET) != 0 {
        return Err(ParseError::Fragmented);
    }
    if protocol != IPPROTO_UDP {
        return Err(ParseError::NotUdp(protocol));
    }
    let datagram_len = usize::from(total_len);
    if datagram_len < IPV4_HEADER_LEN + UDP_HEADER_LEN {
        return Err(ParseError::BadIpLength);
    }
    Ok(IpParsed {
        ip: IpHeader::V4(Ipv4 {
            tos,
            id,
            dont_fragment: frag & IPV4_DF != 0,
            ttl,
            src,
            dst,
        }),
        header_len: IPV4_HEADER_LEN,
        datagram_len,
    })
}

fn parse_ipv6(frame: &[u8]) -> Result<IpParsed, ParseError> {
    let mut r = ByteReader::new(frame);
    let word = r.u32()?;
    let payload_len = r.u16()?;
    let next_header = r.u8()?;
    let hop_limit = r.u8()?;
    let src = r.array::<16>()?;
    let dst = r.array::<16>()?;
    if next_header != IPPROTO_UDP {
        return Err(ParseError::NotUdp(next_header));
    }
    // Zero would mean a jumbogram, which needs an extension header anyway.
    if usize::from(payload_len) < UDP_HEADER_LEN {
        return Err(ParseError::BadIpLength);
    }
    Ok(IpParsed {
        ip: IpHeader::V6(Ipv6 {
            traffic_class: ((word >> 20) & 0xff) as u8,
            flow_label: word & 0x000f_ffff,
            hop_limit,
            src,
            dst,
        }),
        header_len: IPV6_HEADER_LEN,
        datagram_len: IPV6_HEADER_LEN + usize::from(payload_len),
    })
}

/// The IP header at the front of `frame`, whatever follows it: tells
/// which local address a packet that [`parse`] refuses was sent to, so the
/// drop can be counted by the device that owns the address.
pub fn parse_ip(frame: &[u8]) -> Result<IpHeader, ParseError> {
    let first = *frame.first().ok_or(ParseError::Truncated)?;
    let ip = match first >> 4 {
        4 => parse_ipv4(frame)?,
        6 => parse_ipv6(frame)?,
        v => return Err(ParseError::BadIpVersion(v)),
    };
    Ok(ip.ip)
}

/// Checks `frame` (starting at its IP header) as a RoCE v2 packet and
/// decodes it; `max_payload` is the largest payload accepted (the path
/// MTU), `crc` the CRC-32 primitive used for the ICRC.
///
/// A responder that wants to answer an oversized RC request with a NAK,
/// as rxe does, passes the largest MTU here and checks the path MTU
/// itself.
pub fn parse<'a, C: Crc32 + ?Sized>(
    frame: &'a [u8],
    max_payload: usize,
    crc: &C,
) -> Result<Packet<'a>, ParseError> {
    let first = *frame.first().ok_or(ParseError::Truncated)?;
    let ip = match first >> 4 {
        4 => parse_ipv4(frame)?,
        6 => parse_ipv6(frame)?,
        v => return Err(ParseError::BadIpVersion(v)),
    };
    let datagram = frame.get(..ip.datagram_len).ok_or(ParseError::Truncated)?;
    let udp_bytes = datagram
        .get(ip.header_len..)
        .ok_or(ParseError::BadIpLength)?;

    let mut r = ByteReader::new(udp_bytes);
    let src_port = r.u16()?;
    let dst_port = r.u16()?;
    let udp_len = r.u16()?;
    let checksum = r.u16()?;
    if dst_port != ROCE_V2_UDP_PORT {
        return Err(ParseError::WrongPort(dst_port));
    }
    if usize::from(udp_len) != udp_bytes.len() {
        return Err(ParseError::LengthMismatch);
    }
    let transport = r.rest();

    let bth = Bth::parse(transport).map_err(|_| ParseError::TooShort)?;
    let opcode = Opcode::from_u8(bth.opcode).ok_or(ParseError::UnknownOpcode(bth.opcode))?;
    if bth.tver != BTH_TVER {
        return Err(ParseError::BadTver(bth.tver));
    }
    let info = opcode.info();

    // transport = headers | payload | pad | ICRC
    let body_len = transport
        .len()
        .checked_sub(info.header_len)
        .and_then(|n| n.checked_sub(ICRC_LEN))
        .ok_or(ParseError::TooShort)?;
    let pad = usize::from(bth.pad);
    let payload_len = body_len.checked_sub(pad).ok_or(ParseError::BadPad)?;
    if !info.payload {
        if pad != 0 {
            return Err(ParseError::BadPad);
        }
        if payload_len != 0 {
            return Err(ParseError::UnexpectedPayload);
        }
    }
    if body_len % 4 != 0 {
        return Err(ParseError::BadPad);
    }
    let ext_bytes = transport.get(BTH_LEN..).ok_or(ParseError::TooShort)?;
    let ext = ExtHeaders::parse(info.headers, ext_bytes).map_err(|_| ParseError::TooShort)?;
    let body = transport
        .get(info.header_len..)
        .and_then(|b| b.get(..body_len))
        .ok_or(ParseError::TooShort)?;
    let payload = body.get(..payload_len).ok_or(ParseError::BadPad)?;
    let pad_bytes = body.get(payload_len..).ok_or(ParseError::BadPad)?;
    if pad_bytes.iter().any(|&b| b != 0) {
        return Err(ParseError::BadPad);
    }

    let received = icrc::stored(datagram).map_err(|_| ParseError::TooShort)?;
    let computed = icrc::compute(crc, datagram).map_err(|_| ParseError::TooShort)?;
    if computed != received {
        return Err(ParseError::BadIcrc { computed, received });
    }
    if payload_len > max_payload {
        return Err(ParseError::PayloadTooLarge {
            len: payload_len,
            max: max_payload,
        });
    }

    Ok(Packet {
        headers: Headers {
            ip: ip.ip,
            udp: Udp { src_port, checksum },
            bth,
            ext,
        },
        opcode,
        payload,
        icrc: computed,
        len: ip.datagram_len,
    })
}

/// The number of pad bytes that follow a payload of `payload_len` bytes.
pub const fn pad_for(payload_len: usize) -> u8 {
    (payload_len.wrapping_neg() & 3) as u8
}

/// The length of the packet [`build`] makes from `headers` and a payload
/// of `payload_len` bytes.
pub fn packet_len(headers: &Headers, payload_len: usize) -> Result<usize, BuildError> {
    let opcode =
        Opcode::from_u8(headers.bth.opcode).ok_or(BuildError::UnknownOpcode(headers.bth.opcode))?;
    let info = opcode.info();
    if !info.payload && payload_len != 0 {
        return Err(BuildError::UnexpectedPayload);
    }
    let udp_len = UDP_HEADER_LEN
        .checked_add(info.header_len)
        .and_then(|n| n.checked_add(payload_len))
        .and_then(|n| n.checked_add(usize::from(pad_for(payload_len))))
        .and_then(|n| n.checked_add(ICRC_LEN))
        .ok_or(BuildError::TooLong)?;
    let (len, limited) = match headers.ip {
        IpHeader::V4(_) => {
            let n = udp_len.checked_add(IPV4_HEADER_LEN);
            (n, n)
        }
        IpHeader::V6(_) => (udp_len.checked_add(IPV6_HEADER_LEN), Some(udp_len)),
    };
    match (len, limited) {
        (Some(len), Some(limited)) if limited <= usize::from(u16::MAX) => Ok(len),
        _ => Err(BuildError::TooLong),
    }
}

fn write_ip(ip: &IpHeader, udp_len: u16, out: &mut [u8]) -> Result<(), Truncated> {
    match ip {
        IpHeader::V4(v4) => {
            let total = udp_len
                .checked_add(IPV4_HEADER_LEN as u16)
                .ok_or(Truncated)?;
            let mut hdr = [0u8; IPV4_HEADER_LEN];
            let mut w = ByteWriter::new(&mut hdr, IPV4_HEADER_LEN)?;
            w.u8(0x45)?;
            w.u8(v4.tos)?;
            w.u16(total)?;
            w.u16(v4.id)?;
            w.u16(if v4.dont_fragment { IPV4_DF } else { 0 })?;
            w.u8(v4.ttl)?;
            w.u8(IPPROTO_UDP)?;
            w.u16(0)?;
            w.bytes(&v4.src)?;
            w.bytes(&v4.dst)?;
            let sum = !ones_complement_sum(&hdr);
            let [hi, lo] = sum.to_be_bytes();
            hdr[10] = hi;
            hdr[11] = lo;
            ByteWriter::new(out, IPV4_HEADER_LEN)?.bytes(&hdr)
        }
        IpHeader::V6(v6) => {
            let mut w = ByteWriter::new(out, IPV6_HEADER_LEN)?;
            w.u32((6 << 28) | (u32::from(v6.traffic_class) << 20) | (v6.flow_label & 0x000f_ffff))?;
            w.u16(udp_len)?;
            w.u8(IPPROTO_UDP)?;
            w.u8(v6.hop_limit)?;
            w.bytes(&v6.src)?;
            w.bytes(&v6.dst)
        }
    }
}

/// Writes the packet made of `headers` and `payload` to the front of
/// `out` and returns its length. `crc` computes the ICRC.
///
/// On error nothing useful has been written.
pub fn build<C: Crc32 + ?Sized>(
    headers: &Headers,
    payload: &[u8],
    crc: &C,
    out: &mut [u8],
) -> Result<usize, BuildError> {
    let (len, head_len) = write_head(headers, payload.len(), out)?;
    let frame = out
        .get_mut(..len)
        .ok_or(BuildError::BufferTooSmall { needed: len })?;
    let small = |_: Truncated| BuildError::BufferTooSmall { needed: len };
    let rest = frame.get_mut(head_len..).ok_or(BuildError::TooLong)?;
    let mut w = ByteWriter::new(rest, len - head_len).map_err(small)?;
    w.bytes(payload).map_err(small)?;
    let zeros = [0u8; 3];
    w.bytes(
        zeros
            .get(..usize::from(pad_for(payload.len())))
            .unwrap_or(&[]),
    )
    .map_err(small)?;
    w.bytes(&[0u8; ICRC_LEN]).map_err(small)?;
    icrc::fill(crc, frame).map_err(|_| BuildError::BufferTooSmall { needed: len })?;
    Ok(len)
}

/// The pad and ICRC that end a packet made by [`build_split`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trailer {
    bytes: [u8; 3 + ICRC_LEN],
    len: usize,
}

impl Trailer {
    /// The pad bytes (zeros) and the ICRC, as they follow the payload.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

/// The frame [`build`] makes of `headers` and `payload`, in three parts,
/// the payload not copied: the headers (IP, UDP, transport) are written to
/// the front of `head`, whose length is returned; then come `payload` as
/// given and the returned [`Trailer`] (pad and ICRC). The three in a row
/// are byte for byte what `build` writes (host-tested); a sender can hand
/// them to the network stack as they are, a copy fewer.
pub fn build_split<C: Crc32 + ?Sized>(
    headers: &Headers,
    payload: &[u8],
    crc: &C,
    head: &mut [u8],
) -> Result<(usize, Trailer), BuildError> {
    let (len, head_len) = write_head(headers, payload.len(), head)?;
    let pad = usize::from(pad_for(payload.len()));
    let zeros = [0u8; 3];
    let pad_bytes = zeros.get(..pad).unwrap_or(&[]);
    let written = head
        .get(..head_len)
        .ok_or(BuildError::BufferTooSmall { needed: len })?;
    let icrc = icrc::compute_parts(crc, written, &[payload, pad_bytes])
        .map_err(|_| BuildError::BufferTooSmall { needed: len })?;
    let mut t = Trailer {
        bytes: [0; 3 + ICRC_LEN],
        len: pad + ICRC_LEN,
    };
    if let Some(b) = t.bytes.get_mut(pad..pad + ICRC_LEN) {
        b.copy_from_slice(&icrc.to_le_bytes());
    }
    Ok((head_len, t))
}

/// Checks `headers` against a payload of `payload_len` bytes and writes
/// the IP, UDP and transport headers to the front of `out`: the whole
/// packet's length and the headers' length.
fn write_head(
    headers: &Headers,
    payload_len: usize,
    out: &mut [u8],
) -> Result<(usize, usize), BuildError> {
    let len = packet_len(headers, payload_len)?;
    let opcode =
        Opcode::from_u8(headers.bth.opcode).ok_or(BuildError::UnknownOpcode(headers.bth.opcode))?;
    let info = opcode.info();
    let found = headers.ext.set();
    if found != info.headers {
        return Err(BuildError::HeaderMismatch {
            expected: info.headers,
            found,
        });
    }
    let ip_len = headers.ip.header_len();
    let head_len = ip_len + UDP_HEADER_LEN + info.header_len;
    let head = out
        .get_mut(..head_len)
        .ok_or(BuildError::BufferTooSmall { needed: len })?;
    let udp_len = len.checked_sub(ip_len).ok_or(BuildError::TooLong)?;
    let udp_len16 = u16::try_from(udp_len).map_err(|_| BuildError::TooLong)?;
    let mut bth = headers.bth;
    bth.pad = pad_for(payload_len);

    // Anything short here would be a bug in packet_len(); report it as the
    // buffer being too small rather than panicking.
    let small = |_: Truncated| BuildError::BufferTooSmall { needed: len };
    write_ip(&headers.ip, udp_len16, head).map_err(small)?;
    let rest = head.get_mut(ip_len..).ok_or(BuildError::TooLong)?;
    let mut w = ByteWriter::new(rest, head_len - ip_len).map_err(small)?;
    w.u16(headers.udp.src_port).map_err(small)?;
    w.u16(ROCE_V2_UDP_PORT).map_err(small)?;
    w.u16(udp_len16).map_err(small)?;
    w.u16(headers.udp.checksum).map_err(small)?;
    let mut bth_bytes = [0u8; BTH_LEN];
    bth.write(&mut bth_bytes).map_err(small)?;
    w.bytes(&bth_bytes).map_err(small)?;
    let mut ext_bytes = [0u8; super::opcode::MAX_HEADER_LEN];
    let n = headers.ext.write(&mut ext_bytes).map_err(small)?;
    w.bytes(ext_bytes.get(..n).unwrap_or(&[])).map_err(small)?;
    Ok((len, head_len))
}

/// Why [`assemble`] made no packet: the frame [`build`] would make of the
/// same headers and payload would have been refused by it, or by
/// [`parse`] on the receiving side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssembleError {
    /// `build` refuses the headers and payload.
    Build(BuildError),
    /// `parse` refuses the frame `build` makes of them.
    Parse(ParseError),
}

/// The packet [`parse`] returns for the frame [`build`] makes of `headers`
/// and `payload`, without making that frame: for a sender and a receiver
/// in one kernel that need no wire between them (rxe's loopback when no
/// fault is armed). Its headers go through the same byte codecs, so they
/// come out as the receiver would decode them; the payload is not moved
/// and no ICRC is computed (`icrc` is 0, the one field that differs).
///
/// On a frame whose ICRC is right, `parse` can refuse what `build` made
/// only for a transport header version other than 0 or a payload above
/// `max_payload`, in that order; so does this.
pub fn assemble<'a>(
    headers: &Headers,
    payload: &'a [u8],
    max_payload: usize,
) -> Result<Packet<'a>, AssembleError> {
    use AssembleError::{Build, Parse};
    let len = packet_len(headers, payload.len()).map_err(Build)?;
    let opcode = Opcode::from_u8(headers.bth.opcode)
        .ok_or(Build(BuildError::UnknownOpcode(headers.bth.opcode)))?;
    let info = opcode.info();
    let found = headers.ext.set();
    if found != info.headers {
        return Err(Build(BuildError::HeaderMismatch {
            expected: info.headers,
            found,
        }));
    }
    let ip_len = headers.ip.header_len();
    let udp_len = len
        .checked_sub(ip_len)
        .and_then(|n| u16::try_from(n).ok())
        .ok_or(Build(BuildError::TooLong))?;
    // The headers as the receiving end decodes what the sending end
    // writes: the transport headers cut to their fields' widths
    // (`decoded`, host-tested against their codecs), the IP header as
    // `parse` decodes what `write_ip` writes (every field of ours goes
    // through unchanged but the flow label, cut to its 20 bits; the
    // lengths cannot be refused, a datagram holding at least UDP and
    // BTH), without its checksum made and checked again.
    let ip = match headers.ip {
        IpHeader::V4(v4) => IpHeader::V4(v4),
        IpHeader::V6(v6) => IpHeader::V6(Ipv6 {
            flow_label: v6.flow_label & 0x000f_ffff,
            ..v6
        }),
    };
    let mut bth = headers.bth;
    bth.pad = pad_for(payload.len());
    let bth = bth.decoded();
    if bth.tver != BTH_TVER {
        return Err(Parse(ParseError::BadTver(bth.tver)));
    }
    let ext = headers.ext.decoded();
    if payload.len() > max_payload {
        return Err(Parse(ParseError::PayloadTooLarge {
            len: payload.len(),
            max: max_payload,
        }));
    }
    Ok(Packet {
        headers: Headers {
            ip,
            udp: headers.udp,
            bth,
            ext,
        },
        opcode,
        payload,
        icrc: 0,
        len: ip_len + usize::from(udp_len),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_counts() {
        assert_eq!(pad_for(0), 0);
        assert_eq!(pad_for(1), 3);
        assert_eq!(pad_for(2), 2);
        assert_eq!(pad_for(3), 1);
        assert_eq!(pad_for(4), 0);
        assert_eq!(pad_for(usize::MAX), 1);
    }

    #[test]
    fn checksum_of_known_header() {
        // A header whose checksum field (0xb861) is known to be right.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ones_complement_sum(&hdr), 0xffff);
    }
}
