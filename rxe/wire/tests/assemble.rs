// SPDX-License-Identifier: GPL-2.0

//! `assemble` (rxe's loopback without a frame) against `parse(build(..))`:
//! for every input, the same packet or the same refusal, field for field
//! but the ICRC; including headers with bits their fields do not hold, a
//! transport version other than 0, wrong extension headers, payloads too
//! long for the limit or for an IP datagram, and unknown opcodes.

mod common;

use common::*;
use rxe_wire::icrc::crc32_le;
use rxe_wire::opcode::Opcode;
use rxe_wire::packet::{
    assemble, build, packet_len, parse, AssembleError, BuildError, Headers, IpHeader,
};

const MTU: usize = 4096;

/// What the wire path makes of `h` and `payload`: the packet the receiver
/// parses (ICRC cleared), or which side refused it.
fn through_a_frame(h: &Headers, payload: &[u8], max: usize) -> Result<Vec<u8>, AssembleError> {
    let len = packet_len(h, payload.len()).unwrap_or(64);
    let mut out = vec![0u8; len.min(1 << 17)];
    let n = build(h, payload, &crc32_le, &mut out).map_err(AssembleError::Build)?;
    let pkt = parse(&out[..n], max, &crc32_le).map_err(AssembleError::Parse)?;
    Ok(describe(&rxe_wire::packet::Packet { icrc: 0, ..pkt }))
}

fn describe(p: &rxe_wire::packet::Packet<'_>) -> Vec<u8> {
    format!("{:?}", p).into_bytes()
}

/// Headers with some fields pushed out of their range or made wrong.
fn disturb(h: &mut Headers, rng: &mut Rng) {
    match rng.below(9) {
        0 => h.bth.psn = rng.u32(),
        1 => h.bth.dest_qpn = rng.u32(),
        2 => {
            h.bth.pad = rng.u8();
            h.bth.resv6a = rng.u8();
            h.bth.resv7 = rng.u8();
        }
        3 => h.bth.tver = rng.u8() & 0x1f,
        4 => h.bth.opcode = rng.u8(),
        5 => {
            // Another opcode's extension headers.
            let other = *rng.pick(Opcode::ALL);
            h.ext = sample_ext(other, rng);
        }
        6 => {
            if let IpHeader::V6(v6) = &mut h.ip {
                v6.flow_label = rng.u32();
            }
        }
        7 => {
            widen_24_bit_fields(&mut h.ext, rng);
        }
        _ => {}
    }
}

#[test]
fn assemble_is_parse_of_build() {
    let mut rng = Rng::new(0x100b_bacc);
    let (mut same, mut refused) = (0, 0);
    for i in 0..30_000 {
        let op = *rng.pick(Opcode::ALL);
        let v6 = rng.bool();
        let mut h = sample_headers(op, v6, &mut rng);
        if i % 2 == 1 {
            disturb(&mut h, &mut rng);
        }
        let size = match rng.below(6) {
            0 => 0,
            1 => rng.below(8),
            2 => rng.below(300),
            3 => MTU - 3 + rng.below(8),
            4 => 65_400 + rng.below(200),
            _ => rng.below(MTU),
        };
        let payload = rng.bytes(size);
        let max = if rng.below(4) == 0 {
            rng.below(MTU)
        } else {
            MTU
        };
        let direct = assemble(&h, &payload, max);
        let wire = through_a_frame(&h, &payload, max);
        match (&direct, &wire) {
            (Ok(p), Ok(w)) => {
                assert_eq!(&describe(p), w, "{h:?}");
                assert!(
                    core::ptr::eq(p.payload, &payload[..]),
                    "the payload was moved"
                );
                same += 1;
            }
            (Err(a), Err(b)) => {
                // A too-small buffer cannot happen for build here.
                assert!(!matches!(
                    b,
                    AssembleError::Build(BuildError::BufferTooSmall { .. })
                ));
                assert_eq!(a, b, "{h:?} {size}");
                refused += 1;
            }
            _ => panic!("assemble {direct:?} but the wire {wire:?} for {h:?} and {size} bytes"),
        }
    }
    // Both kinds of outcome were exercised, and often.
    assert!(same > 15_000 && refused > 3_000, "{same} {refused}");
}
