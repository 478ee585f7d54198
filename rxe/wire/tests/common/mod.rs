// SPDX-License-Identifier: GPL-2.0

//! Helpers shared by the integration tests: a deterministic PRNG, sample
//! headers for any opcode, and an ICRC written independently of the
//! crate's (bit by bit, from the rules in Documentation/rxe.rst).

#![allow(dead_code)]

use rxe_wire::headers::{
    Aeth, AtomicAckEth, AtomicEth, Bth, Deth, ExtHeaders, Feth, Ieth, ImmDt, Rdeth, Reth,
};
use rxe_wire::opcode::{ExtHeader, Opcode};
use rxe_wire::packet::{Headers, IpHeader, Ipv4, Ipv6, Udp};

/// SplitMix64: small, fast, and the same sequence everywhere.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn u32(&mut self) -> u32 {
        (self.u64() >> 32) as u32
    }

    pub(crate) fn u16(&mut self) -> u16 {
        (self.u64() >> 48) as u16
    }

    pub(crate) fn u8(&mut self) -> u8 {
        (self.u64() >> 56) as u8
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.u64() & 1 == 1
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.u64() % n as u64) as usize
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.u8()).collect()
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Extension headers with arbitrary contents for every header `op` needs.
pub(crate) fn sample_ext(op: Opcode, rng: &mut Rng) -> ExtHeaders {
    let mut ext = ExtHeaders::default();
    for h in op.info().headers.iter() {
        match h {
            ExtHeader::Rdeth => {
                ext.rdeth = Some(Rdeth {
                    resv8: rng.u8(),
                    een: rng.u32() & 0xff_ffff,
                })
            }
            ExtHeader::Deth => {
                ext.deth = Some(Deth {
                    qkey: rng.u32(),
                    resv8: rng.u8(),
                    src_qpn: rng.u32() & 0xff_ffff,
                })
            }
            ExtHeader::Feth => ext.feth = Some(Feth { bits: rng.u32() }),
            ExtHeader::Reth => {
                ext.reth = Some(Reth {
                    va: rng.u64(),
                    rkey: rng.u32(),
                    len: rng.u32(),
                })
            }
            ExtHeader::Aeth => {
                ext.aeth = Some(Aeth {
                    syndrome: rng.u8(),
                    msn: rng.u32() & 0xff_ffff,
                })
            }
            ExtHeader::AtomicEth => {
                ext.atomic_eth = Some(AtomicEth {
                    va: rng.u64(),
                    rkey: rng.u32(),
                    swap_add: rng.u64(),
                    compare: rng.u64(),
                })
            }
            ExtHeader::AtomicAckEth => ext.atomic_ack_eth = Some(AtomicAckEth { orig: rng.u64() }),
            ExtHeader::ImmDt => ext.immdt = Some(ImmDt { imm: rng.u32() }),
            ExtHeader::Ieth => ext.ieth = Some(Ieth { rkey: rng.u32() }),
        }
    }
    ext
}

/// Gives the 24-bit fields of the extension headers in `ext` (MSN, source
/// QPN, EE context) arbitrary 32-bit values, more than the wire holds.
pub(crate) fn widen_24_bit_fields(ext: &mut ExtHeaders, rng: &mut Rng) {
    if let Some(a) = &mut ext.aeth {
        a.msn = rng.u32();
    }
    if let Some(d) = &mut ext.deth {
        d.src_qpn = rng.u32();
    }
    if let Some(r) = &mut ext.rdeth {
        r.een = rng.u32();
    }
}

/// A BTH for `op` with every other field arbitrary (TVer 0, pad 0).
pub(crate) fn sample_bth(op: Opcode, rng: &mut Rng) -> Bth {
    Bth {
        opcode: op.value(),
        solicited: rng.bool(),
        migration: rng.bool(),
        pad: 0,
        tver: 0,
        pkey: rng.u16(),
        fecn: rng.bool(),
        becn: rng.bool(),
        resv6a: rng.u8() & 0x3f,
        dest_qpn: rng.u32() & 0xff_ffff,
        ack_req: rng.bool(),
        resv7: rng.u8() & 0x7f,
        psn: rng.u32() & 0xff_ffff,
    }
}

pub(crate) fn sample_ip(v6: bool, rng: &mut Rng) -> IpHeader {
    if v6 {
        let mut src = [0u8; 16];
        let mut dst = [0u8; 16];
        src.iter_mut().for_each(|b| *b = rng.u8());
        dst.iter_mut().for_each(|b| *b = rng.u8());
        IpHeader::V6(Ipv6 {
            traffic_class: rng.u8(),
            flow_label: rng.u32() & 0xf_ffff,
            hop_limit: rng.u8(),
            src,
            dst,
        })
    } else {
        IpHeader::V4(Ipv4 {
            tos: rng.u8(),
            id: rng.u16(),
            dont_fragment: rng.bool(),
            ttl: rng.u8(),
            src: rng.u32().to_be_bytes(),
            dst: rng.u32().to_be_bytes(),
        })
    }
}

pub(crate) fn sample_headers(op: Opcode, v6: bool, rng: &mut Rng) -> Headers {
    Headers {
        ip: sample_ip(v6, rng),
        udp: Udp {
            src_port: rng.u16(),
            checksum: if rng.bool() { 0 } else { rng.u16() },
        },
        bth: sample_bth(op, rng),
        ext: sample_ext(op, rng),
    }
}

/// CRC-32 one bit at a time, no table: the reference for everything else.
pub(crate) fn crc32_bitwise(seed: u32, data: &[u8]) -> u32 {
    let mut c = seed;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            let lsb = c & 1;
            c >>= 1;
            if lsb == 1 {
                c ^= 0xedb8_8320;
            }
        }
    }
    c
}

/// Byte offsets (from the IP header) of the bytes replaced by ones in the
/// ICRC pseudo-header, and for IPv6 the first byte whose low nibble is.
pub(crate) fn masked_offsets(v6: bool) -> Vec<usize> {
    if v6 {
        // traffic class + flow label (bytes 1-3 whole, low nibble of byte
        // 0 handled apart), hop limit, UDP checksum, BTH resv8a.
        vec![1, 2, 3, 7, 46, 47, 52]
    } else {
        // TOS, TTL, header checksum, UDP checksum, BTH resv8a.
        vec![1, 8, 10, 11, 26, 27, 32]
    }
}

/// The opcodes whose ICRC rxe computes with the data part restarting at
/// the BTH: RC_FLUSH, RD_ACKNOWLEDGE, RD_ATOMIC_ACKNOWLEDGE.
pub(crate) fn restarts_at_bth(opcode: u8) -> bool {
    matches!(opcode, 0x1c | 0x51 | 0x52)
}

/// The offsets of the bytes that do not count for the ICRC of `frame`:
/// [`masked_offsets`], except that where rxe restarts at the BTH the BTH
/// is covered a second time unmasked, so its resv8a byte (FECN, BECN)
/// counts after all.
pub(crate) fn uncovered_offsets(frame: &[u8]) -> Vec<usize> {
    let v6 = frame[0] >> 4 == 6;
    let bth = if v6 { 48 } else { 28 };
    let mut m = masked_offsets(v6);
    if restarts_at_bth(frame[bth]) {
        m.retain(|&o| o != bth + 4);
    }
    m
}

/// The ICRC of `frame` (IP header to ICRC inclusive) computed the long way:
/// eight 0xff bytes, the masked headers, the rest of the packet, one CRC
/// over the lot from all ones, inverted. For the three opcodes where rxe
/// restarts the data part at the BTH, that is modelled explicitly.
pub(crate) fn reference_icrc(frame: &[u8]) -> u32 {
    let v6 = frame[0] >> 4 == 6;
    let ip_len = if v6 { 40 } else { 20 };
    let bth = ip_len + 8;
    let end = frame.len() - 4;
    let mut masked = frame[..end].to_vec();
    for off in masked_offsets(v6) {
        masked[off] = 0xff;
    }
    if v6 {
        masked[0] |= 0x0f;
    }
    let mut data = vec![0xffu8; 8];
    let quirk_hdr_len = match frame[bth] {
        0x1c => Some(32), // RC_FLUSH
        0x51 => Some(20), // RD_ACKNOWLEDGE
        0x52 => Some(28), // RD_ATOMIC_ACKNOWLEDGE
        _ => None,
    };
    match quirk_hdr_len {
        None => data.extend_from_slice(&masked),
        Some(h) => {
            data.extend_from_slice(&masked[..bth + h]);
            data.extend_from_slice(&frame[bth..end]);
        }
    }
    !crc32_bitwise(0xffff_ffff, &data)
}

/// Recomputes the IPv4 header checksum in place (no-op for other frames).
pub(crate) fn fix_ipv4_checksum(frame: &mut [u8]) {
    if frame.len() < 20 || frame[0] >> 4 != 4 {
        return;
    }
    frame[10] = 0;
    frame[11] = 0;
    let mut sum = 0u32;
    for i in 0..10 {
        sum += u32::from(u16::from_be_bytes([frame[2 * i], frame[2 * i + 1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    frame[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The datagram length the IP header claims, if the header is there.
pub(crate) fn claimed_len(frame: &[u8]) -> Option<usize> {
    match frame.first()? >> 4 {
        4 if frame.len() >= 4 => Some(usize::from(u16::from_be_bytes([frame[2], frame[3]]))),
        6 if frame.len() >= 6 => Some(40 + usize::from(u16::from_be_bytes([frame[4], frame[5]]))),
        _ => None,
    }
}

/// Recomputes the ICRC of the datagram at the front of `frame`, if the
/// lengths allow it.
pub(crate) fn fix_icrc(frame: &mut [u8]) {
    if let Some(n) = claimed_len(frame) {
        if n <= frame.len() {
            let _ = rxe_wire::icrc::fill(&rxe_wire::icrc::crc32_le, &mut frame[..n]);
        }
    }
}
