// SPDX-License-Identifier: GPL-2.0

//! The rdma_cm `write()` codec (`ucma`): the framing of commands as
//! librdmacm writes them and each malformed header a user program can
//! write, the socket addresses of the IP commands as Linux lays them out,
//! the private data helpers and the event encoding.

use rdma_spec::uverbs::ucma::{self, *};
use rdma_spec::uverbs::{AbiError, Wire, WireStruct};

/// A small xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A `write()`: header `{cmd, in, out}` then `body` (whose length need
/// not be `in`).
fn write(cmd: u32, in_len: u16, out_len: u16, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&cmd.to_ne_bytes());
    b.extend_from_slice(&in_len.to_ne_bytes());
    b.extend_from_slice(&out_len.to_ne_bytes());
    b.extend_from_slice(body);
    b
}

/// A `write()` whose `in` is the body's length.
fn cmd_of(cmd: u32, body: &[u8], out_len: u16) -> Vec<u8> {
    write(cmd, body.len() as u16, out_len, body)
}

fn bytes_of<T: WireStruct>(v: &T) -> Vec<u8> {
    let mut b = vec![0u8; T::SIZE];
    assert_eq!(v.encode(&mut b), Ok(T::SIZE));
    b
}

fn spec(cmd: u32) -> CmdSpec {
    *CMDS.iter().find(|s| s.cmd == cmd).expect("implemented")
}

// ---------------------------------------------------------------------
// Framing.

#[test]
fn shorter_than_a_header_is_framing() {
    let full = write(DISCONNECT, 4, 0, &[0; 4]);
    for n in 0..HDR_LEN {
        assert_eq!(parse(&full[..n]), Err(UcmaError::Framing), "{n} bytes");
    }
    // A bare header of a command without request or response would be
    // too short a request, not a framing fault.
    assert_eq!(
        parse(&write(DISCONNECT, 0, 0, &[])),
        Err(UcmaError::ShortRequest)
    );
}

#[test]
fn in_past_the_buffer_is_framing() {
    let body = bytes_of(&CreateId::default());
    // One byte missing.
    let b = write(CREATE_ID, 24, 4, &body[..23]);
    assert_eq!(parse(&b), Err(UcmaError::Framing));
    // All of it there.
    let b = write(CREATE_ID, 24, 4, &body);
    assert_eq!(parse(&b).map(|r| r.input.len()), Ok(24));
    // The largest `in` with a short buffer.
    let b = write(CREATE_ID, u16::MAX, 4, &body);
    assert_eq!(parse(&b), Err(UcmaError::Framing));
    // Framing is checked before the command number (the C ucma answers
    // EINVAL for both).
    let b = write(99, 8, 0, &[0; 7]);
    assert_eq!(parse(&b), Err(UcmaError::Framing));
    let b = write(GET_OPTION, 8, 0, &[0; 7]);
    assert_eq!(parse(&b), Err(UcmaError::Framing));
}

#[test]
fn unknown_commands() {
    let body = [0u8; 512];
    for n in [
        GET_OPTION,
        QUERY,
        BIND,
        RESOLVE_ADDR,
        23,
        99,
        0x8000_0000,
        u32::MAX,
    ] {
        assert_eq!(
            parse(&cmd_of(n, &body, 512)),
            Err(UcmaError::Unknown(n)),
            "command {n}"
        );
    }
    assert_eq!(
        (GET_OPTION, QUERY, BIND, RESOLVE_ADDR, JOIN_MCAST),
        (13, 19, 20, 21, 22)
    );
    assert!(CMDS.iter().any(|s| s.cmd == JOIN_MCAST));
    // Every number of the C table missing from CMDS is unknown.
    for n in 0..=JOIN_MCAST {
        let b = cmd_of(n, &body, 512);
        let r = parse(&b);
        match CMDS.iter().find(|s| s.cmd == n) {
            Some(s) => assert_eq!(r.map(|r| r.spec), Ok(*s), "command {n}"),
            None => assert_eq!(r, Err(UcmaError::Unknown(n)), "command {n}"),
        }
    }
}

#[test]
fn every_command_at_its_least_sizes() {
    for s in CMDS {
        let body = vec![0x5au8; s.min_in];
        let b = cmd_of(s.cmd, &body, s.min_out as u16);
        let r = parse(&b).unwrap_or_else(|e| panic!("command {}: {e:?}", s.cmd));
        assert_eq!(r.spec, *s);
        assert_eq!(r.input, &body[..]);
        assert_eq!(r.out_len, s.min_out);
    }
}

#[test]
fn in_below_the_request_is_short_request() {
    for s in CMDS {
        assert!(s.min_in > 0, "command {}", s.cmd);
        // The bytes are there; only `in` is short.
        let body = vec![0u8; s.min_in];
        let b = write(s.cmd, (s.min_in - 1) as u16, s.min_out as u16, &body);
        assert_eq!(parse(&b), Err(UcmaError::ShortRequest), "command {}", s.cmd);
        let b = write(s.cmd, 0, s.min_out as u16, &body);
        assert_eq!(parse(&b), Err(UcmaError::ShortRequest), "command {}", s.cmd);
    }
    // A short request is reported before a short response.
    let b = write(GET_EVENT, 7, 0, &[0; 8]);
    assert_eq!(parse(&b), Err(UcmaError::ShortRequest));
}

#[test]
fn out_below_the_response_is_short_response() {
    let mut with_response = 0;
    for s in CMDS.iter().filter(|s| s.min_out > 0) {
        with_response += 1;
        let body = vec![0u8; s.min_in];
        let b = cmd_of(s.cmd, &body, (s.min_out - 1) as u16);
        assert_eq!(
            parse(&b),
            Err(UcmaError::ShortResponse),
            "command {}",
            s.cmd
        );
        let b = cmd_of(s.cmd, &body, 0);
        assert_eq!(
            parse(&b),
            Err(UcmaError::ShortResponse),
            "command {}",
            s.cmd
        );
    }
    // CREATE_ID, DESTROY_ID, QUERY_ROUTE, INIT_QP_ATTR, GET_EVENT,
    // JOIN_IP_MCAST, LEAVE_MCAST, JOIN_MCAST, MIGRATE_ID.
    assert_eq!(with_response, 9);
    assert_eq!(spec(GET_EVENT).min_out, 324);
    assert_eq!(spec(QUERY_ROUTE).min_out, 200);
    assert_eq!(spec(INIT_QP_ATTR).min_out, 144);
    // A command without a response takes any area, none included.
    let b = cmd_of(LISTEN, &bytes_of(&Listen { id: 1, backlog: 8 }), 0);
    assert_eq!(parse(&b).map(|r| r.out_len), Ok(0));
}

#[test]
fn connect_and_accept_with_and_without_ece() {
    let connect = Connect {
        conn_param: ConnParam {
            qp_num: 0x11,
            valid: 1,
            ..ConnParam::with_data(b"hello")
        },
        id: 7,
        reserved: 0,
        ece: Ece {
            vendor_id: 0x15b3,
            attr_mod: 0x2,
        },
    };
    let full = bytes_of(&connect);
    assert_eq!((full.len(), CONNECT_MIN), (288, 280));

    // The pre-5.8 structure: no ece; it decodes as zero.
    let b = cmd_of(CONNECT, &full[..CONNECT_MIN], 0);
    let r = parse(&b).expect("CONNECT without ece");
    assert_eq!(r.input.len(), CONNECT_MIN);
    let c: Connect = decode(r.input);
    assert_eq!(c.id, 7);
    assert_eq!(c.conn_param.qp_num, 0x11);
    assert_eq!(c.conn_param.data(), b"hello");
    assert_eq!(c.ece, Ece::default());
    // With it.
    let b = cmd_of(CONNECT, &full, 0);
    let r = parse(&b).expect("CONNECT with ece");
    assert_eq!(r.input.len(), Connect::SIZE);
    assert_eq!(decode::<Connect>(r.input), connect);
    // One byte short of the reserved word.
    let b = cmd_of(CONNECT, &full[..CONNECT_MIN - 1], 0);
    assert_eq!(parse(&b), Err(UcmaError::ShortRequest));

    let accept = Accept {
        uid: 0xfeed_f00d,
        conn_param: ConnParam {
            qp_num: 0x12,
            valid: 1,
            ..ConnParam::default()
        },
        id: 3,
        reserved: 0,
        ece: Ece {
            vendor_id: 1,
            attr_mod: 2,
        },
    };
    let full = bytes_of(&accept);
    assert_eq!((full.len(), ACCEPT_MIN), (296, 288));
    let b = cmd_of(ACCEPT, &full[..ACCEPT_MIN], 0);
    let r = parse(&b).expect("ACCEPT without ece");
    let a: Accept = decode(r.input);
    assert_eq!((a.uid, a.id, a.conn_param.qp_num), (0xfeed_f00d, 3, 0x12));
    assert_eq!(a.ece, Ece::default());
    let b = cmd_of(ACCEPT, &full, 0);
    assert_eq!(decode::<Accept>(parse(&b).unwrap().input), accept);
    let b = cmd_of(ACCEPT, &full[..ACCEPT_MIN - 1], 0);
    assert_eq!(parse(&b), Err(UcmaError::ShortRequest));
}

#[test]
fn input_is_exactly_in_bytes() {
    let body: Vec<u8> = (0..40u8).collect();
    // `in` is 16 (DESTROY_ID) but the write carries 40 bytes after the
    // header: the C ucma only checks that `in` fits.
    let b = write(DESTROY_ID, 16, 4, &body);
    let r = parse(&b).expect("accepted");
    assert_eq!(r.input, &body[..16]);
    assert_eq!(r.out_len, 4);
    // A longer `in` than the structure is handed over whole.
    let b = write(DESTROY_ID, 40, 4, &body);
    assert_eq!(parse(&b).unwrap().input, &body[..]);
    // Decoding reads the structure's bytes only.
    let d: DestroyId = decode(&body);
    assert_eq!(
        d.response,
        u64::from_ne_bytes(body[0..8].try_into().unwrap())
    );
    assert_eq!(d.id, u32::from_ne_bytes(body[8..12].try_into().unwrap()));
}

#[test]
fn create_id_byte_by_byte() {
    let mut b = Vec::new();
    b.extend_from_slice(&0u32.to_ne_bytes()); // RDMA_USER_CM_CMD_CREATE_ID
    b.extend_from_slice(&24u16.to_ne_bytes()); // in
    b.extend_from_slice(&4u16.to_ne_bytes()); // out
    b.extend_from_slice(&0x1122_3344_5566_7788u64.to_ne_bytes()); // uid
    b.extend_from_slice(&0x7fff_0000_1000u64.to_ne_bytes()); // response
    b.extend_from_slice(&0x0106u16.to_ne_bytes()); // ps: RDMA_PS_TCP
    b.push(2); // qp_type: IBV_QPT_RC
    b.extend_from_slice(&[0; 5]); // reserved
    assert_eq!(b.len(), 32);

    let r = parse(&b).expect("CREATE_ID");
    assert_eq!(r.spec, spec(CREATE_ID));
    assert_eq!(r.spec.cmd, 0);
    assert_eq!(r.out_len, 4);
    let c = CreateId::decode(r.input).expect("24 bytes");
    assert_eq!(c.uid, 0x1122_3344_5566_7788);
    assert_eq!(c.response, 0x7fff_0000_1000);
    assert_eq!(c.ps, PS_TCP);
    assert_eq!(c.qp_type, 2);
    assert_eq!(c.reserved, [0; 5]);
    assert_eq!(decode::<CreateId>(r.input), c);
    // The response: the id at offset 0.
    assert_eq!(bytes_of(&CreateIdResp { id: 9 }), 9u32.to_ne_bytes());
}

#[test]
fn fuzz_parse_never_panics() {
    let rng = &mut Rng(0x0bad_cafe_1234_5678);
    let mut accepted = 0;
    for i in 0..20_000 {
        let len = (rng.next() % 400) as usize;
        let mut b = rng.bytes(len);
        if b.len() >= HDR_LEN && i % 2 == 0 {
            // Mostly plausible headers: a small command number and an `in`
            // near the buffer's length.
            b[0..4].copy_from_slice(&((rng.next() % 24) as u32).to_ne_bytes());
            let slack = if len > 12 { rng.next() % 4 } else { 0 } as usize;
            let in_len = (len - HDR_LEN - slack) as u16;
            b[4..6].copy_from_slice(&in_len.to_ne_bytes());
        }
        if let Ok(r) = parse(&b) {
            accepted += 1;
            let in_len = usize::from(u16::from_ne_bytes([b[4], b[5]]));
            let out_len = usize::from(u16::from_ne_bytes([b[6], b[7]]));
            assert_eq!(r.spec.cmd, u32::from_ne_bytes(b[0..4].try_into().unwrap()));
            assert_eq!(r.input, &b[HDR_LEN..HDR_LEN + in_len]);
            assert!(in_len >= r.spec.min_in && out_len >= r.spec.min_out);
            assert_eq!(r.out_len, out_len);
        }
    }
    assert!(accepted > 100, "only {accepted} accepted");
}

// ---------------------------------------------------------------------
// Socket addresses.

/// A Linux `sockaddr_in` (16 bytes) in a zeroed 28-byte slot.
fn sockaddr_in(port: u16, addr: [u8; 4]) -> [u8; 28] {
    let mut s = [0u8; 28];
    s[0..2].copy_from_slice(&2u16.to_ne_bytes()); // sin_family: AF_INET
    s[2..4].copy_from_slice(&port.to_be_bytes()); // sin_port
    s[4..8].copy_from_slice(&addr); // sin_addr
    s
}

/// A Linux `sockaddr_in6`.
fn sockaddr_in6(port: u16, addr: [u8; 16], flowinfo: u32, scope: u32) -> [u8; 28] {
    let mut s = [0u8; 28];
    s[0..2].copy_from_slice(&10u16.to_ne_bytes()); // sin6_family: AF_INET6
    s[2..4].copy_from_slice(&port.to_be_bytes());
    s[4..8].copy_from_slice(&flowinfo.to_ne_bytes());
    s[8..24].copy_from_slice(&addr);
    s[24..28].copy_from_slice(&scope.to_ne_bytes());
    s
}

const V6: [u8; 16] = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
];

#[test]
fn ipv4_sockaddr_decodes() {
    let raw = sockaddr_in(4791, [192, 168, 1, 20]);
    let slot = SockaddrIn6::decode(&raw).unwrap();
    assert_eq!(slot.sin6_family, AF_INET);
    assert_eq!(slot.sin6_port, [0x12, 0xb7]);
    assert_eq!(
        SockAddr::decode(&slot),
        Ok(Some(SockAddr {
            ip: IpBytes::V4([192, 168, 1, 20]),
            port: 4791,
        }))
    );
}

#[test]
fn ipv6_sockaddr_decodes() {
    let raw = sockaddr_in6(20079, V6, 0, 3);
    let slot = SockaddrIn6::decode(&raw).unwrap();
    assert_eq!(slot.sin6_scope_id, 3);
    assert_eq!(
        SockAddr::decode(&slot),
        Ok(Some(SockAddr {
            ip: IpBytes::V6(V6),
            port: 20079,
        }))
    );
}

#[test]
fn encode_in6_lays_out_linux_sockaddrs() {
    let v4 = SockAddr {
        ip: IpBytes::V4([10, 0, 0, 1]),
        port: 0x1234,
    };
    let b = bytes_of(&v4.encode_in6());
    assert_eq!(&b[0..2], &2u16.to_ne_bytes());
    assert_eq!(&b[2..4], &[0x12, 0x34]);
    assert_eq!(&b[4..8], &[10, 0, 0, 1]);
    assert_eq!(&b[8..], &[0u8; 20], "zero beyond the sockaddr_in");
    assert_eq!(b, sockaddr_in(0x1234, [10, 0, 0, 1]));

    let v6 = SockAddr {
        ip: IpBytes::V6(V6),
        port: 18515,
    };
    let b = bytes_of(&v6.encode_in6());
    assert_eq!(&b[0..2], &10u16.to_ne_bytes());
    assert_eq!(&b[2..4], &18515u16.to_be_bytes());
    assert_eq!(&b[4..8], &[0; 4], "no flow info");
    assert_eq!(&b[8..24], &V6);
    assert_eq!(&b[24..28], &[0; 4], "no scope");
    assert_eq!(b, sockaddr_in6(18515, V6, 0, 0));
}

#[test]
fn absent_and_foreign_families() {
    // Family 0: no address given (RESOLVE_IP's source), whatever follows.
    let mut raw = [0xffu8; 28];
    raw[0..2].copy_from_slice(&0u16.to_ne_bytes());
    assert_eq!(
        SockAddr::decode(&SockaddrIn6::decode(&raw).unwrap()),
        Ok(None)
    );
    assert_eq!(SockAddr::decode(&SockaddrIn6::default()), Ok(None));
    // AF_UNIX, AF_IB (27), a byte-swapped AF_INET.
    for f in [1u16, 27, 0x0200, u16::MAX] {
        let s = SockaddrIn6 {
            sin6_family: f,
            ..SockaddrIn6::decode(&sockaddr_in(1, [1, 2, 3, 4])).unwrap()
        };
        assert_eq!(
            SockAddr::decode(&s),
            Err(UcmaError::Family(f)),
            "family {f}"
        );
    }
}

#[test]
fn sockaddr_round_trips() {
    let rng = &mut Rng(0x5eed_0000_0000_0001);
    for _ in 0..200 {
        let r = rng.next();
        let port = r as u16;
        let a = if r & 0x1_0000 == 0 {
            IpBytes::V4(rng.bytes(4).try_into().unwrap())
        } else {
            IpBytes::V6(rng.bytes(16).try_into().unwrap())
        };
        let s = SockAddr { ip: a, port };
        let slot = s.encode_in6();
        assert_eq!(SockAddr::decode(&slot), Ok(Some(s)));
        // Through the bytes of a BIND_IP.
        let bind = BindIp {
            response: 0,
            addr: slot,
            id: 5,
        };
        let b = bytes_of(&bind);
        let back = BindIp::decode(&b).unwrap();
        assert_eq!(back, bind);
        assert_eq!(SockAddr::decode(&back.addr), Ok(Some(s)));
    }
}

// ---------------------------------------------------------------------
// Structures.

/// Random bytes decode to a value that encodes back to the same bytes.
fn round_trip<T: WireStruct + PartialEq + core::fmt::Debug>(rng: &mut Rng) {
    for _ in 0..20 {
        let bytes = rng.bytes(T::SIZE);
        let v = T::decode(&bytes).expect("decodes");
        let mut out = vec![0xeeu8; T::SIZE + 3];
        assert_eq!(v.encode(&mut out), Ok(T::SIZE), "{}", T::C_NAME);
        assert_eq!(&out[..T::SIZE], &bytes[..], "{}", T::C_NAME);
        assert_eq!(&out[T::SIZE..], &[0xee; 3], "{} writes past", T::C_NAME);
        assert_eq!(T::decode(&out).as_ref(), Ok(&v));
    }
    assert_eq!(
        T::decode(&vec![0u8; T::SIZE - 1]),
        Err(AbiError::TooShort {
            needed: T::SIZE,
            got: T::SIZE - 1
        }),
        "{}",
        T::C_NAME
    );
}

macro_rules! round_trips {
    ($rng:expr; $($t:ty),* $(,)?) => { $( round_trip::<$t>($rng); )* };
}

#[test]
fn every_structure_round_trips() {
    let rng = &mut Rng(0x1234_5678_9abc_def1);
    round_trips!(rng;
        SockaddrIn6, CreateId, CreateIdResp, DestroyId, DestroyIdResp, BindIp, ResolveIp,
        ResolveRoute, Query, UserPathRec, QueryRouteResp, ConnParam, UdParam, Ece, Connect,
        Listen, Accept, Reject, Disconnect, InitQpAttr, QpAttr, Notify, JoinIpMcast,
        JoinMcast, GetEvent, EventResp, SetOption, MigrateId, MigrateResp,
    );
}

#[test]
fn conn_param_data_follows_its_length() {
    let mut p = ConnParam::default();
    for (i, b) in p.private_data.0.iter_mut().enumerate() {
        *b = i as u8;
    }
    p.private_data_len = 0;
    assert_eq!(p.data(), b"");
    p.private_data_len = 10;
    assert_eq!(p.data(), &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The largest length the u8 holds: all but the area's last byte.
    p.private_data_len = u8::MAX;
    assert_eq!(p.data().len(), 255);
    assert_eq!(p.data()[254], 254);
    // From the bytes: the length at 264, the data at 8.
    let mut raw = [0u8; 272];
    raw[8..11].copy_from_slice(b"abc");
    raw[11] = b'!'; // beyond the length
    raw[264] = 3;
    let p = ConnParam::decode(&raw).unwrap();
    assert_eq!(p.data(), b"abc");
}

#[test]
fn conn_param_with_data() {
    let p = ConnParam::with_data(b"private");
    assert_eq!(p.private_data_len, 7);
    assert_eq!(p.data(), b"private");
    assert_eq!(&p.private_data.0[..7], b"private");
    assert!(p.private_data.0[7..].iter().all(|b| *b == 0));
    // Everything else is left at zero (`valid` included).
    assert_eq!(
        ConnParam {
            private_data: Area::default(),
            private_data_len: 0,
            ..p
        },
        ConnParam::default()
    );
    assert_eq!(ConnParam::with_data(&[]), ConnParam::default());

    // Longer than the area: cut, without a panic; what is kept is the
    // start of the data.
    let long: Vec<u8> = (0..300).map(|i| (i * 7) as u8).collect();
    let p = ConnParam::with_data(&long);
    assert_eq!(&p.private_data.0[..255], &long[..255]);
    let p = ConnParam::with_data(&long[..255]);
    assert_eq!(p.private_data_len, 255);
    assert_eq!(p.data(), &long[..255]);
}

/// `private_data_len` is a `u8`: 256 bytes of data cannot be described
/// by it, and `with_data` stores `256 as u8`, that is 0.
#[test]
fn conn_param_with_data_length_fits_its_u8() {
    let long: Vec<u8> = (0..300).map(|i| (i * 7) as u8).collect();
    for n in [256, 300] {
        let p = ConnParam::with_data(&long[..n]);
        assert_eq!(p.private_data_len, 255, "{n} bytes");
        assert_eq!(p.data(), &long[..255], "{n} bytes");
    }
}

#[test]
fn reject_data() {
    // id at 0, private_data_len at 4, reason at 5, data at 8.
    let mut raw = [0u8; 264];
    raw[0..4].copy_from_slice(&42u32.to_ne_bytes());
    raw[4] = 4;
    raw[5] = 28; // IB_CM_REJ_CONSUMER_DEFINED
    raw[8..13].copy_from_slice(b"nope!");
    let r = Reject::decode(&raw).unwrap();
    assert_eq!((r.id, r.private_data_len, r.reason), (42, 4, 28));
    assert_eq!(r.data(), b"nope");
    let r = Reject {
        private_data_len: u8::MAX,
        ..r
    };
    assert_eq!(r.data().len(), 255);
    assert_eq!(&r.data()[..5], b"nope!");
    let r = Reject {
        private_data_len: 0,
        ..r
    };
    assert_eq!(r.data(), b"");
    // The whole request through parse.
    let b = cmd_of(REJECT, &raw, 0);
    let req = parse(&b).unwrap();
    assert_eq!(decode::<Reject>(req.input).data(), b"nope");
}

#[test]
fn event_with_conn_param() {
    let mut p = ConnParam::with_data(b"reply");
    p.qp_num = 0x00ab_cdef;
    p.responder_resources = 4;
    p.initiator_depth = 2;
    p.rnr_retry_count = 7;
    p.valid = 1;
    let e = EventResp::with_conn(
        0x1111_2222_3333_4444,
        17,
        event::REJECTED,
        -110, // -ETIMEDOUT
        &p,
    );
    let b = bytes_of(&e);
    assert_eq!(b.len(), 336);
    assert_eq!(&b[0..8], &0x1111_2222_3333_4444u64.to_ne_bytes());
    assert_eq!(&b[8..12], &17u32.to_ne_bytes());
    assert_eq!(&b[12..16], &8u32.to_ne_bytes());
    // Two's complement: -110 is 0xffffff92.
    assert_eq!(&b[16..20], &0xffff_ff92u32.to_ne_bytes());
    assert_eq!(e.status, 0xffff_ff92);
    assert_eq!(e.status as i32, -110);
    // The conn member of the union at 20, its 272 bytes, then zeros up
    // to the union's 304.
    assert_eq!(&b[20..292], &bytes_of(&p)[..]);
    assert_eq!(&b[20..24], &0x00ab_cdefu32.to_ne_bytes());
    assert_eq!(&b[28..33], b"reply");
    assert_eq!(b[20 + 264], 5, "private_data_len");
    assert_eq!(b[20 + 271], 1, "valid");
    assert_eq!(ConnParam::decode(&b[20..]).unwrap(), p);
    assert!(b[292..324].iter().all(|x| *x == 0), "rest of the union");
    assert_eq!(&b[324..336], &[0; 12], "reserved and ece");

    // A status of 0 and an event of the new id.
    let e = EventResp::with_conn(5, 6, event::CONNECT_REQUEST, 0, &ConnParam::default());
    let b = bytes_of(&e);
    assert_eq!(&b[12..20], &[4, 0, 0, 0, 0, 0, 0, 0][..]);
    assert!(b[20..].iter().all(|x| *x == 0));
    // The event numbers librdmacm knows.
    assert_eq!(
        (
            event::ESTABLISHED,
            event::DISCONNECTED,
            event::TIMEWAIT_EXIT
        ),
        (9, 10, 15)
    );
}

#[test]
fn responses_fill_the_area_user_space_gives() {
    // GET_EVENT's area is EventResp::SIZE; a larger one gets zeros.
    let e = EventResp::with_conn(1, 2, event::ESTABLISHED, 0, &ConnParam::with_data(b"x"));
    let mut area = vec![0xffu8; 400];
    assert_eq!(e.encode_response(&mut area), 336);
    assert_eq!(&area[..336], &bytes_of(&e)[..]);
    assert!(area[336..].iter().all(|x| *x == 0));
    // QUERY_ROUTE: two path records, then the addresses at 136.
    let q = QueryRouteResp {
        num_paths: 1,
        port_num: 1,
        src_addr: SockAddr {
            ip: IpBytes::V4([10, 0, 0, 2]),
            port: 0,
        }
        .encode_in6(),
        ibdev_index: 3,
        ..QueryRouteResp::default()
    };
    let b = bytes_of(&q);
    assert_eq!(&b[136..144], &sockaddr_in(0, [10, 0, 0, 2])[..8]);
    assert_eq!(&b[192..196], &1u32.to_ne_bytes());
    assert_eq!(b[196], 1);
    assert_eq!(&b[200..204], &3u32.to_ne_bytes());
    assert_eq!(ucma::MAX_PRIVATE_DATA, 256);
}

#[test]
fn join_mcast_address_size_is_its_familys() {
    let v4 = SockAddr {
        ip: IpBytes::V4([239, 1, 2, 3]),
        port: 0,
    };
    let mut area = [0u8; SOCKADDR_STORAGE_LEN];
    v4.encode_in6().write_to(&mut area);
    assert_eq!(SockAddr::decode_sized(&area, 16), Ok(Some(v4)));
    assert_eq!(
        SockAddr::decode_sized(&area, 28),
        Err(UcmaError::ShortRequest)
    );
    assert_eq!(
        SockAddr::decode_sized(&area, 0),
        Err(UcmaError::ShortRequest)
    );
    let v6 = SockAddr {
        ip: IpBytes::V6([0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        port: 7,
    };
    v6.encode_in6().write_to(&mut area);
    assert_eq!(SockAddr::decode_sized(&area, 28), Ok(Some(v6)));
    assert_eq!(
        SockAddr::decode_sized(&area, 16),
        Err(UcmaError::ShortRequest)
    );
    // AF_IB (27) and anything else: not an IP family.
    area[0] = 27;
    area[1] = 0;
    assert_eq!(
        SockAddr::decode_sized(&area, 48),
        Err(UcmaError::Family(27))
    );
}

#[test]
fn ud_event_carries_the_ud_parameters() {
    let p = UdParam {
        qp_num: 0xff_ffff,
        qkey: 0x0123_4567,
        ..UdParam::default()
    };
    let e = EventResp::with_ud(9, 3, event::MULTICAST_JOIN, 0, &p);
    assert_eq!(e.event, 12);
    assert_eq!(UdParam::read_from(&e.param.0), p);
    let mut bytes = vec![0u8; EventResp::SIZE];
    e.write_to(&mut bytes);
    // uid, id, event, status, then the union: qp_num, qkey.
    assert_eq!(&bytes[20..24], &0xff_ffffu32.to_ne_bytes());
    assert_eq!(&bytes[24..28], &0x0123_4567u32.to_ne_bytes());
}

#[test]
fn multicast_commands_are_framed() {
    for (cmd, min_in) in [
        (JOIN_IP_MCAST, JoinIpMcast::SIZE),
        (LEAVE_MCAST, DestroyId::SIZE),
        (JOIN_MCAST, JoinMcast::SIZE),
    ] {
        let mut buf = vec![0u8; HDR_LEN + min_in];
        buf[..4].copy_from_slice(&cmd.to_ne_bytes());
        buf[4..6].copy_from_slice(&(min_in as u16).to_ne_bytes());
        buf[6..8].copy_from_slice(&4u16.to_ne_bytes());
        assert_eq!(ucma::parse(&buf).map(|r| r.spec.cmd), Ok(cmd));
        buf[4..6].copy_from_slice(&((min_in - 1) as u16).to_ne_bytes());
        assert_eq!(
            ucma::parse(&buf).map(|r| r.spec.cmd),
            Err(UcmaError::ShortRequest)
        );
        buf[4..6].copy_from_slice(&(min_in as u16).to_ne_bytes());
        buf[6..8].copy_from_slice(&3u16.to_ne_bytes());
        assert_eq!(
            ucma::parse(&buf).map(|r| r.spec.cmd),
            Err(UcmaError::ShortResponse)
        );
    }
}
