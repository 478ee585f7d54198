// SPDX-License-Identifier: GPL-2.0

//! Selftest: an RNBD server of ours, on our RTRS server (`rtrs::srv`), for
//! the kernel's `rnbd_client` to map over the kernel's RTRS client.
//!
//! At load it listens on RTRS's port on our rxe `rtb` (namespace rt_b),
//! with `always_invalidate` (a new key for a chunk after every request, as
//! the kernel's server by default), one port up without it, and two ports
//! up with the parameters `rdma_rs_rtrs` was loaded with
//! ([`Server::open`]). It serves one device, a RAM disk of its own
//! ([`DISK`] bytes, zeroed), under any name: SESS_INFO, OPEN (512-byte
//! sectors), IO (read, write, flush) and CLOSE, answering each in the
//! softirq its completion comes in (`SrvOps::context`; a request handed
//! to it in process context fails with EIO). `rnbd.sh` maps it, writes
//! and reads it with `dd`, and compares; it also reads what the device
//! holds through this module's log of the first bytes of every write (the
//! server's own view).

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::device;
use rdma::kshim::mem::Buffer;
use rdma::kshim::route::NetNs;
use rdma::kshim::testing;
use rtrs::proto::consts::RTRS_PORT;
use rtrs::proto::rnbd::{
    self, Io, Open, OpenRsp, SessInfo, SessInfoRsp, RNBD_MSG_CLOSE, RNBD_MSG_IO, RNBD_MSG_OPEN,
    RNBD_MSG_SESS_INFO, RNBD_OP_FLUSH, RNBD_OP_MASK, RNBD_OP_READ, RNBD_OP_WRITE,
};
use rtrs::srv::{Dir, EvContext, Params, Server, SrvOps, SrvRequest};

module! {
    type: RnbdSrvTest,
    name: "rtrs_rnbd_srv_test",
    author: "rdma-rs developers",
    description: "Selftest: an RNBD server on our RTRS server",
    license: "GPL",
}

/// The RAM disk's size.
const DISK: usize = 16 << 20;
/// Its sector.
const SECTOR: usize = 512;
/// Copies go through a bounce of this size (on the stack, in softirq).
const BOUNCE: usize = 512;

const EINVAL_N: i32 = -22;
const EIO_N: i32 = -5;
const EOPNOTSUPP_N: i32 = -95;

struct Rnbd {
    disk: Arc<Buffer>,
}

impl Rnbd {
    fn sess_info(&self, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = SessInfo::parse(req.usr) else {
            return EINVAL_N;
        };
        let mut out = [0u8; rnbd::SESS_INFO_LEN];
        let rsp = SessInfoRsp {
            ver: m.ver.min(rnbd::RNBD_PROTO_VER_MAJOR),
        };
        match rsp.write(&mut out) {
            Ok(n) if req.write_data(0, &out[..n]).is_ok() => 0,
            _ => EINVAL_N,
        }
    }

    fn open(&self, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = Open::parse(req.usr) else {
            return EINVAL_N;
        };
        pr_info!(
            "rnbd srv: open \"{}\"\n",
            core::str::from_utf8(m.dev_name()).unwrap_or("?")
        );
        let rsp = OpenRsp {
            device_id: 0,
            nsectors: (DISK / SECTOR) as u64,
            max_hw_sectors: 248,
            max_write_zeroes_sectors: 0,
            max_discard_sectors: 0,
            discard_granularity: 0,
            discard_alignment: 0,
            physical_block_size: SECTOR as u16,
            logical_block_size: SECTOR as u16,
            max_segments: 31,
            secure_discard: 0,
            obsolete_rotational: 0,
            cache_policy: 0,
        };
        let mut out = [0u8; rnbd::OPEN_RSP_LEN];
        match rsp.write(&mut out) {
            Ok(n) if req.write_data(0, &out[..n]).is_ok() => 0,
            _ => EINVAL_N,
        }
    }

    fn io(&self, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = Io::parse(req.usr) else {
            return EINVAL_N;
        };
        let op = m.rw & RNBD_OP_MASK;
        let len = m.bi_size as usize;
        let at = (m.sector as usize).saturating_mul(SECTOR);
        if m.device_id != 0 {
            return -107;
        }
        if op == RNBD_OP_FLUSH {
            return 0;
        }
        if (op != RNBD_OP_READ && op != RNBD_OP_WRITE)
            || len != req.data_len()
            || at > DISK
            || len > DISK - at
        {
            return if op == RNBD_OP_READ || op == RNBD_OP_WRITE {
                EIO_N
            } else {
                EOPNOTSUPP_N
            };
        }
        let mut bounce = [0u8; BOUNCE];
        let mut done = 0;
        while done < len {
            let n = core::cmp::min(BOUNCE, len - done);
            let r = if req.dir == Dir::Read {
                self.disk
                    .read(at + done, &mut bounce[..n])
                    .and_then(|()| req.write_data(done, &bounce[..n]))
            } else {
                req.read_data(done, &mut bounce[..n])
                    .and_then(|()| self.disk.write(at + done, &bounce[..n]))
            };
            if r.is_err() {
                return EIO_N;
            }
            done += n;
        }
        0
    }
}

impl SrvOps for Rnbd {
    fn rdma_ev(&self, _path: &[u8], req: &SrvRequest<'_>) -> i32 {
        // It answers in softirq (`context`): a request handed to it in
        // process context is refused, and the IO of the test that sent it
        // fails.
        if testing::in_task() {
            pr_err!("rnbd srv: a request came in process context\n");
            return EIO_N;
        }
        match rnbd::msg_type(req.usr) {
            Ok(RNBD_MSG_SESS_INFO) => self.sess_info(req),
            Ok(RNBD_MSG_OPEN) => self.open(req),
            Ok(RNBD_MSG_IO) => self.io(req),
            Ok(RNBD_MSG_CLOSE) => 0,
            _ => EINVAL_N,
        }
    }

    /// Every message is answered without sleeping: in the softirq its
    /// completion comes in.
    fn context(&self) -> EvContext {
        EvContext::Softirq
    }

    fn link_ev(&self, path: &[u8], up: bool) {
        pr_info!(
            "rnbd srv: session \"{}\" {}\n",
            core::str::from_utf8(path).unwrap_or("?"),
            if up { "up" } else { "down" }
        );
    }
}

struct RnbdSrvTest {
    _server: Server,
    _plain: Server,
    _module_params: Server,
}

impl kernel::Module for RnbdSrvTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let dev = device::get_by_name(c_str!("rtb")).ok_or(ENODEV)?;
        let nd = dev.netdev(1).ok_or(ENODEV)?;
        let ns = NetNs::of(&nd)?;
        drop(dev);
        let ops = Arc::new(
            Rnbd {
                disk: Buffer::new(DISK)?,
            },
            GFP_KERNEL,
        )?;
        // The kernel server's default on RTRS's port; the other way one
        // port up, for our client to see both.
        let ns2 = ns.try_clone()?;
        let ns3 = ns.try_clone()?;
        // 60 chunks, not a power of two: a chunk number past the queue
        // depth still fits the immediate, for the lying clients.
        let params = Params {
            queue_depth: 60,
            ..Params::DEFAULT
        };
        let server = Server::open_with(ns, RTRS_PORT, ops.clone(), params)?;
        let plain = Server::open_with(
            ns2,
            RTRS_PORT + 1,
            ops.clone(),
            Params {
                always_invalidate: false,
                ..params
            },
        )?;
        // The module's parameters, for rnbd.sh to see them announced.
        let module_params = Server::open(ns3, RTRS_PORT + 2, ops)?;
        pr_info!(
            "rnbd srv: listening on {} (always_invalidate Y), {} (N) and {} (rdma_rs_rtrs's parameters)\n",
            RTRS_PORT,
            RTRS_PORT + 1,
            RTRS_PORT + 2
        );
        Ok(RnbdSrvTest {
            _server: server,
            _plain: plain,
            _module_params: module_params,
        })
    }
}
