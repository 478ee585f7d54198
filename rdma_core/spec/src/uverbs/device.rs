// SPDX-License-Identifier: GPL-2.0

//! The device commands: `GET_CONTEXT`, `QUERY_DEVICE` (legacy and
//! extended) and `QUERY_PORT`, requests and responses.

wire_struct! {
    /// `GET_CONTEXT` request; driver data follows.
    pub struct GetContext = "ib_uverbs_get_context" {
        /// User address of the response.
        response: u64,
    }
}

wire_struct! {
    /// `GET_CONTEXT` response; driver data follows.
    pub struct GetContextResp = "ib_uverbs_get_context_resp" {
        /// The asynchronous event file descriptor installed for the caller.
        async_fd: u32,
        num_comp_vectors: u32,
    }
}

wire_struct! {
    /// `QUERY_DEVICE` request.
    pub struct QueryDevice = "ib_uverbs_query_device" {
        /// User address of the response.
        response: u64,
    }
}

wire_struct! {
    /// `QUERY_DEVICE` response: the device attributes.
    pub struct QueryDeviceResp = "ib_uverbs_query_device_resp" {
        fw_ver: u64,
        /// Big-endian in C (`__be64`): kept as the bytes on the wire.
        node_guid: [u8; 8],
        /// Big-endian in C (`__be64`): kept as the bytes on the wire.
        sys_image_guid: [u8; 8],
        max_mr_size: u64,
        page_size_cap: u64,
        vendor_id: u32,
        vendor_part_id: u32,
        hw_ver: u32,
        max_qp: u32,
        max_qp_wr: u32,
        device_cap_flags: u32,
        max_sge: u32,
        max_sge_rd: u32,
        max_cq: u32,
        max_cqe: u32,
        max_mr: u32,
        max_pd: u32,
        max_qp_rd_atom: u32,
        max_ee_rd_atom: u32,
        max_res_rd_atom: u32,
        max_qp_init_rd_atom: u32,
        max_ee_init_rd_atom: u32,
        atomic_cap: u32,
        max_ee: u32,
        max_rdd: u32,
        max_mw: u32,
        max_raw_ipv6_qp: u32,
        max_raw_ethy_qp: u32,
        max_mcast_grp: u32,
        max_mcast_qp_attach: u32,
        max_total_mcast_qp_attach: u32,
        max_ah: u32,
        max_fmr: u32,
        max_map_per_fmr: u32,
        max_srq: u32,
        max_srq_wr: u32,
        max_srq_sge: u32,
        max_pkeys: u16,
        local_ca_ack_delay: u8,
        phys_port_cnt: u8,
        reserved: [u8; 4],
    }
}

wire_struct! {
    /// Extended `QUERY_DEVICE` request (no response pointer: the extended
    /// header carries it).
    pub struct ExQueryDevice = "ib_uverbs_ex_query_device" {
        comp_mask: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// On-demand paging capabilities.
    pub struct OdpCaps = "ib_uverbs_odp_caps" {
        general_caps: u64,
        /// RC, UC and UD capabilities (an unnamed C struct of three
        /// `__u32`).
        per_transport_caps: [u32; 3],
        reserved: u32,
    }
}

wire_struct! {
    /// Receive-side scaling capabilities.
    pub struct RssCaps = "ib_uverbs_rss_caps" {
        supported_qpts: u32,
        max_rwq_indirection_tables: u32,
        max_rwq_indirection_table_size: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// Tag matching capabilities.
    pub struct TmCaps = "ib_uverbs_tm_caps" {
        max_rndv_hdr_size: u32,
        max_num_tags: u32,
        flags: u32,
        max_ops: u32,
        max_sge: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// Completion queue moderation capabilities.
    pub struct CqModerationCaps = "ib_uverbs_cq_moderation_caps" {
        max_cq_moderation_count: u16,
        max_cq_moderation_period: u16,
        reserved: u32,
    }
}

wire_struct! {
    /// Extended `QUERY_DEVICE` response. Only the part up to
    /// `response_length` is required of the caller's buffer
    /// ([`EX_QUERY_DEVICE_RESP_MIN`]); the kernel writes as much of the
    /// rest as fits and says how much in `response_length`.
    pub struct ExQueryDeviceResp = "ib_uverbs_ex_query_device_resp" {
        base: QueryDeviceResp,
        comp_mask: u32,
        /// Bytes of this response the kernel filled in.
        response_length: u32,
        odp_caps: OdpCaps,
        timestamp_mask: u64,
        /// In kHz.
        hca_core_clock: u64,
        device_cap_flags_ex: u64,
        rss_caps: RssCaps,
        max_wq_type_rq: u32,
        raw_packet_caps: u32,
        tm_caps: TmCaps,
        cq_moderation_caps: CqModerationCaps,
        max_dm_size: u64,
        xrc_odp_caps: u32,
        reserved: u32,
    }
}

/// The part of [`ExQueryDeviceResp`] a caller's response area must hold:
/// up to the end of `response_length`.
pub const EX_QUERY_DEVICE_RESP_MIN: usize = <QueryDeviceResp as super::Wire>::SIZE + 8;

wire_struct! {
    /// `QUERY_PORT` request.
    pub struct QueryPort = "ib_uverbs_query_port" {
        /// User address of the response.
        response: u64,
        port_num: u8,
        reserved: [u8; 7],
    }
}

wire_struct! {
    /// `QUERY_PORT` response: the port attributes.
    pub struct QueryPortResp = "ib_uverbs_query_port_resp" {
        port_cap_flags: u32,
        max_msg_sz: u32,
        bad_pkey_cntr: u32,
        qkey_viol_cntr: u32,
        gid_tbl_len: u32,
        pkey_tbl_len: u16,
        lid: u16,
        sm_lid: u16,
        state: u8,
        max_mtu: u8,
        active_mtu: u8,
        lmc: u8,
        max_vl_num: u8,
        sm_sl: u8,
        subnet_timeout: u8,
        init_type_reply: u8,
        active_width: u8,
        active_speed: u8,
        phys_state: u8,
        link_layer: u8,
        flags: u8,
        reserved: u8,
    }
}
