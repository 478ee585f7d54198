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
//!
//! A response and what goes with it (a read's data, the SEND with
//! invalidate), and heartbeat acknowledgements, are posted unsignaled but
//! every `queue_depth`-th send request, as the kernel's server posts
//! them: nothing waits for their completion (a failed one still
//! completes, and closes the path), and the core frees an unsignaled
//! entry's slot when it completes. The chunks' first registrations go
//! unsignaled. With `always_invalidate` a request's chunk is invalidated
//! at once when it arrives (`Chunks::invalidate`, no `LOCAL_INV`), then
//! the request is handled, and the chunk is registered again at once
//! under its next key (`Chunks::register_again`, no `REG_MR`) before the
//! response that carries the key is posted.
//!
//! A connection knows its QP, not its path: the path's chunk memory and
//! info buffer are passed to it, its completions go to the handler it was
//! given (the path's), and a request goes to the ULP through the function
//! the path passes [`Con::on_request`].

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cma::{CmId, CmIdCore, ConnParam};
use rdma::device::Device;
use rdma::kshim::mem::Sge;
use rdma::spec::opcodes::{Access, SendFlags};
use rdma::verbs::cq::{Cq, PollCtx};
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::QpCore;
use rdma::verbs::wc::CqeDone;
use rdma::verbs::wr::{SendOp, SendWr};

use crate::proto::conn::{ConnRsp, CONN_RSP_LEN};
use crate::proto::consts::{RTRS_MSG_NEED_INVAL_F, RTRS_MSG_NEW_RKEY_F};
use crate::proto::imm::IoRsp;
use crate::proto::msg::{RdmaMsg, RkeyRsp};
use crate::srv::chunks::Chunks;
use crate::srv::info::Info;
use crate::srv::{Dir, Params, SrvRequest};

/// `wr_id` of the INFO_REQ receive.
pub(crate) const WR_INFO: u64 = 1;
/// `wr_id` of the empty receives.
const WR_EMPTY: u64 = 2;
/// `wr_id` of the sends.
const WR_SEND: u64 = 3;
/// The largest RTRS message after the user message (a read with one
/// descriptor).
const MSG_MAX: usize = 24;
/// User messages up to this size are read onto the stack (an RNBD IO is
/// 32 bytes); a longer one (an RNBD OPEN, 264) is allocated.
const USR_INLINE: usize = 128;

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
    /// Where its work requests complete (the path's handler).
    cqe: Arc<dyn CqeDone>,
    /// Send requests posted that may go unsignaled, and how many of them
    /// make one signaled one (the queue depth).
    sends: AtomicU32,
    signal_interval: u32,
    /// How a request's long user message is allocated: `GFP_ATOMIC` when
    /// the CQ is polled in softirq.
    gfp: kernel::alloc::Flags,
}

impl Con {
    /// Creates connection `cid` on `id` (its QP and CQ, on `dev` in `pd`,
    /// sized for `qd` requests, the CQ polled in `poll`), completing into
    /// `cqe`; cid 0 also posts the INFO_REQ receive into `info` (the first
    /// of its queue).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: CmId,
        cid: u16,
        dev: &Arc<Device>,
        pd: &Pd,
        qd: u32,
        info: &Info,
        cqe: Arc<dyn CqeDone>,
        poll: PollCtx,
    ) -> Result<Arc<Con>> {
        // Per request at most: the data, a SEND with invalidate, the
        // response.
        let (send, recv) = (3 * qd + 16, qd + 16);
        let (cq, qp) = crate::qp::create(&id, dev, pd, (send, recv, 1), poll)?;
        let gfp = if poll == PollCtx::Softirq {
            GFP_ATOMIC
        } else {
            GFP_KERNEL
        };
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
                cqe,
                sends: AtomicU32::new(0),
                signal_interval: qd.max(1),
                gfp,
            }),
            GFP_KERNEL,
        )?;
        if cid == 0 {
            con.post_recv(WR_INFO, &[info.req_sge()?])?;
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
        crate::qp::post_recv(&self.qp, wr_id, sg, self.cqe.clone())
    }

    /// Posts `n` receives without memory (what RDMA WRITEs with immediate
    /// data consume).
    pub(crate) fn post_empty_recvs(&self, n: u32) -> Result {
        for _ in 0..n {
            self.post_recv(WR_EMPTY, &[])?;
        }
        Ok(())
    }

    /// The flags of a send request that nothing waits for: signaled once
    /// every `signal_interval` of them.
    fn next_flags(&self) -> SendFlags {
        let n = self.sends.fetch_add(1, Ordering::Relaxed);
        if n % self.signal_interval == self.signal_interval - 1 {
            SendFlags::SIGNALED
        } else {
            SendFlags::NONE
        }
    }

    fn post_send(&self, wrs: &mut [SendWr<'_>]) -> Result {
        crate::qp::post_send(&self.qp, wrs, &self.cqe)
    }

    /// Sends INFO_RSP (`len` bytes of the info buffer `info`).
    pub(crate) fn send_info_rsp(&self, info: &Info, len: usize) -> Result {
        let sg = [info.rsp_sge(len)?];
        self.post_send(&mut [SendWr::new(WR_SEND, SendOp::Send, &sg)])
    }

    /// Registers every chunk's MR under its key (`always_invalidate`),
    /// before INFO_RSP announces the keys on this QP.
    pub(crate) fn register_chunks(&self, chunks: &Chunks) -> Result {
        for (mr, k) in chunks.mrs.iter().zip(chunks.keys.iter()) {
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

    /// A zero-length RDMA WRITE with immediate data `imm`.
    pub(crate) fn write_imm(&self, imm: u32) -> Result {
        let op = SendOp::WriteWithImm {
            remote_addr: 0,
            rkey: 0,
            imm,
        };
        let mut w = SendWr::new(WR_SEND, op, &[]);
        w.flags = self.next_flags();
        self.post_send(&mut [w])
    }

    /// An IO request in `chunks` whose immediate payload is `payload`:
    /// `serve` answers it (the ULP), given the request and the bytes it
    /// counts (the offset of its RTRS message in the chunk), and returns
    /// the errno of the response.
    pub(crate) fn on_request(
        &self,
        chunks: &Chunks,
        payload: u32,
        serve: impl FnOnce(&SrvRequest<'_>, u64) -> i32,
    ) -> Result {
        let params = &chunks.params;
        let g = &chunks.geometry;
        let req = g.locate(payload).map_err(|_| EINVAL)?;
        let chunk = req.buf_id as usize * params.chunk_size as usize;
        let off = req.off as usize;
        let mut window = [0u8; MSG_MAX];
        let n = core::cmp::min(MSG_MAX, params.chunk_size as usize - off);
        chunks.buf.read(chunk + off, &mut window[..n])?;
        let msg = RdmaMsg::parse(&window[..n]).map_err(|_| EINVAL)?;
        let usr_len = usize::from(msg.usr_len());
        if usr_len > off {
            return Err(EINVAL);
        }
        let data_len = off - usr_len;
        let mut inline = [0u8; USR_INLINE];
        let mut heap;
        let usr: &mut [u8] = if usr_len <= USR_INLINE {
            &mut inline[..usr_len]
        } else {
            heap = KVec::from_elem(0u8, usr_len, self.gfp)?;
            &mut heap
        };
        chunks.buf.read(chunk + data_len, usr)?;
        let (dir, desc, inval) = match &msg {
            RdmaMsg::Write(_) => (Dir::Write, None, false),
            RdmaMsg::Read(r) => (
                Dir::Read,
                r.descs().get(0),
                r.flags & RTRS_MSG_NEED_INVAL_F != 0,
            ),
        };
        let sreq = SrvRequest::new(dir, usr, &chunks.buf, chunk, data_len);
        let errno = serve(&sreq, off as u64);
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
        // At most three requests, in this order: the data (a read), the
        // SEND with invalidate, the response. Unused entries are never
        // posted.
        let unused = || SendWr::new(WR_SEND, SendOp::LocalInv(0), &[]);
        let mut wrs = [unused(), unused(), unused()];
        let mut n = 0;
        let data_sg;
        let rkey_sg;
        if let Some(d) = desc.filter(|d| errno == 0 && d.len > 0) {
            let len = d.len.min(params.chunk_size);
            data_sg = [chunks.buf.sge(chunk, len, chunks.mr.lkey())?];
            let data = SendOp::Write {
                remote_addr: d.addr,
                rkey: d.key,
            };
            wrs[n] = SendWr::new(WR_SEND, data, &data_sg);
            n += 1;
        }
        // With always_invalidate the chunk is registered again under a new
        // key, at once (`Chunks::register_again`), which the response
        // carries (RKEY_RSP in a SEND with the response immediate) after
        // the invalidation of the client's key.
        let new_key = if params.always_invalidate {
            let i = req.buf_id as usize;
            let key = chunks.register_again(i)?;
            let mut m = [0u8; 8];
            RkeyRsp {
                buf_id: req.buf_id as u16,
                rkey: key,
            }
            .write(&mut m)
            .map_err(|_| EINVAL)?;
            chunks.rkey_buf.write(i * 8, &m)?;
            Some(i)
        } else {
            None
        };
        if let Some(key) = send_inv {
            wrs[n] = SendWr::new(WR_SEND, SendOp::SendWithInv(key), &[]);
            n += 1;
        }
        wrs[n] = match new_key {
            Some(i) => {
                rkey_sg = [chunks.rkey_buf.sge(i * 8, 8, chunks.rkey_mr.lkey())?];
                SendWr::new(WR_SEND, SendOp::SendWithImm(rsp), &rkey_sg)
            }
            None => SendWr::new(
                WR_SEND,
                SendOp::WriteWithImm {
                    remote_addr: 0,
                    rkey: 0,
                    imm: rsp,
                },
                &[],
            ),
        };
        n += 1;
        for w in wrs[..n].iter_mut() {
            w.flags = self.next_flags();
        }
        self.post_send(&mut wrs[..n])
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
