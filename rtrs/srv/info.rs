// SPDX-License-Identifier: GPL-2.0

//! A server path's INFO exchange buffer: where the client's INFO_REQ is
//! received (on cid 0, the first receive of its queue) and where the
//! INFO_RSP the server answers with is built and sent from.

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::mem::{Buffer, Sge};
use rdma::spec::opcodes::Access;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;

/// Offset in the info buffer of the INFO_REQ receive (272 bytes).
const INFO_REQ_AT: usize = 0;
/// Its length.
const INFO_REQ_ROOM: usize = 512;
/// Offset of the INFO_RSP the server sends (a descriptor per chunk at
/// most).
const INFO_RSP_AT: usize = 512;

/// The info buffer of a path, and its MR.
pub(crate) struct Info {
    buf: Arc<Buffer>,
    mr: Mr,
}

impl Info {
    /// The buffer for a path of `queue_depth` chunks, registered in `pd`.
    pub(crate) fn new(pd: &Pd, queue_depth: u32) -> Result<Info> {
        let len = INFO_RSP_AT + 8 + 16 * queue_depth as usize;
        let buf = Buffer::new(len)?;
        let mr = Mr::reg_buffer(pd.core(), &buf, 0, len, Access::LOCAL_WRITE)?;
        Ok(Info { buf, mr })
    }

    /// Where INFO_REQ is received.
    pub(crate) fn req_sge(&self) -> Result<Sge> {
        self.buf
            .sge(INFO_REQ_AT, INFO_REQ_ROOM as u32, self.mr.lkey())
    }

    /// Copies the start of the INFO_REQ received into `out`.
    pub(crate) fn read_req(&self, out: &mut [u8]) -> Result {
        self.buf.read(INFO_REQ_AT, out)
    }

    /// Writes the INFO_RSP `rsp` to send.
    pub(crate) fn write_rsp(&self, rsp: &[u8]) -> Result {
        self.buf.write(INFO_RSP_AT, rsp)
    }

    /// The INFO_RSP to send, `len` bytes.
    pub(crate) fn rsp_sge(&self, len: usize) -> Result<Sge> {
        self.buf.sge(INFO_RSP_AT, len as u32, self.mr.lkey())
    }
}
