// SPDX-License-Identifier: GPL-2.0

//! Completion channels and completion queues: `CREATE_COMP_CHANNEL`,
//! `CREATE_CQ` (legacy and extended), `RESIZE_CQ`, `DESTROY_CQ`,
//! `REQ_NOTIFY_CQ`, and the work completion user space reads from a CQ
//! ring.

wire_struct! {
    /// `CREATE_COMP_CHANNEL` request.
    pub struct CreateCompChannel = "ib_uverbs_create_comp_channel" {
        /// User address of the response.
        response: u64,
    }
}

wire_struct! {
    /// `CREATE_COMP_CHANNEL` response.
    pub struct CreateCompChannelResp = "ib_uverbs_create_comp_channel_resp" {
        /// The completion channel's file descriptor.
        fd: u32,
    }
}

wire_struct! {
    /// `CREATE_CQ` request; driver data follows.
    pub struct CreateCq = "ib_uverbs_create_cq" {
        /// User address of the response.
        response: u64,
        /// Returned in completion events.
        user_handle: u64,
        cqe: u32,
        comp_vector: u32,
        /// A completion channel fd, or -1 for none.
        comp_channel: i32,
        reserved: u32,
    }
}

wire_struct! {
    /// Extended `CREATE_CQ` request.
    pub struct ExCreateCq = "ib_uverbs_ex_create_cq" {
        /// Returned in completion events.
        user_handle: u64,
        cqe: u32,
        comp_vector: u32,
        /// A completion channel fd, or -1 for none.
        comp_channel: i32,
        comp_mask: u32,
        /// [`CQ_FLAGS_TIMESTAMP_COMPLETION`], [`CQ_FLAGS_IGNORE_OVERRUN`].
        flags: u32,
        reserved: u32,
    }
}

/// [`ExCreateCq::flags`]: completions carry a timestamp.
pub const CQ_FLAGS_TIMESTAMP_COMPLETION: u32 = 1 << 0;
/// [`ExCreateCq::flags`]: the CQ may overrun without an error.
pub const CQ_FLAGS_IGNORE_OVERRUN: u32 = 1 << 1;

wire_struct! {
    /// `CREATE_CQ` response; driver data follows.
    pub struct CreateCqResp = "ib_uverbs_create_cq_resp" {
        cq_handle: u32,
        /// The number of entries actually allocated.
        cqe: u32,
    }
}

wire_struct! {
    /// Extended `CREATE_CQ` response.
    pub struct ExCreateCqResp = "ib_uverbs_ex_create_cq_resp" {
        base: CreateCqResp,
        comp_mask: u32,
        response_length: u32,
    }
}

wire_struct! {
    /// `RESIZE_CQ` request; driver data follows.
    pub struct ResizeCq = "ib_uverbs_resize_cq" {
        /// User address of the response.
        response: u64,
        cq_handle: u32,
        cqe: u32,
    }
}

wire_struct! {
    /// `RESIZE_CQ` response; driver data follows.
    pub struct ResizeCqResp = "ib_uverbs_resize_cq_resp" {
        cqe: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `REQ_NOTIFY_CQ` request (no response).
    pub struct ReqNotifyCq = "ib_uverbs_req_notify_cq" {
        cq_handle: u32,
        /// Non-zero: notify on solicited completions only.
        solicited_only: u32,
    }
}

wire_struct! {
    /// `DESTROY_CQ` request.
    pub struct DestroyCq = "ib_uverbs_destroy_cq" {
        /// User address of the response.
        response: u64,
        cq_handle: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `DESTROY_CQ` response: the events user space has read, which
    /// libibverbs waits to have acknowledged.
    pub struct DestroyCqResp = "ib_uverbs_destroy_cq_resp" {
        comp_events_reported: u32,
        async_events_reported: u32,
    }
}

wire_struct! {
    /// A work completion as user space reads it (the entries of an rxe CQ
    /// ring).
    pub struct Wc = "ib_uverbs_wc" {
        wr_id: u64,
        status: u32,
        opcode: u32,
        vendor_err: u32,
        byte_len: u32,
        /// Immediate data (big-endian, as received) or the invalidated
        /// rkey: a C union.
        ex: u32,
        qp_num: u32,
        src_qp: u32,
        wc_flags: u32,
        pkey_index: u16,
        slid: u16,
        sl: u8,
        dlid_path_bits: u8,
        port_num: u8,
        reserved: u8,
    }
}
