// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues and address handles: `CREATE_SRQ`, `MODIFY_SRQ`,
//! `QUERY_SRQ`, `DESTROY_SRQ`, `CREATE_AH`, `DESTROY_AH`.

wire_struct! {
    /// `CREATE_SRQ` request; driver data follows.
    pub struct CreateSrq = "ib_uverbs_create_srq" {
        /// User address of the response.
        response: u64,
        /// Returned in asynchronous events.
        user_handle: u64,
        pd_handle: u32,
        max_wr: u32,
        max_sge: u32,
        srq_limit: u32,
    }
}

wire_struct! {
    /// `CREATE_SRQ` response; driver data follows.
    pub struct CreateSrqResp = "ib_uverbs_create_srq_resp" {
        srq_handle: u32,
        max_wr: u32,
        max_sge: u32,
        srqn: u32,
    }
}

wire_struct! {
    /// `MODIFY_SRQ` request (no response); driver data follows.
    pub struct ModifySrq = "ib_uverbs_modify_srq" {
        srq_handle: u32,
        /// `IB_SRQ_MAX_WR` and/or `IB_SRQ_LIMIT`.
        attr_mask: u32,
        max_wr: u32,
        srq_limit: u32,
    }
}

wire_struct! {
    /// `QUERY_SRQ` request.
    pub struct QuerySrq = "ib_uverbs_query_srq" {
        /// User address of the response.
        response: u64,
        srq_handle: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `QUERY_SRQ` response.
    pub struct QuerySrqResp = "ib_uverbs_query_srq_resp" {
        max_wr: u32,
        max_sge: u32,
        srq_limit: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `DESTROY_SRQ` request.
    pub struct DestroySrq = "ib_uverbs_destroy_srq" {
        /// User address of the response.
        response: u64,
        srq_handle: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `DESTROY_SRQ` response: the asynchronous events user space has read.
    pub struct DestroySrqResp = "ib_uverbs_destroy_srq_resp" {
        events_reported: u32,
    }
}

wire_struct! {
    /// The global route header of an address.
    pub struct GlobalRoute = "ib_uverbs_global_route" {
        dgid: [u8; 16],
        flow_label: u32,
        sgid_index: u8,
        hop_limit: u8,
        traffic_class: u8,
        reserved: u8,
    }
}

wire_struct! {
    /// An address, as `CREATE_AH` carries it.
    pub struct AhAttr = "ib_uverbs_ah_attr" {
        grh: GlobalRoute,
        dlid: u16,
        sl: u8,
        src_path_bits: u8,
        static_rate: u8,
        /// Non-zero: `grh` is valid (always so on RoCE).
        is_global: u8,
        port_num: u8,
        reserved: u8,
    }
}

wire_struct! {
    /// `CREATE_AH` request; driver data follows.
    pub struct CreateAh = "ib_uverbs_create_ah" {
        /// User address of the response.
        response: u64,
        user_handle: u64,
        pd_handle: u32,
        reserved: u32,
        attr: AhAttr,
    }
}

wire_struct! {
    /// `CREATE_AH` response; driver data follows.
    pub struct CreateAhResp = "ib_uverbs_create_ah_resp" {
        ah_handle: u32,
    }
}

wire_struct! {
    /// `DESTROY_AH` request (no response).
    pub struct DestroyAh = "ib_uverbs_destroy_ah" {
        ah_handle: u32,
    }
}
