// SPDX-License-Identifier: GPL-2.0

//! The RTRS server, and what its ULP sees of it: [`Dir`], [`SrvRequest`],
//! [`SrvOps`], [`Params`] (here) and [`Server`].
//!
//! - [`server`]: the listener, the table of paths, the keeper.
//! - [`path`]: one client path: its connections, the INFO exchange, its
//!   completions, heartbeats and close.
//! - [`con`]: one connection: its QP, its receives, the requests that
//!   arrive on it and the responses.
//! - `chunks`: a path's chunk memory (the chunks, their MRs and keys).
//! - `info`: the layout of a path's INFO exchange buffer.
//! - `stats`: a path's request counters.
//! - `sysfs`: `/sys/class/rdma_rs_rtrs_server`, the layout and texts of
//!   the kernel's `rtrs-server`.
//!
//! The files import one another downwards only: `server` uses `path`,
//! which uses `con`, `chunks`, `info`, `stats` and `sysfs`; upward calls
//! go through a trait (`sysfs::SysPath`) or a function passed down.
//!
//! The module's parameters (`sess_queue_depth`, `max_chunk_size`,
//! `always_invalidate`) are the [`Params`] that [`Server::open`] uses.
//!
//! What the kernel's client needs of a server, and why each step is where
//! it is, is in Documentation/rtrs.rst.

pub(crate) mod chunks;
pub mod con;
pub(crate) mod info;
pub mod path;
pub mod server;
pub(crate) mod stats;
pub(crate) mod sysfs;

pub use crate::dir::Dir;
pub use server::Server;

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::ScopeGuard;

use rdma::kshim::block::BioData;
use rdma::kshim::global::Global;
use rdma::kshim::mem::Buffer;
use rdma::kshim::param;

use crate::proto::chunk::ChunkGeometry;
use crate::proto::consts::{MAX_IMM_PAYL_BITS, MAX_SESS_QUEUE_DEPTH, MIN_CHUNK_SIZE};

/// Module init: reads and checks the module's parameters (`EINVAL`,
/// logged, refuses the load), then registers the server's sysfs class.
pub(crate) fn init(module: &'static ThisModule) -> Result {
    let p = Params::from_module(module).inspect_err(|e| {
        pr_err!(
            "rtrs: not loaded: invalid module parameters (errno {})\n",
            e.to_errno()
        );
    })?;
    Params::set_module_default(Some(p))?;
    let undo = ScopeGuard::new(|| {
        let _ = Params::set_module_default(None);
    });
    sysfs::CLASS.init()?;
    undo.dismiss();
    Ok(())
}

/// Module exit, after every server.
pub(crate) fn exit() {
    sysfs::CLASS.exit();
    let _ = Params::set_module_default(None);
}

/// A request as the ULP sees it: its direction, the client's user message
/// and the data area of its chunk.
pub struct SrvRequest<'a> {
    /// Read or write.
    pub dir: Dir,
    /// The user message.
    pub usr: &'a [u8],
    chunk: &'a Buffer,
    base: usize,
    data_len: usize,
}

impl<'a> SrvRequest<'a> {
    pub(crate) fn new(
        dir: Dir,
        usr: &'a [u8],
        chunk: &'a Buffer,
        base: usize,
        data_len: usize,
    ) -> Self {
        SrvRequest {
            dir,
            usr,
            chunk,
            base,
            data_len,
        }
    }

    /// The length of the data area: the data written (write), the room
    /// for the data to return (read).
    pub fn data_len(&self) -> usize {
        self.data_len
    }

    fn check(&self, off: usize, len: usize) -> Result {
        if off <= self.data_len && len <= self.data_len - off {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Copies bytes of the data area at `off` into `out`.
    pub fn read_data(&self, off: usize, out: &mut [u8]) -> Result {
        self.check(off, out.len())?;
        self.chunk.read(self.base + off, out)
    }

    /// Copies `data` into the data area at `off`.
    pub fn write_data(&self, off: usize, data: &[u8]) -> Result {
        self.check(off, data.len())?;
        self.chunk.write(self.base + off, data)
    }

    /// The data area itself, for a block device to read or write in place
    /// (no copy); `None` when it is empty.
    pub fn bio_data(&self) -> Option<BioData<'a>> {
        let len = u32::try_from(self.data_len).ok().filter(|&l| l > 0)?;
        Some(BioData {
            buf: self.chunk,
            offset: self.base,
            len,
        })
    }
}

/// Where a ULP's [`SrvOps::rdma_ev`] may be called, which is where the
/// server polls the completions of that ULP's connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvContext {
    /// Process context: a workqueue, as the kernel's server polls its
    /// connections. For a ULP that sleeps (opens or waits for a block
    /// device).
    Process,
    /// Softirq, where the completion comes: no worker woken up and no
    /// context switch per request. For a ULP that answers without
    /// sleeping, allocating only with `GFP_ATOMIC` and taking only locks
    /// that are safe there.
    Softirq,
}

/// What a ULP on the server does.
pub trait SrvOps: Send + Sync {
    /// A request of path `path` (named by its client): returns 0 or a
    /// negative errno (at most 511), which the client's request completes
    /// with. Called where [`SrvOps::context`] says, one request of a
    /// connection at a time.
    fn rdma_ev(&self, path: &[u8], req: &SrvRequest<'_>) -> i32;

    /// Where [`SrvOps::rdma_ev`] may be called: process context unless
    /// the ULP says it does not sleep. Asked once, when a path comes.
    fn context(&self) -> EvContext {
        EvContext::Process
    }

    /// A path is up (its INFO exchange done) or down. Process context.
    fn link_ev(&self, _path: &[u8], _up: bool) {}
}

/// The parameters the server announces (`rtrs_msg_conn_rsp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Chunks per path (the client's permits).
    pub queue_depth: u32,
    /// Bytes of a chunk.
    pub chunk_size: u32,
    /// Room at the end of a chunk for the user and RTRS messages.
    pub max_hdr_size: u32,
    /// Each chunk has a memory region of its own, invalidated when a
    /// request arrives in it and registered again under a new key, which
    /// the response carries (`RKEY_RSP`): a client can write a chunk only
    /// while it owns it. The kernel server's default.
    pub always_invalidate: bool,
    /// Heartbeats are sent and acknowledged (`true`, always, but in fault
    /// tests): `false` makes a server that keeps its paths' transport up
    /// but never sends a heartbeat nor acknowledges one, so that a client
    /// fails such a path on heartbeats alone. Not a module parameter.
    pub heartbeats: bool,
}

/// Why [`Params`] are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsFault {
    /// The queue depth is not 1 to 65535.
    QueueDepth,
    /// The chunk size is below 8 KiB or not a power of two.
    ChunkSize,
    /// Chunk numbers and offsets in a chunk do not fit the immediate's 28
    /// payload bits together.
    ImmBits,
    /// The header room is 0 or not below the chunk size.
    HdrSize,
}

/// The parameters [`Server::open`] uses: the module's, once its init read
/// them.
static MODULE_PARAMS: Global<Params> = Global::new();

impl Params {
    /// 64 chunks of 128 KiB with 4 KiB of headers: within the kernel
    /// client's limits (headers of at least 288 bytes, IO of at least 4 KiB
    /// and a multiple of 512) and small for a test guest (the kernel's
    /// server has 512 chunks). The defaults of the module parameters
    /// (`rtrs/params.c`), which must stay equal.
    pub const DEFAULT: Params = Params {
        queue_depth: 64,
        chunk_size: 128 * 1024,
        max_hdr_size: 4096,
        always_invalidate: true,
        heartbeats: true,
    };

    /// The largest IO.
    pub fn max_io_size(&self) -> u32 {
        self.chunk_size - self.max_hdr_size
    }

    /// What is wrong with the values, as the kernel's server checks its
    /// module parameters: a queue depth of 1 to 65535, a chunk of at least
    /// 8 KiB and a power of two, both fitting the immediate's 28 bits
    /// together; and headers below the chunk size.
    pub fn fault(&self) -> Option<ParamsFault> {
        if self.queue_depth == 0 || self.queue_depth > MAX_SESS_QUEUE_DEPTH {
            Some(ParamsFault::QueueDepth)
        } else if self.chunk_size < MIN_CHUNK_SIZE || !self.chunk_size.is_power_of_two() {
            Some(ParamsFault::ChunkSize)
        } else if ChunkGeometry::server(self.queue_depth, self.chunk_size).is_err() {
            Some(ParamsFault::ImmBits)
        } else if self.max_hdr_size == 0 || self.max_hdr_size >= self.chunk_size {
            Some(ParamsFault::HdrSize)
        } else {
            None
        }
    }

    /// `EINVAL` if the values have a [`fault`](Params::fault).
    pub fn check(&self) -> Result {
        match self.fault() {
            Some(_) => Err(EINVAL),
            None => Ok(()),
        }
    }

    /// The parameters `always_invalidate`, `max_chunk_size` and
    /// `sess_queue_depth` of `module` (`rdma_rs_rtrs`, whose C declares
    /// them: `rtrs/params.c`), checked; the header room is the default's.
    /// `EINVAL`, with the reason logged, for values the kernel's server
    /// refuses too. Process context.
    pub fn from_module(module: &'static ThisModule) -> Result<Params> {
        let qd = param::get_int(module, c_str!("sess_queue_depth"))?;
        let chunk = param::get_int(module, c_str!("max_chunk_size"))?;
        let inv = param::get_bool(module, c_str!("always_invalidate"))?;
        // Values beyond u32 are refused as they are.
        let p = Params {
            queue_depth: u32::try_from(qd).unwrap_or(0),
            chunk_size: u32::try_from(chunk).unwrap_or(0),
            always_invalidate: inv,
            ..Params::DEFAULT
        };
        match p.fault() {
            None => return Ok(p),
            Some(ParamsFault::QueueDepth) => pr_err!(
                "rtrs: sess_queue_depth={} refused: it must be 1 to {}\n",
                qd,
                MAX_SESS_QUEUE_DEPTH
            ),
            Some(ParamsFault::ChunkSize) => pr_err!(
                "rtrs: max_chunk_size={} refused: it must be a power of two of at least {}\n",
                chunk,
                MIN_CHUNK_SIZE
            ),
            Some(ParamsFault::ImmBits) => pr_err!(
                "rtrs: sess_queue_depth={} with max_chunk_size={} refused: chunk numbers and offsets do not fit the {} bits of an immediate's payload; lower one of them\n",
                qd,
                chunk,
                MAX_IMM_PAYL_BITS
            ),
            Some(ParamsFault::HdrSize) => pr_err!(
                "rtrs: max_chunk_size={} refused: it must exceed the {} bytes of headers\n",
                chunk,
                p.max_hdr_size
            ),
        }
        Err(EINVAL)
    }

    /// The parameters [`Server::open`] uses: the module's (see
    /// [`Params::from_module`]), or [`Params::DEFAULT`] before its init
    /// read them.
    pub fn module_default() -> Params {
        MODULE_PARAMS.get().map_or(Params::DEFAULT, |p| *p)
    }

    /// Makes `self` what [`Params::module_default`] returns (module init);
    /// `None` forgets it (module exit).
    pub(crate) fn set_module_default(p: Option<Params>) -> Result {
        let p = match p {
            Some(p) => Some(Arc::new(p, GFP_KERNEL)?),
            None => None,
        };
        drop(MODULE_PARAMS.replace(p));
        Ok(())
    }
}
