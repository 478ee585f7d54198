// SPDX-License-Identifier: GPL-2.0

//! `build_split` (rxe's send path, the payload left where it is) against
//! `build`: the headers, the payload and the trailer in a row are the very
//! bytes `build` writes, ICRC included, for every opcode over IPv4 and
//! IPv6 and payloads of every pad; what `build` refuses, `build_split`
//! refuses with the same error; and its frames pass `parse`.

mod common;

use common::*;
use rxe_wire::icrc::crc32_le;
use rxe_wire::opcode::Opcode;
use rxe_wire::packet::{build, build_split, packet_len, parse, BuildError};

const MTU: usize = 4096;

#[test]
fn split_is_build() {
    let mut rng = Rng::new(0x5b11_7000);
    let (mut same, mut refused) = (0, 0);
    for i in 0..12_000 {
        let op = *rng.pick(Opcode::ALL);
        let v6 = rng.bool();
        let mut h = sample_headers(op, v6, &mut rng);
        if i % 5 == 4 {
            // Another opcode's extension headers, or an unknown opcode.
            h.bth.opcode = rng.u8();
        }
        let size = match rng.below(5) {
            0 => 0,
            1 => rng.below(8),
            2 => 65_400 + rng.below(200),
            _ => rng.below(MTU),
        };
        let payload = rng.bytes(size);
        let len = packet_len(&h, payload.len()).unwrap_or(64);
        let mut whole = vec![0u8; len.min(1 << 17)];
        let built = build(&h, &payload, &crc32_le, &mut whole);
        let mut head = [0u8; 128];
        let split = build_split(&h, &payload, &crc32_le, &mut head);
        match (built, split) {
            (Ok(n), Ok((head_len, trailer))) => {
                let mut joined = head[..head_len].to_vec();
                joined.extend_from_slice(&payload);
                joined.extend_from_slice(trailer.as_bytes());
                assert_eq!(joined, whole[..n], "{h:?} {size}");
                parse(&joined, 1 << 17, &crc32_le).expect("a built frame parses");
                same += 1;
            }
            (Err(a), Err(b)) => {
                assert_eq!(a, b, "{h:?} {size}");
                refused += 1;
            }
            (a, b) => panic!("build {a:?} but build_split {b:?} for {h:?} and {size} bytes"),
        }
    }
    assert!(same > 6_000 && refused > 1_200, "{same} {refused}");
}

#[test]
fn small_head_is_refused() {
    let mut rng = Rng::new(7);
    let h = sample_headers(Opcode::RcRdmaWriteFirst, true, &mut rng);
    let mut head = [0u8; 40];
    assert!(matches!(
        build_split(&h, &[1, 2, 3], &crc32_le, &mut head),
        Err(BuildError::BufferTooSmall { .. })
    ));
}
