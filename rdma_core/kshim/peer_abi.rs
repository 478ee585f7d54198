// SPDX-License-Identifier: GPL-2.0

//! The C side of Peer-Direct: peer memory clients written in C against
//! `include/rdma/peer_mem.h`, as safe Rust values.
//!
//! `peer_mem.ko` exports `ib_register_peer_memory_client` and
//! `ib_unregister_peer_memory_client` (its `c_api.c`), which call
//! [`rdma_rs_peer_register`] and [`rdma_rs_peer_unregister`] here. This
//! module reads the client's `struct peer_memory_client` (and the extended
//! form), checks its mandatory callbacks, wraps it in a [`CClient`] whose
//! methods call the callbacks, and hands it to the broker that `peer_mem`
//! installed with [`set_registrar`]. A client that asks for invalidation
//! gets [`rdma_rs_peer_invalidate`] as its callback.
//!
//! Soundness: a client's code may be unloaded once its unregistration
//! returns. Every call into it goes through the [`CClient`]'s gate, which
//! [`rdma_rs_peer_unregister`] closes (waiting for calls in progress) after
//! the broker has undone the client's regions and before it returns; a call
//! after that fails with `ENODEV` instead of jumping into freed code.
//! Handles are numbers the broker hands out, never dereferenced, so an
//! unknown handle is an error, not a crash.

use core::ffi::{c_int, c_void};

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kshim::bindings;
use crate::kshim::gate::Revocable;
use crate::kshim::global::Global;
use crate::kshim::pages::PeerSg;

/// The length of a client's name (`IB_PEER_MEMORY_NAME_MAX`).
pub const NAME_MAX: usize = 64;
/// The length of a client's version (`IB_PEER_MEMORY_VER_MAX`).
pub const VER_MAX: usize = 16;
/// `PEER_MEM_INVALIDATE_UNMAPS` of `struct peer_memory_client_ex`.
const INVALIDATE_UNMAPS: u32 = 1;
/// `PEER_MEM_CPU_PAGES` (an rdma-rs extension): the client's pages have a
/// `struct page` and its `dma_map` takes a NULL device.
const CPU_PAGES: u32 = 1 << 30;

// The layout of today's clients (`include/rdma/peer_mem.h` says which):
// registration reads a client's structure at these offsets and no further
// than they say.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use bindings::{peer_memory_client as C, peer_memory_client_ex as Ex};
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(C, version) == 64);
    assert!(offset_of!(C, acquire) == 80);
    assert!(offset_of!(C, get_pages) == 88);
    assert!(offset_of!(C, dma_map) == 96);
    assert!(offset_of!(C, dma_unmap) == 104);
    assert!(offset_of!(C, put_pages) == 112);
    assert!(offset_of!(C, get_page_size) == 120);
    assert!(offset_of!(C, release) == 128);
    assert!(size_of::<C>() == 136);
    assert!(offset_of!(Ex, ex_size) == 136);
    assert!(offset_of!(Ex, flags) == 144);
    assert!(size_of::<Ex>() == 152);
};
const _: () = assert!(core::mem::offset_of!(bindings::peer_memory_client_ex, client) == 0);

/// How much of an extended structure a client must declare (`ex_size`)
/// for its `flags` to be read.
const EX_FLAGS_END: usize =
    core::mem::offset_of!(bindings::peer_memory_client_ex, flags) + core::mem::size_of::<u32>();

/// A client context (`void *client_context`): the client's, opaque here,
/// only ever passed back to it.
#[derive(Clone, Copy)]
pub struct CContext(*mut c_void);

// SAFETY: an opaque value the client interprets; the core only stores it
// and passes it back, from whichever thread.
unsafe impl Send for CContext {}
// SAFETY: as above.
unsafe impl Sync for CContext {}

/// A registered C client.
///
/// # Invariants
///
/// While `ops` is open, its function pointers are the client's and may be
/// called: the client's module is loaded (the client has not returned from
/// unregistration, which closes `ops` first).
#[pin_data]
pub struct CClient {
    name: [u8; NAME_MAX],
    version: [u8; VER_MAX],
    unmaps: bool,
    cpu_pages: bool,
    #[pin]
    ops: Revocable<bindings::peer_memory_client>,
}

// SAFETY: `bindings::peer_memory_client` is names and function pointers,
// read-only after registration; the client's callbacks may be called from
// any thread (the API's contract).
unsafe impl Send for CClient {}
// SAFETY: as above.
unsafe impl Sync for CClient {}

impl CClient {
    /// The client's name (up to its first NUL).
    pub fn name(&self) -> &[u8] {
        until_nul(&self.name)
    }

    /// The client's version string (up to its first NUL).
    pub fn version(&self) -> &[u8] {
        until_nul(&self.version)
    }

    /// Whether the client tears its own mapping down when it invalidates
    /// (`PEER_MEM_INVALIDATE_UNMAPS` of the extended registration).
    pub fn unmaps(&self) -> bool {
        self.unmaps
    }

    /// Whether the client registered with `PEER_MEM_CPU_PAGES`: its
    /// `dma_map` takes a NULL device and leaves pages in the table. Any
    /// other client needs a DMA device, which no device of rdma-rs has.
    pub fn cpu_pages(&self) -> bool {
        self.cpu_pages
    }

    /// `acquire`: whether `[addr, addr + size)` of the current process is
    /// the client's, with its context if so. Process context.
    pub fn acquire(&self, addr: u64, size: u64) -> Result<Option<CContext>> {
        let ops = self.ops.access().ok_or(ENODEV)?;
        let f = ops.acquire.ok_or(EINVAL)?;
        let mut ctx: *mut c_void = core::ptr::null_mut();
        // SAFETY: the client's callback, callable while the gate is open
        // (type invariant); the arguments are plain values and a valid
        // place for the context; the private data and name are the
        // optional NULLs of the API.
        let r = unsafe {
            f(
                addr as _,
                size as _,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                &mut ctx,
            )
        };
        Ok((r > 0).then_some(CContext(ctx)))
    }

    /// `get_pages`: the client pins the range and fills `sg`.
    pub fn get_pages(
        &self,
        addr: u64,
        size: u64,
        write: bool,
        sg: &PeerSg,
        ctx: CContext,
        core_context: u64,
    ) -> Result {
        let ops = self.ops.access().ok_or(ENODEV)?;
        let f = ops.get_pages.ok_or(EINVAL)?;
        // SAFETY: as in `acquire`; `sg` is a valid, zeroed table the
        // client fills and later frees in `put_pages`.
        let r = unsafe {
            f(
                addr as _,
                size as _,
                c_int::from(write),
                0,
                sg.as_raw().cast(),
                ctx.0,
                core_context,
            )
        };
        errno(r)
    }

    /// `dma_map`: returns the number of mapped entries. A software device
    /// has no DMA: `dma_device` is NULL and the core reads the pages; the
    /// broker calls this only for a [`CClient::cpu_pages`] client, which
    /// declared that it takes a NULL device.
    pub fn dma_map(&self, sg: &PeerSg, ctx: CContext) -> Result<u32> {
        let ops = self.ops.access().ok_or(ENODEV)?;
        let f = ops.dma_map.ok_or(EINVAL)?;
        let mut nmap: c_int = 0;
        // SAFETY: as in `get_pages`; `nmap` is a valid place.
        let r = unsafe {
            f(
                sg.as_raw().cast(),
                ctx.0,
                core::ptr::null_mut(),
                0,
                &mut nmap,
            )
        };
        errno(r)?;
        u32::try_from(nmap).map_err(|_| EINVAL)
    }

    /// `dma_unmap`.
    pub fn dma_unmap(&self, sg: &PeerSg, ctx: CContext) {
        let Some(ops) = self.ops.access() else {
            return;
        };
        if let Some(f) = ops.dma_unmap {
            // SAFETY: as in `dma_map`.
            unsafe { f(sg.as_raw().cast(), ctx.0, core::ptr::null_mut()) };
        }
    }

    /// `put_pages`: the client frees the table's entries.
    pub fn put_pages(&self, sg: &PeerSg, ctx: CContext) {
        let Some(ops) = self.ops.access() else {
            return;
        };
        if let Some(f) = ops.put_pages {
            // SAFETY: as in `dma_map`.
            unsafe { f(sg.as_raw().cast(), ctx.0) };
        }
    }

    /// `get_page_size`, as the client returned it: unchecked (0 once the
    /// client is gone).
    pub fn page_size(&self, ctx: CContext) -> u64 {
        let Some(ops) = self.ops.access() else {
            return 0;
        };
        match ops.get_page_size {
            // SAFETY: as in `acquire`.
            Some(f) => (unsafe { f(ctx.0) }) as u64,
            None => 0,
        }
    }

    /// `release` (optional in the API).
    pub fn release(&self, ctx: CContext) {
        let Some(ops) = self.ops.access() else {
            return;
        };
        if let Some(f) = ops.release {
            // SAFETY: as in `acquire`.
            unsafe { f(ctx.0) };
        }
    }
}

fn errno(r: c_int) -> Result {
    if r == 0 {
        Ok(())
    } else if r < 0 && r > -4096 {
        Err(Error::from_errno(r))
    } else {
        Err(EINVAL)
    }
}

fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// What the broker does with C clients (`peer_mem` implements it).
pub trait CRegistrar: Send + Sync {
    /// Registers `client`; `invalidates`: the client asked for the
    /// invalidation callback (it requires invalidation). Returns the
    /// client's handle, a non-zero number.
    fn register(&self, client: Arc<CClient>, invalidates: bool) -> Result<usize>;
    /// Unregisters the client of `handle`, undoing its regions; returns
    /// it (`EINVAL` for an unknown handle).
    fn unregister(&self, handle: usize) -> Result<Arc<CClient>>;
    /// The client of `handle` invalidates the region of `core_context`.
    fn invalidate(&self, handle: usize, core_context: u64) -> Result;
}

/// The installed registrar.
pub struct Registrar(Arc<dyn CRegistrar>);

static REGISTRAR: Global<Registrar> = Global::new();

/// Installs the broker (`peer_mem` at init) or removes it (`None`, at its
/// exit, when no C client is left: each holds a reference on its module).
pub fn set_registrar(r: Option<Arc<dyn CRegistrar>>) -> Result {
    let new = match r {
        Some(b) => Some(Arc::new(Registrar(b), GFP_KERNEL)?),
        None => None,
    };
    drop(REGISTRAR.replace(new));
    Ok(())
}

/// Logs a refused registration (rate-limited).
fn refuse(what: &str, name: &[u8]) -> *mut c_void {
    if crate::kshim::ratelimit::log_allowed() {
        let name = core::str::from_utf8(name).unwrap_or("?");
        pr_warn!("peer_mem: client \"{}\" refused: {}\n", name, what);
    }
    core::ptr::null_mut()
}

/// `ib_register_peer_memory_client`, called by `peer_mem`'s `c_api.c`.
///
/// # Safety
///
/// `client` must be NULL or point to a `struct peer_memory_client` of the
/// layout asserted above (or, with a non-zero last version byte, a
/// `struct peer_memory_client_ex` whose `ex_size` field is there and says
/// how much of the rest there is) that stays valid during
/// the call, with function pointers that stay callable until the client's
/// unregistration returns; `cb` must be NULL or a valid place for a
/// function pointer. That is the C API's contract.
#[no_mangle]
pub unsafe extern "C" fn rdma_rs_peer_register(
    client: *const bindings::peer_memory_client,
    cb: *mut bindings::invalidate_peer_memory,
) -> *mut c_void {
    if client.is_null() {
        return refuse("NULL client", b"");
    }
    // SAFETY: a valid structure (the caller's contract); copied, so later
    // changes by the client do not matter.
    let raw = unsafe { core::ptr::read(client) };
    let name: [u8; NAME_MAX] = raw.name;
    let version: [u8; VER_MAX] = raw.version;
    let shown = until_nul(&name);
    let missing = [
        ("acquire", raw.acquire.is_none()),
        ("get_pages", raw.get_pages.is_none()),
        ("dma_map", raw.dma_map.is_none()),
        ("dma_unmap", raw.dma_unmap.is_none()),
        ("put_pages", raw.put_pages.is_none()),
        ("get_page_size", raw.get_page_size.is_none()),
    ];
    if let Some((what, _)) = missing.iter().find(|(_, m)| *m) {
        if crate::kshim::ratelimit::log_allowed() {
            pr_warn!(
                "peer_mem: client \"{}\" refused: no {} callback (EINVAL)\n",
                core::str::from_utf8(shown).unwrap_or("?"),
                what
            );
        }
        return core::ptr::null_mut();
    }
    if shown.is_empty() || shown.len() == NAME_MAX {
        return refuse("empty or unterminated name (EINVAL)", shown);
    }
    let mut flags = 0;
    if version[VER_MAX - 1] != 0 {
        let ex = client.cast::<bindings::peer_memory_client_ex>();
        // SAFETY: a non-zero last version byte promises the extended
        // structure around the base one (the caller's contract): its
        // `ex_size`, right after the base structure, is there and tells
        // how much of the rest the client has.
        let ex_size = unsafe { core::ptr::addr_of!((*ex).ex_size).read() };
        if ex_size >= EX_FLAGS_END {
            // SAFETY: as above; `flags` is within `ex_size`.
            flags = unsafe { core::ptr::addr_of!((*ex).flags).read() };
        }
    }
    let unmaps = flags & INVALIDATE_UNMAPS != 0;
    let cpu_pages = flags & CPU_PAGES != 0;
    let Some(reg) = REGISTRAR.get() else {
        return refuse("no broker (ENODEV)", shown);
    };
    let c = match Arc::pin_init(
        pin_init!(CClient {
            name,
            version,
            unmaps,
            cpu_pages,
            ops <- Revocable::new(raw),
        }),
        GFP_KERNEL,
    ) {
        Ok(c) => c,
        Err(_) => return refuse("out of memory", shown),
    };
    let invalidates = !cb.is_null();
    match reg.0.register(c, invalidates) {
        Ok(handle) => {
            if invalidates {
                // SAFETY: `cb` is a valid place (the caller's contract).
                unsafe {
                    cb.write(Some(
                        rdma_rs_peer_invalidate as unsafe extern "C" fn(_, _) -> _,
                    ))
                };
            }
            handle as *mut c_void
        }
        // The broker logged why.
        Err(_) => core::ptr::null_mut(),
    }
}

/// `ib_unregister_peer_memory_client`, called by `peer_mem`'s `c_api.c`:
/// undoes the client's regions, then waits for calls into it still in
/// progress; none is made afterwards. An unknown handle is logged and
/// ignored. Process context.
#[no_mangle]
pub extern "C" fn rdma_rs_peer_unregister(handle: *mut c_void) {
    let Some(reg) = REGISTRAR.get() else {
        return;
    };
    match reg.0.unregister(handle as usize) {
        Ok(client) => drop(client.ops.revoke()),
        Err(_) => {
            if crate::kshim::ratelimit::log_allowed() {
                pr_warn!("peer_mem: unregistration of an unknown handle ignored (EINVAL)\n");
            }
        }
    }
}

/// The invalidation callback C clients get: `reg_handle` is their handle,
/// `core_context` the value their `get_pages` was given. Returns 0, or
/// `-EINVAL` for an unknown handle or context.
#[no_mangle]
pub extern "C" fn rdma_rs_peer_invalidate(reg_handle: *mut c_void, core_context: u64) -> c_int {
    let Some(reg) = REGISTRAR.get() else {
        return ENODEV.to_errno();
    };
    match reg.0.invalidate(reg_handle as usize, core_context) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
