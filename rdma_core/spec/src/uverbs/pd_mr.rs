// SPDX-License-Identifier: GPL-2.0

//! Protection domains, memory regions and memory windows: `ALLOC_PD`,
//! `DEALLOC_PD`, `REG_MR`, `DEREG_MR`, `ALLOC_MW`, `DEALLOC_MW`.

wire_struct! {
    /// `ALLOC_PD` request; driver data follows.
    pub struct AllocPd = "ib_uverbs_alloc_pd" {
        /// User address of the response.
        response: u64,
    }
}

wire_struct! {
    /// `ALLOC_PD` response; driver data follows.
    pub struct AllocPdResp = "ib_uverbs_alloc_pd_resp" {
        pd_handle: u32,
    }
}

wire_struct! {
    /// `DEALLOC_PD` request (no response).
    pub struct DeallocPd = "ib_uverbs_dealloc_pd" {
        pd_handle: u32,
    }
}

wire_struct! {
    /// `REG_MR` request; driver data follows.
    pub struct RegMr = "ib_uverbs_reg_mr" {
        /// User address of the response.
        response: u64,
        /// User address of the memory to register.
        start: u64,
        length: u64,
        /// The I/O virtual address the region is accessed at.
        hca_va: u64,
        pd_handle: u32,
        access_flags: u32,
    }
}

wire_struct! {
    /// `REG_MR` response; driver data follows.
    pub struct RegMrResp = "ib_uverbs_reg_mr_resp" {
        mr_handle: u32,
        lkey: u32,
        rkey: u32,
    }
}

wire_struct! {
    /// `DEREG_MR` request (no response).
    pub struct DeregMr = "ib_uverbs_dereg_mr" {
        mr_handle: u32,
    }
}

wire_struct! {
    /// `ALLOC_MW` request; driver data follows.
    pub struct AllocMw = "ib_uverbs_alloc_mw" {
        /// User address of the response.
        response: u64,
        pd_handle: u32,
        /// 1 or 2.
        mw_type: u8,
        reserved: [u8; 3],
    }
}

wire_struct! {
    /// `ALLOC_MW` response; driver data follows.
    pub struct AllocMwResp = "ib_uverbs_alloc_mw_resp" {
        mw_handle: u32,
        rkey: u32,
    }
}

wire_struct! {
    /// `DEALLOC_MW` request (no response).
    pub struct DeallocMw = "ib_uverbs_dealloc_mw" {
        mw_handle: u32,
    }
}
