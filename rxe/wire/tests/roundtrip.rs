// SPDX-License-Identifier: GPL-2.0

//! Build then parse every opcode with payloads of several sizes, over IPv4
//! and IPv6; pad handling; every parse and build error.

mod common;

use common::*;
use rxe_wire::headers::{Aeth, Bth, ExtHeaders, Reth, Syndrome};
use rxe_wire::icrc::{self, crc32_le};
use rxe_wire::opcode::{ExtHeader, HeaderSet, Opcode};
use rxe_wire::packet::{
    build, packet_len, pad_for, parse, BuildError, Headers, IpHeader, Ipv4, ParseError, Udp,
    ROCE_V2_UDP_PORT,
};

const MTU: usize = 4096;

fn build_vec(h: &Headers, payload: &[u8]) -> Vec<u8> {
    let len = packet_len(h, payload.len()).unwrap();
    let mut out = vec![0xa5u8; len + 7];
    assert_eq!(build(h, payload, &crc32_le, &mut out), Ok(len));
    out.truncate(len);
    out
}

#[test]
fn every_opcode_every_size_both_ip_versions() {
    let mut rng = Rng::new(1);
    let mut checked = 0;
    for &op in Opcode::ALL {
        let info = op.info();
        let sizes: &[usize] = if info.payload {
            &[0, 1, 2, 3, 4, 5, 255, 256, 1023, MTU]
        } else {
            &[0]
        };
        for &v6 in &[false, true] {
            for &size in sizes {
                let h = sample_headers(op, v6, &mut rng);
                let payload = rng.bytes(size);
                let frame = build_vec(&h, &payload);

                let ip_len = if v6 { 40 } else { 20 };
                let pad = usize::from(pad_for(size));
                assert_eq!(
                    frame.len(),
                    ip_len + 8 + info.header_len + size + pad + 4,
                    "{}",
                    info.name
                );
                assert_eq!((size + pad) % 4, 0);
                assert_eq!(frame[ip_len + 8 + 1] >> 4 & 3, pad as u8);
                assert!(frame[ip_len + 8 + info.header_len + size..frame.len() - 4]
                    .iter()
                    .all(|&b| b == 0));
                assert_eq!(
                    icrc::stored(&frame).unwrap(),
                    reference_icrc(&frame),
                    "{}",
                    info.name
                );

                let pkt = parse(&frame, MTU, &crc32_le)
                    .unwrap_or_else(|e| panic!("{} {} bytes v6={v6}: {e:?}", info.name, size));
                let mut expect = h;
                expect.bth.pad = pad as u8;
                assert_eq!(pkt.headers, expect);
                assert_eq!(pkt.opcode, op);
                assert_eq!(pkt.payload, &payload[..]);
                assert_eq!(pkt.len, frame.len());
                assert_eq!(pkt.icrc, reference_icrc(&frame));
                assert_eq!(build_vec(&pkt.headers, pkt.payload), frame);

                // Trailing bytes after the datagram (Ethernet padding) are
                // ignored.
                let mut padded = frame.clone();
                padded.extend_from_slice(&[0x77; 9]);
                assert_eq!(parse(&padded, MTU, &crc32_le), Ok(pkt));
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * (11 + 49 * 10));
}

#[test]
fn header_layout_on_the_wire() {
    // RC RDMA WRITE ONLY with immediate over IPv4: check a few fields by
    // hand where the spec puts them.
    let mut h = Headers {
        ip: IpHeader::V4(Ipv4 {
            tos: 0x02,
            id: 0x0102,
            dont_fragment: true,
            ttl: 64,
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
        }),
        udp: Udp {
            src_port: 0xc123,
            checksum: 0,
        },
        bth: Bth::new(Opcode::RcRdmaWriteOnlyWithImmediate, 0x12_3456, 0xab_cdef),
        ext: ExtHeaders {
            reth: Some(Reth {
                va: 0x1122_3344_5566_7788,
                rkey: 0x99aa_bbcc,
                len: 6,
            }),
            immdt: Some(rxe_wire::ImmDt { imm: 0xdead_beef }),
            ..ExtHeaders::default()
        },
    };
    h.bth.ack_req = true;
    let f = build_vec(&h, b"abcdef");
    assert_eq!(&f[..4], &[0x45, 0x02, 0x00, 72]);
    assert_eq!(&f[4..8], &[0x01, 0x02, 0x40, 0x00]);
    assert_eq!(&f[8..10], &[64, 17]);
    assert_eq!(&f[20..28], &[0xc1, 0x23, 0x12, 0xb7, 0x00, 52, 0, 0]);
    assert_eq!(
        &f[28..40],
        &[0x0b, 0x20, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef]
    );
    assert_eq!(
        &f[40..56],
        &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0, 0, 0, 6]
    );
    assert_eq!(&f[56..60], &[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(&f[60..68], b"abcdef\0\0");
    assert_eq!(f.len(), 72);
}

fn ack(v6: bool) -> Headers {
    let mut rng = Rng::new(2);
    let mut h = sample_headers(Opcode::RcAcknowledge, v6, &mut rng);
    h.ext.aeth = Some(Aeth::new(Syndrome::Ack { credits: 3 }, 7));
    h
}

fn send(v6: bool) -> Headers {
    let mut rng = Rng::new(3);
    sample_headers(Opcode::RcSendOnly, v6, &mut rng)
}

fn bth_at(frame: &[u8]) -> usize {
    if frame[0] >> 4 == 6 {
        48
    } else {
        28
    }
}

fn set_pad(frame: &mut [u8], pad: u8) {
    let b = bth_at(frame) + 1;
    frame[b] = (frame[b] & !0x30) | (pad << 4);
    fix_icrc(frame);
}

#[test]
fn pad_handling() {
    for v6 in [false, true] {
        // Every payload length mod 4 gets the pad that makes it whole.
        for n in 0..12 {
            let f = build_vec(&send(v6), &vec![9u8; n]);
            let pkt = parse(&f, MTU, &crc32_le).unwrap();
            assert_eq!(usize::from(pkt.headers.bth.pad), (4 - n % 4) % 4);
            assert_eq!(pkt.payload.len(), n);
        }

        // The pad count only says how the bytes after the headers split
        // into payload and zero pad: 5 bytes of payload and 3 of pad read
        // as 8, 7 or 6 bytes of payload with another count, and that is
        // fine.
        let good = build_vec(&send(v6), b"12345");
        for pad in [0u8, 1, 2, 3] {
            let mut f = good.clone();
            set_pad(&mut f, pad);
            let pkt = parse(&f, MTU, &crc32_le).unwrap();
            assert_eq!(pkt.payload.len(), 8 - usize::from(pad));
            assert_eq!(&pkt.payload[..5], b"12345");
        }
        // But payload and pad must end on a 4-byte boundary.
        for extra in 1..4 {
            let f = grow(&good, extra);
            assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadPad));
        }
        // Non-zero pad bytes.
        let mut f = good.clone();
        let n = f.len();
        f[n - 5] = 1;
        fix_icrc(&mut f);
        assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadPad));
        // A pad count larger than payload and pad together.
        let mut f = build_vec(&send(v6), b"");
        set_pad(&mut f, 3);
        assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadPad));

        // An ACK (no payload) with a pad count.
        let mut f = build_vec(&ack(v6), b"");
        set_pad(&mut f, 1);
        assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadPad));
    }
}

/// Appends `extra` bytes before the ICRC and fixes every length field,
/// the IPv4 checksum and the ICRC.
fn grow(frame: &[u8], extra: usize) -> Vec<u8> {
    let mut f = frame[..frame.len() - 4].to_vec();
    f.extend(std::iter::repeat_n(0u8, extra + 4));
    let v6 = f[0] >> 4 == 6;
    let ip_len = if v6 { 40 } else { 20 };
    let udp_len = (f.len() - ip_len) as u16;
    if v6 {
        f[4..6].copy_from_slice(&udp_len.to_be_bytes());
    } else {
        let total = f.len() as u16;
        f[2..4].copy_from_slice(&total.to_be_bytes());
        fix_ipv4_checksum(&mut f);
    }
    f[ip_len + 4..ip_len + 6].copy_from_slice(&udp_len.to_be_bytes());
    fix_icrc(&mut f);
    f
}

#[test]
fn every_parse_error() {
    let c = &crc32_le;
    for v6 in [false, true] {
        let ip_len = if v6 { 40 } else { 20 };
        let good = build_vec(&send(v6), b"hello world");
        assert!(parse(&good, MTU, c).is_ok());

        // Truncated anywhere.
        for n in 0..good.len() {
            let e = parse(&good[..n], MTU, c).unwrap_err();
            assert_eq!(e, ParseError::Truncated, "cut at {n}");
        }

        let mut f = good.clone();
        f[0] = (f[0] & 0x0f) | 0x50;
        assert_eq!(parse(&f, MTU, c), Err(ParseError::BadIpVersion(5)));

        // Not UDP.
        let mut f = good.clone();
        f[if v6 { 6 } else { 9 }] = 6;
        fix_ipv4_checksum(&mut f);
        assert_eq!(parse(&f, MTU, c), Err(ParseError::NotUdp(6)));

        // IP length too small for IP + UDP.
        let mut f = good.clone();
        if v6 {
            f[4..6].copy_from_slice(&7u16.to_be_bytes());
        } else {
            f[2..4].copy_from_slice(&27u16.to_be_bytes());
            fix_ipv4_checksum(&mut f);
        }
        assert_eq!(parse(&f, MTU, c), Err(ParseError::BadIpLength));

        // Wrong port.
        let mut f = good.clone();
        f[ip_len + 2..ip_len + 4].copy_from_slice(&4792u16.to_be_bytes());
        assert_eq!(parse(&f, MTU, c), Err(ParseError::WrongPort(4792)));
        assert_eq!(ROCE_V2_UDP_PORT, 4791);

        // UDP length disagreeing with IP.
        for delta in [-1i32, 1] {
            let mut f = good.clone();
            let l = u16::from_be_bytes([f[ip_len + 4], f[ip_len + 5]]);
            let l = (i32::from(l) + delta) as u16;
            f[ip_len + 4..ip_len + 6].copy_from_slice(&l.to_be_bytes());
            assert_eq!(parse(&f, MTU, c), Err(ParseError::LengthMismatch));
        }

        // Unknown opcode, bad TVer.
        for bad in [0x15u8, 0x18, 0x2c, 0x5c, 0x60, 0x66, 0x81, 0xff] {
            let mut f = good.clone();
            f[ip_len + 8] = bad;
            assert_eq!(parse(&f, MTU, c), Err(ParseError::UnknownOpcode(bad)));
        }
        let mut f = good.clone();
        f[ip_len + 9] |= 0x01;
        assert_eq!(parse(&f, MTU, c), Err(ParseError::BadTver(1)));

        // Too short for the opcode's headers: an RC WRITE FIRST header on
        // a SEND-sized packet.
        let mut f = build_vec(&send(v6), b"");
        f[ip_len + 8] = Opcode::RcRdmaWriteFirst.value();
        fix_icrc(&mut f);
        assert_eq!(parse(&f, MTU, c), Err(ParseError::TooShort));
        // A datagram with no room for even a BTH.
        let tiny = grow(&build_vec(&send(v6), b""), 0);
        let mut t = tiny[..ip_len + 8 + 4].to_vec();
        let ul = 12u16;
        t[ip_len + 4..ip_len + 6].copy_from_slice(&ul.to_be_bytes());
        if v6 {
            t[4..6].copy_from_slice(&ul.to_be_bytes());
        } else {
            t[2..4].copy_from_slice(&((ip_len + 12) as u16).to_be_bytes());
            fix_ipv4_checksum(&mut t);
        }
        assert_eq!(parse(&t, MTU, c), Err(ParseError::TooShort));

        // Payload bytes after an ACK.
        let f = grow(&build_vec(&ack(v6), b""), 4);
        assert_eq!(parse(&f, MTU, c), Err(ParseError::UnexpectedPayload));

        // ICRC.
        let mut f = good.clone();
        let n = f.len();
        f[n - 1] ^= 0x80;
        match parse(&f, MTU, c) {
            Err(ParseError::BadIcrc { computed, received }) => {
                assert_eq!(computed ^ received, 0x8000_0000)
            }
            other => panic!("{other:?}"),
        }

        // Payload limit.
        assert_eq!(
            parse(&good, 10, c),
            Err(ParseError::PayloadTooLarge { len: 11, max: 10 })
        );
        assert!(parse(&good, 11, c).is_ok());
    }

    // IPv4 only: options, reserved flag, checksum, fragments.
    let good = build_vec(&send(false), b"x");
    let mut f = good.clone();
    f[0] = 0x46;
    fix_ipv4_checksum(&mut f);
    assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadIpHeader));
    let mut f = good.clone();
    f[6] |= 0x80;
    fix_ipv4_checksum(&mut f);
    assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadIpHeader));
    let mut f = good.clone();
    f[10] ^= 1;
    assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadIpChecksum));
    for frag in [0x2000u16, 0x0001, 0x4001] {
        let mut f = good.clone();
        f[6..8].copy_from_slice(&frag.to_be_bytes());
        fix_ipv4_checksum(&mut f);
        assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::Fragmented));
    }
    // DF alone is fine, and so is its absence.
    let mut f = good.clone();
    f[6] ^= 0x40;
    fix_ipv4_checksum(&mut f);
    fix_icrc(&mut f);
    assert!(parse(&f, MTU, &crc32_le).is_ok());
}

#[test]
fn every_build_error() {
    let c = &crc32_le;
    let h = send(false);
    let len = packet_len(&h, 5).unwrap();
    for n in 0..len {
        let mut out = vec![0u8; n];
        assert_eq!(
            build(&h, b"12345", c, &mut out),
            Err(BuildError::BufferTooSmall { needed: len })
        );
    }

    let mut bad = h;
    bad.bth.opcode = 0x15;
    let mut out = [0u8; 256];
    assert_eq!(
        build(&bad, b"", c, &mut out),
        Err(BuildError::UnknownOpcode(0x15))
    );

    let mut bad = h;
    bad.ext.reth = Some(Reth::default());
    assert_eq!(
        build(&bad, b"", c, &mut out),
        Err(BuildError::HeaderMismatch {
            expected: HeaderSet::EMPTY,
            found: HeaderSet::EMPTY.with(ExtHeader::Reth),
        })
    );

    assert_eq!(
        build(&ack(true), b"x", c, &mut out),
        Err(BuildError::UnexpectedPayload)
    );

    // The largest payloads that fit the 16-bit length fields.
    // (Payload and pad, a multiple of four, fill what is left.)
    let v4_max = (65535 - 20 - 8 - 12 - 4) & !3;
    assert!(packet_len(&send(false), v4_max).is_ok());
    assert_eq!(
        packet_len(&send(false), v4_max + 1),
        Err(BuildError::TooLong)
    );
    let v6_max = (65535 - 8 - 12 - 4) & !3;
    assert!(packet_len(&send(true), v6_max).is_ok());
    assert_eq!(
        packet_len(&send(true), v6_max + 1),
        Err(BuildError::TooLong)
    );
    assert_eq!(
        packet_len(&send(true), usize::MAX),
        Err(BuildError::TooLong)
    );

    // A maximum-size IPv4 packet builds and parses back.
    let payload = vec![0x5au8; v4_max];
    let f = build_vec(&send(false), &payload);
    assert_eq!(f.len(), 65532);
    let pkt = parse(&f, usize::MAX, c).unwrap();
    assert_eq!(pkt.payload.len(), v4_max);
}

#[test]
fn builder_takes_fields_as_given() {
    // The builder fixes the pad count but writes every other BTH field as
    // given, including a TVer the parser refuses.
    let mut h = send(true);
    h.bth.pad = 3;
    h.bth.tver = 2;
    let f = build_vec(&h, b"1234");
    assert_eq!(
        f[49],
        (u8::from(h.bth.solicited) << 7) | (u8::from(h.bth.migration) << 6) | 2
    );
    assert_eq!(parse(&f, MTU, &crc32_le), Err(ParseError::BadTver(2)));
}
