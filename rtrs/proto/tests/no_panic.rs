// SPDX-License-Identifier: GPL-2.0

//! The source files compile as sibling `#[path]` modules of a `no_std`
//! crate with warnings denied, as the kernel module will compile them,
//! and once optimized no panic is reachable from any of their functions:
//! the code declares nothing of `core::panicking`, no slice-index or
//! unwrap failure, and no arithmetic overflow either when it is built
//! with overflow checks, as the kernel builds it by default
//! (`CONFIG_RUST_OVERFLOW_CHECKS`), where an overflow on hostile wire
//! input would be a kernel panic.
//!
//! A probe crate of the files is compiled to LLVM IR with the `rustc` that
//! runs the tests (`$RUSTC`, else `rustc`), with overflow checks off, and
//! on at both optimization levels the kernel may use (`-Copt-level=2`,
//! `CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE`, and `-Copt-level=s`, for size)
//! and at `-Copt-level=1`. The last stands for the weaker optimizer of an
//! older compiler, such as the kernel's: a check the optimizer removes
//! only with a deep analysis of value ranges could stay in its build, so
//! the code must not rely on one.
//! Its large public functions are emitted whatever calls them; small ones
//! are only emitted where called, so one probe function per module calls
//! every public function of the module on values the optimizer knows
//! nothing of (function arguments), and [`every_pub_fn_is_probed`] keeps
//! that list complete. The probe's own sums wrap, so that it adds no
//! overflow check of its own.

use std::path::PathBuf;
use std::process::Command;

/// The modules of the crate, each with a `probe_<module>` function below.
const MODULES: [&str; 9] = [
    "chunk", "conn", "consts", "error", "imm", "le", "mpath", "msg", "rnbd",
];

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
#[path = "SRC/mpath.rs"]
pub mod mpath;

use core::fmt::{self, Write};

/// A sum that wraps: the probe adds no overflow check of its own.
struct Sum(usize);

impl Sum {
    fn add(&mut self, v: usize) {
        self.0 = self.0.wrapping_add(v);
    }

    fn flag(&mut self, b: bool) {
        self.add(usize::from(b));
    }

    /// Formats `args`, counting the bytes.
    fn show(&mut self, args: fmt::Arguments<'_>) {
        let _ = self.write_fmt(args);
    }
}

impl Write for Sum {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.add(s.len());
        Ok(())
    }
}

/// The constants' functions.
#[inline(never)]
pub fn probe_consts(v: u16) -> usize {
    let mut n = Sum(0);
    n.add(usize::from(consts::version_major(v)));
    n.add(usize::from(consts::version_minor(v)));
    n.flag(consts::version_compatible(v));
    if let Some(t) = consts::MsgType::from_u16(v) {
        n.add(usize::from(t.to_u16()));
        n.show(format_args!("{t:?}"));
    }
    n.0
}

/// Every error shown.
#[inline(never)]
pub fn probe_error(e: &error::Error, f: &error::Error) -> usize {
    let mut n = Sum(0);
    n.show(format_args!("{e} {e:?}"));
    n.flag(e == f);
    n.0
}

/// The little-endian helpers anywhere in any buffer.
#[inline(never)]
pub fn probe_le(buf: &[u8], out: &mut [u8], at: usize, len: usize) -> usize {
    let mut n = Sum(0);
    n.flag(le::need(buf.len(), len).is_ok());
    n.add(usize::from(le::u16_at(buf, at)));
    n.add(le::u32_at(buf, at) as usize);
    n.add(le::u64_at(buf, at) as usize);
    let b: [u8; 16] = le::bytes(buf, at);
    n.add(usize::from(b[15]));
    le::put(out, at, buf);
    le::zero(out, len);
    n.0
}

/// The connection messages, parsed, built and written.
#[inline(never)]
pub fn probe_conn(buf: &[u8], out: &mut [u8], req: &conn::ConnReq, x: u16, u: u32) -> usize {
    let mut n = Sum(0);
    if let Ok(m) = conn::ConnReq::parse(buf) {
        n.add(m.write(out).unwrap_or(0));
        n.flag(m.check().is_ok());
    }
    n.flag(req.check().is_ok());
    n.add(req.write(out).unwrap_or(0));
    let r = conn::ConnReq::new(x, x, x, [0; 16], [1; 16], u & 1 != 0);
    n.add(r.write(out).unwrap_or(0));
    if let Ok(m) = conn::ConnRsp::parse(buf) {
        n.add(m.write(out).unwrap_or(0));
        n.add(m.chunk_size().unwrap_or(0) as usize);
        n.flag(m.new_rkey());
    }
    n.add(conn::ConnRsp::reject_errno(buf).unwrap_or(0) as usize);
    let a = conn::ConnRsp::accept(x, u, u.rotate_left(7), u);
    n.add(a.chunk_size().unwrap_or(0) as usize);
    n.add(a.write(out).unwrap_or(0));
    n.add(conn::ConnRsp::reject(x as i16).write(out).unwrap_or(0));
    n.0
}

/// Immediates, encoded and decoded.
#[inline(never)]
pub fn probe_imm(imm: u32, x: u32, errno: i32, w_inval: bool) -> usize {
    let mut n = Sum(0);
    if let Ok(i) = imm::Imm::parse(imm) {
        n.add(i.to_u32().unwrap_or(0) as usize);
    }
    n.add(imm::Imm::IoReq(x).to_u32().unwrap_or(0) as usize);
    let (t, p) = imm::from_imm(imm);
    n.add(t as usize);
    n.add(p as usize);
    n.add(imm::to_imm(imm, x) as usize);
    n.add(imm::to_io_rsp_imm(imm, errno, w_inval) as usize);
    let (id, e) = imm::from_io_rsp_imm(x);
    n.add(id as usize);
    n.add(e as usize);
    n.add(imm::order_bits(x) as usize);
    n.add(imm::mem_bits(x).unwrap_or(0) as usize);
    let r = imm::IoReq::from_payload(imm, x);
    n.add(r.payload(x).unwrap_or(0) as usize);
    let r = imm::IoReq { buf_id: imm, off: x };
    n.add(r.payload(errno as u32).unwrap_or(0) as usize);
    n.add(r.to_imm(errno as u32).unwrap_or(0) as usize);
    let rsp = imm::IoRsp {
        msg_id: x,
        errno,
        w_inval,
    };
    n.add(rsp.payload().unwrap_or(0) as usize);
    n.add(rsp.to_imm().unwrap_or(0) as usize);
    n.add(imm::Imm::IoRsp(rsp).to_u32().unwrap_or(0) as usize);
    n.add(imm::IoRsp::from_payload(imm, w_inval).errno as usize);
    n.0
}

/// An INFO_RSP: its descriptors, its chunks, its image.
fn info_rsp(n: &mut Sum, m: &msg::InfoRsp<'_>, out: &mut [u8], qd: u32, size: u32) {
    n.add(m.len());
    n.flag(m.is_empty());
    for d in m.descs() {
        n.add(d.len as usize);
    }
    if let Ok(r) = m.rbufs(qd, size) {
        n.add(r.len());
        for b in r {
            n.add(b.addr as usize ^ b.rkey as usize);
        }
    }
    n.add(m.write(out).unwrap_or(0));
}

/// A read request: its descriptors and its image.
fn rdma_read(n: &mut Sum, r: &msg::RdmaRead<'_>, out: &mut [u8]) {
    n.flag(r.need_inval());
    n.add(r.len());
    n.flag(r.is_empty());
    n.add(r.descs().iter().len());
    n.add(r.write(out).unwrap_or(0));
    let m = msg::RdmaMsg::Read(*r);
    n.add(usize::from(m.usr_len()));
    n.add(m.len());
    n.flag(m.is_empty());
    n.add(m.write(out).unwrap_or(0));
}

/// Every message of `msg`, parsed, built and written.
#[inline(never)]
pub fn probe_msg(
    buf: &[u8],
    out: &mut [u8],
    descs: &[msg::SgDesc],
    x: u32,
    y: u32,
    i: usize,
) -> usize {
    let mut n = Sum(0);
    n.add(usize::from(msg::msg_type(buf).unwrap_or(0)));
    if let Ok(d) = msg::SgDesc::parse(buf) {
        n.add(d.write(out).unwrap_or(0));
    }
    let list = msg::SgList::from_descs(descs);
    n.add(list.len());
    n.flag(list.is_empty());
    n.add(list.get(i).map_or(0, |d| d.key as usize));
    n.add(list.iter().size_hint().0);
    n.show(format_args!("{list:?}"));
    n.flag(list == msg::SgList::from_descs(descs));
    n.flag(msg::InfoReq::check_name(buf).is_ok());
    if let Ok(m) = msg::InfoReq::new(buf) {
        n.add(m.name().len());
        n.add(m.write(out).unwrap_or(0));
    }
    if let Ok(m) = msg::InfoReq::parse(buf) {
        n.add(m.name().len());
        n.add(m.write(out).unwrap_or(0));
        n.show(format_args!("{m:?}"));
    }
    if let Ok(m) = msg::InfoRsp::parse(buf) {
        info_rsp(&mut n, &m, out, x, y);
        n.flag(m.descs() == list);
    }
    if let Ok(m) = msg::InfoRsp::new(descs) {
        info_rsp(&mut n, &m, out, x, y);
    }
    if let Ok(m) = msg::RkeyRsp::parse(buf) {
        n.add(m.write(out).unwrap_or(0));
    }
    let k = msg::RkeyRsp {
        buf_id: x as u16,
        rkey: y,
    };
    n.add(k.write(out).unwrap_or(0));
    if let Ok(m) = msg::RdmaWrite::parse(buf) {
        n.add(m.write(out).unwrap_or(0));
    }
    if let Ok(r) = msg::RdmaRead::parse(buf) {
        rdma_read(&mut n, &r, out);
    }
    if let Ok(r) = msg::RdmaRead::new(x as u16, y as u16, descs) {
        rdma_read(&mut n, &r, out);
    }
    if let Ok(m) = msg::RdmaMsg::parse(buf) {
        n.add(usize::from(m.usr_len()));
        n.add(m.len());
        n.add(m.write(out).unwrap_or(0));
    }
    n.0
}

/// The layouts of one geometry.
fn geometry(
    n: &mut Sum,
    g: &chunk::ChunkGeometry,
    bytes: &[u8],
    req: imm::IoReq,
    desc: &msg::SgDesc,
    x: u32,
    y: u32,
    u: u16,
    sg: usize,
) {
    n.add(g.queue_depth() as usize);
    n.add(g.chunk_size() as usize);
    n.add(g.mem_bits() as usize);
    if let Ok(l) = g.write_request(x, y, u) {
        n.add((l.buf_id ^ l.rdma_off ^ l.rdma_len ^ l.msg_off ^ l.imm) as usize);
    }
    if let Ok(l) = g.read_request(x, y, u, sg) {
        n.add((l.buf_id ^ l.rdma_off ^ l.rdma_len ^ l.msg_off ^ l.imm) as usize);
    }
    for at in [g.locate(y), Ok(req)].into_iter().flatten() {
        if let Ok(r) = g.parse_request(bytes, at) {
            n.add(r.usr_len() as usize);
            n.add(r.data_len() as usize);
            n.add(r.data_range().end);
            n.add(r.usr_range().end ^ r.usr_range().start);
            n.add(r.msg.len());
        }
    }
    n.add(g.read_response_len(desc).unwrap_or(0) as usize);
}

/// Chunk layouts, for geometries made in every way and one given.
#[inline(never)]
pub fn probe_chunk(
    bytes: &[u8],
    given: &chunk::ChunkGeometry,
    rsp: &conn::ConnRsp,
    req: imm::IoReq,
    desc: &msg::SgDesc,
    qd: u32,
    size: u32,
    x: u32,
    y: u32,
    u: u16,
    sg: usize,
) -> usize {
    let mut n = Sum(0);
    geometry(&mut n, given, bytes, req, desc, x, y, u, sg);
    if let Ok(g) = chunk::ChunkGeometry::new(qd, size) {
        geometry(&mut n, &g, bytes, req, desc, x, y, u, sg);
    }
    if let Ok(g) = chunk::ChunkGeometry::server(qd, size) {
        geometry(&mut n, &g, bytes, req, desc, x, y, u, sg);
    }
    if let Ok(g) = chunk::ChunkGeometry::from_conn_rsp(rsp) {
        geometry(&mut n, &g, bytes, req, desc, x, y, u, sg);
    }
    n.0
}

/// Every RNBD message, parsed, built and written.
#[inline(never)]
pub fn probe_rnbd(buf: &[u8], out: &mut [u8], x: u32, b: u8) -> usize {
    let mut n = Sum(0);
    n.add(usize::from(rnbd::msg_type(buf).unwrap_or(0)));
    n.add(rnbd::rnbd_op(x) as usize);
    n.add(rnbd::rnbd_flags(x) as usize);
    let mode = rnbd::AccessMode::from_u8(b).unwrap_or(rnbd::AccessMode::Ro);
    if let Ok(m) = rnbd::Open::new(mode, buf) {
        n.add(m.dev_name().len());
        n.add(m.write(out).unwrap_or(0));
    }
    if let Ok(m) = rnbd::RnbdMsg::parse(buf) {
        n.add(m.write(out).unwrap_or(0));
        n.show(format_args!("{m:?}"));
        match m {
            rnbd::RnbdMsg::Io(io) => n.add((io.op() ^ io.flags()) as usize),
            rnbd::RnbdMsg::Open(o) => n.add(o.dev_name().len()),
            _ => {}
        }
    }
    let io = rnbd::Io {
        device_id: x,
        sector: u64::from(x) << 9,
        rw: x,
        bi_size: x,
        prio: b.into(),
    };
    n.add(io.write(out).unwrap_or(0));
    n.add(rnbd::SessInfo { ver: b }.write(out).unwrap_or(0));
    n.add(rnbd::SessInfoRsp { ver: b }.write(out).unwrap_or(0));
    n.add(rnbd::Close { device_id: x }.write(out).unwrap_or(0));
    n.0
}

/// The multipath decisions on any input and any state.
#[inline(never)]
pub fn probe_mpath(
    text: &[u8],
    paths: &[mpath::PathView],
    cursor: &mut usize,
    b: &mut mpath::Backoff,
    hb: &mut mpath::Heartbeat,
    m: &mut mpath::PermitMap,
    x: u32,
) -> usize {
    let mut n = Sum(0);
    let policy = mpath::Policy::parse(text).unwrap_or_default();
    n.add(policy.show().len());
    n.add(policy.to_u32() as usize);
    n.add(mpath::Policy::from_u32(x).unwrap_or_default().to_u32() as usize);
    n.add(mpath::choose(policy, paths, cursor, Some(x as usize)).unwrap_or(0));
    n.add(mpath::check_max_attempts(x as i32).unwrap_or(0) as usize);
    n.add(b.next(x).unwrap_or(0) as usize);
    n.add(b.attempts() as usize);
    n.add(b.max_attempts() as usize);
    n.add(b.delay_ms() as usize);
    if x & 1 != 0 {
        b.reset();
        b.disable();
        b.set_max_attempts(x as i32);
    }
    n.add(mpath::Backoff::new(x, x as i32).next(x).unwrap_or(0) as usize);
    match hb.tick() {
        mpath::HbAction::Send => hb.sent(u64::from(x)),
        mpath::HbAction::Wait => hb.acked(u64::from(x) << 3),
        mpath::HbAction::Fail => hb.any_rx(),
    }
    if x & 2 != 0 {
        hb.reset();
    }
    n.add(hb.latency_ns() as usize);
    n.add(hb.missed() as usize);
    n.add(hb.max_missed() as usize);
    let mut fresh = mpath::Heartbeat::new(x);
    n.flag(fresh.tick() == mpath::HbAction::Send);
    n.add(mpath::Heartbeat::default().max_missed() as usize);
    n.add(m.take().unwrap_or(0) as usize);
    n.flag(m.put(x).is_ok());
    n.flag(m.is_taken(x >> 1));
    n.add(m.in_use() as usize);
    if let Ok(fresh) = mpath::PermitMap::new(x) {
        n.add(fresh.count() as usize);
    }
    n.0
}
"#;

/// Compiles the probe crate (with `SRC` standing for the source
/// directory) to LLVM IR at `opt_level`, and gives the IR.
fn emit_ir(tag: &str, opt_level: &str, overflow_checks: bool) -> String {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir =
        std::env::temp_dir().join(format!("rtrs-proto-no-panic-{tag}-{}", std::process::id()));
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
            &format!("-Copt-level={opt_level}"),
            "-Cpanic=abort",
            "-Cdebuginfo=0",
            if overflow_checks {
                "-Coverflow-checks=on"
            } else {
                "-Coverflow-checks=off"
            },
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
    text
}

/// The symbol named on an IR `declare` or `define` line.
fn symbol(line: &str) -> &str {
    let Some((_, rest)) = line.split_once('@') else {
        return "";
    };
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or(""),
        None => rest.split('(').next().unwrap_or(""),
    }
}

/// A legacy-mangled Rust symbol as a path (`probe::msg::InfoRsp::write`),
/// without its hash; a v0-mangled one (the standard library's) as its
/// last name (`…::panic_const_add_overflow`); anything else as it is.
fn demangle(sym: &str) -> String {
    if sym.starts_with("_R") {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for (i, c) in sym.char_indices() {
            let tail = &sym[i..];
            if c.is_ascii_digit() || !tail.chars().all(ident) {
                continue;
            }
            let digits = sym[..i]
                .bytes()
                .rev()
                .take_while(u8::is_ascii_digit)
                .count();
            if sym[i - digits..i].parse() == Ok(tail.len()) {
                return format!("…::{tail}");
            }
        }
        return sym.to_string();
    }
    let Some(mut rest) = sym.strip_prefix("_ZN") else {
        return sym.to_string();
    };
    let mut parts = Vec::new();
    while let Some(end) = rest.find(|c: char| !c.is_ascii_digit()) {
        let Ok(len) = rest[..end].parse::<usize>() else {
            break;
        };
        let Some(part) = rest.get(end..end + len) else {
            break;
        };
        parts.push(part);
        rest = &rest[end + len..];
    }
    if parts
        .last()
        .is_some_and(|h| h.len() == 17 && h.starts_with('h'))
    {
        parts.pop();
    }
    let mut path = parts.join("::");
    for (from, to) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$C$", ","),
        ("$u20$", " "),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u27$", "'"),
        ("..", "::"),
    ] {
        path = path.replace(from, to);
    }
    path
}

/// Asserts that the IR declares nothing that panics; otherwise lists the
/// panics and the functions that call them.
fn assert_no_panics(what: &str, text: &str) {
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("declare"))
        .map(symbol)
        .filter(|s| s.contains("panic") || s.contains("_fail") || s.contains("unwrap_failed"))
        .collect();
    if bad.is_empty() {
        return;
    }
    let mut callers = Vec::new();
    let mut current = "";
    for line in text.lines() {
        if line.starts_with("define") {
            current = symbol(line);
        } else if bad.iter().any(|b| line.contains(&format!("@{b}("))) {
            let who = demangle(current);
            if !callers.contains(&who) {
                callers.push(who);
            }
        }
    }
    let bad: Vec<String> = bad.iter().map(|b| demangle(b)).collect();
    panic!("{what}: reachable panics:\n{bad:#?}\ncalled from:\n{callers:#?}");
}

/// Asserts that every module's probe, and a few functions it covers, made
/// it into the IR.
fn assert_probed(text: &str) {
    let probes = MODULES.iter().map(|m| format!("probe_{m}"));
    let some = ["parse_request", "InfoReq", "OpenRsp", "choose", "PermitMap"];
    for f in probes.chain(some.iter().map(|f| f.to_string())) {
        assert!(text.contains(&f), "{f} missing from the IR");
    }
}

#[test]
fn no_reachable_panics_when_optimized() {
    let text = emit_ir("plain", "2", false);
    assert_no_panics("without overflow checks", &text);
    assert_probed(&text);
}

/// The kernel builds with overflow checks by default
/// (`CONFIG_RUST_OVERFLOW_CHECKS`): no module has one that can fire, at
/// any optimization level that removes the impossible ones.
#[test]
fn no_overflow_panics() {
    for opt_level in ["2", "s", "1"] {
        let text = emit_ir(&format!("overflow-{opt_level}"), opt_level, true);
        assert_no_panics(
            &format!("with overflow checks, opt-level {opt_level}"),
            &text,
        );
        assert_probed(&text);
    }
}

/// Every public function of every module is called by the probe, so that
/// the checks above see it even where it is small enough to be emitted
/// only where called.
#[test]
fn every_pub_fn_is_probed() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut missing = Vec::new();
    for m in MODULES {
        assert!(
            PROBE.contains(&format!("pub fn probe_{m}(")),
            "no probe_{m} for module {m}"
        );
        let text = std::fs::read_to_string(src.join(format!("{m}.rs"))).unwrap();
        for line in text.lines() {
            let line = line.trim_start();
            let Some(rest) = ["pub fn ", "pub const fn ", "pub(crate) fn "]
                .iter()
                .find_map(|p| line.strip_prefix(p))
            else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let called = [format!("{name}("), format!("{name}::<")];
            let probed = PROBE
                .lines()
                .filter(|l| !l.trim_start().starts_with("pub fn probe_"))
                .any(|l| called.iter().any(|c| l.contains(c.as_str())));
            if !probed {
                missing.push(format!("{m}::{name}"));
            }
        }
    }
    assert!(missing.is_empty(), "not called by the probe: {missing:#?}");
}
