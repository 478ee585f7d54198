// SPDX-License-Identifier: GPL-2.0

//! The binding of the C test peer `rxe_cpeer` (selftests/rxe/cpeer): its
//! structures mirrored with `#[repr(C)]`, layout-checked at compile time
//! against the numbers `rxe_cpeer.h` asserts too, and its functions behind
//! two safe handles: [`CPeer`] (an endpoint on the kernel's verbs) and
//! [`CmPeer`] (one on the kernel's rdma_cm). The only `unsafe` of the test
//! modules, and the only place that names the C functions.

#![allow(unsafe_code)]

use core::ffi::c_char;
use core::mem::{offset_of, size_of};
use core::ptr::{self, NonNull};

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::str::CStr;

use rdma::spec::attr::Gid;

/// A send operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Op {
    /// SEND.
    Send = 0,
    /// SEND with immediate data.
    SendImm = 1,
    /// RDMA WRITE.
    Write = 2,
    /// RDMA WRITE with immediate data.
    WriteImm = 3,
    /// RDMA READ.
    Read = 4,
    /// Atomic compare and swap (`compare_add`, `swap`).
    CmpSwap = 5,
    /// Atomic fetch and add (`compare_add`).
    FetchAdd = 6,
    /// ATOMIC_WRITE of the 8 bytes at `offset` (ours only: the C peer
    /// refuses it, see rxe_cpeer.h).
    AtomicWrite = 7,
    /// SEND with invalidate of the peer's key `imm`.
    SendInv = 8,
    /// RDMA READ, then the local key `imm` invalidated (ours only: the C
    /// peer refuses it, see rxe_cpeer.h).
    ReadInv = 9,
    /// LOCAL_INV of the local key `imm`.
    LocalInv = 10,
    /// FLUSH (global) of `length` bytes at the peer's address (ours only:
    /// the C peer refuses it, as ATOMIC_WRITE).
    Flush = 11,
}

/// `Completion::flags`: `imm` holds immediate data.
pub(crate) const WC_IMM: u32 = 1;
/// `Completion::flags`: `imm` holds the key the peer invalidated.
pub(crate) const WC_INV: u32 = 2;

/// A send work request (`struct rxe_cpeer_wr`).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Wr {
    /// Returned in the completion.
    pub(crate) wr_id: u64,
    /// The peer's address (RDMA, atomics).
    pub(crate) remote_addr: u64,
    /// Compare (compare and swap) or add (fetch and add) operand.
    pub(crate) compare_add: u64,
    /// Swap operand.
    pub(crate) swap: u64,
    /// The operation.
    pub(crate) op: Op,
    /// Where in the local buffer.
    pub(crate) offset: u32,
    /// How many bytes.
    pub(crate) length: u32,
    /// Immediate data; the key invalidated, for the `*Inv` operations.
    pub(crate) imm: u32,
    /// The peer's rkey (RDMA, atomics).
    pub(crate) rkey: u32,
    /// Nonzero: report a successful completion.
    pub(crate) signaled: u32,
}

/// What completed, in the kernel's numbering (`struct rxe_cpeer_wc`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct Completion {
    /// The work request's identifier.
    pub(crate) wr_id: u64,
    /// `enum ib_wc_status`: 0 is success.
    pub(crate) status: u32,
    /// `enum ib_wc_opcode`.
    pub(crate) opcode: u32,
    /// Bytes received or read.
    pub(crate) byte_len: u32,
    /// Immediate data or the invalidated key, as `flags` says.
    pub(crate) imm: u32,
    /// [`WC_IMM`] or [`WC_INV`], or 0.
    pub(crate) flags: u32,
    /// The sending QP (UD receives).
    pub(crate) src_qp: u32,
}

/// What the peer needs to know of an endpoint (`struct rxe_cpeer_info`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct CInfo {
    /// The buffer's address for remote access.
    pub(crate) addr: u64,
    /// Its rkey (0 on UD).
    pub(crate) rkey: u32,
    /// The QP number.
    pub(crate) qpn: u32,
}

// The layouts rxe_cpeer.h asserts (RXE_CPEER_*_SIZE and its offsets): a
// change on one side fails the build of both.
const _: () = {
    assert!(size_of::<Op>() == 4);
    assert!(size_of::<Wr>() == 56);
    assert!(offset_of!(Wr, wr_id) == 0);
    assert!(offset_of!(Wr, remote_addr) == 8);
    assert!(offset_of!(Wr, compare_add) == 16);
    assert!(offset_of!(Wr, swap) == 24);
    assert!(offset_of!(Wr, op) == 32);
    assert!(offset_of!(Wr, offset) == 36);
    assert!(offset_of!(Wr, length) == 40);
    assert!(offset_of!(Wr, imm) == 44);
    assert!(offset_of!(Wr, rkey) == 48);
    assert!(offset_of!(Wr, signaled) == 52);
    assert!(size_of::<Completion>() == 32);
    assert!(offset_of!(Completion, wr_id) == 0);
    assert!(offset_of!(Completion, status) == 8);
    assert!(offset_of!(Completion, opcode) == 12);
    assert!(offset_of!(Completion, byte_len) == 16);
    assert!(offset_of!(Completion, imm) == 20);
    assert!(offset_of!(Completion, flags) == 24);
    assert!(offset_of!(Completion, src_qp) == 28);
    assert!(size_of::<CInfo>() == 16);
    assert!(offset_of!(CInfo, addr) == 0);
    assert!(offset_of!(CInfo, rkey) == 8);
    assert!(offset_of!(CInfo, qpn) == 12);
};

/// `struct rxe_cpeer`, owned by the C module.
#[repr(C)]
struct RawCPeer {
    _opaque: [u8; 0],
}

extern "C" {
    fn rxe_cpeer_create(
        ibdev: *const c_char,
        gid: *const u8,
        qp_type: u32,
        buf_len: u32,
        depth: u32,
        out: *mut *mut RawCPeer,
        info: *mut CInfo,
    ) -> i32;
    fn rxe_cpeer_connect(
        p: *mut RawCPeer,
        remote_qpn: u32,
        remote_gid: *const u8,
        sq_psn: u32,
        rq_psn: u32,
        mtu: u32,
    ) -> i32;
    fn rxe_cpeer_buf(p: *mut RawCPeer) -> *mut u8;
    fn rxe_cpeer_post_send(p: *mut RawCPeer, wr: *const Wr) -> i32;
    fn rxe_cpeer_post_recv(p: *mut RawCPeer, wr_id: u64, offset: u32, length: u32) -> i32;
    fn rxe_cpeer_poll(p: *mut RawCPeer, recv: u32, wc: *mut Completion, n: u32) -> i32;
    fn rxe_cpeer_attach_mcast(p: *mut RawCPeer, gid: *const u8, attach: u32) -> i32;
    fn rxe_cpeer_destroy(p: *mut RawCPeer);
}

fn errno(ret: i32) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}

/// One endpoint of `rxe_cpeer`; destroyed when dropped.
///
/// # Invariants
///
/// `p` is a live endpoint from `rxe_cpeer_create`, destroyed only in
/// `drop`; `buf` is its buffer of `len` bytes, alive as long as `p`.
pub(crate) struct CPeer {
    p: NonNull<RawCPeer>,
    buf: *mut u8,
    len: usize,
}

// SAFETY: an rxe_cpeer endpoint may be used from any thread (the kernel's
// verbs are thread safe for post and poll; connect takes `&mut self`), and
// its buffer is only copied in and out.
unsafe impl Send for CPeer {}

impl CPeer {
    /// An endpoint on the kernel's device `name`, whose address is `gid`,
    /// with a buffer of `len` bytes and queues `depth` deep.
    pub(crate) fn create(
        name: &CStr,
        gid: &Gid,
        ud: bool,
        len: usize,
        depth: u32,
    ) -> Result<(CPeer, CInfo)> {
        let len32 = u32::try_from(len).map_err(|_| EINVAL)?;
        let mut p = ptr::null_mut();
        let mut ci = CInfo::default();
        // SAFETY: `name` is NUL-terminated, `gid.0` is 16 readable bytes,
        // and `p` and `ci` are writable for the call; the C side keeps
        // none of the pointers.
        errno(unsafe {
            rxe_cpeer_create(
                name.as_char_ptr().cast::<c_char>(),
                gid.0.as_ptr(),
                u32::from(ud),
                len32,
                depth,
                &mut p,
                &mut ci,
            )
        })?;
        let p = NonNull::new(p).ok_or(EINVAL)?;
        // SAFETY: `p` is a live endpoint (created above).
        let buf = unsafe { rxe_cpeer_buf(p.as_ptr()) };
        // INVARIANT: `p` was just created, `buf` is its buffer of `len`.
        Ok((CPeer { p, buf, len }, ci))
    }

    /// Connects an RC endpoint to its peer (INIT, RTR, RTS).
    pub(crate) fn connect(
        &mut self,
        qpn: u32,
        gid: &Gid,
        sq_psn: u32,
        rq_psn: u32,
        mtu: u32,
    ) -> Result {
        // SAFETY: `p` is live (type invariant); the GID is 16 readable
        // bytes, not kept.
        errno(unsafe {
            rxe_cpeer_connect(self.p.as_ptr(), qpn, gid.0.as_ptr(), sq_psn, rq_psn, mtu)
        })
    }

    /// Joins (or leaves) the multicast group `gid` (a UD endpoint).
    pub(crate) fn attach_mcast(&self, gid: &Gid, attach: bool) -> Result {
        // SAFETY: `p` is live (type invariant); the GID is 16 readable
        // bytes, copied by the C side.
        errno(unsafe { rxe_cpeer_attach_mcast(self.p.as_ptr(), gid.0.as_ptr(), u32::from(attach)) })
    }

    /// Posts one send work request.
    pub(crate) fn post_send(&self, wr: &Wr) -> Result {
        // SAFETY: `p` is live; `wr` is a readable `struct rxe_cpeer_wr`
        // (same layout, asserted above), not kept; the C side checks the
        // offsets.
        errno(unsafe { rxe_cpeer_post_send(self.p.as_ptr(), wr) })
    }

    /// Posts one receive of `length` bytes at `offset`.
    pub(crate) fn post_recv(&self, wr_id: u64, offset: u32, length: u32) -> Result {
        // SAFETY: `p` is live; the C side checks the offsets.
        errno(unsafe { rxe_cpeer_post_recv(self.p.as_ptr(), wr_id, offset, length) })
    }

    /// Polls the send (or receive) CQ into `out`; how many completed.
    pub(crate) fn poll(&self, recv: bool, out: &mut [Completion]) -> usize {
        let n = u32::try_from(out.len()).unwrap_or(u32::MAX);
        // SAFETY: `p` is live; `out` holds `n` writable completions of the
        // C layout (asserted above).
        let got = unsafe { rxe_cpeer_poll(self.p.as_ptr(), u32::from(recv), out.as_mut_ptr(), n) };
        got.max(0) as usize
    }

    fn check(&self, offset: usize, len: usize) -> Result {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copies `data` into the buffer at `offset`.
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.check(offset, data.len())?;
        // The device writes the buffer as DMA memory: no Rust reference
        // into it exists, only copies.
        // SAFETY: the range is inside the buffer of `len` bytes (checked),
        // alive as long as `self` (type invariant).
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(offset), data.len()) };
        Ok(())
    }

    /// Copies bytes of the buffer at `offset` into `out`.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.check(offset, out.len())?;
        // SAFETY: as in `write`, reading instead.
        unsafe { ptr::copy_nonoverlapping(self.buf.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
}

impl Drop for CPeer {
    fn drop(&mut self) {
        // SAFETY: `p` is live and is not used after this (type invariant).
        unsafe { rxe_cpeer_destroy(self.p.as_ptr()) };
    }
}

// The rdma_cm endpoints of rxe_cpeer (rxe_cpeer_cm.c, described in
// rxe_cpeer.h): a listener that echoes and a client, on the kernel's C
// rdma_cm. No test calls them yet, hence the `allow(dead_code)`s.

/// The longest SEND [`CmPeer::send`] takes, and the listener echoes.
#[allow(dead_code)]
pub(crate) const CM_MSG_MAX: usize = 256;
/// The most private data a REQ carries in rdma_cm's TCP port space.
#[allow(dead_code)]
pub(crate) const CM_REQ_PDATA_MAX: usize = 56;
/// How much private data [`CmInfo`] keeps.
#[allow(dead_code)]
pub(crate) const CM_PDATA: usize = 64;
/// Live connections a listener keeps; it rejects requests beyond them.
#[allow(dead_code)]
pub(crate) const CM_MAX_CONNS: u32 = 4;
/// The largest buffer an endpoint takes.
#[allow(dead_code)]
pub(crate) const CM_BUF_MAX: u32 = 4 << 20;
/// Private data that begins with this makes the listener reject.
#[allow(dead_code)]
pub(crate) const CM_REJECT_TAG: &[u8; 6] = b"REJECT";
/// The private data of the listener's rejections.
#[allow(dead_code)]
pub(crate) const CM_REJECT_PDATA: &[u8; 8] = b"cpeer-no";
/// The reason of the listener's rejections (`IB_CM_REJ_CONSUMER_DEFINED`).
#[allow(dead_code)]
pub(crate) const CM_REJ_CONSUMER_DEFINED: u32 = 28;
/// The length of the listener's accept private data: the big-endian
/// buffer address (8 bytes), rkey (4) and length (4).
#[allow(dead_code)]
pub(crate) const CM_ACCEPT_PDATA_LEN: usize = 16;
/// [`CmInfo::last_event`] before any event.
#[allow(dead_code)]
pub(crate) const CM_NO_EVENT: u32 = u32::MAX;

/// rdma_cm's event codes (`enum rdma_cm_event_type`), as
/// [`CmInfo::last_event`] reports them.
#[allow(dead_code)]
pub(crate) mod cm_event {
    /// RDMA_CM_EVENT_ADDR_RESOLVED.
    pub(crate) const ADDR_RESOLVED: u32 = 0;
    /// RDMA_CM_EVENT_ADDR_ERROR.
    pub(crate) const ADDR_ERROR: u32 = 1;
    /// RDMA_CM_EVENT_ROUTE_RESOLVED.
    pub(crate) const ROUTE_RESOLVED: u32 = 2;
    /// RDMA_CM_EVENT_ROUTE_ERROR.
    pub(crate) const ROUTE_ERROR: u32 = 3;
    /// RDMA_CM_EVENT_CONNECT_REQUEST.
    pub(crate) const CONNECT_REQUEST: u32 = 4;
    /// RDMA_CM_EVENT_CONNECT_RESPONSE.
    pub(crate) const CONNECT_RESPONSE: u32 = 5;
    /// RDMA_CM_EVENT_CONNECT_ERROR.
    pub(crate) const CONNECT_ERROR: u32 = 6;
    /// RDMA_CM_EVENT_UNREACHABLE.
    pub(crate) const UNREACHABLE: u32 = 7;
    /// RDMA_CM_EVENT_REJECTED.
    pub(crate) const REJECTED: u32 = 8;
    /// RDMA_CM_EVENT_ESTABLISHED.
    pub(crate) const ESTABLISHED: u32 = 9;
    /// RDMA_CM_EVENT_DISCONNECTED.
    pub(crate) const DISCONNECTED: u32 = 10;
    /// RDMA_CM_EVENT_DEVICE_REMOVAL.
    pub(crate) const DEVICE_REMOVAL: u32 = 11;
    /// RDMA_CM_EVENT_ADDR_CHANGE.
    pub(crate) const ADDR_CHANGE: u32 = 14;
    /// RDMA_CM_EVENT_TIMEWAIT_EXIT.
    pub(crate) const TIMEWAIT_EXIT: u32 = 15;
}

/// `a.b.c.d` as the 16-byte address the rdma_cm endpoints take
/// (`::ffff:a.b.c.d`, used as IPv4).
#[allow(dead_code)]
pub(crate) fn cm_v4(a: [u8; 4]) -> [u8; 16] {
    let mut addr = [0u8; 16];
    addr[10] = 0xff;
    addr[11] = 0xff;
    addr[12..].copy_from_slice(&a);
    addr
}

/// What an rdma_cm endpoint saw (`struct rxe_cpeer_cm_info`).
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct CmInfo {
    /// CONNECT_REQUESTs (listener).
    pub(crate) connect_requests: u32,
    /// ESTABLISHED events.
    pub(crate) established: u32,
    /// Requests the listener rejected.
    pub(crate) rejected: u32,
    /// REJECTED events (REJs from the peer).
    pub(crate) rej_received: u32,
    /// DISCONNECTED events.
    pub(crate) disconnected: u32,
    /// Echo SENDs completed (listener).
    pub(crate) echoes: u32,
    /// Receives completed.
    pub(crate) received: u32,
    /// Connections not yet torn down.
    pub(crate) conns: u32,
    /// The last event ([`cm_event`]), or [`CM_NO_EVENT`].
    pub(crate) last_event: u32,
    /// Its status.
    pub(crate) last_status: i32,
    /// The last REJECTED event's status: the REJ's reason.
    pub(crate) rej_reason: u32,
    /// That REJ's private data length, as rdma_cm reports it (148).
    pub(crate) rej_pdata_len: u32,
    /// The private data length of the last REQ (listener, 56) or REP
    /// (client, 196), as rdma_cm reports it.
    pub(crate) pdata_len: u32,
    /// The last connection's QP number.
    pub(crate) local_qpn: u32,
    /// The peer's QP number, from that REQ or REP.
    pub(crate) remote_qpn: u32,
    /// Client: the rkey of the peer's buffer, from the REP.
    pub(crate) remote_rkey: u32,
    /// Client: the address of the peer's buffer, from the REP.
    pub(crate) remote_addr: u64,
    /// Client: the length of the peer's buffer, from the REP.
    pub(crate) remote_len: u32,
    /// The last connection's rkey for this endpoint's buffer.
    pub(crate) local_rkey: u32,
    /// The address that rkey covers.
    pub(crate) local_addr: u64,
    /// The buffer's length.
    pub(crate) local_len: u32,
    /// The port bound.
    pub(crate) local_port: u32,
    /// The first bytes of that REQ's or REP's private data.
    pub(crate) pdata: [u8; CM_PDATA],
    /// The first bytes of that REJ's private data.
    pub(crate) rej_pdata: [u8; CM_PDATA],
}

impl Default for CmInfo {
    fn default() -> Self {
        CmInfo {
            connect_requests: 0,
            established: 0,
            rejected: 0,
            rej_received: 0,
            disconnected: 0,
            echoes: 0,
            received: 0,
            conns: 0,
            last_event: CM_NO_EVENT,
            last_status: 0,
            rej_reason: 0,
            rej_pdata_len: 0,
            pdata_len: 0,
            local_qpn: 0,
            remote_qpn: 0,
            remote_rkey: 0,
            remote_addr: 0,
            remote_len: 0,
            local_rkey: 0,
            local_addr: 0,
            local_len: 0,
            local_port: 0,
            pdata: [0; CM_PDATA],
            rej_pdata: [0; CM_PDATA],
        }
    }
}

#[allow(dead_code)]
impl CmInfo {
    /// The kept part of the last REQ's or REP's private data.
    pub(crate) fn pdata(&self) -> &[u8] {
        &self.pdata[..CM_PDATA.min(self.pdata_len as usize)]
    }

    /// The kept part of the last REJ's private data.
    pub(crate) fn rej_pdata(&self) -> &[u8] {
        &self.rej_pdata[..CM_PDATA.min(self.rej_pdata_len as usize)]
    }
}

// The layout rxe_cpeer.h asserts for struct rxe_cpeer_cm_info.
const _: () = {
    assert!(size_of::<CmInfo>() == 224);
    assert!(offset_of!(CmInfo, last_event) == 32);
    assert!(offset_of!(CmInfo, pdata_len) == 48);
    assert!(offset_of!(CmInfo, remote_rkey) == 60);
    assert!(offset_of!(CmInfo, remote_addr) == 64);
    assert!(offset_of!(CmInfo, remote_len) == 72);
    assert!(offset_of!(CmInfo, local_rkey) == 76);
    assert!(offset_of!(CmInfo, local_addr) == 80);
    assert!(offset_of!(CmInfo, local_len) == 88);
    assert!(offset_of!(CmInfo, local_port) == 92);
    assert!(offset_of!(CmInfo, pdata) == 96);
    assert!(offset_of!(CmInfo, rej_pdata) == 160);
};

/// `struct rxe_cpeer_cm`, owned by the C module.
#[repr(C)]
struct RawCm {
    _opaque: [u8; 0],
}

#[allow(dead_code)]
extern "C" {
    fn rxe_cpeer_cm_listen(addr: *const u8, port: u16, buf_len: u32, out: *mut *mut RawCm) -> i32;
    fn rxe_cpeer_cm_connect(
        dst: *const u8,
        port: u16,
        pdata: *const u8,
        pdata_len: u8,
        buf_len: u32,
        timeout_ms: u32,
        out: *mut *mut RawCm,
    ) -> i32;
    fn rxe_cpeer_cm_info(cm: *mut RawCm, info: *mut CmInfo) -> i32;
    fn rxe_cpeer_cm_send(cm: *mut RawCm, data: *const u8, len: u32) -> i32;
    fn rxe_cpeer_cm_recv(cm: *mut RawCm, out: *mut u8, len: u32, timeout_ms: u32) -> i32;
    fn rxe_cpeer_cm_read_buf(cm: *mut RawCm, off: u32, out: *mut u8, len: u32) -> i32;
    fn rxe_cpeer_cm_write_buf(cm: *mut RawCm, off: u32, data: *const u8, len: u32) -> i32;
    fn rxe_cpeer_cm_disconnect(cm: *mut RawCm, timeout_ms: u32) -> i32;
    fn rxe_cpeer_cm_destroy(cm: *mut RawCm);
}

/// The errno `rxe_cpeer_cm_connect` returns for a REJECTED connect.
const CM_CONNREFUSED: i32 = -(kernel::bindings::ECONNREFUSED as i32);

/// How [`CmPeer::connect`] ended, when the peer answered.
#[allow(dead_code)]
pub(crate) enum CmConnect {
    /// ESTABLISHED: the endpoint is connected.
    Established(CmPeer),
    /// REJECTED: the endpoint's [`CmInfo`] holds the REJ's reason
    /// (`rej_reason`) and private data; it can only be dropped.
    Rejected(CmPeer),
}

#[allow(dead_code)]
impl CmConnect {
    /// The connected endpoint, or `ECONNREFUSED` if the peer rejected.
    pub(crate) fn established(self) -> Result<CmPeer> {
        match self {
            CmConnect::Established(p) => Ok(p),
            CmConnect::Rejected(_) => Err(Error::from_errno(CM_CONNREFUSED)),
        }
    }
}

/// An rdma_cm endpoint of `rxe_cpeer` (a listener or a client) on the
/// kernel's C rdma_cm; destroyed, connections and all, when dropped.
///
/// Addresses are 16 bytes: IPv6, or IPv4-mapped (see [`cm_v4`]); a
/// listener on the all-zero address takes IPv6 and IPv4 requests.
///
/// # Invariants
///
/// `cm` is a live endpoint from `rxe_cpeer_cm_listen` or
/// `rxe_cpeer_cm_connect`, destroyed only in `drop`.
#[allow(dead_code)]
pub(crate) struct CmPeer {
    cm: NonNull<RawCm>,
}

// SAFETY: the C endpoint takes its own locks (a mutex and a spinlock) in
// every function and keeps no thread-local state, so it may be used and
// destroyed from any thread.
unsafe impl Send for CmPeer {}

#[allow(dead_code)]
impl CmPeer {
    /// A listener on `addr` and `port` (0: one rdma_cm picks, see
    /// [`CmInfo::local_port`]) with a buffer of `buf_len` bytes that each
    /// connection registers. It rejects a request whose private data begins
    /// with [`CM_REJECT_TAG`] (reason [`CM_REJ_CONSUMER_DEFINED`], private
    /// data [`CM_REJECT_PDATA`]), accepts the others with
    /// [`CM_ACCEPT_PDATA_LEN`] bytes of private data naming the buffer, and
    /// echoes every SEND.
    pub(crate) fn listen(addr: &[u8; 16], port: u16, buf_len: u32) -> Result<CmPeer> {
        let mut cm = ptr::null_mut();
        // SAFETY: `addr` is 16 readable bytes and `cm` is writable for the
        // call; the C side keeps neither pointer.
        errno(unsafe { rxe_cpeer_cm_listen(addr.as_ptr(), port, buf_len, &mut cm) })?;
        let cm = NonNull::new(cm).ok_or(EINVAL)?;
        // INVARIANT: the C side handed over a live endpoint.
        Ok(CmPeer { cm })
    }

    /// A client connected to `dst` and `port` with the REQ private data
    /// `pdata` (at most [`CM_REQ_PDATA_MAX`] bytes) and a buffer of
    /// `buf_len` bytes, waiting up to `timeout_ms` in all. `Ok` when the
    /// peer established or rejected; errors: `ETIMEDOUT` (UNREACHABLE, or
    /// the time ran out), `EHOSTUNREACH` (address or route), `ECONNABORTED`
    /// (CONNECT_ERROR), `ENODEV`, `EINVAL`, `ENOMEM`.
    pub(crate) fn connect(
        dst: &[u8; 16],
        port: u16,
        pdata: &[u8],
        buf_len: u32,
        timeout_ms: u32,
    ) -> Result<CmConnect> {
        let len = u8::try_from(pdata.len()).map_err(|_| EINVAL)?;
        let mut cm = ptr::null_mut();
        // SAFETY: `dst` is 16 readable bytes, `pdata` `len` readable bytes
        // (copied into the REQ before the call returns) and `cm` is
        // writable for the call; the C side keeps none of the pointers.
        let ret = unsafe {
            rxe_cpeer_cm_connect(
                dst.as_ptr(),
                port,
                pdata.as_ptr(),
                len,
                buf_len,
                timeout_ms,
                &mut cm,
            )
        };
        // INVARIANT: a non-null `cm` is a live endpoint handed over (the C
        // side sets it on success and on REJECTED only).
        let peer = NonNull::new(cm).map(|cm| CmPeer { cm });
        match (ret, peer) {
            (0, Some(p)) => Ok(CmConnect::Established(p)),
            (CM_CONNREFUSED, Some(p)) => Ok(CmConnect::Rejected(p)),
            _ => {
                errno(ret)?;
                Err(EINVAL)
            }
        }
    }

    /// What the endpoint saw so far.
    pub(crate) fn info(&self) -> Result<CmInfo> {
        let mut info = CmInfo::default();
        // SAFETY: `cm` is live (type invariant); `info` is a writable
        // `struct rxe_cpeer_cm_info` (same layout, asserted above), not
        // kept.
        errno(unsafe { rxe_cpeer_cm_info(self.cm.as_ptr(), &mut info) })?;
        Ok(info)
    }

    /// Client: sends `data` (1 to [`CM_MSG_MAX`] bytes) as one SEND and
    /// waits up to 5 s for its completion (`EIO` if it failed, `EBUSY`
    /// with 16 sends outstanding, `ENOTCONN` when not connected).
    pub(crate) fn send(&self, data: &[u8]) -> Result {
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        // SAFETY: `cm` is live (type invariant); `data` is `len` readable
        // bytes, copied before the call returns.
        errno(unsafe { rxe_cpeer_cm_send(self.cm.as_ptr(), data.as_ptr(), len) })
    }

    /// Client: the oldest SEND received, waiting up to `timeout_ms` for
    /// one: at most `out.len()` of its bytes copied into `out`, and its
    /// length returned (`ETIMEDOUT`, or `ENOTCONN` once disconnected).
    pub(crate) fn recv(&self, out: &mut [u8], timeout_ms: u32) -> Result<usize> {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        // SAFETY: `cm` is live (type invariant); `out` is `len` writable
        // bytes, of which the C side writes at most `len`, and not kept.
        let ret = unsafe { rxe_cpeer_cm_recv(self.cm.as_ptr(), out.as_mut_ptr(), len, timeout_ms) };
        errno(ret)?;
        usize::try_from(ret).map_err(|_| EINVAL)
    }

    /// Copies the endpoint's buffer at `off` into `out`.
    pub(crate) fn read_buf(&self, off: u32, out: &mut [u8]) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        // SAFETY: `cm` is live (type invariant); `out` is `len` writable
        // bytes; the C side checks the range of its own buffer.
        errno(unsafe { rxe_cpeer_cm_read_buf(self.cm.as_ptr(), off, out.as_mut_ptr(), len) })
    }

    /// Copies `data` into the endpoint's buffer at `off`.
    pub(crate) fn write_buf(&self, off: u32, data: &[u8]) -> Result {
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        // SAFETY: `cm` is live (type invariant); `data` is `len` readable
        // bytes; the C side checks the range of its own buffer.
        errno(unsafe { rxe_cpeer_cm_write_buf(self.cm.as_ptr(), off, data.as_ptr(), len) })
    }

    /// Sends a DREQ on the client's connection, or on each established
    /// connection of a listener, and waits up to `timeout_ms` for as many
    /// DISCONNECTED events (`ETIMEDOUT`; `ENOTCONN` with none established).
    pub(crate) fn disconnect(&self, timeout_ms: u32) -> Result {
        // SAFETY: `cm` is live (type invariant).
        errno(unsafe { rxe_cpeer_cm_disconnect(self.cm.as_ptr(), timeout_ms) })
    }
}

impl Drop for CmPeer {
    fn drop(&mut self) {
        // SAFETY: `cm` is live and is not used after this (type invariant).
        unsafe { rxe_cpeer_cm_destroy(self.cm.as_ptr()) };
    }
}

/// Objects in numbers (rxe_cpeer_objs.c), for the benchmark's memory rows
/// (the other test modules that include this file do not use them).
#[allow(dead_code)]
pub(crate) mod objs {
    use super::*;

    /// `struct rxe_cpeer_objs`, owned by the C module.
    #[repr(C)]
    struct RawObjs {
        _opaque: [u8; 0],
    }

    extern "C" {
        fn rxe_cpeer_objs_new(
            ibdev: *const c_char,
            kind: u32,
            n: u32,
            depth: u32,
            out: *mut *mut RawObjs,
        ) -> i32;
        fn rxe_cpeer_objs_make(o: *mut RawObjs) -> i32;
        fn rxe_cpeer_objs_destroy(o: *mut RawObjs);
    }

    /// What [`CObjects`] makes (`RXE_CPEER_OBJ_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(u32)]
    pub(crate) enum ObjKind {
        /// RC QPs of `depth` sends and receives, one SGE each, on one CQ.
        Qp = 0,
        /// CQs of `depth` entries.
        Cq = 1,
        /// Fast registration MRs of `depth` pages.
        Mr = 2,
    }

    /// Objects of the kernel's verbs made in numbers; all let go when dropped.
    ///
    /// # Invariants
    ///
    /// `o` is live, from `rxe_cpeer_objs_new`, destroyed only in `drop`.
    pub(crate) struct CObjects {
        o: NonNull<RawObjs>,
    }

    impl CObjects {
        /// Room for `n` objects of `kind` on the kernel's device `name`, and
        /// what they need (a PD, the QPs' CQ); none made yet.
        pub(crate) fn new(name: &CStr, kind: ObjKind, n: u32, depth: u32) -> Result<CObjects> {
            let mut o = ptr::null_mut();
            // SAFETY: `name` is NUL-terminated and `o` writable for the call;
            // the C side keeps neither pointer.
            errno(unsafe {
                rxe_cpeer_objs_new(
                    name.as_char_ptr().cast::<c_char>(),
                    kind as u32,
                    n,
                    depth,
                    &mut o,
                )
            })?;
            // INVARIANT: just made.
            Ok(CObjects {
                o: NonNull::new(o).ok_or(EINVAL)?,
            })
        }

        /// Makes the `n` objects (those not made yet, after a failure).
        pub(crate) fn make(&mut self) -> Result {
            // SAFETY: `o` is live (type invariant); `&mut self` keeps calls
            // apart.
            errno(unsafe { rxe_cpeer_objs_make(self.o.as_ptr()) })
        }
    }

    impl Drop for CObjects {
        fn drop(&mut self) {
            // SAFETY: `o` is live and is not used after this (type invariant).
            unsafe { rxe_cpeer_objs_destroy(self.o.as_ptr()) };
        }
    }
}
