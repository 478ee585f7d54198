// SPDX-License-Identifier: GPL-2.0

//! ICRC known answers and sensitivity: which bytes the ICRC covers and
//! which it does not.

mod common;

use common::*;
use rxe_wire::icrc::{self, crc32_le, IcrcError};
use rxe_wire::opcode::Opcode;
use rxe_wire::packet::{build, packet_len, parse, ParseError};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A congestion notification packet captured from a Mellanox ConnectX-4 Lx
/// NIC (published with scapy's RoCE tests), Ethernet header removed:
/// IPv4 with TOS 0xc2, UDP checksum 0, BTH opcode 0x81 (CNP) with BECN,
/// 16 reserved bytes, ICRC 82 fd 00 2a as sent by the hardware.
const CX4_CNP: &str = "
    45c2 003c 718c 4000 4011 9161 0a00 1101 0a00 1201
    0000 12b7 0028 0000
    8100 ffff 4000 0118 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    82fd 002a";

#[test]
fn hardware_captured_cnp() {
    let f = hex(CX4_CNP);
    assert_eq!(f.len(), 60);
    assert_eq!(icrc::stored(&f), Ok(0x2a00_fd82));
    assert_eq!(icrc::compute(&crc32_le, &f), Ok(0x2a00_fd82));
    assert_eq!(icrc::verify(&crc32_le, &f), Ok(true));
    assert_eq!(reference_icrc(&f), 0x2a00_fd82);
    // rxe does not know the CNP opcode, so neither does the parser.
    assert_eq!(
        parse(&f, 4096, &crc32_le),
        Err(ParseError::UnknownOpcode(0x81))
    );
}

/// scapy's example UC SEND ONLY packet (IPv4, TOS 1, UDP checksum 0xaca2,
/// MigReq, 18 bytes of payload and 2 of pad); scapy computed its ICRC,
/// 78 f3 53 f3, with its own implementation.
const SCAPY_UC_SEND: &str = "
    4501 0040 0478 4000 4011 b4d5 c0a8 0007 c0a8 0007
    c000 12b7 002c aca2
    2460 ffff 0000 00d3 00cf 1710
    4630 818b e289 35d9 0e9a 9550 5401 be88 5e50 0000
    78f3 53f3";

#[test]
fn scapy_uc_send_only() {
    let f = hex(SCAPY_UC_SEND);
    assert_eq!(icrc::compute(&crc32_le, &f), Ok(0xf353_f378));
    assert_eq!(reference_icrc(&f), 0xf353_f378);
    let pkt = parse(&f, 4096, &crc32_le).unwrap();
    assert_eq!(pkt.opcode, Opcode::UcSendOnly);
    assert!(pkt.headers.bth.migration);
    assert_eq!(pkt.headers.bth.pad, 2);
    assert_eq!(pkt.headers.bth.dest_qpn, 211);
    assert_eq!(pkt.headers.bth.psn, 13_571_856);
    assert_eq!(pkt.headers.udp.src_port, 49152);
    assert_eq!(pkt.headers.udp.checksum, 0xaca2);
    assert_eq!(pkt.payload.len(), 18);
    assert_eq!(&pkt.payload[..2], b"F0");
    // Rebuilding gives the same bytes.
    let mut out = vec![0u8; f.len()];
    assert_eq!(
        build(&pkt.headers, pkt.payload, &crc32_le, &mut out),
        Ok(f.len())
    );
    assert_eq!(out, f);
}

/// IPv6 RC RDMA WRITE ONLY with immediate: traffic class 0xb8, flow label
/// 0x12345, hop limit 63, UDP checksum 0x1234, SE, pad 3, FECN, AckReq.
/// The ICRC was computed while writing this test with Python's
/// zlib.crc32 over eight 0xff bytes and the masked packet.
const V6_WRITE_IMM: &str = "
    6b81 2345 0034 113f fe80 0000 0000 0000 0211 2233 4455 6677
    2001 0db8 0000 0000 0000 0000 0000 0001
    c0de 12b7 0034 1234
    0bb0 8001 8000 0123 80ab cdef
    0000 7f00 1234 5678 1122 3344 0000 0005
    cafe f00d
    dead beef 4200 0000
    bf0c d7b8";

#[test]
fn ipv6_known_answer() {
    let f = hex(V6_WRITE_IMM);
    assert_eq!(icrc::compute(&crc32_le, &f), Ok(0xb8d7_0cbf));
    assert_eq!(reference_icrc(&f), 0xb8d7_0cbf);
    let pkt = parse(&f, 4096, &crc32_le).unwrap();
    assert_eq!(pkt.opcode, Opcode::RcRdmaWriteOnlyWithImmediate);
    assert!(pkt.headers.bth.fecn && pkt.headers.bth.ack_req && pkt.headers.bth.solicited);
    assert_eq!(pkt.headers.ext.immdt.unwrap().imm, 0xcafe_f00d);
    assert_eq!(pkt.headers.ext.reth.unwrap().va, 0x7f00_1234_5678);
    assert_eq!(pkt.payload, &[0xde, 0xad, 0xbe, 0xef, 0x42]);
}

/// IPv4 RC FLUSH, ICRC computed the way rxe does for this opcode: the
/// masked headers, the FETH and RETH, then the whole transport header a
/// second time, unmasked (rxe_icrc.c takes the payload to start at offset
/// 0 because rxe_opcode.c gives FLUSH no payload offset). Derived from
/// reading the kernel source with Python's zlib; to be confirmed against a
/// packet captured from the kernel's rdma_rxe.
const V4_FLUSH: &str = "
    4500 0040 1234 4000 4011 1477 0a00 0001 0a00 0002
    d000 12b7 002c 0000
    1c00 ffff 0000 0011 8000 0100
    0000 0012
    0000 0000 0000 1000 55aa 55aa 0000 2000
    cb46 c896";

#[test]
fn flush_follows_rxe() {
    let f = hex(V4_FLUSH);
    assert_eq!(icrc::compute(&crc32_le, &f), Ok(0x96c8_46cb));
    assert_eq!(reference_icrc(&f), 0x96c8_46cb);
    let pkt = parse(&f, 4096, &crc32_le).unwrap();
    assert_eq!(pkt.opcode, Opcode::RcFlush);
    let feth = pkt.headers.ext.feth.unwrap();
    assert_eq!((feth.selectivity(), feth.placement_type()), (1, 2));
    // The plain IBTA computation would have given another value.
    let plain_icrc = !crc32_bitwise(!0, &{
        let mut d = vec![0xffu8; 8];
        let mut m = f[..f.len() - 4].to_vec();
        for o in masked_offsets(false) {
            m[o] = 0xff;
        }
        d.extend_from_slice(&m);
        d
    });
    assert_eq!(plain_icrc, 0xe350_665b);
    assert_ne!(plain_icrc, 0x96c8_46cb);
}

fn samples() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(77);
    let mut out = vec![hex(SCAPY_UC_SEND), hex(V6_WRITE_IMM), hex(V4_FLUSH)];
    for (op, n) in [
        (Opcode::RcSendOnly, 0usize),
        (Opcode::RcRdmaWriteFirst, 7),
        (Opcode::RcAtomicAcknowledge, 0),
        (Opcode::RcFlush, 0),
        (Opcode::RdAcknowledge, 0),
        (Opcode::UdSendOnlyWithImmediate, 33),
    ] {
        for v6 in [false, true] {
            let h = sample_headers(op, v6, &mut rng);
            let payload = rng.bytes(n);
            let mut f = vec![0u8; packet_len(&h, n).unwrap()];
            build(&h, &payload, &crc32_le, &mut f).unwrap();
            out.push(f);
        }
    }
    out
}

#[test]
fn every_covered_bit_matters() {
    for f in samples() {
        let v6 = f[0] >> 4 == 6;
        let masked = uncovered_offsets(&f);
        assert_eq!(icrc::verify(&crc32_le, &f), Ok(true));
        assert!(parse(&f, 65536, &crc32_le).is_ok());
        for i in 0..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[i] ^= 1 << bit;
                let in_mask = masked.contains(&i) || (v6 && i == 0 && bit < 4);
                let verdict = icrc::verify(&crc32_le, &g);
                if in_mask {
                    assert_eq!(verdict, Ok(true), "byte {i} bit {bit}");
                } else {
                    assert_ne!(verdict, Ok(true), "byte {i} bit {bit}");
                    assert!(parse(&g, 65536, &crc32_le).is_err(), "byte {i} bit {bit}");
                }
            }
        }
    }
}

#[test]
fn masked_fields_may_change_freely() {
    let mut rng = Rng::new(5);
    for f in samples() {
        let v6 = f[0] >> 4 == 6;
        let icrc = icrc::stored(&f).unwrap();
        for _ in 0..50 {
            let mut g = f.clone();
            for &o in &uncovered_offsets(&f) {
                g[o] = rng.u8();
            }
            if v6 {
                g[0] = 0x60 | (rng.u8() & 0x0f);
            }
            // The IPv4 checksum is masked too, so it does not matter for
            // the ICRC whether it is right...
            assert_eq!(icrc::compute(&crc32_le, &g), Ok(icrc));
            // ...but the parser wants it right.
            fix_ipv4_checksum(&mut g);
            let pkt = parse(&g, 65536, &crc32_le).unwrap();
            assert_eq!(pkt.icrc, icrc);
        }
    }
}

#[test]
fn pluggable_crc() {
    // Any Fn(seed, bytes) works, here the bit-by-bit reference.
    for f in samples() {
        assert_eq!(
            icrc::compute(&crc32_bitwise, &f),
            icrc::compute(&crc32_le, &f)
        );
        let dynamic: &dyn icrc::Crc32 = &crc32_bitwise;
        assert_eq!(icrc::verify(dynamic, &f), Ok(true));
    }
    let mut f = hex(CX4_CNP);
    let n = f.len();
    f[n - 4..].fill(0);
    assert_eq!(icrc::fill(&crc32_le, &mut f), Ok(0x2a00_fd82));
    assert_eq!(&f[n - 4..], &[0x82, 0xfd, 0x00, 0x2a]);
    assert_eq!(
        icrc::fill(&crc32_le, &mut [0x45u8; 10][..]),
        Err(IcrcError::Truncated)
    );
}
