// SPDX-License-Identifier: GPL-2.0

//! The 32-bit immediate data of RTRS's RDMA writes with immediate.
//!
//! The immediate is a type in its top 4 bits (`MAX_IMM_TYPE_BITS`) and a
//! payload in the low [`MAX_IMM_PAYL_BITS`] (`rtrs_to_imm`, `rtrs_from_imm`
//! in rtrs-pri.h). It travels big-endian like every
//! immediate (`cpu_to_be32` when posting, `be32_to_cpu` on completion);
//! the values here are host numbers, for the verbs layer to convert.
//!
//! - IO request ([`RTRS_IO_REQ_IMM`], client to server): the payload is
//!   `buf_id << mem_bits | off`, the chunk the client wrote and the offset
//!   of the RTRS message in it ([`IoReq`]). `mem_bits` is not sent: both
//!   sides compute it from the queue depth ([`mem_bits`]).
//! - IO response ([`RTRS_IO_RSP_IMM`], or [`RTRS_IO_RSP_W_INV_IMM`] when a
//!   SEND_WITH_INV of the client's rkey went just before): the payload is
//!   `|errno| << 19 | msg_id`, 9 bits of errno magnitude above 19 bits of
//!   message ID ([`IoRsp`]).
//! - Heartbeat ([`RTRS_HB_MSG_IMM`]) and its acknowledgement
//!   ([`RTRS_HB_ACK_IMM`]): payload 0, ignored on receipt.
//!
//! The C encoders mask silently (an errno of 524 would arrive as 12); the
//! checked encoders here fail instead with [`Error::TooWide`]. The raw
//! functions [`to_imm`], [`from_imm`], [`to_io_rsp_imm`] and
//! [`from_io_rsp_imm`] compute exactly what the C does. Nothing here
//! panics.
//!
//! This module uses only `core` and its siblings [`super::consts`] and
//! [`super::error`].

use super::consts::{
    IO_RSP_ERRNO_BITS, IO_RSP_MSG_ID_BITS, MAX_IMM_PAYL_BITS, MAX_IMM_PAYL_MASK, MAX_IMM_TYPE_MASK,
    MAX_SESS_QUEUE_DEPTH, RTRS_HB_ACK_IMM, RTRS_HB_MSG_IMM, RTRS_IO_REQ_IMM, RTRS_IO_RSP_IMM,
    RTRS_IO_RSP_W_INV_IMM,
};
use super::error::Error;

/// Mask of an IO response's message ID.
const MSG_ID_MASK: u32 = (1 << IO_RSP_MSG_ID_BITS) - 1;
/// Mask of an IO response's errno magnitude, once shifted down.
const ERRNO_MASK: u32 = (1 << IO_RSP_ERRNO_BITS) - 1;

/// The immediate of type `imm_type` and payload `payload`, each masked to
/// its width (`rtrs_to_imm`).
pub const fn to_imm(imm_type: u32, payload: u32) -> u32 {
    ((imm_type & MAX_IMM_TYPE_MASK) << MAX_IMM_PAYL_BITS) | (payload & MAX_IMM_PAYL_MASK)
}

/// The type and payload of an immediate (`rtrs_from_imm`).
pub const fn from_imm(imm: u32) -> (u32, u32) {
    (imm >> MAX_IMM_PAYL_BITS, imm & MAX_IMM_PAYL_MASK)
}

/// The immediate of an IO response exactly as `rtrs_to_io_rsp_imm`
/// builds it: the errno's magnitude masked to 9 bits, the message ID to
/// 19 bits.
pub const fn to_io_rsp_imm(msg_id: u32, errno: i32, w_inval: bool) -> u32 {
    let payload =
        ((errno.unsigned_abs() & ERRNO_MASK) << IO_RSP_MSG_ID_BITS) | (msg_id & MSG_ID_MASK);
    let imm_type = if w_inval {
        RTRS_IO_RSP_W_INV_IMM
    } else {
        RTRS_IO_RSP_IMM
    };
    to_imm(imm_type, payload)
}

/// The message ID and errno (0 or negative) of an IO response payload, as
/// `rtrs_from_io_rsp_imm` reads them.
pub const fn from_io_rsp_imm(payload: u32) -> (u32, i32) {
    let magnitude = (payload >> IO_RSP_MSG_ID_BITS) & ERRNO_MASK;
    // At most 511: the cast keeps the value.
    (payload & MSG_ID_MASK, -(magnitude as i32))
}

/// The bits the C reserves to number `n` things, `ilog2(n - 1) + 1`: the
/// smallest `b` with `n <= 2^b`. As the kernel's run-time `ilog2(0)` is -1,
/// `n = 1` needs 0 bits; `n = 0` (which the C never lets through) gives
/// 32, as the C's unsigned `0 - 1` would.
pub const fn order_bits(n: u32) -> u32 {
    if n == 0 {
        u32::BITS
    } else {
        u32::BITS - (n - 1).leading_zeros()
    }
}

/// The bits of an IO request payload that hold the offset in the chunk,
/// for a session of `queue_depth` chunks: what the payload leaves once the
/// chunk number has its `order_bits(queue_depth)` bits (`alloc_permits`
/// in rtrs-clt.c, `map_cont_bufs` in rtrs-srv.c; both compute it from the
/// queue depth, not from the chunk size).
///
/// Fails unless `1 <= queue_depth <= MAX_SESS_QUEUE_DEPTH`. The result is
/// then between 12 and 28; whether chunks fit in it is
/// [`super::chunk::ChunkGeometry::new`]'s check.
pub const fn mem_bits(queue_depth: u32) -> Result<u32, Error> {
    if queue_depth == 0 || queue_depth > MAX_SESS_QUEUE_DEPTH {
        return Err(Error::BadQueueDepth(queue_depth));
    }
    // `order_bits` is at most 16 here: the difference never saturates.
    Ok(MAX_IMM_PAYL_BITS.saturating_sub(order_bits(queue_depth)))
}

/// The place of an IO request: which chunk the client wrote, and where in
/// it the RTRS message starts (which is also the length of the data and
/// user message before it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IoReq {
    /// The chunk (`buf_id`, the permit's `mem_id`; also the message ID of
    /// the response).
    pub buf_id: u32,
    /// Offset of the RTRS message in the chunk.
    pub off: u32,
}

impl IoReq {
    /// The 28-bit payload `buf_id << mem_bits | off`.
    ///
    /// Fails with [`Error::TooWide`] if `mem_bits` is above 28, `off` does
    /// not fit `mem_bits` bits or `buf_id` the bits above them.
    pub const fn payload(&self, mem_bits: u32) -> Result<u32, Error> {
        if mem_bits > MAX_IMM_PAYL_BITS {
            return Err(Error::TooWide {
                field: "mem_bits",
                bits: MAX_IMM_PAYL_BITS,
            });
        }
        let id_bits = MAX_IMM_PAYL_BITS - mem_bits;
        if (self.off as u64) >> mem_bits != 0 {
            return Err(Error::TooWide {
                field: "off",
                bits: mem_bits,
            });
        }
        if (self.buf_id as u64) >> id_bits != 0 {
            return Err(Error::TooWide {
                field: "buf_id",
                bits: id_bits,
            });
        }
        Ok(((self.buf_id as u64) << mem_bits) as u32 | self.off)
    }

    /// The whole immediate of the request; see [`IoReq::payload`].
    pub const fn to_imm(&self, mem_bits: u32) -> Result<u32, Error> {
        match self.payload(mem_bits) {
            Ok(p) => Ok(to_imm(RTRS_IO_REQ_IMM, p)),
            Err(e) => Err(e),
        }
    }

    /// Splits a payload as the server does (`rtrs_srv_rdma_done`):
    /// `buf_id = payload >> mem_bits`, `off` the low `mem_bits` bits. Bits
    /// above the 28 of a payload are ignored; a `mem_bits` above 28 counts
    /// as 28. Nothing is checked against the session: see
    /// [`super::chunk::ChunkGeometry::locate`].
    pub const fn from_payload(payload: u32, mem_bits: u32) -> IoReq {
        let payload = payload & MAX_IMM_PAYL_MASK;
        let mem_bits = if mem_bits > MAX_IMM_PAYL_BITS {
            MAX_IMM_PAYL_BITS
        } else {
            mem_bits
        };
        IoReq {
            buf_id: payload >> mem_bits,
            off: payload & ((1 << mem_bits) - 1),
        }
    }
}

/// An IO response: which request it answers and how it went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IoRsp {
    /// The request's message ID (its `buf_id`).
    pub msg_id: u32,
    /// 0, or the request's negative errno. The wire carries the magnitude
    /// only (the C encoder takes `abs()`), so a positive value is sent as
    /// its negation and always decodes as negative or 0.
    pub errno: i32,
    /// Whether the server invalidated the client's rkey with a
    /// SEND_WITH_INV just before ([`RTRS_IO_RSP_W_INV_IMM`]).
    pub w_inval: bool,
}

impl IoRsp {
    /// The 28-bit payload `|errno| << 19 | msg_id`.
    ///
    /// Fails with [`Error::TooWide`] if `msg_id` does not fit 19 bits or
    /// `|errno|` 9 bits (where the C would mask).
    pub const fn payload(&self) -> Result<u32, Error> {
        if self.msg_id > MSG_ID_MASK {
            return Err(Error::TooWide {
                field: "msg_id",
                bits: IO_RSP_MSG_ID_BITS,
            });
        }
        let magnitude = self.errno.unsigned_abs();
        if magnitude > ERRNO_MASK {
            return Err(Error::TooWide {
                field: "errno",
                bits: IO_RSP_ERRNO_BITS,
            });
        }
        Ok((magnitude << IO_RSP_MSG_ID_BITS) | self.msg_id)
    }

    /// The whole immediate; see [`IoRsp::payload`].
    pub const fn to_imm(&self) -> Result<u32, Error> {
        match self.payload() {
            Ok(p) => {
                let imm_type = if self.w_inval {
                    RTRS_IO_RSP_W_INV_IMM
                } else {
                    RTRS_IO_RSP_IMM
                };
                Ok(to_imm(imm_type, p))
            }
            Err(e) => Err(e),
        }
    }

    /// The response a payload describes (`rtrs_from_io_rsp_imm`).
    pub const fn from_payload(payload: u32, w_inval: bool) -> IoRsp {
        let (msg_id, errno) = from_io_rsp_imm(payload);
        IoRsp {
            msg_id,
            errno,
            w_inval,
        }
    }
}

/// A decoded immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Imm {
    /// An IO request, with its raw 28-bit payload: splitting it needs the
    /// session's `mem_bits` ([`IoReq::from_payload`]).
    IoReq(u32),
    /// An IO response.
    IoRsp(IoRsp),
    /// A heartbeat.
    HbMsg,
    /// A heartbeat acknowledgement.
    HbAck,
}

impl Imm {
    /// Decodes an immediate (in host order). Types outside `enum
    /// rtrs_imm_type` fail with [`Error::BadImmType`] (the C warns and
    /// drops them); heartbeat payloads are ignored, as the C does.
    pub const fn parse(imm: u32) -> Result<Imm, Error> {
        let (imm_type, payload) = from_imm(imm);
        match imm_type {
            RTRS_IO_REQ_IMM => Ok(Imm::IoReq(payload)),
            RTRS_IO_RSP_IMM => Ok(Imm::IoRsp(IoRsp::from_payload(payload, false))),
            RTRS_IO_RSP_W_INV_IMM => Ok(Imm::IoRsp(IoRsp::from_payload(payload, true))),
            RTRS_HB_MSG_IMM => Ok(Imm::HbMsg),
            RTRS_HB_ACK_IMM => Ok(Imm::HbAck),
            t => Err(Error::BadImmType(t)),
        }
    }

    /// Encodes the immediate (in host order). Fails if an IO request's
    /// payload is wider than 28 bits or an IO response's fields do not fit
    /// (see [`IoRsp::payload`]).
    pub const fn to_u32(&self) -> Result<u32, Error> {
        match *self {
            Imm::IoReq(payload) => {
                if payload > MAX_IMM_PAYL_MASK {
                    Err(Error::TooWide {
                        field: "payload",
                        bits: MAX_IMM_PAYL_BITS,
                    })
                } else {
                    Ok(to_imm(RTRS_IO_REQ_IMM, payload))
                }
            }
            Imm::IoRsp(r) => r.to_imm(),
            Imm::HbMsg => Ok(to_imm(RTRS_HB_MSG_IMM, 0)),
            Imm::HbAck => Ok(to_imm(RTRS_HB_ACK_IMM, 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_bits_is_ilog2_plus_one() {
        assert_eq!(order_bits(0), 32);
        assert_eq!(order_bits(1), 0);
        assert_eq!(order_bits(2), 1);
        assert_eq!(order_bits(3), 2);
        assert_eq!(order_bits(4), 2);
        assert_eq!(order_bits(5), 3);
        assert_eq!(order_bits(511), 9);
        assert_eq!(order_bits(512), 9);
        assert_eq!(order_bits(513), 10);
        assert_eq!(order_bits(65535), 16);
        assert_eq!(order_bits(128 << 10), 17);
        assert_eq!(order_bits(u32::MAX), 32);
    }

    #[test]
    fn io_req_split_matches_shift_and_mask() {
        let r = IoReq {
            buf_id: 511,
            off: (1 << 19) - 1,
        };
        let p = r.payload(19).unwrap();
        assert_eq!(p, MAX_IMM_PAYL_MASK);
        assert_eq!(IoReq::from_payload(p, 19), r);
        assert_eq!(
            IoReq::from_payload(u32::MAX, 40),
            IoReq {
                buf_id: 0,
                off: MAX_IMM_PAYL_MASK
            }
        );
        assert!(r.payload(29).is_err());
    }

    #[test]
    fn raw_rsp_matches_c_masking() {
        // 524 & 0x1ff == 12: the C sends ENOTSUPP as ENOMEM.
        let imm = to_io_rsp_imm(7, -524, false);
        let (t, p) = from_imm(imm);
        assert_eq!(t, RTRS_IO_RSP_IMM);
        assert_eq!(from_io_rsp_imm(p), (7, -12));
        assert!(IoRsp {
            msg_id: 7,
            errno: -524,
            w_inval: false
        }
        .payload()
        .is_err());
        assert_eq!(
            IoRsp {
                msg_id: 7,
                errno: i32::MIN,
                w_inval: false
            }
            .payload(),
            Err(Error::TooWide {
                field: "errno",
                bits: 9
            })
        );
    }
}
