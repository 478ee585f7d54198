// SPDX-License-Identifier: GPL-2.0

//! Feed the parser a large deterministic stream of hostile input: random
//! bytes and mutated valid packets of random lengths. It must never panic,
//! and whatever it accepts must build back into the same bytes.

mod common;

use std::collections::BTreeMap;

use common::*;
use rxe_wire::icrc::crc32_le;
use rxe_wire::opcode::Opcode;
use rxe_wire::packet::{build, packet_len, parse, Packet};

const ITERATIONS: usize = 200_000;

fn valid_packet(rng: &mut Rng) -> Vec<u8> {
    let op = *rng.pick(Opcode::ALL);
    let v6 = rng.bool();
    let h = sample_headers(op, v6, rng);
    let n = if !op.info().payload {
        0
    } else if rng.below(16) == 0 {
        rng.below(4097)
    } else {
        rng.below(80)
    };
    let payload = rng.bytes(n);
    let mut f = vec![0u8; packet_len(&h, n).unwrap()];
    build(&h, &payload, &crc32_le, &mut f).unwrap();
    f
}

fn mutate(f: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..1 + rng.below(4) {
        match rng.below(9) {
            // Flip a bit.
            0 | 1 => {
                if !f.is_empty() {
                    let i = rng.below(f.len());
                    f[i] ^= 1 << rng.below(8);
                }
            }
            // Replace a byte.
            2 => {
                if !f.is_empty() {
                    let i = rng.below(f.len());
                    f[i] = rng.u8();
                }
            }
            // Cut the frame short.
            3 => {
                let n = rng.below(f.len() + 1);
                f.truncate(n);
            }
            // Add bytes at the end.
            4 => {
                let k = rng.below(12);
                let extra = rng.bytes(k);
                f.extend_from_slice(&extra);
            }
            // Overwrite a length, port, opcode or flags field.
            5 => {
                let v6 = f.first().is_some_and(|b| b >> 4 == 6);
                let ip = if v6 { 40 } else { 20 };
                let spots = [2, 4, ip + 2, ip + 4, ip + 8, ip + 9];
                let at = *rng.pick(&spots);
                if at + 2 <= f.len() {
                    let v = match rng.below(3) {
                        0 => rng.u16(),
                        1 => (f.len() as u16).wrapping_sub(rng.below(64) as u16),
                        _ => rng.below(8) as u16,
                    };
                    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
                }
            }
            // Another opcode in the BTH.
            6 => {
                let v6 = f.first().is_some_and(|b| b >> 4 == 6);
                let at = if v6 { 48 } else { 28 };
                if at < f.len() {
                    f[at] = if rng.bool() {
                        rng.pick(Opcode::ALL).value()
                    } else {
                        rng.u8()
                    };
                }
            }
            // Another pad count.
            7 => {
                let v6 = f.first().is_some_and(|b| b >> 4 == 6);
                let at = if v6 { 49 } else { 29 };
                if at < f.len() {
                    f[at] = (f[at] & !0x30) | ((rng.below(4) as u8) << 4);
                }
            }
            // Resize the payload and fix the lengths (so the packet may
            // stay structurally valid).
            _ => {
                let v6 = f.first().is_some_and(|b| b >> 4 == 6);
                let ip = if v6 { 40 } else { 20 };
                if f.len() >= ip + 8 + 12 + 4 {
                    let delta = rng.below(9) as isize - 4;
                    let n = (f.len() as isize + delta).max((ip + 8) as isize) as usize;
                    f.resize(n, 0);
                    let udp = (n - ip) as u16;
                    f[ip + 4..ip + 6].copy_from_slice(&udp.to_be_bytes());
                    if v6 {
                        f[4..6].copy_from_slice(&udp.to_be_bytes());
                    } else {
                        f[2..4].copy_from_slice(&(n as u16).to_be_bytes());
                    }
                }
            }
        }
    }
}

/// What an accepted packet must satisfy.
fn check_accepted(frame: &[u8], pkt: &Packet<'_>) {
    assert!(pkt.len <= frame.len());
    let mut out = vec![0u8; pkt.len];
    let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out)
        .unwrap_or_else(|e| panic!("accepted but not rebuildable: {e:?}"));
    assert_eq!(n, pkt.len);
    let original = &frame[..pkt.len];
    if original != &out[..] {
        // The only freedom: an IPv4 header whose one's-complement sum
        // allows a checksum of both 0x0000 and 0xffff.
        let differ: Vec<usize> = (0..n).filter(|&i| original[i] != out[i]).collect();
        assert!(
            original[0] >> 4 == 4 && differ.iter().all(|&i| i == 10 || i == 11),
            "re-serialization differs at {differ:?}"
        );
    }
    let again = parse(&out, usize::MAX, &crc32_le).expect("rebuilt packet parses");
    assert_eq!(again.headers, pkt.headers);
    assert_eq!(again.payload, pkt.payload);
    assert_eq!(again.icrc, pkt.icrc);
    assert_eq!(again.icrc, reference_icrc(&out));
}

#[test]
fn hostile_input_never_panics() {
    let mut rng = Rng::new(0x005e_ed0f_face);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut accepted = 0;
    let mut mutated_accepted = 0;
    for i in 0..ITERATIONS {
        let mut frame;
        let mut from_valid = false;
        match i % 4 {
            // Random bytes, sometimes starting like an IP header.
            0 => {
                let n = rng.below(120);
                frame = rng.bytes(n);
                if n > 0 && rng.bool() {
                    frame[0] = if rng.bool() { 0x45 } else { 0x60 };
                }
            }
            // A valid packet, untouched.
            1 => frame = valid_packet(&mut rng),
            // Mutated, as received.
            2 => {
                frame = valid_packet(&mut rng);
                mutate(&mut frame, &mut rng);
                from_valid = true;
            }
            // Mutated, then IPv4 checksum and ICRC recomputed so the deeper
            // checks get exercised.
            _ => {
                frame = valid_packet(&mut rng);
                mutate(&mut frame, &mut rng);
                fix_ipv4_checksum(&mut frame);
                fix_icrc(&mut frame);
                from_valid = true;
            }
        }
        let max = if rng.below(8) == 0 {
            rng.below(4097)
        } else {
            4096
        };
        match parse(&frame, max, &crc32_le) {
            Ok(pkt) => {
                check_accepted(&frame, &pkt);
                accepted += 1;
                if from_valid {
                    mutated_accepted += 1;
                }
                *outcomes.entry("Ok".into()).or_default() += 1;
            }
            Err(e) => {
                let name = format!("{e:?}");
                let kind = name.split(['(', ' ']).next().unwrap_or("").to_string();
                *outcomes.entry(kind).or_default() += 1;
            }
        }
    }
    println!("{ITERATIONS} inputs: {outcomes:#?}");
    // The stream must reach every stage of the parser, not just bounce off
    // the first check.
    assert!(accepted > ITERATIONS / 5, "{outcomes:?}");
    assert!(mutated_accepted > ITERATIONS / 50, "{outcomes:?}");
    for kind in [
        "Truncated",
        "BadIpVersion",
        "BadIpChecksum",
        "BadIpLength",
        "BadIpHeader",
        "Fragmented",
        "NotUdp",
        "WrongPort",
        "LengthMismatch",
        "TooShort",
        "UnknownOpcode",
        "BadTver",
        "BadPad",
        "UnexpectedPayload",
        "BadIcrc",
        "PayloadTooLarge",
    ] {
        assert!(
            outcomes.contains_key(kind),
            "never saw {kind}: {outcomes:?}"
        );
    }
}

#[test]
fn fuzz_seed_corpus_is_valid() {
    // The committed seeds for the fuzz target (a control byte, then a
    // frame) are real packets: all parse but the CNP, which rxe does not
    // know.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let frame = &data[1..];
        let result = parse(frame, 4096, &crc32_le);
        if path.to_string_lossy().contains("cnp") {
            assert_eq!(
                result,
                Err(rxe_wire::packet::ParseError::UnknownOpcode(0x81))
            );
        } else {
            let pkt = result.unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            check_accepted(frame, &pkt);
        }
        seen += 1;
    }
    assert!(seen >= 18);
}
