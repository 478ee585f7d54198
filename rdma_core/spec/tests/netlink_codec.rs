// SPDX-License-Identifier: GPL-2.0

//! The RDMA netlink codec (`rdma_spec::netlink`) on real byte sequences:
//! the requests libibverbs 44 (`util/rdma_nl.c`, through libnl) and
//! iproute2's `rdma` (through libmnl) send, written out byte by byte from
//! what those sources put in them; replies checked the way
//! `libibverbs/ibdev_nl.c` and `rdma` read them (every required attribute
//! present with its type's size, strings NUL-terminated), against
//! hand-written bytes, and parsed back; and every malformed input
//! rejected with the errno the kernel gives.

use rdma_spec::netlink::msg::{flags, msg_type, Attrs, Message, Messages, NlMsgHdr, Out};
use rdma_spec::netlink::nldev::{self, attr, cmd, Cmd, ReplyTo};
use rdma_spec::netlink::{NlError, EINVAL, EMSGSIZE, EOPNOTSUPP};

fn hdr(len: u32, ty: u16, flags: u16, seq: u32, pid: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&len.to_ne_bytes());
    b.extend_from_slice(&ty.to_ne_bytes());
    b.extend_from_slice(&flags.to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&pid.to_ne_bytes());
    b
}

#[path = "common/nlattr.rs"]
mod nlattr;
use nlattr::nla;

/// A whole message: header with the right length, then the attributes.
fn message(ty: u16, flags: u16, seq: u32, pid: u32, attrs: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = attrs.concat();
    let mut m = hdr(16 + body.len() as u32, ty, flags, seq, pid);
    m.extend_from_slice(&body);
    m
}

fn one(bytes: &[u8]) -> Message<'_> {
    let mut it = Messages::new(bytes);
    let m = it.next().expect("a message").expect("valid");
    assert!(it.next().is_none());
    m
}

const NLDEV_GET: u16 = 0x1401;
const NLDEV_GET_CHARDEV: u16 = 0x140f;

#[test]
fn type_encoding() {
    assert_eq!(nldev::nl_type(5, cmd::GET), NLDEV_GET);
    assert_eq!(nldev::nl_type(5, cmd::GET_CHARDEV), NLDEV_GET_CHARDEV);
    assert_eq!(nldev::nl_client(0x1406), 5);
    assert_eq!(nldev::nl_op(0x1406), cmd::SYS_GET);
}

/// libibverbs' `rdmanl_get_devices`: `nl_send_simple(GET, NLM_F_DUMP)`,
/// which libnl completes with `NLM_F_REQUEST`, its port and a sequence
/// number (auto-ack is off).
#[test]
fn libibverbs_get_dump() {
    let bytes = [
        0x10, 0, 0, 0, // len 16
        0x01, 0x14, // RDMA_NL_GET_TYPE(NLDEV, GET)
        0x01, 0x03, // NLM_F_REQUEST | NLM_F_DUMP
        0x5d, 0x5b, 0x0a, 0x00, // seq
        0x39, 0x30, 0, 0, // port 12345
    ];
    let r = nldev::decode(&one(&bytes)).expect("decodes");
    assert_eq!(r.cmd, Cmd::GetDump);
    assert!(r.is_dump() && !r.wants_ack() && !r.needs_admin());
    assert_eq!(r.hdr.seq, 0x000a_5b5d);
    assert_eq!(
        r.reply_to(12345),
        ReplyTo {
            seq: 0x000a_5b5d,
            pid: 12345
        }
    );
}

/// libibverbs' `rdmanl_get_chardev(nl, 0, "uverbs")`: DEV_INDEX then
/// CHARDEV_TYPE (`NLA_PUT_STRING`, NUL included).
#[test]
fn libibverbs_get_chardev() {
    let bytes = [
        0x24, 0, 0, 0, 0x0f, 0x14, 0x01, 0x00, 2, 0, 0, 0, 0x39, 0x30, 0, 0, //
        0x08, 0x00, 0x01, 0x00, 0, 0, 0, 0, // DEV_INDEX 0
        0x0b, 0x00, 0x45, 0x00, b'u', b'v', b'e', b'r', b'b', b's', 0, 0, // CHARDEV_TYPE
    ];
    let r = nldev::decode(&one(&bytes)).expect("decodes");
    assert_eq!(
        r.cmd,
        Cmd::GetChardev {
            index: Some(0),
            port: None,
            chardev_type: b"uverbs"
        }
    );
    assert!(!r.is_dump() && !r.wants_ack());
}

/// libibverbs' `rdmanl_get_copy_on_fork`: SYS_GET, no attributes.
#[test]
fn libibverbs_sys_get() {
    let bytes = [
        0x10, 0, 0, 0, 0x06, 0x14, 0x01, 0x00, 3, 0, 0, 0, 0x39, 0x30, 0, 0,
    ];
    assert_eq!(nldev::decode(&one(&bytes)).unwrap().cmd, Cmd::SysGet);
}

/// `rdma dev` first builds its device map: GET with
/// `NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP`, sequence `time(NULL)`, port
/// 0 (libmnl leaves it to the kernel).
#[test]
fn rdma_tool_requests() {
    let r = message(NLDEV_GET, 0x305, 1_790_000_000, 0, &[]);
    let d = nldev::decode(&one(&r)).unwrap();
    assert_eq!(d.cmd, Cmd::GetDump);
    assert!(d.wants_ack() && d.is_dump());

    // `rdma dev show rxe0`: GET of index 0 with an ACK.
    let r = message(
        NLDEV_GET,
        0x5,
        7,
        0,
        &[nla(attr::DEV_INDEX, &0u32.to_ne_bytes())],
    );
    assert_eq!(nldev::decode(&one(&r)).unwrap().cmd, Cmd::Get { index: 0 });

    // `rdma link show rxe0/1`: PORT_GET of index 0 port 1.
    let r = message(
        0x1405,
        0x5,
        7,
        0,
        &[
            nla(attr::DEV_INDEX, &0u32.to_ne_bytes()),
            nla(attr::PORT_INDEX, &1u32.to_ne_bytes()),
        ],
    );
    assert_eq!(
        nldev::decode(&one(&r)).unwrap().cmd,
        Cmd::PortGet { index: 0, port: 1 }
    );
    // `rdma link show`: a PORT_GET dump per device.
    let r = message(
        0x1405,
        0x305,
        7,
        0,
        &[nla(attr::DEV_INDEX, &3u32.to_ne_bytes())],
    );
    assert_eq!(
        nldev::decode(&one(&r)).unwrap().cmd,
        Cmd::PortGetDump { index: 3 }
    );

    // `rdma link add rxe0 type rxe netdev eth0` (mnl_attr_put_strz).
    let bytes = [
        0x30, 0, 0, 0, 0x03, 0x14, 0x05, 0x00, 9, 0, 0, 0, 0, 0, 0, 0, //
        0x09, 0x00, 0x02, 0x00, b'r', b'x', b'e', b'0', 0, 0, 0, 0, // DEV_NAME
        0x08, 0x00, 0x41, 0x00, b'r', b'x', b'e', 0, // LINK_TYPE
        0x09, 0x00, 0x33, 0x00, b'e', b't', b'h', b'0', 0, 0, 0, 0, // NDEV_NAME
    ];
    let d = nldev::decode(&one(&bytes)).unwrap();
    assert_eq!(
        d.cmd,
        Cmd::NewLink {
            name: b"rxe0",
            link_type: b"rxe",
            netdev: b"eth0"
        }
    );
    assert!(d.needs_admin() && d.wants_ack());

    // `rdma link delete rxe0`: DELLINK of its index.
    let r = message(
        0x1404,
        0x5,
        9,
        0,
        &[nla(attr::DEV_INDEX, &2u32.to_ne_bytes())],
    );
    let d = nldev::decode(&one(&r)).unwrap();
    assert_eq!(d.cmd, Cmd::DelLink { index: 2 });
    assert!(d.needs_admin());
}

fn err_of(bytes: &[u8]) -> NlError {
    match Messages::new(bytes).next() {
        Some(Ok(m)) => nldev::decode(&m).expect_err("rejected"),
        Some(Err(e)) => e,
        None => panic!("no message"),
    }
}

#[test]
fn malformed_requests() {
    let idx = nla(attr::DEV_INDEX, &0u32.to_ne_bytes());
    // Headers cut short, lengths below a header or past the datagram.
    assert_eq!(
        err_of(&[0x10, 0, 0, 0, 1, 0x14]),
        NlError::Truncated { needed: 16, got: 6 }
    );
    let mut short = message(NLDEV_GET, 0x301, 1, 0, &[]);
    short[0] = 15;
    assert!(matches!(err_of(&short), NlError::BadMsgLen { len: 15, .. }));
    let mut long = message(NLDEV_GET, 0x301, 1, 0, &[]);
    long[0] = 17;
    assert!(matches!(
        err_of(&long),
        NlError::BadMsgLen { len: 17, left: 16 }
    ));
    // An attribute whose length runs past the message, or below 4.
    let mut m = message(NLDEV_GET, 0x5, 1, 0, std::slice::from_ref(&idx));
    m[16] = 12;
    assert_eq!(err_of(&m), NlError::BadAttrHeader { left: 8 });
    m[16] = 3;
    assert_eq!(err_of(&m), NlError::BadAttrHeader { left: 8 });
    // A u32 of 2 or 8 bytes.
    let m = message(NLDEV_GET, 0x5, 1, 0, &[nla(attr::DEV_INDEX, &[0, 0])]);
    assert_eq!(
        err_of(&m),
        NlError::BadAttrLen {
            ty: attr::DEV_INDEX,
            len: 2
        }
    );
    let m = message(
        NLDEV_GET,
        0x5,
        1,
        0,
        &[nla(attr::DEV_INDEX, &0u64.to_ne_bytes())],
    );
    assert_eq!(
        err_of(&m),
        NlError::BadAttrLen {
            ty: attr::DEV_INDEX,
            len: 8
        }
    );
    // A string without NUL, and one longer than its maximum.
    let m = message(
        NLDEV_GET_CHARDEV,
        1,
        1,
        0,
        &[nla(attr::CHARDEV_TYPE, b"uverbs")],
    );
    assert_eq!(
        err_of(&m),
        NlError::BadString {
            ty: attr::CHARDEV_TYPE
        }
    );
    let m = message(
        NLDEV_GET_CHARDEV,
        1,
        1,
        0,
        &[nla(attr::CHARDEV_TYPE, b"0123456789abcdef\0")],
    );
    assert_eq!(
        err_of(&m),
        NlError::BadString {
            ty: attr::CHARDEV_TYPE
        }
    );
    // Required attributes missing.
    let m = message(NLDEV_GET, 0x5, 1, 0, &[]);
    assert_eq!(
        err_of(&m),
        NlError::Missing {
            ty: attr::DEV_INDEX
        }
    );
    let m = message(NLDEV_GET_CHARDEV, 1, 1, 0, std::slice::from_ref(&idx));
    assert_eq!(
        err_of(&m),
        NlError::Missing {
            ty: attr::CHARDEV_TYPE
        }
    );
    let m = message(
        NLDEV_GET_CHARDEV,
        1,
        1,
        0,
        &[
            nla(attr::PORT_INDEX, &1u32.to_ne_bytes()),
            nla(attr::CHARDEV_TYPE, b"umad\0"),
        ],
    );
    assert_eq!(
        err_of(&m),
        NlError::Missing {
            ty: attr::DEV_INDEX
        }
    );
    let m = message(
        0x1403,
        5,
        1,
        0,
        &[
            nla(attr::DEV_NAME, b"rxe0\0"),
            nla(attr::LINK_TYPE, b"rxe\0"),
        ],
    );
    assert_eq!(
        err_of(&m),
        NlError::Missing {
            ty: attr::NDEV_NAME
        }
    );
    // Not a request; another client; past the last op; not implemented.
    assert_eq!(
        err_of(&message(NLDEV_GET, 0x300, 1, 0, &[])),
        NlError::NotRequest
    );
    assert_eq!(err_of(&message(3, 0x1, 1, 0, &[])), NlError::NotRequest);
    assert_eq!(
        err_of(&message(0x1001, 1, 1, 0, &[])),
        NlError::UnknownClient(4)
    );
    assert_eq!(
        err_of(&message(0x1400 + 29, 1, 1, 0, &[])),
        NlError::UnknownOp(29)
    );
    assert_eq!(
        err_of(&message(0x1400, 1, 1, 0, &[])),
        NlError::UnknownOp(0)
    );
    assert_eq!(
        err_of(&message(0x1402, 0x5, 1, 0, &[])),
        NlError::Unsupported(cmd::SET)
    );
    // Errnos: EINVAL for the malformed, EOPNOTSUPP for the unimplemented.
    assert_eq!(NlError::Missing { ty: 1 }.errno(), EINVAL);
    assert_eq!(NlError::UnknownOp(29).errno(), EINVAL);
    assert_eq!(NlError::Unsupported(9).errno(), EOPNOTSUPP);
    assert_eq!(NlError::NoSpace.errno(), EMSGSIZE);
    // A malformed attribute after the ones the request needs still fails it.
    let mut m = message(NLDEV_GET, 0x5, 1, 0, &[idx, vec![0xff, 0, 1, 0]]);
    m[0] = m.len() as u32 as u8;
    assert!(matches!(err_of(&m), NlError::BadAttrHeader { .. }));
    // Unknown attributes are ignored, and flag bits masked off the type.
    let m = message(
        NLDEV_GET,
        0x5,
        1,
        0,
        &[
            nla(200, b"xyz"),
            nla(attr::DEV_INDEX | 0x4000, &5u32.to_ne_bytes()),
        ],
    );
    assert_eq!(nldev::decode(&one(&m)).unwrap().cmd, Cmd::Get { index: 5 });
}

#[test]
fn several_messages_in_a_datagram() {
    // Two requests back to back; the second's padding omitted at the end.
    let mut d = message(0x1406, 1, 1, 0, &[]);
    let mut second = message(
        NLDEV_GET_CHARDEV,
        1,
        2,
        0,
        &[nla(attr::CHARDEV_TYPE, b"uverbs\0")],
    );
    second.truncate(second.len() - 1); // "uverbs\0" + 1 padding byte
    second[0] -= 1;
    d.extend_from_slice(&second);
    let ms: Vec<_> = Messages::new(&d).map(|m| m.unwrap()).collect();
    assert_eq!(ms.len(), 2);
    assert_eq!(nldev::decode(&ms[0]).unwrap().cmd, Cmd::SysGet);
    assert_eq!(
        nldev::decode(&ms[1]).unwrap().cmd,
        Cmd::GetChardev {
            index: None,
            port: None,
            chardev_type: b"uverbs"
        }
    );
    // A bad second message ends the walk with an error.
    let mut d = message(0x1406, 1, 1, 0, &[]);
    d.extend_from_slice(&[0xff, 0, 0, 0]);
    let v: Vec<_> = Messages::new(&d).collect();
    assert_eq!(v.len(), 2);
    assert!(v[0].is_ok() && v[1].is_err());
}

fn rxe0() -> nldev::DevInfo<'static> {
    nldev::DevInfo {
        index: 0,
        name: b"rxe0",
        port_count: 1,
        cap_flags: 0x0000_0001_2000_1c76,
        fw_version: b"",
        node_guid: 0x5054_00ff_fe12_3456,
        sys_image_guid: 0x5054_00ff_fe12_3456,
        node_type: nldev::NODE_IB_CA,
        dim: false,
        name_assign_type: 1,
        protocol: b"roce",
    }
}

/// The attributes of a reply by type, each once, checked like libnl's
/// and libmnl's policies do: a NUL-terminated string, or an integer of
/// its size.
fn attrs_of(m: &Message<'_>) -> std::collections::BTreeMap<u16, Vec<u8>> {
    let mut t = std::collections::BTreeMap::new();
    for a in m.attrs(0) {
        let a = a.expect("valid attribute");
        assert!(
            t.insert(a.ty, a.value.to_vec()).is_none(),
            "attribute {} twice",
            a.ty
        );
    }
    t
}

/// The GET reply has what `find_sysfs_devs_nl_cb` requires, and what
/// `rdma dev` prints, with the kernel's sizes.
#[test]
fn dev_reply_for_libibverbs_and_rdma() {
    let mut buf = [0u8; 512];
    let mut out = Out::new(&mut buf);
    let to = ReplyTo {
        seq: 0x000a_5b5d,
        pid: 12345,
    };
    nldev::put_dev(&mut out, to, true, &rxe0()).unwrap();
    let bytes = out.bytes().to_vec();
    assert_eq!(bytes.len() % 4, 0);
    let m = one(&bytes);
    assert_eq!(m.hdr.len as usize, bytes.len());
    assert_eq!(
        (m.hdr.ty, m.hdr.flags, m.hdr.seq, m.hdr.pid),
        (NLDEV_GET, flags::MULTI, 0x000a_5b5d, 12345)
    );
    let t = attrs_of(&m);
    assert_eq!(t[&attr::DEV_INDEX], 0u32.to_ne_bytes());
    assert_eq!(t[&attr::DEV_NAME], b"rxe0\0");
    assert_eq!(t[&attr::PORT_INDEX], 1u32.to_ne_bytes());
    assert_eq!(t[&attr::NODE_GUID], 0x5054_00ff_fe12_3456u64.to_ne_bytes());
    assert_eq!(
        t[&attr::SYS_IMAGE_GUID],
        0x5054_00ff_fe12_3456u64.to_ne_bytes()
    );
    assert_eq!(t[&attr::CAP_FLAGS], 0x0000_0001_2000_1c76u64.to_ne_bytes());
    assert_eq!(t[&attr::DEV_NODE_TYPE], [1]);
    assert_eq!(t[&attr::DEV_DIM], [0]);
    assert_eq!(t[&attr::NAME_ASSIGN_TYPE], [1]);
    assert_eq!(t[&attr::DEV_PROTOCOL], b"roce\0");
    assert!(
        !t.contains_key(&attr::FW_VERSION),
        "empty firmware left out"
    );
    assert_eq!(t.len(), 10);
    // The first attributes, byte for byte.
    assert_eq!(
        &bytes[16..40],
        &[
            8, 0, 1, 0, 0, 0, 0, 0, // DEV_INDEX 0
            9, 0, 2, 0, b'r', b'x', b'e', b'0', 0, 0, 0, 0, // DEV_NAME
            8, 0, 3, 0
        ]
    );
    // With a firmware version it is there.
    let mut buf = [0u8; 512];
    let mut out = Out::new(&mut buf);
    nldev::put_dev(
        &mut out,
        to,
        false,
        &nldev::DevInfo {
            fw_version: b"0.0.1",
            ..rxe0()
        },
    )
    .unwrap();
    let m = one(out.bytes());
    assert_eq!(m.hdr.flags, 0);
    assert_eq!(attrs_of(&m)[&attr::FW_VERSION], b"0.0.1\0");
}

/// The GET_CHARDEV reply, byte for byte, and as `find_uverbs_nl_cb`
/// decodes it (the dev_t back to major 231, minor 192).
#[test]
fn chardev_reply_bytes() {
    let mut buf = [0u8; 256];
    let mut out = Out::new(&mut buf);
    let info = nldev::ChardevInfo {
        name: b"uverbs0",
        major: 231,
        minor: 192,
        abi: nldev::UVERBS_ABI_VERSION,
        driver_id: Some(nldev::RDMA_DRIVER_RXE),
    };
    nldev::put_chardev(&mut out, ReplyTo { seq: 2, pid: 12345 }, &info).unwrap();
    let dev = (192u64 & 0xff) | (231 << 8);
    let mut want = hdr(60, NLDEV_GET_CHARDEV, 0, 2, 12345);
    want.extend(nla(attr::UVERBS_DRIVER_ID, &14u32.to_ne_bytes()));
    want.extend(nla(attr::CHARDEV, &dev.to_ne_bytes()));
    want.extend(nla(attr::CHARDEV_ABI, &6u64.to_ne_bytes()));
    want.extend(nla(attr::CHARDEV_NAME, b"uverbs0\0"));
    assert_eq!(out.bytes(), &want[..]);
    let t = attrs_of(&one(out.bytes()));
    let cdev64 = u64::from_ne_bytes(t[&attr::CHARDEV].clone().try_into().unwrap());
    let major = (cdev64 & 0xfff00) >> 8;
    let minor = (cdev64 & 0xff) | ((cdev64 >> 12) & 0xfff00);
    assert_eq!((major, minor), (231, 192));
    // A minor above 255 survives the encoding too.
    let e = nldev::huge_encode_dev(231, 0x1234);
    assert_eq!(
        ((e & 0xfff00) >> 8, (e & 0xff) | ((e >> 12) & 0xfff00)),
        (231, 0x1234)
    );
}

#[test]
fn port_sys_done_error_replies() {
    let mut buf = [0u8; 1024];
    let mut out = Out::new(&mut buf);
    let to = ReplyTo { seq: 7, pid: 99 };
    let port = nldev::PortInfo {
        dev_index: 0,
        dev_name: b"rxe0",
        port: 1,
        state: 4,
        phys_state: 5,
        netdev: Some((2, b"eth0")),
    };
    nldev::put_port(&mut out, to, true, &port).unwrap();
    nldev::put_port(
        &mut out,
        to,
        true,
        &nldev::PortInfo {
            netdev: None,
            ..port
        },
    )
    .unwrap();
    nldev::put_done(&mut out, to).unwrap();
    let sys = nldev::SysInfo {
        netns_shared: true,
        privileged_qkey: false,
        monitor: false,
        copy_on_fork: true,
    };
    nldev::put_sys(&mut out, to, &sys).unwrap();
    let req = NlMsgHdr {
        len: 16,
        ty: 0x1409,
        flags: 0x305,
        seq: 7,
        pid: 0,
    };
    nldev::put_error(&mut out, &req, 99, EOPNOTSUPP).unwrap();
    nldev::put_error(&mut out, &req, 99, 0).unwrap();
    let ms: Vec<_> = Messages::new(out.bytes()).map(|m| m.unwrap()).collect();
    assert_eq!(ms.len(), 6);
    let t = attrs_of(&ms[0]);
    assert_eq!(ms[0].hdr.ty, 0x1405);
    assert_eq!(t[&attr::PORT_STATE], [4]);
    assert_eq!(t[&attr::PORT_PHYS_STATE], [5]);
    assert_eq!(t[&attr::NDEV_INDEX], 2u32.to_ne_bytes());
    assert_eq!(t[&attr::NDEV_NAME], b"eth0\0");
    assert!(!attrs_of(&ms[1]).contains_key(&attr::NDEV_NAME));
    // NLMSG_DONE: MULTI, an int 0.
    assert_eq!(ms[2].hdr.ty, msg_type::DONE);
    assert_eq!(ms[2].hdr.flags, flags::MULTI);
    assert_eq!(ms[2].payload, &0i32.to_ne_bytes());
    let t = attrs_of(&ms[3]);
    assert_eq!(ms[3].hdr.ty, 0x1406);
    assert_eq!(t[&attr::SYS_NETNS_MODE], [1]);
    assert_eq!(t[&attr::SYS_COPY_ON_FORK], [1]);
    assert_eq!(t[&attr::SYS_PRIVILEGED_QKEY_MODE], [0]);
    // NLMSG_ERROR: -errno then the request's header.
    let e = nldev::decode_error(&ms[4]).unwrap();
    assert_eq!((e.error, e.request), (-EOPNOTSUPP, req));
    assert_eq!((ms[4].hdr.seq, ms[4].hdr.pid, ms[4].hdr.len), (7, 99, 36));
    assert_eq!(nldev::decode_error(&ms[5]).unwrap().error, 0);
    assert_eq!(ms[4].payload[..4], (-95i32).to_ne_bytes());
}

#[test]
fn builder_bounds() {
    // A message that does not fit is not part of the output.
    let mut buf = [0u8; 100];
    let mut out = Out::new(&mut buf);
    nldev::put_sys(
        &mut out,
        ReplyTo { seq: 1, pid: 1 },
        &nldev::SysInfo {
            netns_shared: true,
            privileged_qkey: false,
            monitor: false,
            copy_on_fork: true,
        },
    )
    .unwrap();
    let len = out.len();
    assert_eq!(len, 48);
    assert_eq!(
        nldev::put_dev(&mut out, ReplyTo { seq: 1, pid: 1 }, true, &rxe0()),
        Err(NlError::NoSpace)
    );
    assert_eq!(out.len(), len);
    assert_eq!(Messages::new(out.bytes()).count(), 1);
    // Every buffer size: either it fits whole or nothing is written.
    let mut whole = [0u8; 512];
    let mut o = Out::new(&mut whole);
    nldev::put_dev(&mut o, ReplyTo { seq: 1, pid: 1 }, true, &rxe0()).unwrap();
    let need = o.len();
    for size in 0..need + 8 {
        let mut b = vec![0u8; size];
        let mut o = Out::new(&mut b);
        let r = nldev::put_dev(&mut o, ReplyTo { seq: 1, pid: 1 }, true, &rxe0());
        assert_eq!(r.is_ok(), size >= need, "size {size}");
        assert_eq!(o.len(), if size >= need { need } else { 0 });
    }
    // Strings holding a NUL are refused; the message is dropped.
    let mut b = [0u8; 512];
    let mut o = Out::new(&mut b);
    let bad = nldev::DevInfo {
        name: b"rx\0e",
        ..rxe0()
    };
    assert_eq!(
        nldev::put_dev(&mut o, ReplyTo { seq: 1, pid: 1 }, true, &bad),
        Err(NlError::BadString { ty: attr::DEV_NAME })
    );
    assert!(o.is_empty());
}

#[test]
fn nested_attributes_round_trip() {
    let mut buf = [0u8; 128];
    let mut out = Out::new(&mut buf);
    let mut w = out.begin(0x1409, flags::MULTI, 1, 2).unwrap();
    w.put_u32(attr::DEV_INDEX, 3).unwrap();
    let n = w.begin_nest(attr::RES_SUMMARY).unwrap();
    w.put_str(17, b"qp").unwrap();
    w.put_u64(18, 5).unwrap();
    w.end_nest(n).unwrap();
    let len = w.end();
    assert_eq!(len, 16 + 8 + 4 + 8 + 12);
    let m = one(out.bytes());
    let mut it = m.attrs(0);
    assert_eq!(it.next().unwrap().unwrap().u32(), Ok(3));
    let nest = it.next().unwrap().unwrap();
    assert!(nest.nested_flag);
    assert_eq!(nest.ty, attr::RES_SUMMARY);
    let inner: Vec<_> = nest.nested().map(|a| a.unwrap()).collect();
    assert_eq!(inner[0].str_z(15), Ok(&b"qp"[..]));
    assert_eq!(inner[1].u64(), Ok(5));
    assert!(it.next().is_none());
    assert_eq!(Attrs::new(&[]).find(1), Ok(None));
}

/// Arbitrary bytes through the parser and decoder: no panic, and every
/// accepted attribute lies within its message (a quick loop; the bounded
/// fuzzer of tools/wirefuzz runs the same on mutated inputs).
#[test]
fn fuzz_quick() {
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let seed = message(
        NLDEV_GET_CHARDEV,
        1,
        1,
        0,
        &[nla(1, &[0; 4]), nla(attr::CHARDEV_TYPE, b"uverbs\0")],
    );
    for _ in 0..200_000 {
        let mut b = seed.clone();
        for _ in 0..1 + next() % 4 {
            let r = next();
            let i = (r as usize >> 8) % b.len();
            match r % 3 {
                0 => b[i] ^= 1 << ((r >> 40) % 8),
                1 => b.truncate(i),
                _ => b.insert(i, r as u8),
            }
            if b.is_empty() {
                break;
            }
        }
        for m in Messages::new(&b) {
            let Ok(m) = m else { break };
            assert!(m.payload.len() + 16 == m.hdr.len as usize);
            let _ = nldev::decode(&m);
            for a in m.attrs(0) {
                let Ok(a) = a else { break };
                assert!(a.value.len() <= m.payload.len());
            }
        }
    }
}
