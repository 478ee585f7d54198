// SPDX-License-Identifier: GPL-2.0

//! The source files compile as `#[path]` modules of a `no_std` crate, as
//! the kernel module will use them, and after optimization no panic is
//! reachable from parsing, building or the ICRC: the optimized code
//! declares no function of `core::panicking` and no slice-index failure.
//!
//! This compiles a probe crate with the same `rustc` that runs the tests.

use std::path::PathBuf;
use std::process::Command;

const PROBE: &str = r#"
//! Probe crate: the rxe-wire files as sibling modules.
#![no_std]
#![deny(warnings)]

#[path = "SRC/opcode.rs"]
pub mod opcode;
#[path = "SRC/headers.rs"]
pub mod headers;
#[path = "SRC/icrc.rs"]
pub mod icrc;
#[path = "SRC/psn.rs"]
pub mod psn;
#[path = "SRC/packet.rs"]
pub mod packet;
#[path = "SRC/segment.rs"]
pub mod segment;

/// Parse with a CRC the optimizer cannot see into.
#[inline(never)]
pub fn probe_parse(frame: &[u8], max: usize, crc: fn(u32, &[u8]) -> u32) -> usize {
    match packet::parse(frame, max, &crc) {
        Ok(p) => p.payload.len() + p.len + p.info().header_len,
        Err(_) => 0,
    }
}

/// Parse, then build what was parsed.
#[inline(never)]
pub fn probe_build(frame: &[u8], out: &mut [u8]) -> usize {
    let crc = icrc::crc32_le;
    match packet::parse(frame, usize::MAX, &crc) {
        Ok(p) => packet::build(&p.headers, p.payload, &crc, out).unwrap_or(1),
        Err(_) => 0,
    }
}

/// Headers, syndromes, PSNs.
#[inline(never)]
pub fn probe_misc(buf: &mut [u8], x: u32) -> u32 {
    let mut acc = 0;
    if let Ok(b) = headers::Bth::parse(buf) {
        acc ^= b.psn;
        let _ = b.write(buf);
    }
    if let Some(op) = opcode::Opcode::from_u8(x as u8) {
        if let Ok(e) = headers::ExtHeaders::parse(op.info().headers, buf) {
            acc ^= e.write(buf).unwrap_or(0) as u32;
        }
    }
    acc ^= headers::rnr_timer_usec(x as u8);
    acc ^= headers::Syndrome::from_u8(x as u8).to_u8() as u32;
    acc ^= psn::psn_diff(x, acc) as u32;
    let count = segment::packet_count(x, acc);
    let (off, len) = segment::slice(acc, x, count);
    acc ^= off ^ len ^ count;
    let msg = segment::Message::Send { imm: x & 1 != 0, inv: x & 2 != 0 };
    acc ^= segment::request_opcode(x & 4 != 0, msg, acc, count).map_or(0, |o| o as u32);
    acc ^= segment::read_response_opcode(acc, x) as u32;
    acc ^= segment::ack_timeout_usec(x as u8).unwrap_or(0) as u32;
    acc ^ icrc::compute(&icrc::crc32_le, buf).unwrap_or(0)
}
"#;

#[test]
fn no_reachable_panics_when_optimized() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = std::env::temp_dir().join(format!("rxe-wire-no-panic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("probe.rs");
    std::fs::write(&lib, PROBE.replace("SRC", src.to_str().unwrap())).unwrap();
    let ir = dir.join("probe.ll");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .args([
            "--edition=2021",
            "--crate-type=lib",
            "--crate-name=probe",
            "-Copt-level=2",
            "-Cpanic=abort",
            "-Cdebuginfo=0",
            "--emit=llvm-ir",
            "-Wmissing_docs",
            "-Wrust_2018_idioms",
            "-Wunreachable_pub",
            "-o",
        ])
        .arg(&ir)
        .arg(&lib)
        .output()
        .expect("run rustc");
    assert!(
        out.status.success(),
        "probe crate failed to compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&ir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let declared: Vec<&str> = text.lines().filter(|l| l.starts_with("declare")).collect();
    let bad: Vec<&&str> = declared
        .iter()
        .filter(|l| l.contains("panic") || l.contains("_fail") || l.contains("unwrap_failed"))
        .collect();
    assert!(bad.is_empty(), "reachable panics:\n{bad:#?}");
    // The probe functions really are in there.
    for f in ["probe_parse", "probe_build", "probe_misc"] {
        assert!(text.contains(f), "{f} missing from the IR");
    }
}
