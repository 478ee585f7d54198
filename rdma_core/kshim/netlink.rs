// SPDX-License-Identifier: GPL-2.0

//! Kernel netlink endpoints: a netlink protocol (unit) served by safe Rust.
//!
//! C header: [`include/linux/netlink.h`](srctree/include/linux/netlink.h)
//!
//! [`NlEndpoint::register`] creates the kernel socket of a netlink unit
//! (`netlink_kernel_create`) whose requests go to an [`NlHandler`]. Every
//! datagram a process sends to the kernel on that unit becomes one
//! [`NlRequest`]: its bytes (one or more netlink messages, for a codec
//! such as `spec::netlink` to walk), the sender's port ID, and whether the
//! sender holds `CAP_NET_ADMIN` over the namespace's user namespace (what
//! the C RDMA netlink requires of its commands that change something).
//! The handler answers with [`NlRequest::reply`], any number of
//! datagrams (a dump's messages, then its `NLMSG_DONE`), each delivered
//! to the sender's socket at once, without waiting: a full receive buffer
//! fails the reply with `EAGAIN`. Dropping the endpoint releases the
//! socket and waits for requests in progress.
//!
//! Network namespaces: the endpoint has a kernel socket in every network
//! namespace, made for those that exist at `register` and for each one
//! created later, released with its namespace; a request is answered
//! through the socket of the sender's namespace, and `net_admin` is
//! checked against that namespace's user namespace. At most four
//! endpoints exist at once (`ENOSPC`).
//!
//! Taken units: the kernel refuses a second kernel socket of a unit in a
//! namespace (`netlink_kernel_create` returns NULL, with no errno, when
//! port 0 is taken); registering then fails with `EBUSY`, as it does for a
//! unit this shim already serves. `NETLINK_RDMA` (20) is taken whenever
//! the C `ib_core` is loaded, and while an endpoint holds it `ib_core`
//! cannot load (its per-namespace init fails). The module passed to
//! `register` is pinned by every user socket of the unit while the
//! endpoint exists (the kernel takes the reference at `socket(2)`): it
//! cannot be unloaded while a process holds such a socket.
//!
//! The C side is `netlink_glue.c`, which says how inputs in progress are
//! waited for.

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::error::code::ENODEV;
use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ARef;
use kernel::ThisModule;

use crate::kshim::bindings;
use crate::kshim::net::NetDevice;

/// The largest datagram [`NlRequest::reply`] sends.
pub const MAX_REPLY: usize = 65536;

/// The first netlink unit number past the kernel's (`MAX_LINKS`).
pub const MAX_LINKS: u32 = 32;

/// What serves a netlink unit.
///
/// `request` runs in the sending process's context, during its `sendmsg`,
/// and may sleep; requests from several processes run concurrently. It
/// must not drop the [`NlEndpoint`] it serves.
pub trait NlHandler: Send + Sync + 'static {
    /// One datagram sent to the kernel on the unit.
    fn request(&self, req: &NlRequest<'_>);
}

/// One datagram a process sent, and the means to answer it.
pub struct NlRequest<'a> {
    bytes: &'a [u8],
    portid: u32,
    net_admin: bool,
    /// The kernel socket it arrived on, alive during the call.
    sk: NonNull<bindings::sock>,
}

impl NlRequest<'_> {
    /// The datagram's bytes: one or more netlink messages, unchecked.
    pub fn bytes(&self) -> &[u8] {
        self.bytes
    }

    /// The sender's port ID (its socket's, whatever its headers say).
    pub fn portid(&self) -> u32 {
        self.portid
    }

    /// The sender has `CAP_NET_ADMIN` over the user namespace of its network
    /// namespace (and its socket was opened with it).
    pub fn net_admin(&self) -> bool {
        self.net_admin
    }

    /// The network device called `name` in the namespace the request was
    /// sent from (its kernel socket's), as the C core looks up the netdev
    /// of `rdma link add`. `ENODEV` if there is none.
    pub fn netdev_by_name(&self, name: &CStr) -> Result<ARef<NetDevice>> {
        let (sk, name) = (self.sk.as_ptr(), name.as_char_ptr());
        // SAFETY: `sk` is alive for this call (see `reply`) and `name` is
        // NUL-terminated; the glue returns a held device or NULL.
        let dev = unsafe { bindings::rdma_rs_nl_dev_get_by_name(sk, name) };
        let dev = NonNull::new(dev).ok_or(ENODEV)?;
        // SAFETY: the glue took a reference for us, which the `ARef` owns
        // (`NetDevice` is a transparent wrapper of `net_device`).
        Ok(unsafe { ARef::from_raw(dev.cast::<NetDevice>()) })
    }

    /// Sends one datagram (one or more whole netlink messages, at most
    /// [`MAX_REPLY`] bytes: `EMSGSIZE` otherwise) to the sender. Errors:
    /// `ECONNREFUSED` if its socket is gone, `EAGAIN` if its receive
    /// buffer is full, `ENOMEM`.
    pub fn reply(&self, datagram: &[u8]) -> Result {
        if datagram.len() > MAX_REPLY {
            return Err(crate::kshim::errno::emsgsize());
        }
        // `sk` is the kernel socket the request arrived on, which the
        // sender's `sendmsg` holds a reference to for the duration of the
        // handler's call, which `&self` does not outlive; the glue copies
        // `datagram` before returning.
        // SAFETY: a socket alive for this call (above) and a readable
        // buffer of `datagram.len()` bytes.
        let rc = unsafe {
            bindings::rdma_rs_nl_unicast(
                self.sk.as_ptr(),
                self.portid,
                datagram.as_ptr().cast(),
                datagram.len(),
            )
        };
        to_result(rc)
    }
}

/// How the glue's input reaches an endpoint's `T`.
type InputFn = unsafe fn(*const c_void, &NlRequest<'_>);

/// An endpoint's context, as the glue holds it (a thin pointer).
///
/// `#[repr(C)]` with `input` first: the non-generic [`rdma_rs_nl_input`]
/// reads it through a pointer to any `Ctx<T>`.
#[repr(C)]
struct Ctx<T: NlHandler> {
    input: InputFn,
    handler: Arc<T>,
}

impl<T: NlHandler> Ctx<T> {
    /// # Safety
    ///
    /// `this` must point at a live `Ctx<T>`.
    unsafe fn input(this: *const c_void, req: &NlRequest<'_>) {
        // SAFETY: per the function's contract.
        let this = unsafe { &*this.cast::<Self>() };
        this.handler.request(req);
    }
}

/// A registered netlink unit; unregistered when dropped.
///
/// Dropping it releases the kernel socket (new datagrams on the unit are
/// refused with `ECONNREFUSED`) and waits until no request is being
/// handled; a request that reaches the endpoint while it is dropped may
/// go unanswered.
///
/// # Invariants
///
/// - `raw` came from a successful `rdma_rs_nl_register` and is
///   unregistered (and freed) only in `drop`.
/// - The context pointer the glue holds is the address of `ctx`'s content,
///   which is freed after that unregistration (field drop order).
pub struct NlEndpoint<T: NlHandler> {
    raw: NonNull<bindings::rdma_rs_nl>,
    /// Handed to C for the input; freed after `raw` is unregistered.
    _ctx: KBox<Ctx<T>>,
}

// SAFETY: the handle only unregisters the endpoint, which may be done from
// any thread in process context; the context it owns holds an `Arc<T>`
// with `T: Send + Sync`.
unsafe impl<T: NlHandler> Send for NlEndpoint<T> {}
// SAFETY: `&NlEndpoint` gives access to nothing.
unsafe impl<T: NlHandler> Sync for NlEndpoint<T> {}

impl<T: NlHandler> NlEndpoint<T> {
    /// Serves netlink unit `unit` (below [`MAX_LINKS`]; `EINVAL`
    /// otherwise) in every network namespace with `handler`, for `module`,
    /// the caller's `THIS_MODULE`. `EBUSY` if the unit already has a
    /// kernel socket in `init_net`; `ENOSPC` past four endpoints. Process
    /// context.
    pub fn register(unit: u32, handler: Arc<T>, module: &'static ThisModule) -> Result<Self> {
        if unit >= MAX_LINKS {
            return Err(EINVAL);
        }
        let ctx = KBox::new(
            Ctx {
                input: Ctx::<T>::input,
                handler,
            },
            GFP_KERNEL,
        )?;
        let ctx_ptr = core::ptr::from_ref::<Ctx<T>>(&ctx).cast::<c_void>();
        // Why the call is sound:
        // - `ctx_ptr` is used by the glue's input only while the endpoint
        //   is registered or an input that found it is in progress; `drop`
        //   unregisters (which waits for those) before it frees `ctx`
        //   (field order), and moving the box does not move its content.
        // - `module` is the caller's module (documented), alive while it
        //   runs; the kernel only takes references on it.
        // SAFETY: as listed above: a context that outlives every input,
        // the caller's own module.
        let raw = unsafe { register_raw(module, unit, ctx_ptr)? };
        // INVARIANT: registered above, with `ctx`'s content as context.
        Ok(NlEndpoint { raw, _ctx: ctx })
    }
}

impl<T: NlHandler> Drop for NlEndpoint<T> {
    fn drop(&mut self) {
        // SAFETY: `raw` is registered (type invariant) and this is its only
        // unregistration; it returns once no input is in progress and none
        // can start, so `_ctx` is unused when freed next.
        unsafe { unregister_raw(self.raw) }
    }
}

/// `rdma_rs_nl_register`, non-generic (a consumer's instance of the
/// generic code cannot reach the C glue, which is not exported).
///
/// # Safety
///
/// As the glue requires: `ctx` valid until unregistration, `module` the
/// caller's own module.
#[inline(never)]
unsafe fn register_raw(
    module: &'static ThisModule,
    unit: u32,
    ctx: *const c_void,
) -> Result<NonNull<bindings::rdma_rs_nl>> {
    let unit = i32::try_from(unit).map_err(|_| EINVAL)?;
    // SAFETY: the caller's guarantees.
    let raw = unsafe { bindings::rdma_rs_nl_register(module.as_ptr().cast(), unit, ctx) };
    let raw = from_err_ptr(raw)?;
    NonNull::new(raw).ok_or(EINVAL)
}

/// `rdma_rs_nl_unregister`, non-generic (see [`register_raw`]).
///
/// # Safety
///
/// `raw` came from [`register_raw`] and is unregistered once.
#[inline(never)]
unsafe fn unregister_raw(raw: NonNull<bindings::rdma_rs_nl>) {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::rdma_rs_nl_unregister(raw.as_ptr()) }
}

/// A datagram for an endpoint, from `netlink_glue.c`.
///
/// # Safety
///
/// `ctx` must be the context pointer of a registered [`NlEndpoint`] (a live
/// `Ctx<T>`) for the duration of the call; `data` must point at `len`
/// readable bytes and `sk` at the kernel socket the datagram arrived on,
/// both alive for the duration of the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_nl_input(
    ctx: *const c_void,
    data: *const u8,
    len: usize,
    portid: u32,
    net_admin: bool,
    sk: *mut bindings::sock,
) {
    let Some(sk) = NonNull::new(sk) else {
        return;
    };
    let bytes = if len == 0 {
        &[][..]
    } else {
        // SAFETY: `data` points at `len` readable bytes (the skb's linear
        // data), alive and unchanged for the call (the function's
        // contract); the slice does not outlive it.
        unsafe { core::slice::from_raw_parts(data, len) }
    };
    let req = NlRequest {
        bytes,
        portid,
        net_admin,
        sk,
    };
    // SAFETY: `ctx` is a live `Ctx<T>` (the function's contract), which is
    // `#[repr(C)]` with its `input` first.
    let input = unsafe { *ctx.cast::<InputFn>() };
    // SAFETY: `input` is `Ctx::<T>::input` of the `T` that `ctx` is a `Ctx`
    // of.
    unsafe { input(ctx, &req) }
}
