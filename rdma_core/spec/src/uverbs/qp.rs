// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: `CREATE_QP`, `QUERY_QP`, `MODIFY_QP`, `DESTROY_QP`,
//! `POST_SEND` (which libibverbs' rxe provider sends with no work request,
//! as a doorbell), `ATTACH_MCAST` and `DETACH_MCAST`.

wire_struct! {
    /// `CREATE_QP` request; driver data follows.
    pub struct CreateQp = "ib_uverbs_create_qp" {
        /// User address of the response.
        response: u64,
        /// Returned in asynchronous events.
        user_handle: u64,
        pd_handle: u32,
        send_cq_handle: u32,
        recv_cq_handle: u32,
        srq_handle: u32,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        sq_sig_all: u8,
        /// The verbs QP type (`IB_QPT_*`).
        qp_type: u8,
        /// Non-zero: `srq_handle` is valid.
        is_srq: u8,
        reserved: u8,
    }
}

wire_struct! {
    /// `CREATE_QP` response; driver data follows.
    pub struct CreateQpResp = "ib_uverbs_create_qp_resp" {
        qp_handle: u32,
        qpn: u32,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// Extended `CREATE_QP` request (`ibv_create_qp_ex`); driver data
    /// follows.
    pub struct ExCreateQp = "ib_uverbs_ex_create_qp" {
        /// Returned in asynchronous events.
        user_handle: u64,
        pd_handle: u32,
        send_cq_handle: u32,
        recv_cq_handle: u32,
        srq_handle: u32,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        sq_sig_all: u8,
        /// The verbs QP type (`IB_QPT_*`).
        qp_type: u8,
        /// Non-zero: `srq_handle` is valid.
        is_srq: u8,
        reserved: u8,
        /// [`EX_CREATE_QP_IND_TABLE`] and kin.
        comp_mask: u32,
        /// `IB_UVERBS_QP_CREATE_*`.
        create_flags: u32,
        rwq_ind_tbl_handle: u32,
        source_qpn: u32,
    }
}

/// [`ExCreateQp::comp_mask`]: `rwq_ind_tbl_handle` is valid.
pub const EX_CREATE_QP_IND_TABLE: u32 = 1 << 0;
/// [`ExCreateQp::comp_mask`]: `create_flags` is valid.
pub const EX_CREATE_QP_CREATE_FLAGS: u32 = 1 << 1;

/// The least extended `CREATE_QP` request: the C core takes one through
/// `comp_mask` (52 bytes), which the framing's 8-byte words round to 56.
pub const EX_CREATE_QP_MIN: usize = 56;

wire_struct! {
    /// Extended `CREATE_QP` response; driver data follows.
    pub struct ExCreateQpResp = "ib_uverbs_ex_create_qp_resp" {
        base: CreateQpResp,
        comp_mask: u32,
        response_length: u32,
    }
}

wire_struct! {
    /// A path in `QUERY_QP` and `MODIFY_QP` (primary and alternate).
    pub struct QpDest = "ib_uverbs_qp_dest" {
        dgid: [u8; 16],
        flow_label: u32,
        dlid: u16,
        reserved: u16,
        sgid_index: u8,
        hop_limit: u8,
        traffic_class: u8,
        sl: u8,
        src_path_bits: u8,
        static_rate: u8,
        is_global: u8,
        port_num: u8,
    }
}

wire_struct! {
    /// `QUERY_QP` request.
    pub struct QueryQp = "ib_uverbs_query_qp" {
        /// User address of the response.
        response: u64,
        qp_handle: u32,
        attr_mask: u32,
    }
}

wire_struct! {
    /// `QUERY_QP` response.
    pub struct QueryQpResp = "ib_uverbs_query_qp_resp" {
        dest: QpDest,
        alt_dest: QpDest,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        qkey: u32,
        rq_psn: u32,
        sq_psn: u32,
        dest_qp_num: u32,
        qp_access_flags: u32,
        pkey_index: u16,
        alt_pkey_index: u16,
        qp_state: u8,
        cur_qp_state: u8,
        path_mtu: u8,
        path_mig_state: u8,
        sq_draining: u8,
        max_rd_atomic: u8,
        max_dest_rd_atomic: u8,
        min_rnr_timer: u8,
        port_num: u8,
        timeout: u8,
        retry_cnt: u8,
        rnr_retry: u8,
        alt_port_num: u8,
        alt_timeout: u8,
        sq_sig_all: u8,
        reserved: [u8; 5],
    }
}

wire_struct! {
    /// `MODIFY_QP` request (no response pointer, no driver data).
    pub struct ModifyQp = "ib_uverbs_modify_qp" {
        dest: QpDest,
        alt_dest: QpDest,
        qp_handle: u32,
        /// Which attributes to modify (`IB_QP_*` bits).
        attr_mask: u32,
        qkey: u32,
        rq_psn: u32,
        sq_psn: u32,
        dest_qp_num: u32,
        qp_access_flags: u32,
        pkey_index: u16,
        alt_pkey_index: u16,
        qp_state: u8,
        cur_qp_state: u8,
        path_mtu: u8,
        path_mig_state: u8,
        en_sqd_async_notify: u8,
        max_rd_atomic: u8,
        max_dest_rd_atomic: u8,
        min_rnr_timer: u8,
        port_num: u8,
        timeout: u8,
        retry_cnt: u8,
        rnr_retry: u8,
        alt_port_num: u8,
        alt_timeout: u8,
        reserved: [u8; 2],
    }
}

wire_struct! {
    /// `DESTROY_QP` request.
    pub struct DestroyQp = "ib_uverbs_destroy_qp" {
        /// User address of the response.
        response: u64,
        qp_handle: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `DESTROY_QP` response: the asynchronous events user space has read.
    pub struct DestroyQpResp = "ib_uverbs_destroy_qp_resp" {
        events_reported: u32,
    }
}

wire_struct! {
    /// `POST_SEND` request header; `wr_count` work requests of `wqe_size`
    /// bytes, then `sge_count` scatter/gather entries, follow. The rxe
    /// provider sends it with `wr_count` 0 as a doorbell.
    pub struct PostSend = "ib_uverbs_post_send" {
        /// User address of the response.
        response: u64,
        qp_handle: u32,
        wr_count: u32,
        sge_count: u32,
        wqe_size: u32,
    }
}

wire_struct! {
    /// `POST_SEND` response.
    pub struct PostSendResp = "ib_uverbs_post_send_resp" {
        /// Index of the first work request that failed.
        bad_wr: u32,
    }
}

wire_struct! {
    /// `ATTACH_MCAST` and `DETACH_MCAST` request (no response); the C
    /// header declares the two structures identically.
    pub struct AttachMcast = "ib_uverbs_attach_mcast" {
        gid: [u8; 16],
        qp_handle: u32,
        mlid: u16,
        reserved: u16,
    }
}

/// `DETACH_MCAST` request: the same layout as `ATTACH_MCAST`
/// (`ib_uverbs_detach_mcast`).
pub type DetachMcast = AttachMcast;
