// SPDX-License-Identifier: GPL-2.0

//! The binding of the C test peer `rxe_cpeer` (selftests/rxe/cpeer): its
//! structures mirrored with `#[repr(C)]`, layout-checked at compile time
//! against the numbers `rxe_cpeer.h` asserts too, and its functions behind
//! one safe handle, [`CPeer`]. The only `unsafe` of the test modules, and
//! the only place that names the C functions.

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
