// SPDX-License-Identifier: GPL-2.0

//! One RDMA endpoint, on either stack, behind one interface: [`Endpoint`].
//!
//! [`Ours`] is an endpoint on `rdma_core` and `rdma_rs_rxe`; [`Theirs`] one
//! on the kernel's own verbs and `rdma_rxe`, through the C module
//! `rxe_cpeer` (selftests/rxe/cpeer/rxe_cpeer.h, whose structures are
//! mirrored here). The interop test connects one of each; the benchmark
//! runs the same workload code on two of ours and on two of theirs.
//!
//! An endpoint is a PD, a send CQ, a receive CQ, one RC or UD QP and one
//! buffer registered for local access (and, on RC, remote read, write and
//! atomics). Work requests name places in the buffer by offset.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use rdma::kshim::mem::Buffer;
use rdma::spec::attr::{Gid, Mtu};
use rdma::spec::opcodes::{Access, SendFlags, WcFlags};
use rdma::spec::qp_state::{QpState, QpType};
use rdma::verbs::ah::Ah;
use rdma::verbs::mr::{BufSlice, Mr};
use rdma::verbs::qp::QpCap;
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{FlushType, RecvWr, SendOp, SendWr, UdDest};

use crate::cpeer_sys::CPeer;
pub(crate) use crate::cpeer_sys::{Completion, Op, Wr, WC_IMM, WC_INV};
use crate::rc::{self, End, Opts, Port, Remote};

/// The Q_Key both stacks' UD endpoints use (rxe_cpeer's `QKEY`).
pub(crate) const QKEY: u32 = 0x1111_1111;

/// The local ACK timeout both stacks' RC endpoints use (rxe_cpeer's
/// `ACK_TIMEOUT`): 4.3 s. In the debug test guest a peer can be silent
/// for longer than the usual 268 ms (code 16) while nothing is lost, and a
/// retransmission would add packets the interop capture does not expect.
pub(crate) const ACK_TIMEOUT: u8 = 20;

impl Wr {
    /// A signaled `op` of `length` bytes from `offset`, no remote side.
    pub(crate) fn new(wr_id: u64, op: Op, offset: u32, length: u32) -> Wr {
        Wr {
            wr_id,
            remote_addr: 0,
            compare_add: 0,
            swap: 0,
            op,
            offset,
            length,
            imm: 0,
            rkey: 0,
            signaled: 1,
        }
    }

    /// The same, aimed at `peer`'s buffer at `remote_offset`.
    pub(crate) fn to(mut self, peer: &Info, remote_offset: u64) -> Wr {
        self.remote_addr = peer.addr + remote_offset;
        self.rkey = peer.rkey;
        self
    }
}

/// `enum ib_wc_opcode` values the tests look for.
pub(crate) mod wc_op {
    /// SEND.
    pub(crate) const SEND: u32 = 0;
    /// RDMA WRITE.
    pub(crate) const WRITE: u32 = 1;
    /// RDMA READ.
    pub(crate) const READ: u32 = 2;
    /// Compare and swap.
    pub(crate) const CMP_SWAP: u32 = 3;
    /// Fetch and add.
    pub(crate) const FETCH_ADD: u32 = 4;
    /// LOCAL_INV.
    pub(crate) const LOCAL_INV: u32 = 6;
    /// FLUSH.
    pub(crate) const FLUSH: u32 = 8;
    /// ATOMIC_WRITE.
    pub(crate) const ATOMIC_WRITE: u32 = 9;
    /// A receive.
    pub(crate) const RECV: u32 = 128;
    /// A receive of an RDMA WRITE with immediate.
    pub(crate) const RECV_RDMA_IMM: u32 = 129;
}

/// What the peer needs to know of an endpoint (`struct rxe_cpeer_info`
/// plus the GID).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Info {
    /// The buffer's address for remote access.
    pub(crate) addr: u64,
    /// Its rkey (0 on UD).
    pub(crate) rkey: u32,
    /// The QP number.
    pub(crate) qpn: u32,
    /// The GID.
    pub(crate) gid: Gid,
}

/// One endpoint: the verbs the workloads use.
pub(crate) trait Endpoint {
    /// Addresses and keys for the peer.
    fn info(&self) -> Info;
    /// Connects to `peer` (RC: INIT, RTR, RTS; UD: RTS and an address
    /// handle to it). `sq_psn` is ours, `rq_psn` the peer's.
    fn connect(&mut self, peer: &Info, sq_psn: u32, rq_psn: u32, mtu: Mtu) -> Result;
    /// Posts one send work request.
    fn post_send(&self, wr: &Wr) -> Result;
    /// Posts one receive of `length` bytes at `offset`.
    fn post_recv(&self, wr_id: u64, offset: u32, length: u32) -> Result;
    /// Takes up to `out.len()` completions of the send (or receive) CQ.
    fn poll(&self, recv: bool, out: &mut [Completion]) -> usize;
    /// Copies `data` into the buffer at `offset`.
    fn write(&self, offset: usize, data: &[u8]) -> Result;
    /// Copies out of the buffer at `offset`.
    fn read(&self, offset: usize, out: &mut [u8]) -> Result;
    /// A UD endpoint joins (or leaves) the multicast group `gid`.
    fn attach_mcast(&self, gid: &Gid, attach: bool) -> Result;
}

/// An endpoint on our stack. Fields in destruction order.
pub(crate) struct Ours {
    /// A fast-registered MR over a page of its own (the invalidation
    /// cases), once [`Ours::fast_reg`] made it.
    inv: Option<(Mr, Arc<Buffer>)>,
    /// The address handle of a UD peer.
    ah: Option<Ah>,
    end: End,
    remote_qpn: u32,
}

impl Ours {
    /// An endpoint on device `name`, whose address is `gid`.
    pub(crate) fn new(name: &CStr, gid: Gid, ud: bool, len: usize, depth: u32) -> Result<Ours> {
        let o = Opts {
            qp_type: if ud { QpType::Ud } else { QpType::Rc },
            access: Access(
                Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0 | Access::REMOTE_ATOMIC.0,
            ),
            mr_access: if ud {
                Access::LOCAL_WRITE
            } else {
                rc::ALL_ACCESS
            },
            buf_len: len,
            cqe: depth + 1,
            recv_cqe: Some(depth),
            cap: QpCap {
                max_send_wr: depth,
                max_recv_wr: depth,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            timeout: ACK_TIMEOUT,
            qkey: QKEY,
            ..rc::RC
        };
        Ok(Ours {
            inv: None,
            ah: None,
            end: End::new(Port { name, gid }, &o)?,
            remote_qpn: 0,
        })
    }

    /// Fast-registers a page of its own under a new key (REG_MR on the
    /// connected QP) for remote read and write; returns its address and
    /// key.
    pub(crate) fn fast_reg(&mut self) -> Result<(u64, u32)> {
        let buf = Buffer::new(4096)?;
        let mr = Mr::alloc_fast_reg(self.end.pd.core(), 1)?;
        let page = [BufSlice {
            buf: &buf,
            offset: 0,
            len: 4096,
        }];
        if mr.map_mr_sg(&page, 4096)? != 1 {
            return Err(EINVAL);
        }
        let key = (mr.lkey() & !0xff) | (mr.lkey().wrapping_add(1) & 0xff);
        let reg = SendOp::RegMr {
            mr: mr.core(),
            key,
            access: Access(Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0),
        };
        self.end
            .qp
            .post_send(&[SendWr::new(0xfa57, reg, &[])])
            .map_err(|(_, e)| e)?;
        let c = wait(self, false, 5000)?;
        if c.wr_id != 0xfa57 || c.status != 0 {
            return Err(EINVAL);
        }
        let addr = mr.iova();
        self.inv = Some((mr, buf));
        Ok((addr, key))
    }

    /// Whether the MR of [`Ours::fast_reg`] is still valid.
    pub(crate) fn fast_reg_valid(&self) -> bool {
        self.inv.as_ref().is_some_and(|(mr, _)| mr.is_valid())
    }

    fn ud(&self) -> bool {
        self.end.opts.qp_type == QpType::Ud
    }
}

fn completion(wc: &Wc) -> Completion {
    Completion {
        wr_id: wc.wr_id,
        status: wc.status as u32,
        opcode: wc.opcode as u32,
        byte_len: wc.byte_len,
        imm: if wc.wc_flags.contains(WcFlags::WITH_INVALIDATE) {
            wc.invalidate_rkey
        } else {
            wc.imm_data
        },
        flags: if wc.wc_flags.contains(WcFlags::WITH_IMM) {
            WC_IMM
        } else if wc.wc_flags.contains(WcFlags::WITH_INVALIDATE) {
            WC_INV
        } else {
            0
        },
        src_qp: wc.src_qp,
    }
}

impl Endpoint for Ours {
    fn info(&self) -> Info {
        Info {
            addr: self.end.buf.addr(0),
            rkey: if self.ud() { 0 } else { self.end.mr.rkey() },
            qpn: self.end.qp.qpn(),
            gid: self.end.gid,
        }
    }

    fn connect(&mut self, peer: &Info, sq_psn: u32, rq_psn: u32, mtu: Mtu) -> Result {
        let o = Opts {
            psn: sq_psn,
            path_mtu: mtu,
            ..self.end.opts
        };
        let remote = Remote {
            qpn: peer.qpn,
            psn: rq_psn,
            av: self.end.av(peer.gid)?,
        };
        rc::modify_to(&self.end.qp, &o, &remote, QpState::Rts)?;
        if self.ud() {
            self.ah = Some(self.end.ah(peer.gid)?);
            self.remote_qpn = peer.qpn;
        }
        Ok(())
    }

    fn post_send(&self, wr: &Wr) -> Result {
        let (remote_addr, rkey) = (wr.remote_addr, wr.rkey);
        let op = match wr.op {
            Op::Send => SendOp::Send,
            Op::SendImm => SendOp::SendWithImm(wr.imm),
            Op::Write => SendOp::Write { remote_addr, rkey },
            Op::WriteImm => SendOp::WriteWithImm {
                remote_addr,
                rkey,
                imm: wr.imm,
            },
            Op::Read => SendOp::Read { remote_addr, rkey },
            Op::CmpSwap => SendOp::CmpAndSwp {
                remote_addr,
                rkey,
                compare: wr.compare_add,
                swap: wr.swap,
            },
            Op::FetchAdd => SendOp::FetchAndAdd {
                remote_addr,
                rkey,
                add: wr.compare_add,
            },
            Op::AtomicWrite => SendOp::AtomicWrite { remote_addr, rkey },
            Op::SendInv => SendOp::SendWithInv(wr.imm),
            Op::ReadInv => SendOp::ReadWithInv {
                remote_addr,
                rkey,
                invalidate: wr.imm,
            },
            Op::LocalInv => SendOp::LocalInv(wr.imm),
            Op::Flush => SendOp::Flush {
                remote_addr,
                rkey,
                length: u64::from(wr.length),
                flush: FlushType {
                    global: true,
                    persistent: false,
                },
                whole_mr: false,
            },
        };
        let no_data = matches!(wr.op, Op::LocalInv | Op::Flush);
        let sg = [self.end.sge(wr.offset as usize, wr.length as usize)?];
        let mut swr = SendWr::new(wr.wr_id, op, if no_data { &[] } else { &sg });
        if wr.signaled == 0 {
            swr.flags = SendFlags::NONE;
        }
        if let Some(ah) = &self.ah {
            swr.ud = Some(UdDest {
                ah: ah.core(),
                remote_qpn: self.remote_qpn,
                remote_qkey: QKEY,
            });
        }
        self.end.qp.post_send(&[swr]).map_err(|(_, e)| e)
    }

    fn post_recv(&self, wr_id: u64, offset: u32, length: u32) -> Result {
        let sg = [self.end.sge(offset as usize, length as usize)?];
        self.end
            .qp
            .post_recv(&[RecvWr {
                wr_id,
                cqe: None,
                sg: &sg,
            }])
            .map_err(|(_, e)| e)
    }

    fn poll(&self, recv: bool, out: &mut [Completion]) -> usize {
        let mut wc: [Wc; 8] = Default::default();
        let n = out.len().min(wc.len());
        let got = if recv {
            self.end.recv_cq()
        } else {
            &self.end.cq
        }
        .poll(&mut wc[..n]);
        for (o, w) in out.iter_mut().zip(&wc[..got]) {
            *o = completion(w);
        }
        got
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.end.buf.write(offset, data)
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.end.buf.read(offset, out)
    }

    fn attach_mcast(&self, gid: &Gid, attach: bool) -> Result {
        if attach {
            self.end.qp.attach_mcast(gid)
        } else {
            self.end.qp.detach_mcast(gid)
        }
    }
}

/// An endpoint on the kernel's own verbs (`rxe_cpeer`).
pub(crate) struct Theirs {
    c: CPeer,
    info: Info,
}

impl Theirs {
    /// An endpoint on the kernel's device `name`, whose address is `gid`.
    pub(crate) fn new(name: &CStr, gid: Gid, ud: bool, len: usize, depth: u32) -> Result<Theirs> {
        let (c, ci) = CPeer::create(name, &gid, ud, len, depth)?;
        Ok(Theirs {
            c,
            info: Info {
                addr: ci.addr,
                rkey: ci.rkey,
                qpn: ci.qpn,
                gid,
            },
        })
    }
}

impl Endpoint for Theirs {
    fn info(&self) -> Info {
        self.info
    }

    fn connect(&mut self, peer: &Info, sq_psn: u32, rq_psn: u32, mtu: Mtu) -> Result {
        self.c
            .connect(peer.qpn, &peer.gid, sq_psn, rq_psn, mtu.bytes())
    }

    fn post_send(&self, wr: &Wr) -> Result {
        self.c.post_send(wr)
    }

    fn post_recv(&self, wr_id: u64, offset: u32, length: u32) -> Result {
        self.c.post_recv(wr_id, offset, length)
    }

    fn poll(&self, recv: bool, out: &mut [Completion]) -> usize {
        self.c.poll(recv, out)
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.c.write(offset, data)
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.c.read(offset, out)
    }

    fn attach_mcast(&self, gid: &Gid, attach: bool) -> Result {
        self.c.attach_mcast(gid, attach)
    }
}

/// Waits for one completion on `e`'s send (or receive) CQ, sleeping a
/// little between polls, up to `ms` milliseconds (`EAGAIN` after).
pub(crate) fn wait(e: &dyn Endpoint, recv: bool, ms: u32) -> Result<Completion> {
    let mut c = [Completion::default()];
    for _ in 0..ms {
        if e.poll(recv, &mut c) == 1 {
            return Ok(c[0]);
        }
        rdma::kshim::time::msleep(1);
    }
    Err(kernel::error::code::EAGAIN)
}
