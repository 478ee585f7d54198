// SPDX-License-Identifier: GPL-2.0

//! Layout of the uverbs `write()` ABI structures against the C headers
//! (`include/uapi/rdma/ib_user_verbs.h` and `rdma_user_rxe.h`).
//!
//! Two checks: a table of sizes written down from reading the Linux 6.12
//! headers, which always runs; and a test that compiles a small C program
//! against the headers and compares the size of every structure, the
//! offset of every field, the command numbers and the ring header offsets
//! with the Rust declarations. It uses the 6.12 tree under
//! `~/.cache/rdma-rs/linux-6.12*/` (its `include/uapi/rdma` only, the
//! rest from the system), or the directory `RDMA_RS_UAPI_RDMA` names, or
//! else the system's `<rdma/...>`; without a C compiler or headers it says
//! so on stderr and passes.

use std::collections::BTreeMap;

mod common;
#[path = "common/wire_layout.rs"]
mod wire_layout;
use wire_layout::{layout, layouts, CProgram, Layout};

use rdma_spec::uverbs::cmd::{self, WRITE_CMDS, WRITE_EX_CMDS};
use rdma_spec::uverbs::cq::*;
use rdma_spec::uverbs::device::*;
use rdma_spec::uverbs::event::*;
use rdma_spec::uverbs::framing::{CmdHdr, ExCmdHdr, EX_HDR_LEN, HDR_LEN};
use rdma_spec::uverbs::pd_mr::*;
use rdma_spec::uverbs::qp::*;
use rdma_spec::uverbs::rxe::{queue_buf, *};
use rdma_spec::uverbs::rxe_ring::{
    self, send_wr, RxeDmaInfo, RxeRecvWqe, RxeSendWqe, RxeSendWr, RxeSge,
};
use rdma_spec::uverbs::srq_ah::*;
use rdma_spec::uverbs::{Wire, WireStruct};

/// Every structure the codec declares.
fn all() -> Vec<Layout> {
    layouts![
        CmdHdr,
        ExCmdHdr,
        GetContext,
        GetContextResp,
        QueryDevice,
        QueryDeviceResp,
        ExQueryDevice,
        OdpCaps,
        RssCaps,
        TmCaps,
        CqModerationCaps,
        ExQueryDeviceResp,
        QueryPort,
        QueryPortResp,
        AllocPd,
        AllocPdResp,
        DeallocPd,
        RegMr,
        RegMrResp,
        DeregMr,
        AllocMw,
        AllocMwResp,
        DeallocMw,
        CreateCompChannel,
        CreateCompChannelResp,
        CreateCq,
        ExCreateCq,
        CreateCqResp,
        ExCreateCqResp,
        ResizeCq,
        ResizeCqResp,
        ReqNotifyCq,
        DestroyCq,
        DestroyCqResp,
        Wc,
        CreateQp,
        CreateQpResp,
        ExCreateQp,
        ExCreateQpResp,
        QpDest,
        QueryQp,
        QueryQpResp,
        ModifyQp,
        DestroyQp,
        DestroyQpResp,
        PostSend,
        PostSendResp,
        AttachMcast,
        CreateSrq,
        CreateSrqResp,
        ModifySrq,
        QuerySrq,
        QuerySrqResp,
        DestroySrq,
        DestroySrqResp,
        GlobalRoute,
        AhAttr,
        CreateAh,
        CreateAhResp,
        DestroyAh,
        CompEventDesc,
        AsyncEventDesc,
        Mminfo,
        RxeCreateCqResp,
        RxeResizeCqResp,
        RxeCreateQpResp,
        RxeCreateSrqResp,
        RxeModifySrqCmd,
        RxeCreateAhResp,
        RxeSge,
        RxeDmaInfo,
        RxeSendWr,
        RxeSendWqe,
        RxeRecvWqe,
    ]
}

/// Sizes read from the Linux 6.12 uapi headers (C `sizeof`).
#[rustfmt::skip]
const SIZES: &[(&str, usize)] = &[
    ("ib_uverbs_cmd_hdr", 8), ("ib_uverbs_ex_cmd_hdr", 16),
    ("ib_uverbs_get_context", 8), ("ib_uverbs_get_context_resp", 8),
    ("ib_uverbs_query_device", 8), ("ib_uverbs_query_device_resp", 176),
    ("ib_uverbs_ex_query_device", 8), ("ib_uverbs_odp_caps", 24),
    ("ib_uverbs_rss_caps", 16), ("ib_uverbs_tm_caps", 24),
    ("ib_uverbs_cq_moderation_caps", 8), ("ib_uverbs_ex_query_device_resp", 304),
    ("ib_uverbs_query_port", 16), ("ib_uverbs_query_port_resp", 40),
    ("ib_uverbs_alloc_pd", 8), ("ib_uverbs_alloc_pd_resp", 4), ("ib_uverbs_dealloc_pd", 4),
    ("ib_uverbs_reg_mr", 40), ("ib_uverbs_reg_mr_resp", 12), ("ib_uverbs_dereg_mr", 4),
    ("ib_uverbs_alloc_mw", 16), ("ib_uverbs_alloc_mw_resp", 8), ("ib_uverbs_dealloc_mw", 4),
    ("ib_uverbs_create_comp_channel", 8), ("ib_uverbs_create_comp_channel_resp", 4),
    ("ib_uverbs_create_cq", 32), ("ib_uverbs_ex_create_cq", 32),
    ("ib_uverbs_create_cq_resp", 8), ("ib_uverbs_ex_create_cq_resp", 16),
    ("ib_uverbs_resize_cq", 16), ("ib_uverbs_resize_cq_resp", 8),
    ("ib_uverbs_req_notify_cq", 8), ("ib_uverbs_destroy_cq", 16),
    ("ib_uverbs_destroy_cq_resp", 8), ("ib_uverbs_wc", 48),
    ("ib_uverbs_create_qp", 56), ("ib_uverbs_create_qp_resp", 32),
    ("ib_uverbs_ex_create_qp", 64), ("ib_uverbs_ex_create_qp_resp", 40),
    ("ib_uverbs_qp_dest", 32), ("ib_uverbs_query_qp", 16), ("ib_uverbs_query_qp_resp", 128),
    ("ib_uverbs_modify_qp", 112), ("ib_uverbs_destroy_qp", 16),
    ("ib_uverbs_destroy_qp_resp", 4), ("ib_uverbs_post_send", 24),
    ("ib_uverbs_post_send_resp", 4), ("ib_uverbs_attach_mcast", 24),
    ("ib_uverbs_create_srq", 32), ("ib_uverbs_create_srq_resp", 16),
    ("ib_uverbs_modify_srq", 16), ("ib_uverbs_query_srq", 16),
    ("ib_uverbs_query_srq_resp", 16), ("ib_uverbs_destroy_srq", 16),
    ("ib_uverbs_destroy_srq_resp", 4), ("ib_uverbs_global_route", 24),
    ("ib_uverbs_ah_attr", 32), ("ib_uverbs_create_ah", 56), ("ib_uverbs_create_ah_resp", 4),
    ("ib_uverbs_destroy_ah", 4),
    ("ib_uverbs_comp_event_desc", 8), ("ib_uverbs_async_event_desc", 16),
    ("mminfo", 16), ("rxe_create_cq_resp", 16), ("rxe_resize_cq_resp", 16),
    ("rxe_create_qp_resp", 32), ("rxe_create_srq_resp", 24), ("rxe_modify_srq_cmd", 8),
    ("rxe_create_ah_resp", 8),
    ("rxe_sge", 16), ("rxe_dma_info", 24), ("rxe_send_wr", 144), ("rxe_send_wqe", 208),
    ("rxe_recv_wqe", 40),
];

/// The members of the `wr` union of `struct rxe_send_wr` the ring
/// decoder reads, by their C designators.
#[rustfmt::skip]
const SEND_WR_UNION: &[(&str, usize)] = &[
    ("wr", send_wr::WR),
    ("wr.rdma.remote_addr", send_wr::RDMA_REMOTE_ADDR),
    ("wr.rdma.rkey", send_wr::RDMA_RKEY),
    ("wr.atomic.remote_addr", send_wr::ATOMIC_REMOTE_ADDR),
    ("wr.atomic.compare_add", send_wr::ATOMIC_COMPARE_ADD),
    ("wr.atomic.swap", send_wr::ATOMIC_SWAP),
    ("wr.atomic.rkey", send_wr::ATOMIC_RKEY),
    ("wr.flush.remote_addr", send_wr::FLUSH_REMOTE_ADDR),
    ("wr.flush.length", send_wr::FLUSH_LENGTH),
    ("wr.flush.rkey", send_wr::FLUSH_RKEY),
    ("wr.flush.type", send_wr::FLUSH_TYPE),
    ("wr.flush.level", send_wr::FLUSH_LEVEL),
    ("wr.ud.remote_qpn", send_wr::UD_REMOTE_QPN),
    ("wr.ud.remote_qkey", send_wr::UD_REMOTE_QKEY),
    ("wr.ud.pkey_index", send_wr::UD_PKEY_INDEX),
    ("wr.ud.ah_num", send_wr::UD_AH_NUM),
    ("wr.ud.av", send_wr::UD_AV),
    ("wr.mw.addr", send_wr::MW_ADDR),
    ("wr.mw.length", send_wr::MW_LENGTH),
    ("wr.mw.mr_lkey", send_wr::MW_MR_LKEY),
    ("wr.mw.mw_rkey", send_wr::MW_MW_RKEY),
    ("wr.mw.rkey", send_wr::MW_RKEY),
    ("wr.mw.access", send_wr::MW_ACCESS),
];

#[test]
fn sizes_match_the_headers() {
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
fn notable_offsets() {
    // The response pointer of an extended command, and the word counts.
    assert_eq!(ExCmdHdr::offset_of("provider_in_words"), Some(8));
    assert_eq!(ExCmdHdr::offset_of("cmd_hdr_reserved"), Some(12));
    // GUIDs and the fields after the 64-bit block of QUERY_DEVICE.
    assert_eq!(QueryDeviceResp::offset_of("node_guid"), Some(8));
    assert_eq!(QueryDeviceResp::offset_of("vendor_id"), Some(40));
    assert_eq!(QueryDeviceResp::offset_of("max_pkeys"), Some(168));
    assert_eq!(QueryDeviceResp::offset_of("phys_port_cnt"), Some(171));
    assert_eq!(ExQueryDeviceResp::offset_of("response_length"), Some(180));
    assert_eq!(ExQueryDeviceResp::offset_of("max_dm_size"), Some(288));
    assert_eq!(EX_QUERY_DEVICE_RESP_MIN, 184);
    assert_eq!(QueryPortResp::offset_of("link_layer"), Some(37));
    assert_eq!(CreateCq::offset_of("comp_channel"), Some(24));
    assert_eq!(CreateQp::offset_of("qp_type"), Some(53));
    assert_eq!(QueryQpResp::offset_of("qkey"), Some(84));
    assert_eq!(QueryQpResp::offset_of("sq_sig_all"), Some(122));
    assert_eq!(ModifyQp::offset_of("qp_handle"), Some(64));
    assert_eq!(ModifyQp::offset_of("attr_mask"), Some(68));
    assert_eq!(ModifyQp::offset_of("qp_state"), Some(96));
    assert_eq!(CreateAh::offset_of("attr"), Some(24));
    assert_eq!(AhAttr::offset_of("is_global"), Some(29));
    assert_eq!(Wc::offset_of("qp_num"), Some(28));
    assert_eq!(RxeCreateQpResp::offset_of("sq_mi"), Some(16));
    assert_eq!(RxeCreateSrqResp::offset_of("srq_num"), Some(16));
    assert_eq!(queue_buf::PRODUCER_INDEX_OFFSET, 128);
    assert_eq!(queue_buf::CONSUMER_INDEX_OFFSET, 256);
    assert_eq!(QUEUE_DATA_OFFSET, 384);
    assert_eq!((HDR_LEN, EX_HDR_LEN), (CmdHdr::SIZE, ExCmdHdr::SIZE));
}

/// The command numbers, by their C names.
#[rustfmt::skip]
const NUMBERS: &[(&str, u32)] = &[
    ("IB_USER_VERBS_CMD_GET_CONTEXT", cmd::GET_CONTEXT),
    ("IB_USER_VERBS_CMD_QUERY_DEVICE", cmd::QUERY_DEVICE),
    ("IB_USER_VERBS_CMD_QUERY_PORT", cmd::QUERY_PORT),
    ("IB_USER_VERBS_CMD_ALLOC_PD", cmd::ALLOC_PD),
    ("IB_USER_VERBS_CMD_DEALLOC_PD", cmd::DEALLOC_PD),
    ("IB_USER_VERBS_CMD_CREATE_AH", cmd::CREATE_AH),
    ("IB_USER_VERBS_CMD_MODIFY_AH", cmd::MODIFY_AH),
    ("IB_USER_VERBS_CMD_QUERY_AH", cmd::QUERY_AH),
    ("IB_USER_VERBS_CMD_DESTROY_AH", cmd::DESTROY_AH),
    ("IB_USER_VERBS_CMD_REG_MR", cmd::REG_MR),
    ("IB_USER_VERBS_CMD_REG_SMR", cmd::REG_SMR),
    ("IB_USER_VERBS_CMD_REREG_MR", cmd::REREG_MR),
    ("IB_USER_VERBS_CMD_QUERY_MR", cmd::QUERY_MR),
    ("IB_USER_VERBS_CMD_DEREG_MR", cmd::DEREG_MR),
    ("IB_USER_VERBS_CMD_ALLOC_MW", cmd::ALLOC_MW),
    ("IB_USER_VERBS_CMD_BIND_MW", cmd::BIND_MW),
    ("IB_USER_VERBS_CMD_DEALLOC_MW", cmd::DEALLOC_MW),
    ("IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL", cmd::CREATE_COMP_CHANNEL),
    ("IB_USER_VERBS_CMD_CREATE_CQ", cmd::CREATE_CQ),
    ("IB_USER_VERBS_CMD_RESIZE_CQ", cmd::RESIZE_CQ),
    ("IB_USER_VERBS_CMD_DESTROY_CQ", cmd::DESTROY_CQ),
    ("IB_USER_VERBS_CMD_POLL_CQ", cmd::POLL_CQ),
    ("IB_USER_VERBS_CMD_PEEK_CQ", cmd::PEEK_CQ),
    ("IB_USER_VERBS_CMD_REQ_NOTIFY_CQ", cmd::REQ_NOTIFY_CQ),
    ("IB_USER_VERBS_CMD_CREATE_QP", cmd::CREATE_QP),
    ("IB_USER_VERBS_CMD_QUERY_QP", cmd::QUERY_QP),
    ("IB_USER_VERBS_CMD_MODIFY_QP", cmd::MODIFY_QP),
    ("IB_USER_VERBS_CMD_DESTROY_QP", cmd::DESTROY_QP),
    ("IB_USER_VERBS_CMD_POST_SEND", cmd::POST_SEND),
    ("IB_USER_VERBS_CMD_POST_RECV", cmd::POST_RECV),
    ("IB_USER_VERBS_CMD_ATTACH_MCAST", cmd::ATTACH_MCAST),
    ("IB_USER_VERBS_CMD_DETACH_MCAST", cmd::DETACH_MCAST),
    ("IB_USER_VERBS_CMD_CREATE_SRQ", cmd::CREATE_SRQ),
    ("IB_USER_VERBS_CMD_MODIFY_SRQ", cmd::MODIFY_SRQ),
    ("IB_USER_VERBS_CMD_QUERY_SRQ", cmd::QUERY_SRQ),
    ("IB_USER_VERBS_CMD_DESTROY_SRQ", cmd::DESTROY_SRQ),
    ("IB_USER_VERBS_CMD_POST_SRQ_RECV", cmd::POST_SRQ_RECV),
    ("IB_USER_VERBS_CMD_OPEN_XRCD", cmd::OPEN_XRCD),
    ("IB_USER_VERBS_CMD_CLOSE_XRCD", cmd::CLOSE_XRCD),
    ("IB_USER_VERBS_CMD_CREATE_XSRQ", cmd::CREATE_XSRQ),
    ("IB_USER_VERBS_CMD_OPEN_QP", cmd::OPEN_QP),
    ("IB_USER_VERBS_EX_CMD_QUERY_DEVICE", cmd::QUERY_DEVICE),
    ("IB_USER_VERBS_EX_CMD_CREATE_CQ", cmd::CREATE_CQ),
    ("IB_USER_VERBS_CMD_FLAG_EXTENDED", cmd::FLAG_EXTENDED),
    ("IB_USER_VERBS_CMD_COMMAND_MASK", cmd::COMMAND_MASK),
    ("IB_USER_VERBS_ABI_VERSION", cmd::ABI_VERSION),
];

/// The C program's lines and the values the Rust side expects for them.
fn expectations() -> (String, BTreeMap<String, u64>) {
    let mut p = CProgram::new(&["rdma/ib_user_verbs.h", "rdma/rdma_user_rxe.h"]);
    p.structs(&all());
    let mut line = |key: String, expr: String, value: u64| p.line(key, expr, value);
    // DETACH_MCAST reuses the ATTACH_MCAST declaration.
    let attach = layout::<AttachMcast>();
    line(
        "sizeof ib_uverbs_detach_mcast".into(),
        "sizeof(struct ib_uverbs_detach_mcast)".into(),
        attach.size as u64,
    );
    for (f, o) in &attach.fields {
        line(
            format!("offsetof ib_uverbs_detach_mcast.{f}"),
            format!("offsetof(struct ib_uverbs_detach_mcast, {f})"),
            *o as u64,
        );
    }
    for (name, v) in NUMBERS {
        line(name.to_string(), name.to_string(), u64::from(*v));
    }
    #[rustfmt::skip]
    let rings = [
        ("log2_elem_size", queue_buf::LOG2_ELEM_SIZE_OFFSET),
        ("index_mask", queue_buf::INDEX_MASK_OFFSET),
        ("producer_index", queue_buf::PRODUCER_INDEX_OFFSET),
        ("consumer_index", queue_buf::CONSUMER_INDEX_OFFSET),
        ("data", queue_buf::QUEUE_DATA_OFFSET),
    ];
    for (f, o) in rings {
        line(
            format!("offsetof rxe_queue_buf.{f}"),
            format!("offsetof(struct rxe_queue_buf, {f})"),
            o as u64,
        );
    }
    for (m, o) in SEND_WR_UNION {
        line(
            format!("offsetof rxe_send_wr.{m}"),
            format!("offsetof(struct rxe_send_wr, {m})"),
            *o as u64,
        );
    }
    // The flexible arrays after the fixed parts.
    #[rustfmt::skip]
    let flex = [
        ("rxe_send_wqe", "dma.sge", rxe_ring::SEND_WQE_DATA),
        ("rxe_send_wqe", "dma.inline_data", rxe_ring::SEND_WQE_DATA),
        ("rxe_send_wqe", "dma.atomic_wr", rxe_ring::SEND_WQE_DATA),
        ("rxe_recv_wqe", "dma.sge", rxe_ring::RECV_WQE_DATA),
    ];
    for (s, m, o) in flex {
        line(
            format!("offsetof {s}.{m}"),
            format!("offsetof(struct {s}, {m})"),
            o as u64,
        );
    }
    line(
        "offsetofend ib_uverbs_ex_query_device_resp.response_length".into(),
        "offsetof(struct ib_uverbs_ex_query_device_resp, response_length) + 4".into(),
        EX_QUERY_DEVICE_RESP_MIN as u64,
    );
    p.finish()
}

#[test]
fn layout_matches_c_headers() {
    let scratch = std::env::temp_dir().join(format!("rdma-spec-uverbs-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);
    let Some(inc) = common::uapi::header_dir(&scratch, "rdma_user_rxe.h", "uverbs layout") else {
        eprintln!("SKIPPED layout_matches_c_headers: no uverbs uapi headers found");
        return;
    };
    let (src, want) = expectations();
    let Some(text) = common::uapi::run_c(&scratch, &inc, "layout", &src) else {
        eprintln!("SKIPPED layout_matches_c_headers");
        return;
    };
    wire_layout::compare("uverbs", &text, &want);
}

#[test]
fn table_sizes_are_the_structures() {
    // The table's sizes are those of the structures (and every udata
    // command's structure is a whole number of 8-byte words, so driver
    // data starts aligned).
    for s in WRITE_CMDS {
        assert!(!s.extended);
        if s.has_resp {
            assert!(
                s.req_size >= 8,
                "{:?} starts with the response address",
                s.cmd
            );
        } else {
            assert_eq!(s.resp_size, 0, "{:?}", s.cmd);
        }
        if s.has_udata {
            assert_eq!(s.req_size % 8, 0, "{:?}", s.cmd);
        }
    }
    for s in WRITE_EX_CMDS {
        assert!(s.extended && s.has_resp && !s.has_udata);
    }
    let find = |n: u32| WRITE_CMDS.iter().find(|s| s.number == n).unwrap();
    assert_eq!(find(cmd::CREATE_QP).req_size, CreateQp::SIZE);
    assert_eq!(find(cmd::CREATE_QP).resp_size, 32);
    assert_eq!(find(cmd::MODIFY_QP).req_size, 112);
    assert!(!find(cmd::MODIFY_QP).has_resp);
    assert_eq!(find(cmd::QUERY_DEVICE).resp_size, 176);
    assert_eq!(find(cmd::MODIFY_SRQ).req_size, 16);
    assert!(find(cmd::MODIFY_SRQ).has_udata && !find(cmd::MODIFY_SRQ).has_resp);
    assert_eq!(WRITE_CMDS.len(), 27);
    assert_eq!(WRITE_EX_CMDS.len(), 3);
}
