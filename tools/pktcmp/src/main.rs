// SPDX-License-Identifier: GPL-2.0

//! pktcmp: compares what two RoCE v2 stacks put on the wire for the same
//! operations.
//!
//! ```text
//! pktcmp THEIRS.hex OURS.hex
//! ```
//!
//! Each file holds one IP datagram per line in hex, as `pktcap` prints
//! them (selftests/tools/pktcap.c). Every packet of both files must parse
//! with our codec (so its ICRC, lengths and opcode are right) and build
//! again from its parsed headers to the very same bytes (so our builder
//! agrees with it on every field, the pad, the IP checksum and the ICRC).
//! Then each packet is reduced to its *shape*: the header fields the
//! protocol fixes for the operation (opcode, extension headers, flags,
//! P_Key, pad, lengths, AETH syndrome, Q_Key, IP TOS, TTL, DF, UDP
//! checksum and port), leaving out what names a particular QP, message or
//! flow (QPNs, PSNs, MSNs, addresses, keys, immediate data, IP ID, UDP
//! source port) and the AckReq bit of first and middle packets, which each
//! stack sets on its own schedule. For every opcode both stacks sent, the
//! sets of shapes must be equal. Built static and run in the test guest by
//! selftests/rxe/interop.sh. Exit status 0: all checked and equal; 1:
//! a packet failed or the shapes differ; 2: bad usage or input.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::ExitCode;

use rxe_wire::icrc::crc32_le;
use rxe_wire::opcode::{Position, Transport};
use rxe_wire::packet::{build, parse, IpHeader};

/// The largest payload a RoCE packet carries (4096-byte path MTU).
const MAX_PAYLOAD: usize = 4096;

/// Decodes one line of hex.
fn unhex(line: &str) -> Option<Vec<u8>> {
    let line = line.trim();
    if !line.len().is_multiple_of(2) {
        return None;
    }
    (0..line.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(line.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The packet's opcode name and shape, or why it is not a good packet.
fn shape(frame: &[u8]) -> Result<(String, String), String> {
    let pkt = parse(frame, MAX_PAYLOAD, &crc32_le).map_err(|e| format!("does not parse: {e:?}"))?;
    let mut out = vec![0u8; frame.len() + 64];
    let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out)
        .map_err(|e| format!("does not build again: {e:?}"))?;
    if out[..n] != *frame {
        return Err("builds again to different bytes".into());
    }
    let info = pkt.opcode.info();
    let h = &pkt.headers;
    let mut s = String::new();
    match h.ip {
        IpHeader::V4(ip) => {
            let _ = write!(
                s,
                "ipv4 tos={:#x} ttl={} df={}",
                ip.tos, ip.ttl, ip.dont_fragment
            );
        }
        // Addresses and flow label name the flow: the rest is the shape.
        IpHeader::V6(ip) => {
            let _ = write!(
                s,
                "ipv6 class={:#x} hop_limit={}",
                ip.traffic_class, ip.hop_limit
            );
        }
    }
    let b = &h.bth;
    let _ = write!(
        s,
        " udp_csum={:#x} se={} m={} pad={} tver={} pkey={:#x} fecn={} becn={}",
        h.udp.checksum, b.solicited, b.migration, b.pad, b.tver, b.pkey, b.fecn, b.becn
    );
    let scheduled = info.transport == Transport::Rc
        && info.is_request()
        && matches!(info.position, Position::First | Position::Middle);
    if !scheduled {
        let _ = write!(s, " ackreq={}", b.ack_req);
    }
    let e = &h.ext;
    if let Some(d) = e.deth {
        let _ = write!(s, " deth(qkey={:#x})", d.qkey);
    }
    if let Some(r) = e.reth {
        let _ = write!(s, " reth(len={})", r.len);
    }
    if let Some(a) = e.aeth {
        let _ = write!(s, " aeth(syndrome={:#x})", a.syndrome);
    }
    if e.atomic_eth.is_some() {
        s.push_str(" atomiceth");
    }
    if e.atomic_ack_eth.is_some() {
        s.push_str(" atomicacketh");
    }
    if e.immdt.is_some() {
        s.push_str(" immdt");
    }
    if e.ieth.is_some() {
        s.push_str(" ieth");
    }
    if e.feth.is_some() {
        s.push_str(" feth");
    }
    let _ = write!(s, " payload={}", pkt.payload.len());
    Ok((info.name.to_string(), s))
}

/// Shapes by opcode name, with how many packets had each.
type Shapes = BTreeMap<String, BTreeMap<String, usize>>;

/// Reads a capture; the lines of packets that fail go to `bad`.
fn load(text: &str, who: &str, bad: &mut Vec<String>) -> Result<Shapes, String> {
    let mut shapes = Shapes::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let frame = unhex(line).ok_or_else(|| format!("{who}: line {} is not hex", i + 1))?;
        match shape(&frame) {
            Ok((op, s)) => *shapes.entry(op).or_default().entry(s).or_default() += 1,
            Err(why) => bad.push(format!("{who}: packet {}: {why}", i + 1)),
        }
    }
    Ok(shapes)
}

/// Prints the comparison; `true` if the captures agree.
/// Compares the two stacks' shapes per opcode. An opcode only one stack
/// sent makes the captures differ too, unless it is in `one_sided` (an
/// operation the test can drive one way only).
fn compare(theirs: &Shapes, ours: &Shapes, one_sided: &[String], report: &mut String) -> bool {
    let mut same = true;
    let ops: BTreeSet<&String> = theirs.keys().chain(ours.keys()).collect();
    for op in ops {
        match (theirs.get(op), ours.get(op)) {
            (Some(t), Some(o)) => {
                let (tk, ok): (BTreeSet<_>, BTreeSet<_>) = (t.keys().collect(), o.keys().collect());
                let n_t: usize = t.values().sum();
                let n_o: usize = o.values().sum();
                if tk == ok {
                    let _ = writeln!(
                        report,
                        "same {op}: {n_t} theirs, {n_o} ours, {} shape(s)",
                        tk.len()
                    );
                    for s in &tk {
                        let _ = writeln!(report, "     {s}");
                    }
                } else {
                    same = false;
                    let _ = writeln!(report, "DIFFERENT {op}: {n_t} theirs, {n_o} ours");
                    for s in tk.difference(&ok) {
                        let _ = writeln!(report, "  theirs only: {s}");
                    }
                    for s in ok.difference(&tk) {
                        let _ = writeln!(report, "  ours only:   {s}");
                    }
                }
            }
            (Some(t), None) => {
                let allowed = one_sided.contains(op);
                same &= allowed;
                let _ = writeln!(
                    report,
                    "{} theirs sent {op} ({} packets)",
                    if allowed { "only" } else { "ONLY" },
                    t.values().sum::<usize>()
                );
            }
            (None, Some(o)) => {
                let allowed = one_sided.contains(op);
                same &= allowed;
                let _ = writeln!(
                    report,
                    "{} ours sent {op} ({} packets)",
                    if allowed { "only" } else { "ONLY" },
                    o.values().sum::<usize>()
                );
            }
            (None, None) => {}
        }
    }
    same
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // pktcmp THEIRS.hex OURS.hex [OPCODE...]: the opcodes that may be
    // sent by one stack only.
    if args.len() < 3 {
        eprintln!("usage: pktcmp THEIRS.hex OURS.hex [ONE_SIDED_OPCODE...]");
        return ExitCode::from(2);
    }
    let one_sided: Vec<String> = args[3..].to_vec();
    let mut bad = Vec::new();
    let mut sides = Vec::new();
    for (path, who) in [(&args[1], "theirs"), (&args[2], "ours")] {
        let loaded = std::fs::read_to_string(path)
            .map_err(|e| format!("{path}: {e}"))
            .and_then(|text| load(&text, who, &mut bad));
        match loaded {
            Ok(s) => sides.push(s),
            Err(e) => {
                eprintln!("pktcmp: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let mut report = String::new();
    let same = compare(&sides[0], &sides[1], &one_sided, &mut report);
    print!("{report}");
    for b in &bad {
        println!("BAD {b}");
    }
    let counted = |s: &Shapes| s.values().flat_map(|m| m.values()).sum::<usize>();
    println!(
        "pktcmp: {} of theirs and {} of ours checked, {} bad, shapes {}",
        counted(&sides[0]),
        counted(&sides[1]),
        bad.len(),
        if same { "equal" } else { "DIFFERENT" }
    );
    if same && bad.is_empty() && counted(&sides[0]) > 0 && counted(&sides[1]) > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C stack's RC SEND ONLY of rxe/wire/tests/c_capture.rs.
    const C_RC_SEND: &str = "4500006ca683400040117f5d0a4f00010a4f0002c13212b7005800000400ffff0000001180edb9bb7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b6989ae30";

    /// Rewrites a field of a good packet and fixes its checksums by
    /// parsing and building it again.
    fn with_psn_and_id(frame: &[u8], psn: u32, id: u16) -> Vec<u8> {
        let mut pkt = parse(frame, MAX_PAYLOAD, &crc32_le).unwrap();
        pkt.headers.bth.psn = psn;
        pkt.headers.bth.dest_qpn = 0x99;
        if let IpHeader::V4(ref mut ip) = pkt.headers.ip {
            ip.id = id;
        }
        let mut out = vec![0u8; frame.len() + 64];
        let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn flow_fields_do_not_change_the_shape() {
        let a = unhex(C_RC_SEND).unwrap();
        let b = with_psn_and_id(&a, 0x12, 0x4321);
        assert_ne!(a, b);
        let (op, sa) = shape(&a).unwrap();
        assert_eq!(op, "RC_SEND_ONLY");
        assert_eq!(shape(&b).unwrap(), (op, sa.clone()));
        assert!(sa.contains("ackreq=true"), "{sa}");
        assert!(sa.contains("payload=64"), "{sa}");
    }

    #[test]
    fn a_bad_icrc_is_reported() {
        let mut a = unhex(C_RC_SEND).unwrap();
        let last = a.len() - 1;
        a[last] ^= 1;
        assert!(shape(&a).is_err());
        let mut bad = Vec::new();
        let text = format!("{}\n", C_RC_SEND.replace("ae30", "ae31"));
        let shapes = load(&text, "t", &mut bad).unwrap();
        assert!(shapes.is_empty());
        assert_eq!(bad.len(), 1);
    }

    #[test]
    fn differing_shapes_are_found() {
        let a = unhex(C_RC_SEND).unwrap();
        let mut pkt = parse(&a, MAX_PAYLOAD, &crc32_le).unwrap();
        pkt.headers.bth.solicited = true;
        let mut out = vec![0u8; a.len() + 64];
        let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out).unwrap();
        let hex = |f: &[u8]| f.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let mut bad = Vec::new();
        let t = load(C_RC_SEND, "t", &mut bad).unwrap();
        let o = load(&hex(&out[..n]), "o", &mut bad).unwrap();
        let mut report = String::new();
        assert!(!compare(&t, &o, &[], &mut report));
        assert!(report.contains("DIFFERENT RC_SEND_ONLY"), "{report}");
        let mut report = String::new();
        assert!(compare(&t, &t, &[], &mut report));
    }

    #[test]
    fn an_opcode_one_stack_never_sent_fails_unless_allowed() {
        let mut bad = Vec::new();
        let t = load(C_RC_SEND, "t", &mut bad).unwrap();
        let none = Shapes::default();
        let mut report = String::new();
        assert!(!compare(&t, &none, &[], &mut report));
        assert!(report.contains("ONLY theirs sent RC_SEND_ONLY"), "{report}");
        let mut report = String::new();
        assert!(!compare(&none, &t, &[], &mut report));
        assert!(report.contains("ONLY ours sent RC_SEND_ONLY"), "{report}");
        let mut report = String::new();
        assert!(compare(
            &none,
            &t,
            &["RC_SEND_ONLY".to_string()],
            &mut report
        ));
        assert!(report.contains("only ours sent RC_SEND_ONLY"), "{report}");
    }
}
