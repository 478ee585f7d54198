// SPDX-License-Identifier: GPL-2.0

//! The Soft-RoCE (rxe) driver data of the uverbs ABI
//! (`include/uapi/rdma/rdma_user_rxe.h`): what rides in the udata areas
//! of the create and modify commands (the mmap offsets of the rings, the
//! address handle number), and the header of a ring shared with user
//! space.

wire_struct! {
    /// Where user space maps a ring: the offset to pass to `mmap()` on the
    /// uverbs file and the size of the mapping.
    pub struct Mminfo = "mminfo" {
        offset: u64,
        size: u32,
        pad: u32,
    }
}

wire_struct! {
    /// `CREATE_CQ` driver response: the completion ring.
    pub struct RxeCreateCqResp = "rxe_create_cq_resp" {
        mi: Mminfo,
    }
}

wire_struct! {
    /// `RESIZE_CQ` driver response: the new completion ring.
    pub struct RxeResizeCqResp = "rxe_resize_cq_resp" {
        mi: Mminfo,
    }
}

wire_struct! {
    /// `CREATE_QP` driver response: the receive and send rings (the
    /// receive ring's size is zero when the QP uses an SRQ).
    pub struct RxeCreateQpResp = "rxe_create_qp_resp" {
        rq_mi: Mminfo,
        sq_mi: Mminfo,
    }
}

wire_struct! {
    /// `CREATE_SRQ` driver response: the receive ring and the SRQ number.
    pub struct RxeCreateSrqResp = "rxe_create_srq_resp" {
        mi: Mminfo,
        srq_num: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `MODIFY_SRQ` driver request: the user address the kernel writes the
    /// resized ring's [`Mminfo`] to.
    pub struct RxeModifySrqCmd = "rxe_modify_srq_cmd" {
        mmap_info_addr: u64,
    }
}

wire_struct! {
    /// `CREATE_AH` driver response: the number UD send WQEs name the
    /// address by (never zero).
    pub struct RxeCreateAhResp = "rxe_create_ah_resp" {
        ah_num: u32,
        reserved: u32,
    }
}

/// The header of a ring (`struct rxe_queue_buf`): the indices sit in
/// separate cache lines, at these offsets, and the elements start at
/// [`QUEUE_DATA_OFFSET`].
pub mod queue_buf {
    /// `log2_elem_size`: log2 of the element size.
    pub const LOG2_ELEM_SIZE_OFFSET: usize = 0;
    /// `index_mask`: the number of slots minus one.
    pub const INDEX_MASK_OFFSET: usize = 4;
    /// `producer_index`.
    pub const PRODUCER_INDEX_OFFSET: usize = 128;
    /// `consumer_index`.
    pub const CONSUMER_INDEX_OFFSET: usize = 256;
    /// `data`: the first element.
    pub const QUEUE_DATA_OFFSET: usize = 384;
}

pub use queue_buf::QUEUE_DATA_OFFSET;
