// SPDX-License-Identifier: GPL-2.0

//! The records user space reads from the event files: an 8-byte
//! completion event from a completion channel, a 16-byte asynchronous
//! event from the file `GET_CONTEXT` returns, and the asynchronous event
//! types.

wire_struct! {
    /// A completion event: the `user_handle` the CQ was created with.
    pub struct CompEventDesc = "ib_uverbs_comp_event_desc" {
        cq_handle: u64,
    }
}

wire_struct! {
    /// An asynchronous event: the object's `user_handle` (or the port
    /// number for port events) and the event type.
    pub struct AsyncEventDesc = "ib_uverbs_async_event_desc" {
        element: u64,
        /// One of the `EVENT_*` constants.
        event_type: u32,
        reserved: u32,
    }
}

/// `IB_EVENT_CQ_ERR`.
pub const EVENT_CQ_ERR: u32 = 0;
/// `IB_EVENT_QP_FATAL`.
pub const EVENT_QP_FATAL: u32 = 1;
/// `IB_EVENT_QP_REQ_ERR`.
pub const EVENT_QP_REQ_ERR: u32 = 2;
/// `IB_EVENT_QP_ACCESS_ERR`.
pub const EVENT_QP_ACCESS_ERR: u32 = 3;
/// `IB_EVENT_COMM_EST`.
pub const EVENT_COMM_EST: u32 = 4;
/// `IB_EVENT_SQ_DRAINED`.
pub const EVENT_SQ_DRAINED: u32 = 5;
/// `IB_EVENT_PATH_MIG`.
pub const EVENT_PATH_MIG: u32 = 6;
/// `IB_EVENT_PATH_MIG_ERR`.
pub const EVENT_PATH_MIG_ERR: u32 = 7;
/// `IB_EVENT_DEVICE_FATAL`.
pub const EVENT_DEVICE_FATAL: u32 = 8;
/// `IB_EVENT_PORT_ACTIVE`.
pub const EVENT_PORT_ACTIVE: u32 = 9;
/// `IB_EVENT_PORT_ERR`.
pub const EVENT_PORT_ERR: u32 = 10;
/// `IB_EVENT_LID_CHANGE`.
pub const EVENT_LID_CHANGE: u32 = 11;
/// `IB_EVENT_PKEY_CHANGE`.
pub const EVENT_PKEY_CHANGE: u32 = 12;
/// `IB_EVENT_SM_CHANGE`.
pub const EVENT_SM_CHANGE: u32 = 13;
/// `IB_EVENT_SRQ_ERR`.
pub const EVENT_SRQ_ERR: u32 = 14;
/// `IB_EVENT_SRQ_LIMIT_REACHED`.
pub const EVENT_SRQ_LIMIT_REACHED: u32 = 15;
/// `IB_EVENT_QP_LAST_WQE_REACHED`.
pub const EVENT_QP_LAST_WQE_REACHED: u32 = 16;
/// `IB_EVENT_CLIENT_REREGISTER`.
pub const EVENT_CLIENT_REREGISTER: u32 = 17;
/// `IB_EVENT_GID_CHANGE`.
pub const EVENT_GID_CHANGE: u32 = 18;
/// `IB_EVENT_WQ_FATAL`.
pub const EVENT_WQ_FATAL: u32 = 19;
