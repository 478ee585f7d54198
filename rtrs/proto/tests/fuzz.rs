// SPDX-License-Identifier: GPL-2.0

//! Pseudo-random inputs to every parser and layout function: none may
//! panic; whatever parses must write back to bytes that parse to the same
//! message, writing that again must give the same bytes, and the bytes the
//! codec gives meaning to must come back unchanged. Errors must be
//! consistent with the input (a buffer called too short is too short).
//!
//! Inputs are random bytes, biased so that the checks behind the length
//! and type tests are reached: a valid type or magic at the front, small
//! descriptor counts, NUL-terminated names. The generator is a fixed-seed
//! xorshift, so every run sees the same inputs.

use rtrs_proto::chunk::ChunkGeometry;
use rtrs_proto::conn::{ConnReq, ConnRsp};
use rtrs_proto::consts::*;
use rtrs_proto::imm::{self, Imm, IoReq, IoRsp};
use rtrs_proto::mpath::{self, Backoff, HbAction, Heartbeat, PathView, PermitMap, Policy};
use rtrs_proto::msg::{self, InfoReq, InfoRsp, RdmaMsg, RdmaRead, RdmaWrite, RkeyRsp, SgDesc};
use rtrs_proto::rnbd::{self, RnbdMsg};
use rtrs_proto::Error;

/// xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }
}

const ROUNDS: usize = 20_000;
const MAX_LEN: usize = 600;

/// Parses `$input` with `$parse`; if it parses, writes it, parses the
/// output, compares, writes again and compares the bytes, then checks that
/// every byte `$mask` marks as meaningful came back. Gives the message's
/// length, or `None` on an error, which must be sensible.
/// A message may write back longer than it was read only if it is an RNBD
/// IO of protocol 1 (24 bytes), which writes as a protocol 2 one (32).
macro_rules! check {
    ($input:expr, $parse:expr, $mask:expr) => {{
        let input: &[u8] = $input;
        match $parse(input) {
            Ok(m) => {
                let mut out = [0u8; 2048];
                let n = m.write(&mut out).expect("a parsed message writes");
                assert!(
                    n <= input.len() || (n == rnbd::IO_LEN && input.len() >= rnbd::IO_LEN_V1),
                    "wrote {n} bytes from {}",
                    input.len()
                );
                let again = $parse(&out[..n]).expect("written bytes parse");
                assert_eq!(again, m);
                let mut out2 = [0xffu8; 2048];
                assert_eq!(again.write(&mut out2), Ok(n));
                assert_eq!(&out[..n], &out2[..n]);
                // Too small an output buffer fails and is left alone.
                let mut small = [0x77u8; 2048];
                assert!(matches!(
                    m.write(&mut small[..n - 1]),
                    Err(Error::TooShort { .. })
                ));
                assert!(small.iter().all(|b| *b == 0x77));
                let mask: &dyn Fn(usize) -> u8 = &$mask;
                for i in 0..n.min(input.len()) {
                    assert_eq!(out[i] & mask(i), input[i] & mask(i), "byte {i}");
                }
                Some(n)
            }
            Err(e) => {
                sensible(e, input.len());
                None
            }
        }
    }};
}

fn sensible(e: Error, len: usize) {
    if let Error::TooShort { needed, got } = e {
        assert_eq!(got, len);
        assert!(needed > len);
    }
}

const ALL: fn(usize) -> u8 = |_| 0xff;

fn conn_req_mask(i: usize) -> u8 {
    match i {
        2..44 => 0xff,
        44 => 0x01,
        _ => 0,
    }
}

fn biased_input(rng: &mut Rng, buf: &mut [u8; MAX_LEN]) -> usize {
    rng.fill(buf);
    let len = rng.below(MAX_LEN as u64 + 1) as usize;
    match rng.below(8) {
        // A message type.
        0 | 1 => {
            buf[0] = rng.below(7) as u8;
            buf[1] = 0;
        }
        // conn_req / conn_rsp magic and version.
        2 => {
            buf[2..6].copy_from_slice(&[0xbd, 0x1b, rng.next() as u8, 2]);
        }
        3 => {
            buf[0..4].copy_from_slice(&[0xbd, 0x1b, rng.next() as u8, 2]);
        }
        // A type and a small descriptor count, in both places one lives.
        4 => {
            buf[0] = [1, 3][rng.below(2) as usize];
            buf[1] = 0;
            let n = rng.below(4) as u8;
            buf[2..4].copy_from_slice(&[n, 0]);
            buf[6..8].copy_from_slice(&[n, 0]);
        }
        // A name: letters then a NUL somewhere.
        5 => {
            for b in &mut buf[2..270] {
                *b = b'a' + (*b % 26);
            }
            buf[0] = [0, 2][rng.below(2) as usize];
            buf[1] = 0;
            buf[4] = rng.below(4) as u8;
            let nul = 5 + rng.below(262) as usize;
            buf[nul] = 0;
        }
        _ => {}
    }
    len
}

#[test]
fn every_parser_survives_random_input() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut buf = [0u8; MAX_LEN];
    let mut parsed = [0usize; 15];
    for _ in 0..ROUNDS {
        let len = biased_input(&mut rng, &mut buf);
        let input = &buf[..len];

        let hits = [
            check!(input, ConnReq::parse, conn_req_mask),
            check!(input, ConnRsp::parse, |i| if i < 20 { 0xff } else { 0 }),
            check!(input, InfoReq::parse, |i| if i < 2 { 0xff } else { 0 }),
            check!(input, InfoRsp::parse, |i| if (4..8).contains(&i) {
                0
            } else {
                0xff
            }),
            check!(input, RkeyRsp::parse, ALL),
            check!(input, RdmaWrite::parse, ALL),
            check!(input, RdmaRead::parse, ALL),
            check!(input, RdmaMsg::parse, ALL),
            check!(input, SgDesc::parse, ALL),
            check!(input, rnbd::SessInfo::parse, |i| if i < 2 || i == 4 {
                0xff
            } else {
                0
            }),
            check!(input, rnbd::Open::parse, |i| if i < 2 || i == 4 {
                0xff
            } else {
                0
            }),
            check!(input, rnbd::Close::parse, |i| if (2..4).contains(&i) {
                0
            } else {
                0xff
            }),
            check!(input, rnbd::OpenRsp::parse, |i| match i {
                2..4 | 46.. => 0,
                _ => 0xff,
            }),
            check!(input, rnbd::Io::parse, |i| match i {
                2..4 | 26.. => 0,
                24 | 25 if len < rnbd::IO_LEN => 0,
                _ => 0xff,
            }),
            check!(input, RnbdMsg::parse, |i| if i < 2 { 0xff } else { 0 }),
        ];
        for (count, hit) in parsed.iter_mut().zip(hits) {
            *count += usize::from(hit.is_some());
        }

        // The raw readers.
        let _ = msg::msg_type(input);
        let _ = rnbd::msg_type(input);
        if let Ok(errno) = ConnRsp::reject_errno(input) {
            assert_eq!(errno, i16::from_le_bytes([input[4], input[5]]));
        }
        if let Ok(r) = ConnReq::parse(input) {
            let _ = r.check();
        }
        if let Ok(r) = InfoRsp::parse(input) {
            let qd = rng.below(70_000) as u32;
            let chunk = rng.next() as u32 >> rng.below(32);
            if let Ok(rbufs) = r.rbufs(qd, chunk) {
                assert_eq!(rbufs.count(), qd as usize);
            }
        }
    }
    // The bias reaches every parser's success path.
    for (i, count) in parsed.iter().enumerate() {
        assert!(*count > 20, "parser {i} accepted only {count} inputs");
    }
}

#[test]
fn info_rsp_rbufs_on_random_descriptors() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ok = 0;
    for _ in 0..ROUNDS {
        let chunk = 1u32 << (12 + rng.below(6));
        let qd = 1 + rng.below(64) as u32;
        let n = 1 + rng.below(8) as usize;
        let descs: Vec<SgDesc> = (0..n)
            .map(|_| SgDesc {
                addr: rng.next(),
                key: rng.next() as u32,
                len: chunk * rng.below(2 * qd as u64 / n as u64 + 2) as u32,
            })
            .collect();
        let rsp = InfoRsp::new(&descs).unwrap();
        if let Ok(rbufs) = rsp.rbufs(qd, chunk) {
            ok += 1;
            // The chunks tile the descriptors exactly, in order.
            let mut expect = descs.iter().flat_map(|d| {
                (0..d.len / chunk).map(move |k| (d.addr.wrapping_add(u64::from(k * chunk)), d.key))
            });
            let mut count = 0;
            for r in rbufs {
                assert_eq!(Some((r.addr, r.rkey)), expect.next());
                count += 1;
            }
            assert_eq!(count, qd);
            assert_eq!(expect.next(), None);
        }
    }
    assert!(ok > 100, "only {ok} accepted");
}

#[test]
fn immediates_round_trip() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..ROUNDS {
        let x = rng.next() as u32;
        match Imm::parse(x) {
            Ok(i) => {
                let y = i.to_u32().unwrap();
                assert_eq!(Imm::parse(y), Ok(i));
                if !matches!(i, Imm::HbMsg | Imm::HbAck) {
                    assert_eq!(y, x);
                }
            }
            Err(Error::BadImmType(t)) => {
                assert_eq!(t, x >> 28);
                assert!(!matches!(t, 0 | 1 | 2 | 8 | 9));
            }
            Err(e) => panic!("{e:?}"),
        }
        let payload = x & MAX_IMM_PAYL_MASK;
        let mem_bits = rng.below(30) as u32;
        let r = IoReq::from_payload(x, mem_bits);
        let m = mem_bits.min(28);
        assert_eq!(r.payload(m), Ok(payload));
        if mem_bits <= 28 {
            assert_eq!(r.to_imm(mem_bits), Ok(payload));
        } else {
            assert!(r.payload(mem_bits).is_err());
        }
        let rsp = IoRsp::from_payload(payload, x & 1 != 0);
        assert!(rsp.errno <= 0 && rsp.errno >= -511);
        assert!(rsp.msg_id < 1 << 19);
        assert_eq!(rsp.payload(), Ok(payload));
        assert_eq!(
            rsp.to_imm(),
            Ok(imm::to_io_rsp_imm(rsp.msg_id, rsp.errno, rsp.w_inval))
        );
        // Any fields: the checked encoder agrees with the C's masking
        // encoder whenever it accepts.
        let any = IoRsp {
            msg_id: rng.next() as u32 >> rng.below(32),
            errno: (rng.next() as i32) >> rng.below(32),
            w_inval: x & 2 != 0,
        };
        match any.to_imm() {
            Ok(v) => {
                assert_eq!(v, imm::to_io_rsp_imm(any.msg_id, any.errno, any.w_inval));
                assert_eq!(
                    Imm::parse(v),
                    Ok(Imm::IoRsp(IoRsp {
                        errno: -(any.errno.unsigned_abs() as i32),
                        ..any
                    }))
                );
            }
            Err(e) => assert!(matches!(e, Error::TooWide { .. })),
        }
    }
}

#[test]
fn chunk_layouts_on_random_geometries() {
    let mut rng = Rng(0x0bad_cafe_dead_beef);
    let mut chunk = vec![0u8; 4096];
    let mut found = 0;
    for _ in 0..ROUNDS {
        let qd = match rng.below(3) {
            0 => rng.below(70_000) as u32,
            _ => 1 + rng.below(1024) as u32,
        };
        let size = match rng.below(3) {
            0 => rng.next() as u32 >> rng.below(32),
            _ => 1 << rng.below(20),
        };
        let Ok(g) = ChunkGeometry::new(qd, size) else {
            continue;
        };
        assert!(u64::from(g.chunk_size()) <= 1 << g.mem_bits());
        assert_eq!(g.mem_bits(), imm::mem_bits(qd).unwrap());

        // The client's layouts come back through locate.
        let buf_id = rng.below(u64::from(qd) + 2) as u32;
        let data_len = rng.next() as u32 >> rng.below(32);
        let usr_len = rng.next() as u16 >> rng.below(16);
        let sg_cnt = rng.below(3) as usize;
        for l in [
            g.write_request(buf_id, data_len, usr_len),
            g.read_request(buf_id, data_len, usr_len, sg_cnt),
        ]
        .into_iter()
        .flatten()
        {
            assert!(buf_id < qd);
            assert!(u64::from(l.rdma_off) + u64::from(l.rdma_len) <= u64::from(g.chunk_size()));
            assert!(l.msg_off < g.chunk_size());
            let (t, payload) = imm::from_imm(l.imm);
            assert_eq!(t, RTRS_IO_REQ_IMM);
            assert_eq!(
                g.locate(payload),
                Ok(IoReq {
                    buf_id,
                    off: l.msg_off
                })
            );
        }

        // The server's side on random chunk contents.
        rng.fill(&mut chunk);
        let payload = rng.next() as u32;
        let at = match g.locate(payload) {
            Ok(at) => at,
            Err(_) => IoReq {
                buf_id: rng.below(u64::from(qd)) as u32,
                off: rng.below(u64::from(g.chunk_size().min(4096))) as u32,
            },
        };
        let off = at.off as usize;
        if rng.below(2) == 0 && off + 8 <= chunk.len() {
            chunk[off] = [2, 3][rng.below(2) as usize];
            chunk[off + 1] = 0;
            chunk[off + 3] = 0;
            chunk[off + 6] = rng.below(3) as u8;
            chunk[off + 7] = 0;
        }
        let window = rng.below(4097) as usize;
        match g.parse_request(&chunk[..window], at) {
            Ok(req) => {
                found += 1;
                let end = req.msg_off as usize + req.msg.len();
                assert!(end <= window && end <= g.chunk_size() as usize);
                assert!(req.usr_range().end == req.msg_off as usize);
                assert!(req.data_range().end == req.usr_range().start);
                assert_eq!(req.data_len() + req.usr_len(), req.msg_off);
                let mut out = [0u8; 64];
                let n = req.msg.write(&mut out).unwrap();
                assert_eq!(&out[..n], &chunk[req.msg_off as usize..end]);
                if let RdmaMsg::Read(r) = req.msg {
                    assert!(r.descs().len() <= MAX_READ_SG_CNT);
                    let _ = RdmaRead::parse(&out[..n]).unwrap();
                } else {
                    let _ = RdmaWrite::parse(&out[..n]).unwrap();
                }
            }
            Err(e) => sensible(e, window),
        }
    }
    assert!(found > 100, "only {found} requests found");
}

#[test]
fn policy_parse_on_random_text() {
    let mut rng = Rng(0x5eed_0f90_11c7);
    let words: [&[u8]; 10] = [
        b"round-robin",
        b"min-inflight",
        b"min-latency",
        b"rr",
        b"mi",
        b"ml",
        b"0",
        b"1",
        b"2",
        b"-0",
    ];
    let mut accepted = 0;
    for _ in 0..ROUNDS {
        let mut buf = [0u8; 24];
        rng.fill(&mut buf);
        let len = rng.below(buf.len() as u64 + 1) as usize;
        if rng.below(2) == 0 {
            // A real name with random case and a random tail.
            let w = words[rng.below(words.len() as u64) as usize];
            let n = w.len().min(len);
            for (d, c) in buf.iter_mut().zip(&w[..n]) {
                *d = if rng.below(2) == 0 {
                    c.to_ascii_uppercase()
                } else {
                    *c
                };
            }
            if len > n && rng.below(2) == 0 {
                buf[n] = [b'\n', 0, b' '][rng.below(3) as usize];
            }
        }
        let text = &buf[..len];
        let Ok(p) = Policy::parse(text) else {
            continue;
        };
        accepted += 1;
        // Whatever is accepted means what the C would take it for.
        let c = text.split(|b| *b == 0).next().unwrap();
        let lower = c.to_ascii_lowercase();
        let trimmed = lower.strip_suffix(b"\n").unwrap_or(&lower);
        let expect = match p {
            Policy::RoundRobin => (b"round-robin".as_ref(), b"rr".as_ref(), 0),
            Policy::MinInflight => (b"min-inflight".as_ref(), b"mi".as_ref(), 1),
            Policy::MinLatency => (b"min-latency".as_ref(), b"ml".as_ref(), 2),
        };
        let number = std::str::from_utf8(trimmed)
            .ok()
            .filter(|t| !t.starts_with("+-") && !t.starts_with("-+"))
            .and_then(|t| t.parse::<i32>().ok());
        assert!(
            lower.starts_with(expect.0) || trimmed == expect.1 || number == Some(expect.2),
            "{:?} parsed as {p:?}",
            String::from_utf8_lossy(text)
        );
    }
    assert!(accepted > 1000, "only {accepted} accepted");
}

#[test]
fn choose_on_random_views() {
    let mut rng = Rng(0xc0ff_ee00_1234_5678);
    let mut chosen = 0;
    for _ in 0..ROUNDS {
        let n = rng.below(9) as usize;
        let paths: Vec<PathView> = (0..n)
            .map(|_| PathView {
                connected: rng.below(3) != 0,
                inflight: match rng.below(3) {
                    0 => rng.below(3) as u32,
                    1 => u32::MAX - rng.below(2) as u32,
                    _ => rng.next() as u32,
                },
                latency_ns: match rng.below(3) {
                    0 => 0,
                    1 => rng.below(3),
                    _ => rng.next() >> rng.below(64),
                },
            })
            .collect();
        let skip = match rng.below(3) {
            0 => None,
            1 => Some(rng.below(n as u64 + 1) as usize),
            _ => Some(rng.next() as usize),
        };
        let before = match rng.below(2) {
            0 => rng.below(n as u64 + 2) as usize,
            _ => rng.next() as usize,
        };
        let policy =
            [Policy::RoundRobin, Policy::MinInflight, Policy::MinLatency][rng.below(3) as usize];
        let mut cursor = before;
        let got = mpath::choose(policy, &paths, &mut cursor, skip);
        let ok = |i: usize| paths[i].connected && skip != Some(i);
        let candidates: Vec<usize> = (0..n).filter(|&i| ok(i)).collect();
        let Some(i) = got else {
            assert!(candidates.is_empty());
            assert_eq!(cursor, before);
            continue;
        };
        chosen += 1;
        assert!(ok(i));
        assert_eq!(cursor, (i + 1) % n);
        let p = paths[i];
        let start = before % n;
        // Candidates met before `i` going round from the cursor.
        let earlier = |j: usize| (j + n - start) % n < (i + n - start) % n;
        for &j in &candidates {
            let q = paths[j];
            match policy {
                Policy::RoundRobin => assert!(!earlier(j)),
                Policy::MinInflight => {
                    assert!(p.inflight <= q.inflight);
                    assert!(p.inflight < q.inflight || !earlier(j));
                }
                Policy::MinLatency => {
                    let key = |v: PathView| (v.latency_ns == 0, v.latency_ns, v.inflight);
                    assert!(key(p) <= key(q));
                    assert!(key(p) < key(q) || !earlier(j));
                }
            }
        }
    }
    assert!(chosen > ROUNDS / 2, "only {chosen} chosen");
}

#[test]
fn backoff_heartbeat_and_permits_on_random_walks() {
    let mut rng = Rng(0x0ddb_a11c_afef_00d0);
    for _ in 0..200 {
        // Backoff: attempts never exceed a non-negative maximum, and every
        // delay is the base plus a jitter below the seed.
        let delay = rng.next() as u32 >> rng.below(32);
        let max = rng.below(12) as i32 - 2;
        let mut b = Backoff::new(delay, max);
        let mut run = 0;
        for _ in 0..40 {
            match rng.below(8) {
                0 => {
                    b.reset();
                    run = 0;
                }
                _ => match b.next(rng.next() as u32) {
                    Some(d) => {
                        run += 1;
                        assert!(max < 0 || run <= max);
                        assert!(d >= delay && d - delay < RTRS_RECONNECT_SEED || d == u32::MAX);
                    }
                    None => assert!(max >= 0 && run == max),
                },
            }
            assert_eq!(b.attempts(), run as u32);
        }

        // Heartbeat against a model of hb_work.
        let max_missed = rng.below(7) as u32;
        let mut hb = Heartbeat::new(max_missed);
        let mut missed = 0u32;
        for t in 0..60u64 {
            if rng.below(4) == 0 {
                hb.any_rx();
                missed = 0;
            }
            let want = if missed > max_missed {
                HbAction::Fail
            } else {
                missed += 1;
                if missed == 1 {
                    HbAction::Send
                } else {
                    HbAction::Wait
                }
            };
            let got = hb.tick();
            assert_eq!(got, want);
            if got == HbAction::Send {
                hb.sent(t * 1000);
            }
            assert_eq!(hb.missed(), missed);
        }

        // Permits against a set.
        let count = 1 + rng.below(u64::from(mpath::MAX_PERMITS)) as u32;
        let mut m = PermitMap::new(count).unwrap();
        let mut taken = std::collections::BTreeSet::new();
        for _ in 0..400 {
            if rng.below(2) == 0 {
                let want = (0..count).find(|i| !taken.contains(i));
                assert_eq!(m.take(), want);
                if let Some(id) = want {
                    taken.insert(id);
                }
            } else {
                let id = rng.below(u64::from(count) + 2) as u32;
                let r = m.put(id);
                if taken.remove(&id) {
                    assert_eq!(r, Ok(()));
                } else if id >= count {
                    assert!(matches!(r, Err(Error::OutOfRange { .. })));
                } else {
                    assert_eq!(r, Err(Error::NotTaken(id)));
                }
            }
            assert_eq!(m.in_use() as usize, taken.len());
        }
    }
}
