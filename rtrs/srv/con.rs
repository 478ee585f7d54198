// SPDX-License-Identifier: GPL-2.0

//! One connection of a path: its QP and CQ, its receives, the requests
//! that arrive on it and their responses.
//!
//! Every request is an RDMA WRITE with immediate data into a chunk; the
//! immediate names the chunk and the offset of the RTRS message in it
//! (`rtrs::proto::chunk`). The receive it consumed is posted again first,
//! then the ULP answers, then the response goes out on the same QP: for a
//! read, an RDMA WRITE of the data area into the client's buffer, then a
//! zero-length RDMA WRITE with the response immediate (IO_RSP, the errno
//! and the chunk number); RC ordering places the data before the client
//! sees the immediate. When the client asks for it (`NEED_INVAL`), a
//! zero-length SEND with invalidate of its buffer's key goes between the
//! two, and the response says so (`IO_RSP_W_INV`).
//! Heartbeats (on cid 0) are acknowledged there.

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cma::{CmId, CmIdCore, ConnParam};
use rdma::kshim::mem::Sge;
use rdma::spec::opcodes::{Access, SendFlags, WcOpcode, WcStatus};
use rdma::verbs::cq::{Cq, CqCore};
use rdma::verbs::qp::QpCore;
use rdma::verbs::wc::{CqeDone, Wc};
use rdma::verbs::wr::{RecvWr, SendOp, SendWr};

use crate::proto::conn::{ConnRsp, CONN_RSP_LEN};
use crate::proto::consts::{RTRS_MSG_NEED_INVAL_F, RTRS_MSG_NEW_RKEY_F};
use crate::proto::imm::{Imm, IoRsp};
use crate::proto::msg::{RdmaMsg, RkeyRsp};
use crate::srv::path::{Path, INFO_REQ_AT, INFO_REQ_ROOM, INFO_RSP_AT};
use crate::srv::server::{Dir, Params, SrvRequest};

/// `wr_id` of the INFO_REQ receive.
const WR_INFO: u64 = 1;
/// `wr_id` of the empty receives.
const WR_EMPTY: u64 = 2;
/// `wr_id` of the sends.
const WR_SEND: u64 = 3;
/// `wr_id` of a chunk's invalidation (`always_invalidate`), with the
/// request's immediate payload in the low 32 bits.
const WR_INV: u64 = 1 << 40;
/// The largest RTRS message after the user message (a read with one
/// descriptor).
const MSG_MAX: usize = 24;

/// A connection.
#[pin_data]
pub struct Con {
    cid: u16,
    qpn: u32,
    qp: Arc<QpCore>,
    /// The id, until the path closes.
    #[pin]
    id: Mutex<Option<CmId>>,
    core: Arc<CmIdCore>,
    /// The CQ, until the path closes (`close`, process context: a
    /// completion handler may hold the last reference to the connection,
    /// and may not destroy its own CQ).
    #[pin]
    cq: Mutex<Option<Cq>>,
    comp: Arc<Comp>,
}

impl Con {
    /// Creates connection `cid` of `path` on `id` (its QP and CQ); cid 0
    /// also posts the INFO_REQ receive (the first of its queue).
    pub(crate) fn new(path: &Arc<Path>, id: CmId, cid: u16, comp: Arc<Comp>) -> Result<Arc<Con>> {
        let qd = path.params.queue_depth;
        // Per request at most: an invalidation, the data, a registration,
        // a SEND with invalidate, the response.
        let (send, recv) = (5 * qd + 16, qd + 16);
        let (cq, qp) = crate::qp::create(&id, &path.dev, &path.pd, send, recv, 1)?;
        let core = (*id).clone();
        let qpn = qp.qpn();
        let con = Arc::pin_init(
            pin_init!(Con {
                cid,
                qpn,
                qp,
                id <- new_mutex!(Some(id), "rtrs::srv::Con::id"),
                core,
                cq <- new_mutex!(Some(cq), "rtrs::srv::Con::cq"),
                comp,
            }),
            GFP_KERNEL,
        )?;
        if cid == 0 {
            let sg = [path
                .info
                .sge(INFO_REQ_AT, INFO_REQ_ROOM as u32, path.info_mr.lkey())?];
            con.post_recv(WR_INFO, &sg)?;
        }
        Ok(con)
    }

    pub(crate) fn cid(&self) -> u16 {
        self.cid
    }

    pub(crate) fn qpn(&self) -> u32 {
        self.qpn
    }

    pub(crate) fn is(&self, id: &Arc<CmIdCore>) -> bool {
        Arc::ptr_eq(&self.core, id)
    }

    /// Accepts the connection with the path's parameters.
    pub(crate) fn accept(&self, p: &Params) -> Result {
        let mut rsp = [0u8; CONN_RSP_LEN];
        let flags = if p.always_invalidate {
            RTRS_MSG_NEW_RKEY_F
        } else {
            0
        };
        let n = ConnRsp::accept(p.queue_depth as u16, p.max_io_size(), p.max_hdr_size, flags)
            .write(&mut rsp)
            .map_err(|_| EINVAL)?;
        let mut private_data = KVec::new();
        private_data.extend_from_slice(&rsp[..n], GFP_KERNEL)?;
        let param = ConnParam {
            private_data,
            rnr_retry_count: 7,
            retry_count: 7,
            ..ConnParam::default()
        };
        self.core.accept(&param)
    }

    fn post_recv(&self, wr_id: u64, sg: &[Sge]) -> Result {
        let cqe: Arc<dyn CqeDone> = self.comp.clone();
        self.qp
            .post_recv(&[RecvWr {
                wr_id,
                cqe: Some(cqe),
                sg,
            }])
            .map_err(|(_, e)| e)
    }

    /// Posts `n` receives without memory (what RDMA WRITEs with immediate
    /// data consume).
    pub(crate) fn post_empty_recvs(&self, n: u32) -> Result {
        for _ in 0..n {
            self.post_recv(WR_EMPTY, &[])?;
        }
        Ok(())
    }

    fn post_send(&self, wrs: &mut [SendWr<'_>]) -> Result {
        let cqe: Arc<dyn CqeDone> = self.comp.clone();
        for w in wrs.iter_mut() {
            w.cqe = Some(cqe.clone());
        }
        self.qp.post_send(wrs).map_err(|(_, e)| e)
    }

    /// Sends INFO_RSP (`len` bytes of the info buffer).
    pub(crate) fn send_info_rsp(&self, len: usize) -> Result {
        let path = &self.comp.path;
        let sg = [path
            .info
            .sge(INFO_RSP_AT, len as u32, path.info_mr.lkey())?];
        self.post_send(&mut [SendWr::new(WR_SEND, SendOp::Send, &sg)])
    }

    /// Registers every chunk's MR under its key (`always_invalidate`),
    /// before INFO_RSP announces the keys on this QP.
    pub(crate) fn register_chunks(&self) -> Result {
        let path = &self.comp.path;
        for (mr, k) in path.chunk_mrs.iter().zip(path.chunk_keys.iter()) {
            let op = SendOp::RegMr {
                mr: mr.core(),
                key: k.load(core::sync::atomic::Ordering::Acquire),
                access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            };
            let mut w = SendWr::new(WR_SEND, op, &[]);
            w.flags = SendFlags::NONE;
            self.post_send(&mut [w])?;
        }
        Ok(())
    }

    /// A request arrived in chunk `payload` names (`always_invalidate`):
    /// its MR is invalidated first (the client cannot write it again
    /// until the response gives it the new key); the request is handled
    /// when that completes.
    fn invalidate_then_handle(&self, payload: u32) -> Result {
        let path = &self.comp.path;
        let req = path.geometry.locate(payload).map_err(|_| EINVAL)?;
        let key = path.chunk_keys[req.buf_id as usize].load(core::sync::atomic::Ordering::Acquire);
        self.post_send(&mut [SendWr::new(
            WR_INV | u64::from(payload),
            SendOp::LocalInv(key),
            &[],
        )])
    }

    /// A zero-length RDMA WRITE with immediate data `imm`.
    pub(crate) fn write_imm(&self, imm: u32) -> Result {
        let op = SendOp::WriteWithImm {
            remote_addr: 0,
            rkey: 0,
            imm,
        };
        self.post_send(&mut [SendWr::new(WR_SEND, op, &[])])
    }

    /// An IO request whose immediate payload is `payload`.
    fn on_request(&self, payload: u32) -> Result {
        let path = &self.comp.path;
        let g = &path.geometry;
        let req = g.locate(payload).map_err(|_| EINVAL)?;
        let chunk = req.buf_id as usize * path.params.chunk_size as usize;
        let off = req.off as usize;
        let mut window = [0u8; MSG_MAX];
        let n = core::cmp::min(MSG_MAX, path.params.chunk_size as usize - off);
        path.chunks.read(chunk + off, &mut window[..n])?;
        let msg = RdmaMsg::parse(&window[..n]).map_err(|_| EINVAL)?;
        let usr_len = usize::from(msg.usr_len());
        if usr_len > off {
            return Err(EINVAL);
        }
        let data_len = off - usr_len;
        let mut usr = KVec::from_elem(0u8, usr_len, GFP_KERNEL)?;
        path.chunks.read(chunk + data_len, &mut usr)?;
        let (dir, desc, inval) = match &msg {
            RdmaMsg::Write(_) => (Dir::Write, None, false),
            RdmaMsg::Read(r) => (
                Dir::Read,
                r.descs().get(0),
                r.flags & RTRS_MSG_NEED_INVAL_F != 0,
            ),
        };
        path.stats.count(dir, off as u64);
        let name = path.name();
        let sreq = SrvRequest::new(dir, &usr, &path.chunks, chunk, data_len);
        let errno = path.ops.rdma_ev(name.as_bytes(), &sreq);
        let errno = errno.clamp(-511, 0);
        // A read whose buffer the client asks us to invalidate gets a
        // zero-length SEND with invalidate of its key before the response
        // (IO_RSP_W_INV), as the kernel's server sends: the client then
        // need not invalidate it itself.
        let send_inv = match desc {
            Some(d) if inval && d.len > 0 => Some(d.key),
            _ => None,
        };
        let rsp = IoRsp {
            msg_id: req.buf_id,
            errno,
            w_inval: send_inv.is_some(),
        }
        .to_imm()
        .map_err(|_| EINVAL)?;
        let done = SendOp::WriteWithImm {
            remote_addr: 0,
            rkey: 0,
            imm: rsp,
        };
        let data_sg;
        let rkey_sg;
        let mut wrs = KVec::with_capacity(4, GFP_KERNEL)?;
        if let Some(d) = desc.filter(|d| errno == 0 && d.len > 0) {
            let len = d.len.min(path.params.chunk_size);
            data_sg = [path.chunks.sge(chunk, len, path.chunks_mr.lkey())?];
            let data = SendOp::Write {
                remote_addr: d.addr,
                rkey: d.key,
            };
            let mut w = SendWr::new(WR_SEND, data, &data_sg);
            w.flags = SendFlags::NONE;
            wrs.push(w, GFP_KERNEL)?;
        }
        // With always_invalidate the chunk is registered again under a new
        // key, which the response carries (RKEY_RSP in a SEND with the
        // response immediate) after the invalidation of the client's key.
        let new_key = if path.params.always_invalidate {
            let i = req.buf_id as usize;
            let key = path.remap_chunk(i)?;
            let mut m = [0u8; 8];
            RkeyRsp {
                buf_id: req.buf_id as u16,
                rkey: key,
            }
            .write(&mut m)
            .map_err(|_| EINVAL)?;
            path.rkey_buf.write(i * 8, &m)?;
            let op = SendOp::RegMr {
                mr: path.chunk_mrs[i].core(),
                key,
                access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            };
            let mut w = SendWr::new(WR_SEND, op, &[]);
            w.flags = SendFlags::NONE;
            wrs.push(w, GFP_KERNEL)?;
            Some(i)
        } else {
            None
        };
        if let Some(key) = send_inv {
            let mut w = SendWr::new(WR_SEND, SendOp::SendWithInv(key), &[]);
            w.flags = SendFlags::NONE;
            wrs.push(w, GFP_KERNEL)?;
        }
        match new_key {
            Some(i) => {
                rkey_sg = [path.rkey_buf.sge(i * 8, 8, path.rkey_mr.lkey())?];
                wrs.push(
                    SendWr::new(WR_SEND, SendOp::SendWithImm(rsp), &rkey_sg),
                    GFP_KERNEL,
                )?;
            }
            None => wrs.push(SendWr::new(WR_SEND, done, &[]), GFP_KERNEL)?,
        }
        self.post_send(&mut wrs)
    }

    /// Disconnects and destroys the id (and with it the QP), then the CQ
    /// (path close, process context).
    pub(crate) fn close(&self) {
        let _ = self.core.disconnect();
        let id = self.id.lock().take();
        drop(id);
        let cq = self.cq.lock().take();
        drop(cq);
    }
}

/// The completion handler of a path's connections.
pub struct Comp {
    pub(crate) path: Arc<Path>,
}

impl Comp {
    fn handle(&self, wc: &Wc) -> Result {
        let path = &self.path;
        let con = path.con_by_qpn(wc.qp_num).ok_or(ENODEV)?;
        match wc.opcode {
            WcOpcode::Recv if wc.wr_id == WR_INFO => path.on_info_req(wc.byte_len as usize),
            WcOpcode::LocalInv if wc.wr_id & WR_INV != 0 => con.on_request(wc.wr_id as u32),
            WcOpcode::RecvRdmaWithImm => {
                // The receive goes back first: the client may send again
                // as soon as it sees our response.
                con.post_empty_recvs(1)?;
                // Anything from the client shows it alive.
                path.hb_rx();
                match Imm::parse(wc.imm_data) {
                    Ok(Imm::IoReq(payload)) if path.params.always_invalidate => {
                        con.invalidate_then_handle(payload)
                    }
                    Ok(Imm::IoReq(payload)) => con.on_request(payload),
                    // A server muted for fault tests does not answer.
                    Ok(Imm::HbMsg) if !path.params.heartbeats => Ok(()),
                    Ok(Imm::HbMsg) => {
                        let ack = Imm::HbAck.to_u32().map_err(|_| EINVAL)?;
                        path.con0().ok_or(ENODEV)?.write_imm(ack)?;
                        path.heartbeat_acked();
                        Ok(())
                    }
                    Ok(Imm::HbAck) => {
                        path.hb_acked();
                        Ok(())
                    }
                    Ok(_) => Ok(()),
                    Err(_) => Err(EINVAL),
                }
            }
            _ => Ok(()),
        }
    }
}

impl CqeDone for Comp {
    fn done(&self, _cq: &CqCore, wc: &Wc) {
        if wc.status == WcStatus::WrFlushErr {
            return;
        }
        let r = if wc.status == WcStatus::Success {
            self.handle(wc)
        } else {
            Err(EIO)
        };
        if let Err(e) = r {
            if rdma::kshim::ratelimit::log_allowed() {
                let name = self.path.name();
                let name = name.as_str();
                if wc.status == WcStatus::Success {
                    pr_warn!(
                        "rtrs: path \"{}\" closed: a bad {:?} (errno {})\n",
                        name,
                        wc.opcode,
                        e.to_errno()
                    );
                } else {
                    pr_warn!(
                        "rtrs: path \"{}\" closed: {:?} completed with {:?}\n",
                        name,
                        wc.opcode,
                        wc.status
                    );
                }
            }
            self.path.close_later();
        }
    }
}
