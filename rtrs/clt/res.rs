// SPDX-License-Identifier: GPL-2.0

//! The memory of a connected client path, on its device: a small buffer
//! per receive (what the server's SENDs land in), a header area per
//! permit (each request's user message and RTRS message, then INFO_REQ and
//! INFO_RSP), a fast-registration MR per permit for its data, and the
//! completion handler every work request on the path completes into. Its
//! connections (`clt::con`) post into it; the path (`clt::path`) makes it
//! at each connect and drops it when it fails.

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::device::Device;
use rdma::kshim::mem::{Buffer, Sge};
use rdma::spec::opcodes::Access;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::wc::CqeDone;

use crate::proto::msg::INFO_REQ_LEN;

/// The most requests a path keeps in flight (the service connection is
/// sized for it before the server's queue depth is known).
pub(crate) const MAX_DEPTH: u32 = 512;
/// Room for a request's user message and RTRS message.
pub(crate) const HDR_ROOM: usize = 512;
/// Room for INFO_RSP (a descriptor per chunk at most).
pub(crate) const INFO_RSP_ROOM: usize = 8 + 16 * MAX_DEPTH as usize;
/// Bytes of each receive's buffer (INFO_RSP is larger: it has its own).
pub(crate) const RECV_ROOM: u32 = 64;

/// The memory of a connected path, on its device.
pub(crate) struct Res {
    pub(crate) dev: Arc<Device>,
    /// Every receive's buffer, `RECV_ROOM` bytes each.
    recv: Arc<Buffer>,
    recv_mr: Mr,
    /// Per permit: the user message and RTRS message of its request; then
    /// INFO_REQ and INFO_RSP.
    pub(crate) hdr: Arc<Buffer>,
    pub(crate) hdr_mr: Mr,
    /// Per permit: the fast-registration MR of its data.
    pub(crate) mrs: KVec<Mr>,
    /// The completion handler of every work request on the path (it
    /// holds the path: the cycle goes with this memory).
    pub(crate) cqe: Arc<dyn CqeDone>,
    /// Where INFO_REQ is built and INFO_RSP received.
    pub(crate) info_req_at: usize,
    pub(crate) info_rsp_at: usize,
    /// Last: the MRs above go first.
    _pd: Pd,
}

impl Res {
    /// The memory for `recvs` receives and `depth` permits of at most
    /// `max_segments` data slices each, in `pd` on `dev`; its work
    /// requests complete into `cqe`.
    pub(crate) fn new(
        dev: Arc<Device>,
        pd: Pd,
        cqe: Arc<dyn CqeDone>,
        recvs: u32,
        depth: u32,
        max_segments: u32,
    ) -> Result<Res> {
        let rlen = recvs as usize * RECV_ROOM as usize;
        let recv = Buffer::new(rlen)?;
        let recv_mr = Mr::reg_buffer(pd.core(), &recv, 0, rlen, Access::LOCAL_WRITE)?;
        let info_req_at = depth as usize * HDR_ROOM;
        let info_rsp_at = info_req_at + INFO_REQ_LEN;
        let hlen = info_rsp_at + INFO_RSP_ROOM;
        let hdr = Buffer::new(hlen)?;
        let hdr_mr = Mr::reg_buffer(pd.core(), &hdr, 0, hlen, Access::LOCAL_WRITE)?;
        let mut mrs = KVec::with_capacity(depth as usize, GFP_KERNEL)?;
        for _ in 0..depth {
            mrs.push(Mr::alloc_fast_reg(pd.core(), max_segments)?, GFP_KERNEL)?;
        }
        Ok(Res {
            dev,
            recv,
            recv_mr,
            hdr,
            hdr_mr,
            mrs,
            cqe,
            info_req_at,
            info_rsp_at,
            _pd: pd,
        })
    }

    /// The buffer of receive `n`.
    pub(crate) fn recv_sge(&self, n: u32) -> Result<Sge> {
        self.recv.sge(
            n as usize * RECV_ROOM as usize,
            RECV_ROOM,
            self.recv_mr.lkey(),
        )
    }

    /// Copies the start of receive `n`'s buffer into `out`.
    pub(crate) fn read_recv(&self, n: u32, out: &mut [u8]) -> Result {
        self.recv.read(n as usize * RECV_ROOM as usize, out)
    }

    /// The header area of permit `id`.
    pub(crate) fn hdr_at(id: u32) -> usize {
        id as usize * HDR_ROOM
    }
}
