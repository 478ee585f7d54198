// SPDX-License-Identifier: GPL-2.0

//! The transport headers of a RoCE v2 packet: the Base Transport Header and
//! the extension headers that may follow it.
//!
//! Each header is a plain struct with a `parse` from the front of a byte
//! slice and a `write` to the front of a mutable one, in network byte
//! order, with the bit layouts of the InfiniBand specification as rxe uses
//! them (drivers/infiniband/sw/rxe/rxe_hdr.h). Parsing is lossless: every
//! bit of the header, reserved ones included, lands in a field, so writing
//! a parsed header gives back the same bytes. Writing stores each field
//! masked to its width on the wire (a 24-bit QPN keeps its low 24 bits).
//! Neither ever panics: a slice that is too short is a [`Truncated`]
//! error, and a `write` that fails has written nothing.
//!
//! [`ExtHeaders`] holds the extension headers of one packet and reads or
//! writes them in wire order for a [`HeaderSet`].
//!
//! This module uses only `core` and its sibling module `opcode`
//! (`super::opcode`), so the two must be compiled as modules of the same
//! parent.

use super::opcode::{ExtHeader, HeaderSet, Opcode, BTH_LEN};

/// The slice was too short for the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated;

/// A bounds-checked big-endian reader over a byte slice.
#[derive(Clone, Debug)]
pub struct ByteReader<'a> {
    rest: &'a [u8],
}

impl<'a> ByteReader<'a> {
    /// A reader positioned at the start of `buf`.
    pub const fn new(buf: &'a [u8]) -> Self {
        ByteReader { rest: buf }
    }

    /// The bytes not read yet.
    pub const fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Takes the next `N` bytes.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        let (head, tail) = self.rest.split_first_chunk::<N>().ok_or(Truncated)?;
        self.rest = tail;
        Ok(*head)
    }

    /// Takes the next byte.
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }

    /// Takes the next big-endian 16-bit value.
    pub fn u16(&mut self) -> Result<u16, Truncated> {
        self.array().map(u16::from_be_bytes)
    }

    /// Takes the next big-endian 32-bit value.
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        self.array().map(u32::from_be_bytes)
    }

    /// Takes the next big-endian 64-bit value.
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        self.array().map(u64::from_be_bytes)
    }
}

/// A bounds-checked big-endian writer over a byte slice.
#[derive(Debug)]
pub struct ByteWriter<'a> {
    rest: &'a mut [u8],
}

impl<'a> ByteWriter<'a> {
    /// A writer over the first `len` bytes of `buf`, or [`Truncated`] if
    /// `buf` is shorter: checking the whole length first means a failed
    /// write leaves `buf` untouched.
    pub fn new(buf: &'a mut [u8], len: usize) -> Result<Self, Truncated> {
        let rest = buf.get_mut(..len).ok_or(Truncated)?;
        Ok(ByteWriter { rest })
    }

    /// Puts `bytes` next.
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), Truncated> {
        let rest = core::mem::take(&mut self.rest);
        if rest.len() < bytes.len() {
            self.rest = rest;
            return Err(Truncated);
        }
        let (head, tail) = rest.split_at_mut(bytes.len());
        for (d, s) in head.iter_mut().zip(bytes) {
            *d = *s;
        }
        self.rest = tail;
        Ok(())
    }

    /// Puts one byte next.
    pub fn u8(&mut self, v: u8) -> Result<(), Truncated> {
        self.bytes(&[v])
    }

    /// Puts a big-endian 16-bit value next.
    pub fn u16(&mut self, v: u16) -> Result<(), Truncated> {
        self.bytes(&v.to_be_bytes())
    }

    /// Puts a big-endian 32-bit value next.
    pub fn u32(&mut self, v: u32) -> Result<(), Truncated> {
        self.bytes(&v.to_be_bytes())
    }

    /// Puts a big-endian 64-bit value next.
    pub fn u64(&mut self, v: u64) -> Result<(), Truncated> {
        self.bytes(&v.to_be_bytes())
    }
}

const MASK24: u32 = 0x00ff_ffff;

/// The default (full-membership) partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// The only transport header version defined; rxe drops anything else.
pub const BTH_TVER: u8 = 0;
/// The destination QPN of multicast packets.
pub const MULTICAST_QPN: u32 = 0x00ff_ffff;
/// The Q_Key of the general services QP (QP1).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Base Transport Header (12 bytes).
///
/// Layout: opcode (8) | SE (1) M (1) PadCnt (2) TVer (4) | P_Key (16) |
/// FECN (1) BECN (1) resv6a (6) DestQP (24) | AckReq (1) resv7 (7) PSN (24).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bth {
    /// The opcode byte, as received (see [`Opcode::from_u8`]).
    pub opcode: u8,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request (MigReq).
    pub migration: bool,
    /// Number of pad bytes after the payload, 0 to 3.
    pub pad: u8,
    /// Transport header version (4 bits); 0 is the only one defined.
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Reserved (6 bits).
    pub resv6a: u8,
    /// Destination QP number (24 bits).
    pub dest_qpn: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Reserved (7 bits).
    pub resv7: u8,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

/// Whether two P_Keys are of one partition (IBTA 10.9.3): the same low 15
/// bits, at least one of them a full member, and neither the invalid key
/// (0x0000 or 0x8000).
pub const fn pkey_matches(a: u16, b: u16) -> bool {
    (a & 0x7fff) == (b & 0x7fff) && (a & 0x7fff) != 0 && ((a | b) & 0x8000) != 0
}

impl Bth {
    /// Length on the wire.
    pub const LEN: usize = BTH_LEN;

    /// A BTH with the default P_Key and every flag and reserved field
    /// clear, as rxe builds one.
    pub const fn new(opcode: Opcode, dest_qpn: u32, psn: u32) -> Bth {
        Bth {
            opcode: opcode as u8,
            solicited: false,
            migration: false,
            pad: 0,
            tver: BTH_TVER,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            resv6a: 0,
            dest_qpn: dest_qpn & MASK24,
            ack_req: false,
            resv7: 0,
            psn: psn & MASK24,
        }
    }

    /// Reads a BTH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Bth, Truncated> {
        let mut r = ByteReader::new(buf);
        let opcode = r.u8()?;
        let flags = r.u8()?;
        let pkey = r.u16()?;
        let qpn = r.u32()?;
        let apsn = r.u32()?;
        Ok(Bth {
            opcode,
            solicited: flags & 0x80 != 0,
            migration: flags & 0x40 != 0,
            pad: (flags >> 4) & 0x3,
            tver: flags & 0x0f,
            pkey,
            fecn: qpn & 0x8000_0000 != 0,
            becn: qpn & 0x4000_0000 != 0,
            resv6a: ((qpn >> 24) & 0x3f) as u8,
            dest_qpn: qpn & MASK24,
            ack_req: apsn & 0x8000_0000 != 0,
            resv7: ((apsn >> 24) & 0x7f) as u8,
            psn: apsn & MASK24,
        })
    }

    /// Writes the BTH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        let mut w = ByteWriter::new(buf, Self::LEN)?;
        let flags = (u8::from(self.solicited) << 7)
            | (u8::from(self.migration) << 6)
            | ((self.pad & 0x3) << 4)
            | (self.tver & 0x0f);
        let qpn = (u32::from(self.fecn) << 31)
            | (u32::from(self.becn) << 30)
            | (u32::from(self.resv6a & 0x3f) << 24)
            | (self.dest_qpn & MASK24);
        let apsn = (u32::from(self.ack_req) << 31)
            | (u32::from(self.resv7 & 0x7f) << 24)
            | (self.psn & MASK24);
        w.u8(self.opcode)?;
        w.u8(flags)?;
        w.u16(self.pkey)?;
        w.u32(qpn)?;
        w.u32(apsn)?;
        Ok(Self::LEN)
    }

    /// The BTH [`Bth::parse`] reads from what [`Bth::write`] writes of
    /// this one: every field cut to its width on the wire, without the
    /// bytes (`packet::assemble`).
    pub const fn decoded(&self) -> Bth {
        Bth {
            pad: self.pad & 0x3,
            tver: self.tver & 0x0f,
            resv6a: self.resv6a & 0x3f,
            dest_qpn: self.dest_qpn & MASK24,
            resv7: self.resv7 & 0x7f,
            psn: self.psn & MASK24,
            ..*self
        }
    }
}

/// Reliable Datagram Extended Transport Header (4 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rdeth {
    /// Reserved (8 bits).
    pub resv8: u8,
    /// EE context (24 bits).
    pub een: u32,
}

impl Rdeth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::Rdeth.wire_len();

    /// Reads an RDETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Rdeth, Truncated> {
        let v = ByteReader::new(buf).u32()?;
        Ok(Rdeth {
            resv8: (v >> 24) as u8,
            een: v & MASK24,
        })
    }

    /// Writes the RDETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        let mut w = ByteWriter::new(buf, Self::LEN)?;
        w.u32((u32::from(self.resv8) << 24) | (self.een & MASK24))?;
        Ok(Self::LEN)
    }

    /// What [`Rdeth::parse`] reads from what [`Rdeth::write`] writes.
    pub const fn decoded(&self) -> Rdeth {
        Rdeth {
            een: self.een & MASK24,
            ..*self
        }
    }
}

/// Datagram Extended Transport Header (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Reserved (8 bits).
    pub resv8: u8,
    /// Source QP number (24 bits).
    pub src_qpn: u32,
}

impl Deth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::Deth.wire_len();

    /// Reads a DETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Deth, Truncated> {
        let mut r = ByteReader::new(buf);
        let qkey = r.u32()?;
        let v = r.u32()?;
        Ok(Deth {
            qkey,
            resv8: (v >> 24) as u8,
            src_qpn: v & MASK24,
        })
    }

    /// Writes the DETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        let mut w = ByteWriter::new(buf, Self::LEN)?;
        w.u32(self.qkey)?;
        w.u32((u32::from(self.resv8) << 24) | (self.src_qpn & MASK24))?;
        Ok(Self::LEN)
    }

    /// What [`Deth::parse`] reads from what [`Deth::write`] writes.
    pub const fn decoded(&self) -> Deth {
        Deth {
            src_qpn: self.src_qpn & MASK24,
            ..*self
        }
    }
}

/// Flush Extended Transport Header (4 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Feth {
    /// The whole 32-bit word; see the accessors.
    pub bits: u32,
}

impl Feth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::Feth.wire_len();

    /// A FETH with the given selectivity level (2 bits) and placement type
    /// (4 bits).
    pub const fn new(selectivity: u8, placement_type: u8) -> Feth {
        Feth {
            bits: (((selectivity & 0x3) as u32) << 4) | ((placement_type & 0xf) as u32),
        }
    }

    /// Selectivity level (bits 5-4): 0 flushes a memory range, 1 a whole
    /// memory region.
    pub const fn selectivity(&self) -> u8 {
        ((self.bits >> 4) & 0x3) as u8
    }

    /// Placement type (bits 3-0): bit 0 global visibility, bit 1
    /// persistence.
    pub const fn placement_type(&self) -> u8 {
        (self.bits & 0xf) as u8
    }

    /// Reads a FETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Feth, Truncated> {
        Ok(Feth {
            bits: ByteReader::new(buf).u32()?,
        })
    }

    /// Writes the FETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        ByteWriter::new(buf, Self::LEN)?.u32(self.bits)?;
        Ok(Self::LEN)
    }
}

/// RDMA Extended Transport Header (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length of the whole operation.
    pub len: u32,
}

impl Reth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::Reth.wire_len();

    /// Reads a RETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Reth, Truncated> {
        let mut r = ByteReader::new(buf);
        Ok(Reth {
            va: r.u64()?,
            rkey: r.u32()?,
            len: r.u32()?,
        })
    }

    /// Writes the RETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        let mut w = ByteWriter::new(buf, Self::LEN)?;
        w.u64(self.va)?;
        w.u32(self.rkey)?;
        w.u32(self.len)?;
        Ok(Self::LEN)
    }
}

/// The reason code of a NAK (low five bits of a NAK syndrome).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error (0).
    PsnSequenceError,
    /// Invalid request (1).
    InvalidRequest,
    /// Remote access error (2).
    RemoteAccessError,
    /// Remote operational error (3).
    RemoteOperationalError,
    /// Invalid RD request (4).
    InvalidRdRequest,
    /// A reserved code (5 to 31).
    Reserved(u8),
}

impl NakCode {
    /// The code from its five bits.
    pub const fn from_bits(code: u8) -> NakCode {
        match code & 0x1f {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            c => NakCode::Reserved(c),
        }
    }

    /// The five bits of the code.
    pub const fn bits(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(c) => c & 0x1f,
        }
    }
}

/// A decoded AETH syndrome.
///
/// The top three bits give the kind (000 ACK, 001 RNR NAK, 011 NAK, the
/// rest reserved) and the low five bits its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement with the responder's credit count (five
    /// bits; [`Syndrome::CREDITS_INVALID`] means no credits are advertised).
    Ack {
        /// The credit count code.
        credits: u8,
    },
    /// Receiver not ready: retry after the time given by the timer code
    /// (see [`rnr_timer_usec`]).
    RnrNak {
        /// The RNR timer code (five bits).
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
    /// A reserved kind; the whole syndrome byte.
    Reserved(u8),
}

impl Syndrome {
    /// The credit count code that advertises no credits (rxe's
    /// `AETH_ACK_UNLIMITED`).
    pub const CREDITS_INVALID: u8 = 0x1f;

    /// Decodes a syndrome byte.
    pub const fn from_u8(syndrome: u8) -> Syndrome {
        let arg = syndrome & 0x1f;
        match syndrome & 0xe0 {
            0x00 => Syndrome::Ack { credits: arg },
            0x20 => Syndrome::RnrNak { timer: arg },
            0x60 => Syndrome::Nak(NakCode::from_bits(arg)),
            _ => Syndrome::Reserved(syndrome),
        }
    }

    /// Encodes the syndrome byte.
    pub const fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code.bits(),
            Syndrome::Reserved(s) => s,
        }
    }
}

/// The time an RNR timer code stands for, in microseconds (IBTA table
/// "Encoding for RNR NAK Timer Field"). Only the low five bits of `code`
/// count. Code 25 is 61.44 ms; rxe's own table has 61410 there, a typo
/// with no effect on the wire.
pub const fn rnr_timer_usec(code: u8) -> u32 {
    const TABLE: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560,
        3_840, 5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880,
        163_840, 245_760, 327_680, 491_520,
    ];
    TABLE[(code & 0x1f) as usize]
}

/// ACK Extended Transport Header (4 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Aeth {
    /// The raw syndrome byte (see [`Aeth::syndrome`]).
    pub syndrome: u8,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::Aeth.wire_len();

    /// An AETH carrying `syndrome` and `msn`.
    pub const fn new(syndrome: Syndrome, msn: u32) -> Aeth {
        Aeth {
            syndrome: syndrome.to_u8(),
            msn: msn & MASK24,
        }
    }

    /// The decoded syndrome.
    pub const fn syndrome(&self) -> Syndrome {
        Syndrome::from_u8(self.syndrome)
    }

    /// Reads an AETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Aeth, Truncated> {
        let v = ByteReader::new(buf).u32()?;
        Ok(Aeth {
            syndrome: (v >> 24) as u8,
            msn: v & MASK24,
        })
    }

    /// Writes the AETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        let mut w = ByteWriter::new(buf, Self::LEN)?;
        w.u32((u32::from(self.syndrome) << 24) | (self.msn & MASK24))?;
        Ok(Self::LEN)
    }

    /// What [`Aeth::parse`] reads from what [`Aeth::write`] writes.
    pub const fn decoded(&self) -> Aeth {
        Aeth {
            msn: self.msn & MASK24,
            ..*self
        }
    }
}

/// Atomic Extended Transport Header (28 bytes, not padded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// The value to swap in (compare and swap) or to add (fetch and add).
    pub swap_add: u64,
    /// The value to compare with (compare and swap only).
    pub compare: u64,
}

impl AtomicEth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::AtomicEth.wire_len();

    /// Reads an AtomicETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<AtomicEth, Truncated> {
        let mut r = ByteReader::new(buf);
        Ok(AtomicEth {
            va: r.u64()?,
            rkey: r.u32()?,
            swap_add: r.u64()?,
            compare: r.u64()?,
        })
    }

    /// Writes the AtomicETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        let mut w = ByteWriter::new(buf, Self::LEN)?;
        w.u64(self.va)?;
        w.u32(self.rkey)?;
        w.u64(self.swap_add)?;
        w.u64(self.compare)?;
        Ok(Self::LEN)
    }
}

/// Atomic ACK Extended Transport Header (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicAckEth {
    /// The remote value before the atomic operation.
    pub orig: u64,
}

impl AtomicAckEth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::AtomicAckEth.wire_len();

    /// Reads an AtomicAckETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<AtomicAckEth, Truncated> {
        Ok(AtomicAckEth {
            orig: ByteReader::new(buf).u64()?,
        })
    }

    /// Writes the AtomicAckETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        ByteWriter::new(buf, Self::LEN)?.u64(self.orig)?;
        Ok(Self::LEN)
    }
}

/// Immediate data (4 bytes).
///
/// `imm` is the big-endian reading of the four bytes on the wire; the verbs
/// layer keeps immediate data as a big-endian `__be32`, whose bytes are
/// `imm.to_be_bytes()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ImmDt {
    /// The immediate value.
    pub imm: u32,
}

impl ImmDt {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::ImmDt.wire_len();

    /// Reads immediate data from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<ImmDt, Truncated> {
        Ok(ImmDt {
            imm: ByteReader::new(buf).u32()?,
        })
    }

    /// Writes the immediate data to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        ByteWriter::new(buf, Self::LEN)?.u32(self.imm)?;
        Ok(Self::LEN)
    }
}

/// Invalidate Extended Transport Header (4 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ieth {
    /// The remote key to invalidate.
    pub rkey: u32,
}

impl Ieth {
    /// Length on the wire.
    pub const LEN: usize = ExtHeader::Ieth.wire_len();

    /// Reads an IETH from the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Ieth, Truncated> {
        Ok(Ieth {
            rkey: ByteReader::new(buf).u32()?,
        })
    }

    /// Writes the IETH to the front of `buf`; returns its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        ByteWriter::new(buf, Self::LEN)?.u32(self.rkey)?;
        Ok(Self::LEN)
    }
}

/// The extension headers of one packet; `Some` for each one present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    /// RDETH.
    pub rdeth: Option<Rdeth>,
    /// DETH.
    pub deth: Option<Deth>,
    /// FETH.
    pub feth: Option<Feth>,
    /// RETH.
    pub reth: Option<Reth>,
    /// AETH.
    pub aeth: Option<Aeth>,
    /// AtomicETH.
    pub atomic_eth: Option<AtomicEth>,
    /// AtomicAckETH.
    pub atomic_ack_eth: Option<AtomicAckEth>,
    /// Immediate data.
    pub immdt: Option<ImmDt>,
    /// IETH.
    pub ieth: Option<Ieth>,
}

impl ExtHeaders {
    /// Which headers are present.
    pub fn set(&self) -> HeaderSet {
        let mut set = HeaderSet::EMPTY;
        for (present, h) in [
            (self.rdeth.is_some(), ExtHeader::Rdeth),
            (self.deth.is_some(), ExtHeader::Deth),
            (self.feth.is_some(), ExtHeader::Feth),
            (self.reth.is_some(), ExtHeader::Reth),
            (self.aeth.is_some(), ExtHeader::Aeth),
            (self.atomic_eth.is_some(), ExtHeader::AtomicEth),
            (self.atomic_ack_eth.is_some(), ExtHeader::AtomicAckEth),
            (self.immdt.is_some(), ExtHeader::ImmDt),
            (self.ieth.is_some(), ExtHeader::Ieth),
        ] {
            if present {
                set = set.with(h);
            }
        }
        set
    }

    /// Total length of the present headers, in bytes.
    pub fn wire_len(&self) -> usize {
        self.set().wire_len()
    }

    /// Reads the headers of `set`, in wire order, from the front of `buf`
    /// (which starts right after the BTH).
    pub fn parse(set: HeaderSet, buf: &[u8]) -> Result<ExtHeaders, Truncated> {
        let mut ext = ExtHeaders::default();
        let mut rest = buf;
        for h in set.iter() {
            match h {
                ExtHeader::Rdeth => ext.rdeth = Some(Rdeth::parse(rest)?),
                ExtHeader::Deth => ext.deth = Some(Deth::parse(rest)?),
                ExtHeader::Feth => ext.feth = Some(Feth::parse(rest)?),
                ExtHeader::Reth => ext.reth = Some(Reth::parse(rest)?),
                ExtHeader::Aeth => ext.aeth = Some(Aeth::parse(rest)?),
                ExtHeader::AtomicEth => ext.atomic_eth = Some(AtomicEth::parse(rest)?),
                ExtHeader::AtomicAckEth => ext.atomic_ack_eth = Some(AtomicAckEth::parse(rest)?),
                ExtHeader::ImmDt => ext.immdt = Some(ImmDt::parse(rest)?),
                ExtHeader::Ieth => ext.ieth = Some(Ieth::parse(rest)?),
            }
            rest = rest.get(h.wire_len()..).ok_or(Truncated)?;
        }
        Ok(ext)
    }

    /// Writes the present headers, in wire order, to the front of `buf`;
    /// returns their total length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, Truncated> {
        fn put<T>(
            header: Option<T>,
            dst: &mut [u8],
            write: fn(&T, &mut [u8]) -> Result<usize, Truncated>,
        ) -> Result<usize, Truncated> {
            match header {
                Some(h) => write(&h, dst),
                None => Ok(0),
            }
        }

        let len = self.wire_len();
        let buf = buf.get_mut(..len).ok_or(Truncated)?;
        let mut off = 0usize;
        for h in self.set().iter() {
            let dst = buf.get_mut(off..).ok_or(Truncated)?;
            let n = match h {
                ExtHeader::Rdeth => put(self.rdeth, dst, Rdeth::write)?,
                ExtHeader::Deth => put(self.deth, dst, Deth::write)?,
                ExtHeader::Feth => put(self.feth, dst, Feth::write)?,
                ExtHeader::Reth => put(self.reth, dst, Reth::write)?,
                ExtHeader::Aeth => put(self.aeth, dst, Aeth::write)?,
                ExtHeader::AtomicEth => put(self.atomic_eth, dst, AtomicEth::write)?,
                ExtHeader::AtomicAckEth => put(self.atomic_ack_eth, dst, AtomicAckEth::write)?,
                ExtHeader::ImmDt => put(self.immdt, dst, ImmDt::write)?,
                ExtHeader::Ieth => put(self.ieth, dst, Ieth::write)?,
            };
            off = off.checked_add(n).ok_or(Truncated)?;
        }
        Ok(len)
    }

    /// The headers [`ExtHeaders::parse`] reads, for the set these hold,
    /// from what [`ExtHeaders::write`] writes of them: each cut to its
    /// fields' widths on the wire, without the bytes (`packet::assemble`).
    /// The headers whose every field fills its bytes come back as they
    /// are.
    pub fn decoded(&self) -> ExtHeaders {
        ExtHeaders {
            rdeth: self.rdeth.map(|h| h.decoded()),
            deth: self.deth.map(|h| h.decoded()),
            aeth: self.aeth.map(|h| h.decoded()),
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkey_partitions() {
        assert!(pkey_matches(0xffff, 0xffff));
        assert!(pkey_matches(0x7fff, 0xffff));
        assert!(pkey_matches(0xffff, 0x7fff));
        assert!(!pkey_matches(0x7fff, 0x7fff), "two limited members");
        assert!(!pkey_matches(0x1234, 0xffff));
        assert!(!pkey_matches(0x8000, 0x8000), "the invalid key");
        assert!(!pkey_matches(0x0000, 0x8000));
    }

    #[test]
    fn bth_bit_layout() {
        let bytes = [
            0x0a, 0xa7, 0x12, 0x34, 0xd5, 0xab, 0xcd, 0xef, 0xfe, 0x01, 0x02, 0x03,
        ];
        let bth = Bth::parse(&bytes).unwrap();
        assert_eq!(bth.opcode, 0x0a);
        assert!(bth.solicited);
        assert!(!bth.migration);
        assert_eq!(bth.pad, 2);
        assert_eq!(bth.tver, 7);
        assert_eq!(bth.pkey, 0x1234);
        assert!(bth.fecn);
        assert!(bth.becn);
        assert_eq!(bth.resv6a, 0x15);
        assert_eq!(bth.dest_qpn, 0xabcdef);
        assert!(bth.ack_req);
        assert_eq!(bth.resv7, 0x7e);
        assert_eq!(bth.psn, 0x010203);
        let mut out = [0u8; 12];
        assert_eq!(bth.write(&mut out), Ok(12));
        assert_eq!(out, bytes);
        assert_eq!(Bth::parse(&bytes[..11]), Err(Truncated));
        let mut short = [0x55u8; 11];
        assert_eq!(bth.write(&mut short), Err(Truncated));
        assert_eq!(short, [0x55u8; 11]);
    }

    #[test]
    fn syndromes_round_trip() {
        for s in 0..=255u8 {
            assert_eq!(Syndrome::from_u8(s).to_u8(), s);
        }
        assert_eq!(Syndrome::from_u8(0x1f), Syndrome::Ack { credits: 0x1f });
        assert_eq!(Syndrome::from_u8(0x2e), Syndrome::RnrNak { timer: 0x0e });
        assert_eq!(
            Syndrome::from_u8(0x60),
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(
            Syndrome::from_u8(0x63),
            Syndrome::Nak(NakCode::RemoteOperationalError)
        );
        assert_eq!(Syndrome::from_u8(0x40), Syndrome::Reserved(0x40));
        assert_eq!(Syndrome::from_u8(0x80), Syndrome::Reserved(0x80));
        assert_eq!(rnr_timer_usec(0), 655_360);
        assert_eq!(rnr_timer_usec(14), 1_280);
        assert_eq!(rnr_timer_usec(31 + 32), 491_520);
    }
}
