// SPDX-License-Identifier: GPL-2.0

//! UDP tunnel sockets and raw IPv4 transmit, for RoCE v2 providers.
//!
//! [`UdpSocket::open_v4`] binds a UDP port in the network namespace of a
//! netdev and hands every datagram, as an owned [`SkBuff`], to a
//! [`UdpHandler`] in softirq context ([`UdpSocket::open_v6`] for IPv6).
//! [`ip_xmit_parts`] sends a packet (headers included: a RoCE v2 ICRC
//! covers them) out of a netdev, given as headers, payload and trailer
//! where the sender holds them.
//! The plumbing is C (`udp_glue.c`); the 6.12 kernel crate has no
//! networking.

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kshim::bindings;
use crate::kshim::net::NetDevice;

/// A received datagram; freed when dropped (any context).
///
/// # Invariants
///
/// The pointer is a linear `struct sk_buff` that this handle owns (the
/// socket's receive callback handed it over) and frees once, in `drop`.
pub struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: an skb is owned by one holder at a time and may be freed from
// any context.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// The packet from its IP header to its end (linear: the socket
    /// linearised it).
    pub fn l3(&self) -> &[u8] {
        let mut len = 0u32;
        // SAFETY: the skb is owned and linear; the helper returns its
        // network header and the length to the tail.
        let p = unsafe { bindings::rdma_rs_skb_l3(self.0.as_ptr(), &mut len) };
        // SAFETY: `p` points at `len` bytes of the skb's linear data, which
        // live as long as `self` and are not written meanwhile.
        unsafe { core::slice::from_raw_parts(p, len as usize) }
    }

    /// The interface index it arrived on.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: the skb is owned.
        unsafe { bindings::rdma_rs_skb_ifindex(self.0.as_ptr()) }
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: the skb is owned by this handle, freed once.
        unsafe { bindings::rdma_rs_skb_free(self.0.as_ptr()) }
    }
}

/// Receives the datagrams of a [`UdpSocket`].
pub trait UdpHandler: Send + Sync {
    /// One datagram, in softirq context: must not sleep.
    fn recv(&self, skb: SkBuff);
}

/// A UDP tunnel socket; closed when dropped (process context).
///
/// # Invariants
///
/// - `sock` is an open UDP tunnel socket created by the glue, closed only
///   in `drop`.
/// - `handler` came from `KBox::into_raw` and is the context the socket's
///   receive callback is given; it is freed in `drop`, after the socket is
///   closed (and with it every callback in progress).
pub struct UdpSocket {
    sock: NonNull<bindings::socket>,
    /// The context the C side hands back; freed after the socket is closed.
    handler: *mut Arc<dyn UdpHandler>,
}

// SAFETY: the socket is only closed through this handle, from any thread.
unsafe impl Send for UdpSocket {}
// SAFETY: `&UdpSocket` gives no access to anything.
unsafe impl Sync for UdpSocket {}

impl UdpSocket {
    /// Binds IPv4 UDP `port` in the namespace of `dev`. Process context.
    pub fn open_v4(dev: &NetDevice, port: u16, handler: Arc<dyn UdpHandler>) -> Result<UdpSocket> {
        Self::open(dev, port, handler, false)
    }

    /// Binds IPv6 UDP `port` (IPv6 only, zero checksums accepted) in the
    /// namespace of `dev`. Process context.
    pub fn open_v6(dev: &NetDevice, port: u16, handler: Arc<dyn UdpHandler>) -> Result<UdpSocket> {
        Self::open(dev, port, handler, true)
    }

    fn open(
        dev: &NetDevice,
        port: u16,
        handler: Arc<dyn UdpHandler>,
        v6: bool,
    ) -> Result<UdpSocket> {
        crate::kshim::verb::might_sleep();
        let ctx = KBox::into_raw(KBox::new(handler, GFP_KERNEL)?);
        // SAFETY: `dev` is live; `ctx` stays valid until `drop` frees it,
        // after the socket is closed and the last receive has returned.
        let sock = from_err_ptr(unsafe {
            bindings::rdma_rs_udp_open(dev.as_raw(), port, ctx.cast::<c_void>(), v6)
        });
        match sock.and_then(|p| NonNull::new(p).ok_or(kernel::error::code::EINVAL)) {
            // INVARIANT: an open socket whose callback context is `ctx`.
            Ok(sock) => Ok(UdpSocket { sock, handler: ctx }),
            Err(e) => {
                // SAFETY: `ctx` came from `into_raw` above and the C side
                // did not keep it.
                drop(unsafe { KBox::from_raw(ctx) });
                Err(e)
            }
        }
    }
}

impl Drop for UdpSocket {
    fn drop(&mut self) {
        // SAFETY: the socket is open and closed only here; the helper waits
        // for receives in progress.
        unsafe { bindings::rdma_rs_udp_close(self.sock.as_ptr()) };
        // SAFETY: no receive can run any more; the box came from `into_raw`.
        drop(unsafe { KBox::from_raw(self.handler) });
    }
}

/// The C side's receive entry point.
///
/// # Safety
///
/// `ctx` must be the context of an open [`UdpSocket`], `skb` an skb whose
/// ownership passes to this function.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_udp_recv(ctx: *mut c_void, skb: *mut bindings::sk_buff) {
    let Some(skb) = NonNull::new(skb) else {
        return;
    };
    // SAFETY: per the contract.
    let handler = unsafe { &*ctx.cast::<Arc<dyn UdpHandler>>() };
    // INVARIANT: the glue hands over a linearised skb and its ownership.
    handler.recv(SkBuff(skb));
}

/// The route of a sender with one destination (a connected QP): the
/// first packet looks it up, the next ones reuse it until the kernel
/// invalidates it (a route or neighbour change) or [`RouteCache::reset`]
/// says the destination changed (`struct dst_cache`, per CPU).
///
/// # Invariants
///
/// The pointer is a `struct dst_cache` allocated and initialised by the
/// glue, owned by this handle and freed once, in `drop`.
pub struct RouteCache(NonNull<bindings::dst_cache>);

// SAFETY: the cache is per CPU and the glue uses it with softirqs off, so
// concurrent senders on several CPUs each use their own slot; reset and
// free are allowed from any task.
unsafe impl Send for RouteCache {}
// SAFETY: as above.
unsafe impl Sync for RouteCache {}

impl RouteCache {
    /// An empty cache. Process context.
    pub fn new() -> Result<RouteCache> {
        // SAFETY: no preconditions; NULL on failure.
        let p = unsafe { bindings::rdma_rs_route_cache_new() };
        // INVARIANT: a fresh cache from the glue, or the error.
        NonNull::new(p).map(RouteCache).ok_or(ENOMEM)
    }

    /// Forgets the route: the destination or source changed.
    pub fn reset(&self) {
        // SAFETY: the cache is live (owned by `self`).
        unsafe { bindings::rdma_rs_route_cache_reset(self.0.as_ptr()) }
    }

    fn raw(cache: Option<&RouteCache>) -> *mut bindings::dst_cache {
        cache.map_or(core::ptr::null_mut(), |c| c.0.as_ptr())
    }
}

impl Drop for RouteCache {
    fn drop(&mut self) {
        // SAFETY: the cache is live and not used after this; it drops
        // the routes it holds.
        unsafe { bindings::rdma_rs_route_cache_free(self.0.as_ptr()) }
    }
}

/// Sends an IP packet given in parts, copied in a row into one skb
/// (`parts[0]` starts with the IP header, IPv6 if `v6`): a sender's
/// headers, its payload where it gathered it, its trailer. Routed out of
/// `dev` in its namespace (through `cache` if given: then every packet
/// sent through it must go to the same destination). Any context where
/// softirqs may be enabled.
pub fn ip_xmit_parts(
    dev: &NetDevice,
    cache: Option<&RouteCache>,
    v6: bool,
    parts: [&[u8]; 3],
) -> Result {
    let [hdr, data, tail] = parts;
    let xmit = if v6 {
        bindings::rdma_rs_ip6_xmit
    } else {
        bindings::rdma_rs_ip4_xmit
    };
    // SAFETY: `dev` is live; each part is valid for its length and copied
    // before the call returns (lengths over `u32` are refused, not cut:
    // the helper takes no run over 64 KiB); the cache is live or NULL.
    to_result(unsafe {
        xmit(
            dev.as_raw(),
            RouteCache::raw(cache),
            hdr.as_ptr(),
            len32(hdr)?,
            data.as_ptr(),
            len32(data)?,
            tail.as_ptr(),
            len32(tail)?,
        )
    })
}

/// The length of a part of a packet, which the C side takes as `u32`.
fn len32(part: &[u8]) -> Result<u32> {
    u32::try_from(part.len()).map_err(|_| EINVAL)
}

/// The kernel's CRC32 (`crc32_le`, accelerated where the CPU can).
pub fn crc32_le(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is valid for its length.
    unsafe { bindings::rdma_rs_crc32_le(crc, data.as_ptr(), data.len()) }
}
