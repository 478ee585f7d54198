// SPDX-License-Identifier: GPL-2.0

//! The source files compile as sibling `#[path]` modules of a `no_std`
//! crate with warnings denied, as the kernel module will compile them,
//! and once optimized no panic is reachable from any of their functions:
//! the code declares nothing of `core::panicking`, no slice-index or
//! unwrap failure.
//!
//! A probe crate of the files is compiled to LLVM IR with the `rustc` that
//! runs the tests (`$RUSTC`, else `rustc`). Its public functions are all
//! emitted, so the check covers every parser, writer and layout function,
//! not only those the probe calls; the probe functions below add generic
//! and inlined code paths (the iterators, the `const fn`s).

use std::path::PathBuf;
use std::process::Command;

const PROBE: &str = r#"
//! Probe crate: the rtrs-proto files as sibling modules.
#![no_std]
#![deny(warnings)]

#[path = "SRC/error.rs"]
pub mod error;
#[path = "SRC/consts.rs"]
pub mod consts;
#[path = "SRC/le.rs"]
mod le;
#[path = "SRC/conn.rs"]
pub mod conn;
#[path = "SRC/imm.rs"]
pub mod imm;
#[path = "SRC/msg.rs"]
pub mod msg;
#[path = "SRC/chunk.rs"]
pub mod chunk;
#[path = "SRC/rnbd.rs"]
pub mod rnbd;

/// Every message parser, and writing what parsed.
#[inline(never)]
pub fn probe_parse(buf: &[u8], out: &mut [u8]) -> usize {
    let mut n = 0;
    if let Ok(m) = conn::ConnReq::parse(buf) {
        n += m.write(out).unwrap_or(0) + usize::from(m.check().is_ok());
    }
    if let Ok(m) = conn::ConnRsp::parse(buf) {
        n += m.write(out).unwrap_or(0);
    }
    if let Ok(m) = msg::InfoReq::parse(buf) {
        n += m.write(out).unwrap_or(0);
    }
    if let Ok(m) = msg::InfoRsp::parse(buf) {
        n += m.descs().iter().map(|d| d.len as usize).sum::<usize>();
        if let Ok(r) = m.rbufs(n as u32, buf.len() as u32) {
            n += r.map(|b| b.addr as usize).sum::<usize>();
        }
        n += m.write(out).unwrap_or(0);
    }
    if let Ok(m) = msg::RdmaMsg::parse(buf) {
        n += m.write(out).unwrap_or(0);
    }
    if let Ok(m) = msg::RkeyRsp::parse(buf) {
        n += m.write(out).unwrap_or(0);
    }
    if let Ok(m) = rnbd::RnbdMsg::parse(buf) {
        n += m.write(out).unwrap_or(0);
    }
    n
}

/// Immediates and chunk layouts.
#[inline(never)]
pub fn probe_layout(chunk: &[u8], imm: u32, qd: u32, size: u32, x: u32) -> usize {
    let mut n = 0;
    if let Ok(i) = imm::Imm::parse(imm) {
        n += i.to_u32().unwrap_or(0) as usize;
    }
    n += imm::IoReq::from_payload(imm, x).payload(x).unwrap_or(0) as usize;
    n += imm::to_io_rsp_imm(imm, x as i32, qd & 1 != 0) as usize;
    n += imm::mem_bits(qd).unwrap_or(0) as usize;
    if let Ok(g) = chunk::ChunkGeometry::new(qd, size) {
        if let Ok(l) = g.read_request(x, imm, x as u16, qd as usize) {
            n += l.rdma_len as usize;
        }
        if let Ok(at) = g.locate(imm) {
            if let Ok(r) = g.parse_request(chunk, at) {
                n += r.data_range().end + r.usr_range().len();
            }
        }
    }
    n
}
"#;

#[test]
fn no_reachable_panics_when_optimized() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = std::env::temp_dir().join(format!("rtrs-proto-no-panic-{}", std::process::id()));
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
            "-Funsafe_code",
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
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("declare"))
        .filter(|l| l.contains("panic") || l.contains("_fail") || l.contains("unwrap_failed"))
        .collect();
    assert!(bad.is_empty(), "reachable panics:\n{bad:#?}");
    for f in [
        "probe_parse",
        "probe_layout",
        "parse_request",
        "InfoReq",
        "OpenRsp",
    ] {
        assert!(text.contains(f), "{f} missing from the IR");
    }
}
