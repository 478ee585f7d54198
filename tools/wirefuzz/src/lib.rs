// SPDX-License-Identifier: GPL-2.0

//! The check every fuzz input of the rxe wire codec goes through, shared by
//! the libFuzzer target (`rxe/wire/fuzz`, nightly) and the bounded
//! mutational driver of this crate (`src/main.rs`, stable, run by
//! `make check`).
//!
//! An input is a received frame: the parser must not panic; whatever it
//! accepts must build back into the same bytes (up to the IPv4 checksum's
//! two encodings of zero) and parse again to the same packet. The ICRC and
//! header codecs are driven on the raw bytes too.
//!
//! The first input byte is a control byte: bit 0 set means "repair the IPv4
//! header checksum and the ICRC before parsing", so that mutations reach
//! the checks behind them; the other seven bits times 64 are the payload
//! limit. A violated property panics.
//!
//! The same bytes, and the payload of every packet the parser accepts (a
//! QP1 datagram's payload is a MAD), also go through the MAD and CM
//! message codecs of `rdma-spec` (SIDR REQ and REP included): no panic,
//! and a CM message that parses writes back to a MAD that parses to the
//! same message.
//!
//! They also go through the framing of the uverbs `write()` ABI
//! (`rdma_spec::uverbs`), as they are and steered into a known command
//! with consistent word counts, so that mutations reach the checks behind
//! the header: no panic, and every split it accepts is consistent with the
//! buffer (the structured fuzz loop of that codec is the `fuzz_framing`
//! test of `rdma-spec`).
//!
//! And through the RDMA netlink codec (`rdma_spec::netlink`), as they are
//! and steered into an NLDEV request (the first message's length set to
//! the buffer's, its type to an NLDEV command, `NLM_F_REQUEST` set): no
//! panic, every message and attribute accepted lies within its buffer, and
//! every reply built from what a request decodes to parses back to the
//! same values.
//!
//! And through the decoders of the rxe user rings' work queue entries
//! (`rdma_spec::uverbs::rxe_ring`), as they are and steered into a send
//! or receive WQE of a 512-byte element (a known opcode, known flags, a
//! small SGE count and the `dma` lengths librxe would write), so that
//! mutations reach the checks of the payload: no panic, and every entry
//! accepted stays within the limits given and the element (the loop of
//! that codec is the `hostile_entries_never_panic` test of `rdma-spec`).
//!
//! And, as they are and as the payload of every packet the parser
//! accepts (a SEND's payload may be a tagged message), through the
//! tag-matching header parser (`rdma_spec::tm::header`): no panic, and the
//! headers it accepts write back to the bytes they came from (but the
//! TMH's reserved bytes, which it ignores).

use rdma_spec::cm_msg::{CmMessage, CmaHeader, SidrRep, SidrReq};
use rdma_spec::mad::{Mad, MadHeader};
use rdma_spec::netlink::msg::{flags as nlm_f, Messages, Out};
use rdma_spec::netlink::nldev::{self, Cmd, ReplyTo};
use rdma_spec::opcodes::SendFlags;
use rdma_spec::qp_state::QpType;
use rdma_spec::uverbs::cmd::{FLAG_EXTENDED, WRITE_CMDS, WRITE_EX_CMDS};
use rdma_spec::uverbs::framing::{declared_len, parse as parse_uverbs, EX_HDR_LEN, HDR_LEN};
use rdma_spec::uverbs::rxe_ring::{
    decode_recv_wqe, decode_send_wqe, Payload, SqLimits, MAX_WQE_LENGTH, RECV_WQE_DATA,
    SEND_WQE_DATA,
};
use rxe_wire::headers::{Bth, ExtHeaders};
use rxe_wire::icrc::{self, crc32_le};
use rxe_wire::opcode::{HeaderSet, Opcode};
use rxe_wire::packet::{build, parse};

/// Recomputes the IPv4 header checksum and the ICRC where the frame is
/// long enough for them.
pub fn repair(f: &mut [u8]) {
    if f.len() >= 20 && f[0] >> 4 == 4 {
        f[10] = 0;
        f[11] = 0;
        let mut sum: u32 = f[..20]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        f[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    }
    let claimed = match f.first().map(|b| b >> 4) {
        Some(4) if f.len() >= 4 => usize::from(u16::from_be_bytes([f[2], f[3]])),
        Some(6) if f.len() >= 6 => 40 + usize::from(u16::from_be_bytes([f[4], f[5]])),
        _ => return,
    };
    if claimed <= f.len() {
        let _ = icrc::fill(&crc32_le, &mut f[..claimed]);
    }
}

/// Runs bytes through the MAD and CM codecs; panics if a message that
/// parses does not write back to one that parses the same.
pub fn check_mad(bytes: &[u8]) {
    let _ = MadHeader::parse(bytes);
    let _ = Mad::parse(bytes);
    let _ = CmaHeader::parse(bytes);
    if let Ok((hdr, msg)) = CmMessage::parse_mad(bytes) {
        let mut out = [0u8; 256];
        msg.write_mad(hdr.tid, hdr.attr_mod, &mut out)
            .expect("writes back");
        let (hdr2, again) = CmMessage::parse_mad(&out).expect("reparses");
        assert_eq!(again, msg);
        assert_eq!(
            (hdr2.tid, hdr2.attr_mod, hdr2.attr_id),
            (hdr.tid, hdr.attr_mod, hdr.attr_id)
        );
    }
    if let Ok((hdr, req)) = SidrReq::parse_mad(bytes) {
        let mut out = [0u8; 256];
        req.write_mad(hdr.tid, &mut out).expect("writes back");
        let (hdr2, again) = SidrReq::parse_mad(&out).expect("reparses");
        assert_eq!(again, req);
        assert_eq!((hdr2.tid, hdr2.attr_id), (hdr.tid, hdr.attr_id));
    }
    if let Ok((hdr, rep)) = SidrRep::parse_mad(bytes) {
        let mut out = [0u8; 256];
        rep.write_mad(hdr.tid, hdr.attr_mod, &mut out)
            .expect("writes back");
        let (hdr2, again) = SidrRep::parse_mad(&out).expect("reparses");
        assert_eq!(again, rep);
        assert_eq!(
            (hdr2.tid, hdr2.attr_mod, hdr2.attr_id),
            (hdr.tid, hdr.attr_mod, hdr.attr_id)
        );
    }
}

/// Runs bytes through the uverbs `write()` framing, as they are and with
/// the command word and word counts steered (by the first byte) to a
/// command of the table; panics if an accepted split is inconsistent.
/// Returns how many of the two the framing accepted.
pub fn check_uverbs(bytes: &[u8]) -> usize {
    let raw = usize::from(check_uverbs_split(bytes));
    let Some(&sel) = bytes.first() else {
        return raw;
    };
    let mut b = bytes.to_vec();
    let n_legacy = WRITE_CMDS.len();
    let i = usize::from(sel) % (n_legacy + WRITE_EX_CMDS.len());
    if i < n_legacy && b.len() >= HDR_LEN {
        b.truncate(b.len() / 4 * 4);
        b[..4].copy_from_slice(&WRITE_CMDS[i].number.to_ne_bytes());
        let words = (b.len() / 4).min(0xffff) as u16;
        b[4..6].copy_from_slice(&words.to_ne_bytes());
    } else if i >= n_legacy && b.len() >= HDR_LEN + EX_HDR_LEN {
        let spec = &WRITE_EX_CMDS[i - n_legacy];
        let words = (b.len() - HDR_LEN - EX_HDR_LEN) / 8;
        b.truncate(HDR_LEN + EX_HDR_LEN + words * 8);
        let prov = usize::from(u16::from_ne_bytes([b[16], b[17]])).min(words);
        b[..4].copy_from_slice(&(spec.number | FLAG_EXTENDED).to_ne_bytes());
        b[4..6].copy_from_slice(&((words - prov).min(0xffff) as u16).to_ne_bytes());
        b[16..18].copy_from_slice(&(prov as u16).to_ne_bytes());
    }
    raw + usize::from(check_uverbs_split(&b))
}

/// Parses one uverbs `write()` buffer and checks what an accepted split
/// promises; returns whether it was accepted.
fn check_uverbs_split(buf: &[u8]) -> bool {
    let _ = declared_len(buf);
    let Ok(r) = parse_uverbs(buf) else {
        return false;
    };
    let s = r.spec;
    assert_eq!(declared_len(buf), Ok(buf.len()));
    let headers = if s.extended {
        HDR_LEN + EX_HDR_LEN
    } else {
        HDR_LEN
    };
    assert_eq!(headers + r.core_in.len() + r.driver_in.len(), buf.len());
    assert!(r.core_in.len() >= s.req_size);
    match r.core_out {
        Some(o) => {
            assert!(o.len >= s.resp_size);
            let end = o.addr.checked_add(o.len as u64).expect("core range");
            if let Some(d) = r.driver_out {
                assert_eq!(d.addr, end);
                d.addr.checked_add(d.len as u64).expect("driver range");
            }
        }
        None => assert!(r.driver_out.is_none()),
    }
    true
}

/// Runs bytes through the RDMA netlink parser and NLDEV decoder, as they
/// are and steered (by the first byte) into an NLDEV request; panics if a
/// property is violated. Returns how many of the two decoded to a request.
pub fn check_netlink(bytes: &[u8]) -> usize {
    let raw = check_netlink_datagram(bytes);
    let Some(&sel) = bytes.first() else {
        return raw;
    };
    let mut b = bytes.to_vec();
    if b.len() >= 16 {
        let len = (b.len() as u32).to_ne_bytes();
        b[..4].copy_from_slice(&len);
        let op = 1 + u16::from(sel) % (nldev::cmd::NUM_OPS - 1);
        b[4..6].copy_from_slice(&nldev::nl_type(nldev::client::NLDEV, op).to_ne_bytes());
        let f = u16::from_ne_bytes([b[6], b[7]]) | nlm_f::REQUEST;
        b[6..8].copy_from_slice(&f.to_ne_bytes());
    }
    raw + check_netlink_datagram(&b)
}

/// Walks one datagram; returns how many of its messages decoded.
fn check_netlink_datagram(buf: &[u8]) -> usize {
    let mut decoded = 0;
    for m in Messages::new(buf) {
        let Ok(m) = m else { break };
        assert_eq!(m.payload.len() + 16, m.hdr.len as usize);
        assert!(m.hdr.len as usize <= buf.len());
        for a in m.attrs(0) {
            let Ok(a) = a else { break };
            assert!(a.value.len() + 4 <= m.payload.len());
        }
        let Ok(req) = nldev::decode(&m) else {
            continue;
        };
        decoded += 1;
        // What was decoded builds into replies that parse back.
        let to = req.reply_to(m.hdr.pid);
        let mut space = [0u8; 512];
        let mut out = Out::new(&mut space);
        match req.cmd {
            Cmd::Get { index } | Cmd::PortGetDump { index } | Cmd::DelLink { index } => {
                let dev = nldev::DevInfo {
                    index,
                    name: b"rxe0",
                    port_count: 1,
                    cap_flags: 0,
                    fw_version: b"",
                    node_guid: u64::from(index),
                    sys_image_guid: 0,
                    node_type: nldev::NODE_IB_CA,
                    dim: false,
                    name_assign_type: 0,
                    protocol: b"roce",
                };
                nldev::put_dev(&mut out, to, req.is_dump(), &dev).expect("fits");
            }
            Cmd::PortGet { index, port } => {
                let p = nldev::PortInfo {
                    dev_index: index,
                    dev_name: b"rxe0",
                    port,
                    state: 4,
                    phys_state: 5,
                    netdev: None,
                };
                nldev::put_port(&mut out, to, false, &p).expect("fits");
            }
            Cmd::GetChardev { chardev_type, .. } => {
                let c = nldev::ChardevInfo {
                    name: chardev_type,
                    major: 231,
                    minor: 192,
                    abi: 6,
                    driver_id: None,
                };
                nldev::put_chardev(&mut out, to, &c).expect("fits");
            }
            Cmd::NewLink { name, .. } => {
                assert!(name.len() <= nldev::DEV_NAME_MAX && !name.contains(&0));
                nldev::put_error(&mut out, &m.hdr, to.pid, 0).expect("fits");
            }
            Cmd::ResGet { index } => {
                let dev = nldev::DevHandle {
                    index,
                    name: b"rxe0",
                };
                let sum = nldev::ResSummary {
                    qp: 1,
                    ctx: Some(0),
                    ..nldev::ResSummary::default()
                };
                nldev::put_res_summary(&mut out, to, false, dev, &sum).expect("fits");
            }
            Cmd::ResDump { index, port, .. } => {
                let dev = nldev::DevHandle {
                    index,
                    name: b"rxe0",
                };
                let qp = nldev::QpEntry {
                    port,
                    lqpn: index,
                    pdn: 1,
                    rqpn: 0,
                    rq_psn: 0,
                    sq_psn: 0,
                    path_mig_state: 0,
                    qp_type: 2,
                    state: 1,
                    owner: nldev::Owner::User { pid: Some(1) },
                };
                assert!(qp.on_port(port));
                assert_eq!(nldev::put_res_table(&mut out, to, dev, &[qp]), Ok(1));
            }
            Cmd::StatGet { index, port } => {
                let dev = nldev::DevHandle {
                    index,
                    name: b"rxe0",
                };
                let c = [nldev::HwCounter {
                    name: b"sent_pkts",
                    value: u64::from(port),
                }];
                nldev::put_stat(&mut out, to, dev, port, &c).expect("fits");
            }
            Cmd::GetDump | Cmd::SysGet | Cmd::ResGetDump | Cmd::StatGetDump { .. } => {
                nldev::put_done(
                    &mut out,
                    ReplyTo {
                        seq: to.seq,
                        pid: to.pid,
                    },
                )
                .expect("fits");
            }
        }
        let mut n = 0;
        for r in Messages::new(out.bytes()) {
            let r = r.expect("a built reply parses");
            assert_eq!(r.hdr.seq, m.hdr.seq);
            if r.hdr.ty >= rdma_spec::netlink::msg::msg_type::MIN_TYPE {
                for a in r.attrs(0) {
                    a.expect("a built attribute parses");
                }
            }
            if let Cmd::GetChardev { chardev_type, .. } = req.cmd {
                let name = r
                    .attrs(0)
                    .find(nldev::attr::CHARDEV_NAME)
                    .expect("walks")
                    .expect("present");
                assert_eq!(name.str_z(usize::MAX), Ok(chardev_type));
            }
            n += 1;
        }
        assert_eq!(n, 1);
    }
    decoded
}

/// The element size of the steered WQEs.
const WQE_ELEM: usize = 512;

/// Runs bytes through the rxe ring WQE decoders, as they are and steered
/// into a plausible send and receive entry; panics if an accepted entry
/// breaks its bounds. Returns how many were accepted.
pub fn check_rxe_ring(bytes: &[u8]) -> usize {
    let sel = bytes.first().copied().unwrap_or(0);
    let mut n = check_wqes(bytes, sel);
    let mut elem = [0u8; WQE_ELEM];
    for (d, s) in elem.iter_mut().zip(bytes.iter().cycle()) {
        *d = *s;
    }
    let put = |e: &mut [u8], at: usize, v: u32| e[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    let get = |e: &[u8], at: usize| u32::from_ne_bytes([e[at], e[at + 1], e[at + 2], e[at + 3]]);
    let mut recv = elem;
    // Send: opcode, flags, SGE count and lengths, then the dma state
    // librxe writes (length == resid == total, cur_sge == sge_offset == 0).
    put(&mut elem, 12, u32::from(sel % 16));
    let flags = get(&elem, 16) & 0xf;
    put(&mut elem, 16, flags);
    let num_sge = u32::from(sel >> 4) % 9;
    let mut total = 0u32;
    for i in 0..num_sge as usize {
        let at = SEND_WQE_DATA + 16 * i + 8;
        let len = get(&elem, at) & 0xffff;
        put(&mut elem, at, len);
        total += len;
    }
    if flags & SendFlags::INLINE.bits() != 0 {
        total = get(&elem, 184) & 0x1ff;
    }
    for (at, v) in [
        (184, total),
        (188, total),
        (192, 0),
        (196, num_sge),
        (200, 0),
    ] {
        put(&mut elem, at, v);
    }
    n += check_wqes(&elem, sel);
    // Receive: the same for its dma at 16 and SGEs at 40.
    let mut total = 0u32;
    for i in 0..num_sge as usize {
        let at = RECV_WQE_DATA + 16 * i + 8;
        let len = get(&recv, at) & 0xffff;
        put(&mut recv, at, len);
        total += len;
    }
    for (at, v) in [(16, total), (20, total), (24, 0), (28, num_sge), (32, 0)] {
        put(&mut recv, at, v);
    }
    n + check_wqes(&recv, sel)
}

/// Decodes `elem` as a send WQE (on a QP type `sel` picks) and as a
/// receive WQE and checks what is accepted against the limits.
fn check_wqes(elem: &[u8], sel: u8) -> usize {
    let qp_type = [QpType::Rc, QpType::Uc, QpType::Ud][usize::from(sel % 3)];
    let lim = SqLimits {
        qp_type,
        max_sge: 8,
        max_inline: 256,
    };
    let mut n = 0;
    if let Ok(d) = decode_send_wqe(elem, &lim) {
        n += 1;
        let op = d.op.opcode();
        assert!(op.allowed_on(qp_type), "{op:?} on {qp_type:?}");
        assert!(!d.flags.has_unknown());
        assert_eq!(d.ud.is_some(), qp_type == QpType::Ud);
        match d.payload {
            Payload::Inline(b) => {
                assert!(b.len() <= 256 && SEND_WQE_DATA + b.len() <= elem.len());
            }
            Payload::Sges(s) => {
                assert!(s.len() <= 8 && SEND_WQE_DATA + 16 * s.len() <= elem.len());
                let sum: u64 = s.iter().map(|g| u64::from(g.length)).sum();
                assert_eq!(sum, u64::from(s.total_len()));
                assert!(sum <= u64::from(MAX_WQE_LENGTH));
            }
        }
    }
    if let Ok(d) = decode_recv_wqe(elem, 8) {
        n += 1;
        assert!(d.sges.len() <= 8 && RECV_WQE_DATA + 16 * d.sges.len() <= elem.len());
        let sum: u64 = d.sges.iter().map(|g| u64::from(g.length)).sum();
        assert_eq!(sum, u64::from(d.sges.total_len()));
        assert!(sum <= u64::from(MAX_WQE_LENGTH));
    }
    n
}

/// Runs bytes through the tag-matching header parser, as a tagged SEND's
/// payload; returns whether it accepted them.
pub fn check_tm(bytes: &[u8]) -> bool {
    use rdma_spec::tm::header::{parse, write_fin, Rvh, TmMessage, Tmh, RVH_LEN, TMH_LEN};
    let Ok(m) = parse(bytes) else {
        return false;
    };
    let same_tmh = |t: &Tmh| {
        let mut out = [0u8; TMH_LEN];
        t.write(&mut out).expect("fits");
        assert_eq!(out[0], bytes[0]);
        assert_eq!(&out[4..], &bytes[4..TMH_LEN]);
    };
    let same_rvh = |r: &Rvh| {
        let mut out = [0u8; RVH_LEN];
        r.write(&mut out).expect("fits");
        assert_eq!(&out[..], &bytes[TMH_LEN..TMH_LEN + RVH_LEN]);
    };
    match m {
        TmMessage::NoTag => assert_eq!(bytes[0], 0),
        TmMessage::Eager(t) => same_tmh(&t),
        TmMessage::Rndv(t, r) | TmMessage::Fin(t, r) => {
            same_tmh(&t);
            same_rvh(&r);
            let mut fin = [0u8; TMH_LEN + RVH_LEN];
            write_fin(&t, &r, &mut fin).expect("fits");
            assert_eq!(parse(&fin), Ok(TmMessage::Fin(Tmh { op: 2, ..t }, r)));
        }
    }
    true
}

/// Runs one input through the codec; panics if a property is violated.
/// Returns whether the parser accepted the frame.
pub fn check(data: &[u8]) -> bool {
    let (control, frame) = match data.split_first() {
        Some((&c, rest)) => (c, rest),
        None => (0, data),
    };
    let max = usize::from(control >> 1) * 64;
    let mut owned = frame.to_vec();
    if control & 1 != 0 {
        repair(&mut owned);
    }
    let frame = &owned[..];

    check_mad(frame);
    let _ = check_uverbs(frame);
    let _ = check_netlink(frame);
    let _ = check_rxe_ring(frame);
    let _ = check_tm(frame);
    let _ = icrc::compute(&crc32_le, frame);
    let _ = icrc::verify(&crc32_le, frame);
    if let Ok(bth) = Bth::parse(frame) {
        let mut out = [0u8; Bth::LEN];
        assert_eq!(bth.write(&mut out), Ok(Bth::LEN));
        assert_eq!(&out[..], &frame[..Bth::LEN]);
        if let Some(op) = Opcode::from_u8(bth.opcode) {
            let set: HeaderSet = op.info().headers;
            if let Ok(ext) = ExtHeaders::parse(set, &frame[Bth::LEN..]) {
                let mut out = [0u8; 64];
                let n = ext.write(&mut out).expect("fits");
                assert_eq!(n, set.wire_len());
                assert_eq!(&out[..n], &frame[Bth::LEN..Bth::LEN + n]);
            }
        }
    }

    let Ok(pkt) = parse(frame, max, &crc32_le) else {
        return false;
    };
    check_mad(pkt.payload);
    let _ = check_tm(pkt.payload);
    {
        let mut out = vec![0u8; pkt.len];
        let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out).expect("rebuilds");
        assert_eq!(n, pkt.len);
        for (i, (a, b)) in frame.iter().zip(&out).enumerate() {
            assert!(a == b || (frame[0] >> 4 == 4 && (i == 10 || i == 11)));
        }
        let again = parse(&out, usize::MAX, &crc32_le).expect("reparses");
        assert_eq!(again.headers, pkt.headers);
        assert_eq!(again.payload, pkt.payload);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{check_netlink, check_rxe_ring, check_tm, check_uverbs};

    /// Steering turns the packets of the corpus into send and receive
    /// WQEs the ring decoders accept, and none breaks a bound.
    #[test]
    fn rxe_ring_steering_reaches_acceptance() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../rxe/wire/fuzz/corpus/parse"
        );
        let mut accepted = 0;
        for e in std::fs::read_dir(dir).expect("corpus") {
            let bytes = std::fs::read(e.expect("entry").path()).expect("read");
            for sel in 0..=u8::MAX {
                let mut b = bytes.clone();
                if let Some(c) = b.first_mut() {
                    *c = sel;
                }
                accepted += check_rxe_ring(&b);
            }
        }
        eprintln!("accepted {accepted}");
        assert!(accepted > 100, "accepted {accepted}");
    }

    /// Steering turns the packets of the corpus into NLDEV requests the
    /// decoder accepts, for several commands, and none breaks a property.
    #[test]
    fn netlink_steering_reaches_acceptance() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../rxe/wire/fuzz/corpus/parse"
        );
        let mut accepted = 0;
        for e in std::fs::read_dir(dir).expect("corpus") {
            let bytes = std::fs::read(e.expect("entry").path()).expect("read");
            for sel in 0..=u8::MAX {
                let mut b = bytes.clone();
                if let Some(c) = b.first_mut() {
                    *c = sel;
                }
                // No attributes: SYS_GET and dumps decode.
                b.truncate(16);
                accepted += check_netlink(&b);
                // A DEV_INDEX and a CHARDEV_TYPE.
                b.extend_from_slice(&[8, 0, 1, 0, 0, 0, 0, 0, 11, 0, 69, 0]);
                b.extend_from_slice(b"uverbs\0\0");
                accepted += check_netlink(&b);
            }
        }
        eprintln!("accepted {accepted}");
        assert!(accepted > 100, "accepted {accepted}");
    }

    /// Steering turns the packets of the corpus into uverbs writes the
    /// framing accepts (so the fuzzer reaches past the header), and none
    /// of them breaks a property.
    #[test]
    fn uverbs_steering_reaches_acceptance() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../rxe/wire/fuzz/corpus/parse"
        );
        let mut accepted = 0;
        for e in std::fs::read_dir(dir).expect("corpus") {
            let bytes = std::fs::read(e.expect("entry").path()).expect("read");
            for sel in 0..=u8::MAX {
                let mut b = bytes.clone();
                if let Some(c) = b.first_mut() {
                    *c = sel;
                }
                accepted += check_uverbs(&b);
            }
        }
        eprintln!("accepted {accepted}");
        assert!(accepted > 100, "accepted {accepted}");
    }

    /// Tagged messages of every operation parse and write back; an
    /// unknown operation and a short header do not parse.
    #[test]
    fn tm_headers_round_trip() {
        for op in 0..4u8 {
            let mut b = [0x5au8; 40];
            b[0] = op;
            assert!(check_tm(&b), "op {op}");
        }
        assert!(!check_tm(&[9; 40]));
        assert!(!check_tm(&[1; 20]));
        assert!(!check_tm(&[]));
    }
}
