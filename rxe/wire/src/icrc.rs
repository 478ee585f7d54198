// SPDX-License-Identifier: GPL-2.0

//! The invariant CRC (ICRC) that ends every RoCE v2 packet.
//!
//! The ICRC is a CRC-32 (the Ethernet polynomial, bit-reflected) over the
//! parts of a packet that no router or switch may change. RoCE v2 has no
//! InfiniBand LRH, so the computation starts as if eight bytes of 0xff
//! stood in its place, then covers the IP header, the UDP header and the
//! transport headers with the fields that do change on the way replaced by
//! ones:
//!
//! - IPv4: type of service, time to live and header checksum;
//! - IPv6: traffic class, flow label and hop limit;
//! - UDP: checksum;
//! - BTH: the byte holding FECN, BECN and the six reserved bits (resv8a).
//!
//! then continues over the payload and the pad bytes, unmasked. The ICRC
//! itself is not covered. The result is inverted, and stored least
//! significant byte first, which is how rxe stores the `u32` on the
//! little-endian machines it runs on (drivers/infiniband/sw/rxe/rxe_icrc.c)
//! and what RoCE NICs put on the wire.
//!
//! The CRC primitive is pluggable through [`Crc32`], so the kernel module
//! can hand in the kernel's `crc32_le()` while the host uses the table
//! driven [`crc32_le`] of this module. The convention is that of the kernel
//! function: `crc32_le(seed, bytes)` runs the reflected CRC-32 from `seed`
//! over `bytes` with no inversion on the way in or out.
//!
//! rxe computes the ICRC of three payload-less opcodes in an unusual way;
//! this module does the same, see
//! [`OpcodeInfo::icrc_data_offset`](super::opcode::OpcodeInfo::icrc_data_offset).
//!
//! This module uses only `core` and its sibling module `opcode`
//! (`super::opcode`), so the two must be compiled as modules of the same
//! parent.

use super::opcode::{Opcode, BTH_LEN, ICRC_LEN};

/// A CRC-32 primitive with the kernel's `crc32_le()` convention.
pub trait Crc32 {
    /// The reflected CRC-32 (polynomial 0xedb88320) of `data`, starting
    /// from `seed`, without pre- or post-inversion.
    fn crc32_le(&self, seed: u32, data: &[u8]) -> u32;
}

impl<F: Fn(u32, &[u8]) -> u32> Crc32 for F {
    fn crc32_le(&self, seed: u32, data: &[u8]) -> u32 {
        self(seed, data)
    }
}

const POLY: u32 = 0xedb8_8320;

const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static TABLE: [u32; 256] = make_table();

/// A table driven `crc32_le()` (one byte per step): the host's CRC, and a
/// fallback wherever no faster one is at hand.
pub fn crc32_le(seed: u32, data: &[u8]) -> u32 {
    data.iter().fold(seed, |crc, &b| {
        TABLE[usize::from((crc as u8) ^ b)] ^ (crc >> 8)
    })
}

/// The CRC state after the eight 0xff bytes that stand for the masked LRH,
/// starting from all ones: `crc32_le(0xffff_ffff, &[0xff; 8])`.
pub const ICRC_SEED: u32 = 0xdebb_20e3;

/// Why the ICRC of a frame could not be computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcError {
    /// The frame is shorter than IP, UDP and transport headers and ICRC.
    Truncated,
    /// The frame starts with neither an IPv4 nor an IPv6 header.
    BadIpVersion(u8),
}

const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const PSEUDO_MAX: usize = IPV6_LEN + UDP_LEN + BTH_LEN;

fn set_ones(buf: &mut [u8], at: usize) {
    if let Some(b) = buf.get_mut(at) {
        *b = 0xff;
    }
}

/// Computes the ICRC of `frame`: one packet from the first byte of its IP
/// header to the last byte of its ICRC field, whose contents are ignored.
///
/// The IP header is taken to be 20 bytes (IPv4, no options; callers
/// reject others first) or 40 bytes (IPv6, no extension headers), and the
/// UDP header to follow it directly; the lengths written in the headers
/// are covered but not interpreted. The value returned is the one to be
/// stored little-endian in the last four bytes.
pub fn compute<C: Crc32 + ?Sized>(crc: &C, frame: &[u8]) -> Result<u32, IcrcError> {
    let covered_len = frame
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(IcrcError::Truncated)?;
    compute_parts(
        crc,
        frame.get(..covered_len).ok_or(IcrcError::Truncated)?,
        &[],
    )
}

/// The ICRC of a packet held in parts, without its ICRC field: `head`
/// from the first byte of the IP header through at least the transport
/// headers, then the bytes of `rest` in order (a payload left where it
/// is, the pad). [`compute`] of the whole frame is this of its bytes but
/// the last four.
pub fn compute_parts<C: Crc32 + ?Sized>(
    crc: &C,
    head: &[u8],
    rest: &[&[u8]],
) -> Result<u32, IcrcError> {
    let version = head.first().ok_or(IcrcError::Truncated)? >> 4;
    let ip_len = match version {
        4 => IPV4_LEN,
        6 => IPV6_LEN,
        v => return Err(IcrcError::BadIpVersion(v)),
    };
    let pseudo_len = ip_len + UDP_LEN + BTH_LEN;
    let fixed = head.get(..pseudo_len).ok_or(IcrcError::Truncated)?;

    // The masked copy of IP, UDP and BTH headers.
    let mut pseudo = [0u8; PSEUDO_MAX];
    for (d, s) in pseudo.iter_mut().zip(fixed) {
        *d = *s;
    }
    if version == 4 {
        set_ones(&mut pseudo, 1); // type of service
        set_ones(&mut pseudo, 8); // time to live
        set_ones(&mut pseudo, 10); // header checksum
        set_ones(&mut pseudo, 11);
    } else {
        // The version nibble stays; traffic class and flow label go.
        if let Some(b) = pseudo.first_mut() {
            *b |= 0x0f;
        }
        set_ones(&mut pseudo, 1);
        set_ones(&mut pseudo, 2);
        set_ones(&mut pseudo, 3);
        set_ones(&mut pseudo, 7); // hop limit
    }
    set_ones(&mut pseudo, ip_len + 6); // UDP checksum
    set_ones(&mut pseudo, ip_len + 7);
    set_ones(&mut pseudo, ip_len + UDP_LEN + 4); // BTH resv8a

    let mut c = crc.crc32_le(ICRC_SEED, pseudo.get(..pseudo_len).unwrap_or(&[]));

    // Then the extension headers, payload and pad. Only the opcode's
    // header length and rxe's ICRC data offset matter here, and for an
    // unknown opcode (a CNP, say) both are simply the BTH's end.
    let transport = head.get(ip_len + UDP_LEN..).ok_or(IcrcError::Truncated)?;
    let (header_len, data_offset) = match transport.first().copied().and_then(Opcode::from_u8) {
        Some(op) => (op.info().header_len, op.info().icrc_data_offset),
        None => (BTH_LEN, BTH_LEN),
    };
    let ext = transport
        .get(BTH_LEN..header_len)
        .ok_or(IcrcError::Truncated)?;
    c = crc.crc32_le(c, ext);
    let data = transport.get(data_offset..).ok_or(IcrcError::Truncated)?;
    c = crc.crc32_le(c, data);
    for part in rest {
        c = crc.crc32_le(c, part);
    }
    Ok(!c)
}

/// The ICRC stored in the last four bytes of `frame`.
pub fn stored(frame: &[u8]) -> Result<u32, IcrcError> {
    let (_, tail) = frame
        .split_last_chunk::<ICRC_LEN>()
        .ok_or(IcrcError::Truncated)?;
    Ok(u32::from_le_bytes(*tail))
}

/// Whether the ICRC stored in `frame` is right.
pub fn verify<C: Crc32 + ?Sized>(crc: &C, frame: &[u8]) -> Result<bool, IcrcError> {
    Ok(compute(crc, frame)? == stored(frame)?)
}

/// Computes the ICRC of `frame` and stores it in its last four bytes.
pub fn fill<C: Crc32 + ?Sized>(crc: &C, frame: &mut [u8]) -> Result<u32, IcrcError> {
    let icrc = compute(crc, frame)?;
    let (_, tail) = frame
        .split_last_chunk_mut::<ICRC_LEN>()
        .ok_or(IcrcError::Truncated)?;
    *tail = icrc.to_le_bytes();
    Ok(icrc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitwise(seed: u32, data: &[u8]) -> u32 {
        let mut c = seed;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
        }
        c
    }

    #[test]
    fn table_matches_bitwise() {
        let data: std::vec::Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 3) as u8).collect();
        for len in [0, 1, 2, 3, 7, 64, 1000] {
            for seed in [0, !0, 0x1234_5678] {
                assert_eq!(crc32_le(seed, &data[..len]), bitwise(seed, &data[..len]));
            }
        }
        // The standard check value of CRC-32 ("123456789").
        assert_eq!(!crc32_le(!0, b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn seed_is_masked_lrh() {
        assert_eq!(crc32_le(!0, &[0xff; 8]), ICRC_SEED);
    }

    #[test]
    fn short_or_odd_frames_are_errors() {
        assert_eq!(compute(&crc32_le, &[]), Err(IcrcError::Truncated));
        assert_eq!(compute(&crc32_le, &[0x45; 43]), Err(IcrcError::Truncated));
        assert_eq!(
            compute(&crc32_le, &[0x55; 80]),
            Err(IcrcError::BadIpVersion(5))
        );
        assert_eq!(stored(&[1, 2, 3]), Err(IcrcError::Truncated));
        // An RC WRITE FIRST frame cut inside its RETH.
        let mut f = [0u8; 20 + 8 + 12 + 8 + 4];
        f[0] = 0x45;
        f[28] = 0x06;
        assert_eq!(compute(&crc32_le, &f), Err(IcrcError::Truncated));
    }
}
