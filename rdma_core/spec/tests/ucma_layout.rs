// SPDX-License-Identifier: GPL-2.0

//! Layout of the rdma_cm `write()` ABI structures (`ucma`) against the C
//! header `include/uapi/rdma/rdma_user_cm.h` (ABI version 4).
//!
//! Two checks, as for uverbs: a table of sizes written down from reading
//! the Linux 6.12 header, which always runs; and a test that compiles a
//! small C program against the header and compares the size of every
//! structure, the offset of every field, the command numbers and the
//! constants with the Rust declarations. It finds the header the way the
//! uverbs layout test does (`RDMA_RS_UAPI_RDMA`, the 6.12 tree under
//! `~/.cache/rdma-rs/`, or the system's `<rdma/...>`); without a C
//! compiler or header it says so on stderr and passes.

use std::collections::BTreeMap;

mod common;
#[path = "common/wire_layout.rs"]
mod wire_layout;
use wire_layout::{layouts, CProgram, Layout};

use rdma_spec::uverbs::ucma::{self, *};
use rdma_spec::uverbs::{Wire, WireStruct};

/// Every structure `ucma` declares.
fn all() -> Vec<Layout> {
    layouts![
        SockaddrIn6,
        CreateId,
        CreateIdResp,
        DestroyId,
        DestroyIdResp,
        BindIp,
        ResolveIp,
        ResolveRoute,
        Query,
        UserPathRec,
        QueryRouteResp,
        ConnParam,
        UdParam,
        Ece,
        Connect,
        Listen,
        Accept,
        Reject,
        Disconnect,
        InitQpAttr,
        QpAttr,
        Notify,
        JoinIpMcast,
        JoinMcast,
        GetEvent,
        EventResp,
        SetOption,
        MigrateId,
        MigrateResp,
    ]
}

/// Sizes read from the Linux 6.12 `rdma_user_cm.h` (and `ib_user_sa.h`,
/// `ib_user_verbs.h`, `linux/in6.h` for the structures it embeds).
#[rustfmt::skip]
const SIZES: &[(&str, usize)] = &[
    ("sockaddr_in6", 28),
    ("rdma_ucm_create_id", 24), ("rdma_ucm_create_id_resp", 4),
    ("rdma_ucm_destroy_id", 16), ("rdma_ucm_destroy_id_resp", 4),
    ("rdma_ucm_bind_ip", 40), ("rdma_ucm_resolve_ip", 64),
    ("rdma_ucm_resolve_route", 8), ("rdma_ucm_query", 16),
    ("ib_user_path_rec", 64), ("rdma_ucm_query_route_resp", 208),
    ("rdma_ucm_conn_param", 272), ("rdma_ucm_ud_param", 304), ("rdma_ucm_ece", 8),
    ("rdma_ucm_connect", 288), ("rdma_ucm_listen", 8), ("rdma_ucm_accept", 296),
    ("rdma_ucm_reject", 264), ("rdma_ucm_disconnect", 4),
    ("rdma_ucm_init_qp_attr", 16), ("ib_uverbs_qp_attr", 144),
    ("rdma_ucm_notify", 8), ("rdma_ucm_join_ip_mcast", 48),
    ("rdma_ucm_join_mcast", 152),
    ("rdma_ucm_get_event", 8), ("rdma_ucm_event_resp", 336),
    ("rdma_ucm_set_option", 24),
    ("rdma_ucm_migrate_id", 16), ("rdma_ucm_migrate_resp", 4),
];

#[test]
fn sizes_match_the_header() {
    let all = all();
    assert_eq!(
        all.len(),
        SIZES.len(),
        "every structure has a size in the table"
    );
    for l in &all {
        let want = SIZES
            .iter()
            .find(|(n, _)| *n == l.c_name)
            .unwrap_or_else(|| panic!("{} missing from SIZES", l.c_name))
            .1;
        assert_eq!(l.size, want, "sizeof(struct {})", l.c_name);
    }
}

#[test]
fn notable_offsets_and_sizes() {
    // The parameter union of an event is not 8-byte aligned: it follows
    // three u32s after the u64 cookie.
    assert_eq!(EventResp::offset_of("param"), Some(20));
    assert_eq!(EventResp::offset_of("reserved"), Some(324));
    assert_eq!(EventResp::offset_of("ece"), Some(328));
    // The union is as large as its larger member.
    assert_eq!(EVENT_PARAM_LEN, UdParam::SIZE.max(ConnParam::SIZE));
    assert_eq!(ConnParam::offset_of("private_data_len"), Some(264));
    assert_eq!(ConnParam::offset_of("valid"), Some(271));
    assert_eq!(UdParam::offset_of("private_data"), Some(40));
    assert_eq!(Reject::offset_of("private_data"), Some(8));
    assert_eq!(Accept::offset_of("conn_param"), Some(8));
    assert_eq!(Accept::offset_of("id"), Some(280));
    assert_eq!(Connect::offset_of("id"), Some(272));
    assert_eq!(QueryRouteResp::offset_of("src_addr"), Some(136));
    assert_eq!(QueryRouteResp::offset_of("ibdev_index"), Some(200));
    assert_eq!(QpAttr::offset_of("ah_attr"), Some(40));
    assert_eq!(QpAttr::offset_of("pkey_index"), Some(124));
    assert_eq!(SockaddrIn6::offset_of("sin6_addr"), Some(8));
    // Connect and accept without ece: the pre-5.8 structures.
    assert_eq!((CONNECT_MIN, ACCEPT_MIN), (280, 288));
    assert_eq!(HDR_LEN, 8);
}

/// The numbers and constants, by their C names.
#[rustfmt::skip]
const NUMBERS: &[(&str, u32)] = &[
    ("RDMA_USER_CM_CMD_CREATE_ID", ucma::CREATE_ID),
    ("RDMA_USER_CM_CMD_DESTROY_ID", ucma::DESTROY_ID),
    ("RDMA_USER_CM_CMD_BIND_IP", ucma::BIND_IP),
    ("RDMA_USER_CM_CMD_RESOLVE_IP", ucma::RESOLVE_IP),
    ("RDMA_USER_CM_CMD_RESOLVE_ROUTE", ucma::RESOLVE_ROUTE),
    ("RDMA_USER_CM_CMD_QUERY_ROUTE", ucma::QUERY_ROUTE),
    ("RDMA_USER_CM_CMD_CONNECT", ucma::CONNECT),
    ("RDMA_USER_CM_CMD_LISTEN", ucma::LISTEN),
    ("RDMA_USER_CM_CMD_ACCEPT", ucma::ACCEPT),
    ("RDMA_USER_CM_CMD_REJECT", ucma::REJECT),
    ("RDMA_USER_CM_CMD_DISCONNECT", ucma::DISCONNECT),
    ("RDMA_USER_CM_CMD_INIT_QP_ATTR", ucma::INIT_QP_ATTR),
    ("RDMA_USER_CM_CMD_GET_EVENT", ucma::GET_EVENT),
    ("RDMA_USER_CM_CMD_GET_OPTION", ucma::GET_OPTION),
    ("RDMA_USER_CM_CMD_SET_OPTION", ucma::SET_OPTION),
    ("RDMA_USER_CM_CMD_NOTIFY", ucma::NOTIFY),
    ("RDMA_USER_CM_CMD_JOIN_IP_MCAST", ucma::JOIN_IP_MCAST),
    ("RDMA_USER_CM_CMD_LEAVE_MCAST", ucma::LEAVE_MCAST),
    ("RDMA_USER_CM_CMD_MIGRATE_ID", ucma::MIGRATE_ID),
    ("RDMA_USER_CM_CMD_QUERY", ucma::QUERY),
    ("RDMA_USER_CM_CMD_BIND", ucma::BIND),
    ("RDMA_USER_CM_CMD_RESOLVE_ADDR", ucma::RESOLVE_ADDR),
    ("RDMA_USER_CM_CMD_JOIN_MCAST", ucma::JOIN_MCAST),
    ("RDMA_USER_CM_ABI_VERSION", ucma::ABI_VERSION),
    ("RDMA_MAX_PRIVATE_DATA", ucma::MAX_PRIVATE_DATA as u32),
    ("RDMA_PS_TCP", ucma::PS_TCP as u32),
    ("RDMA_PS_UDP", ucma::PS_UDP as u32),
    ("RDMA_PS_IPOIB", ucma::PS_IPOIB as u32),
    ("RDMA_PS_IB", ucma::PS_IB as u32),
    ("RDMA_OPTION_ID", ucma::OPTION_ID),
    ("RDMA_OPTION_IB", ucma::OPTION_IB),
    ("RDMA_OPTION_ID_TOS", ucma::OPTION_ID_TOS),
    ("RDMA_OPTION_ID_REUSEADDR", ucma::OPTION_ID_REUSEADDR),
    ("RDMA_OPTION_ID_AFONLY", ucma::OPTION_ID_AFONLY),
    ("RDMA_OPTION_ID_ACK_TIMEOUT", ucma::OPTION_ID_ACK_TIMEOUT),
    ("RDMA_MC_JOIN_FLAG_FULLMEMBER", ucma::join_flags::FULLMEMBER as u32),
    (
        "RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER",
        ucma::join_flags::SENDONLY_FULLMEMBER as u32,
    ),
    ("AF_INET", ucma::AF_INET as u32),
    ("AF_INET6", ucma::AF_INET6 as u32),
];

/// The C program's lines and the values the Rust side expects for them.
fn expectations() -> (String, BTreeMap<String, u64>) {
    let mut p = CProgram::new(&["sys/socket.h", "linux/in.h", "rdma/rdma_user_cm.h"]);
    p.structs(&all());
    let mut line = |key: String, expr: String, value: u64| p.line(key, expr, value);
    // The members of the event's parameter union, and its size.
    for (m, size) in [("param.conn", ConnParam::SIZE), ("param.ud", UdParam::SIZE)] {
        line(
            format!("offsetof rdma_ucm_event_resp.{m}"),
            format!("offsetof(struct rdma_ucm_event_resp, {m})"),
            EventResp::offset_of("param").unwrap() as u64,
        );
        line(
            format!("sizeof rdma_ucm_event_resp.{m}"),
            format!("sizeof(((struct rdma_ucm_event_resp *)0)->{m})"),
            size as u64,
        );
    }
    line(
        "sizeof rdma_ucm_event_resp.param".into(),
        "sizeof(((struct rdma_ucm_event_resp *)0)->param)".into(),
        EVENT_PARAM_LEN as u64,
    );
    // The IPv4 sockaddr_in that SockAddr reads from and writes into the
    // first 16 bytes of a sockaddr_in6 slot.
    #[rustfmt::skip]
    let sin = [
        ("sizeof sockaddr_in", "sizeof(struct sockaddr_in)", 16),
        ("offsetof sockaddr_in.sin_family", "offsetof(struct sockaddr_in, sin_family)", 0),
        ("offsetof sockaddr_in.sin_port", "offsetof(struct sockaddr_in, sin_port)", 2),
        ("offsetof sockaddr_in.sin_addr", "offsetof(struct sockaddr_in, sin_addr)", 4),
    ];
    for (k, e, v) in sin {
        line(k.into(), e.into(), v);
    }
    for (name, v) in NUMBERS {
        line(name.to_string(), name.to_string(), u64::from(*v));
    }
    p.finish()
}

#[test]
fn layout_matches_c_header() {
    let scratch = std::env::temp_dir().join(format!("rdma-spec-ucma-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);
    let Some(inc) = common::uapi::header_dir(&scratch, "rdma_user_cm.h", "ucma layout") else {
        eprintln!("SKIPPED layout_matches_c_header: no rdma_user_cm.h found");
        return;
    };
    let (src, want) = expectations();
    let Some(text) = common::uapi::run_c(&scratch, &inc, "ucma_layout", &src) else {
        eprintln!("SKIPPED layout_matches_c_header");
        return;
    };
    let _ = std::fs::remove_dir_all(&scratch);
    wire_layout::compare("ucma", &text, &want);
}

#[test]
fn table_sizes_are_the_structures() {
    let find = |n: u32| CMDS.iter().find(|s| s.cmd == n).copied().unwrap();
    #[rustfmt::skip]
    let want = [
        (CREATE_ID, CreateId::SIZE, CreateIdResp::SIZE),
        (DESTROY_ID, DestroyId::SIZE, DestroyIdResp::SIZE),
        (BIND_IP, BindIp::SIZE, 0),
        (RESOLVE_IP, ResolveIp::SIZE, 0),
        (RESOLVE_ROUTE, ResolveRoute::SIZE, 0),
        (QUERY_ROUTE, Query::SIZE, 200), // up to ibdev_index, as C takes
        (CONNECT, CONNECT_MIN, 0),
        (LISTEN, Listen::SIZE, 0),
        (ACCEPT, ACCEPT_MIN, 0),
        (REJECT, Reject::SIZE, 0),
        (DISCONNECT, Disconnect::SIZE, 0),
        (INIT_QP_ATTR, InitQpAttr::SIZE, QpAttr::SIZE),
        (GET_EVENT, GetEvent::SIZE, 324), // up to reserved, as C takes
        (SET_OPTION, SetOption::SIZE, 0),
        (NOTIFY, Notify::SIZE, 0),
        (JOIN_IP_MCAST, JoinIpMcast::SIZE, CreateIdResp::SIZE),
        (LEAVE_MCAST, DestroyId::SIZE, DestroyIdResp::SIZE),
        (JOIN_MCAST, JoinMcast::SIZE, CreateIdResp::SIZE),
        (MIGRATE_ID, MigrateId::SIZE, MigrateResp::SIZE),
    ];
    assert_eq!(CMDS.len(), want.len());
    for (cmd, min_in, min_out) in want {
        let s = find(cmd);
        assert_eq!((s.min_in, s.min_out), (min_in, min_out), "command {cmd}");
    }
    // Each command appears once.
    for (i, s) in CMDS.iter().enumerate() {
        assert!(CMDS[i + 1..].iter().all(|t| t.cmd != s.cmd), "{}", s.cmd);
    }
}
