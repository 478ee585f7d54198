// SPDX-License-Identifier: GPL-2.0

//! Link types: how `rdma link add NAME type TYPE netdev IF` and `rdma link
//! delete NAME` reach the provider that makes software devices of `TYPE`
//! (`rdma_link_register` and `nldev_newlink`/`nldev_dellink` of the C
//! core).
//!
//! A provider registers a type ("rxe") with the [`LinkOps`] that make and
//! remove its devices, tied to its [`Driver`]: [`LinkRegistration::new`]
//! at module init, the registration dropped at module exit (before the
//! provider's devices and state go). The netlink server (rdma_rs_uverbs)
//! calls [`new_link`] and [`del_link`].
//!
//! [`new_link`]: a name that is empty, too long or holds `%` is `EINVAL`;
//! the netdev is found by the netlink server in the requester's network
//! namespace (`ENODEV` if it has none of that name); an unknown type
//! `EINVAL` (no module is asked
//! for: the C core's `request_module("rdma-link-TYPE")` has no counterpart);
//! then whatever the type's [`LinkOps::new_link`] answers (a name taken is
//! `EEXIST`). [`del_link`]: the device's driver must have registered a
//! type, and its [`LinkOps::del_link`] decides (`EINVAL` for a device it
//! may not remove), as the C core refuses a device without
//! `IBK_ALLOW_USER_UNREG`.
//!
//! Unload safety: the list's mutex, `Links::list`, is held across the call
//! into the provider, and a provider's registration is taken out under it.
//! So once [`LinkRegistration`] is dropped no call of its ops is running or
//! can start, and the provider's module (whose exit drops it first) cannot
//! lose its code or state under a call. The C core holds an rwsem the same
//! way; the 6.12 kernel crate has no rwsem, so calls are serialised.
//!
//! Lock order: `Links::list` is outermost. Under it the provider takes its
//! own locks and registers or unregisters devices (`Registry::state`, then
//! what the clients' `add` and `remove` take). Nothing takes `Links::list`
//! while holding any of those: the netlink server calls in holding none of
//! its locks, and a provider drops its registration at module exit, from
//! no lock.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::types::ARef;

use crate::device::driver::Driver;
use crate::device::{Device, NAME_MAX};
use crate::kshim::global::Global;
use crate::kshim::net::NetDevice;

/// The longest link type, terminator included (`IFNAMSIZ`).
pub const TYPE_MAX: usize = 16;

/// What a provider does for `rdma link` on its type. Both run in process
/// context with `Links::list` held (see the module doc): they must not
/// register or drop a [`LinkRegistration`].
pub trait LinkOps: Send + Sync {
    /// Makes a device named `name` on `netdev` (a held reference; the
    /// provider takes its own if it keeps it).
    fn new_link(&self, name: &CStr, netdev: &ARef<NetDevice>) -> Result;

    /// Removes `dev`, one of this driver's devices: `EINVAL` if it is not
    /// one the provider lets `rdma link delete` remove.
    fn del_link(&self, dev: &Arc<Device>) -> Result;
}

struct Entry {
    link_type: &'static CStr,
    driver: usize,
    ops: Arc<dyn LinkOps>,
}

/// The registered link types.
#[pin_data]
pub(crate) struct Links {
    #[pin]
    list: Mutex<KVec<Entry>>,
}

static LINKS: Global<Links> = Global::new();

fn links() -> Arc<Links> {
    // Set from the module's init to its exit, the only time code of this
    // crate or of a module linked against it runs.
    LINKS
        .get()
        .expect("rdma_core: link types are used outside the module's lifetime")
}

/// Publishes the empty list (module init).
pub(crate) fn init() -> Result {
    let l = Arc::pin_init(
        pin_init!(Links {
            list <- new_mutex!(KVec::new(), "Links::list"),
        }),
        GFP_KERNEL,
    )?;
    drop(LINKS.replace(Some(l)));
    Ok(())
}

/// Undoes [`init`] (module exit: every provider is unloaded by then).
pub(crate) fn exit() {
    drop(LINKS.replace(None));
}

/// A link type's registration; dropping it unregisters the type, waiting
/// for a call of its ops in progress.
pub struct LinkRegistration {
    link_type: &'static CStr,
}

impl LinkRegistration {
    /// Registers `link_type` ("rxe") for the devices of `driver`, made
    /// and removed by `ops`. `EEXIST` if the type is registered already,
    /// `EINVAL` for a type longer than [`TYPE_MAX`] less the terminator.
    pub fn new(
        link_type: &'static CStr,
        driver: &Driver,
        ops: Arc<dyn LinkOps>,
    ) -> Result<LinkRegistration> {
        if link_type.as_bytes().is_empty() || link_type.len() >= TYPE_MAX {
            return Err(EINVAL);
        }
        let l = links();
        let mut list = l.list.lock();
        if list
            .iter()
            .any(|e| e.link_type.as_bytes() == link_type.as_bytes())
        {
            return Err(kernel::error::code::EEXIST);
        }
        list.push(
            Entry {
                link_type,
                driver: driver.id(),
                ops,
            },
            GFP_KERNEL,
        )?;
        Ok(LinkRegistration { link_type })
    }
}

impl Drop for LinkRegistration {
    fn drop(&mut self) {
        let l = links();
        let gone = crate::kshim::vec::remove_first(&mut l.list.lock(), |e| {
            e.link_type.as_bytes() == self.link_type.as_bytes()
        });
        // The ops (and what they hold of the provider) go outside the lock.
        drop(gone);
    }
}

/// Whether `name` can be a device name made by a link: not empty, shorter
/// than [`NAME_MAX`], no `%` (which would be a name template).
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.len() < NAME_MAX && !name.contains(&b'%') && !name.contains(&0)
}

/// `rdma link add`: makes a device `name` of `link_type` on `netdev`
/// (looked up by the caller, in the requester's namespace). Process
/// context.
pub fn new_link(name: &CStr, link_type: &CStr, nd: &ARef<NetDevice>) -> Result {
    if !valid_name(name.as_bytes()) {
        return Err(EINVAL);
    }
    let l = links();
    let list = l.list.lock();
    let e = list
        .iter()
        .find(|e| e.link_type.as_bytes() == link_type.as_bytes())
        .ok_or(EINVAL)?;
    e.ops.new_link(name, nd)
}

/// `rdma link delete`: removes `dev` through the link type of its driver
/// (`EINVAL` if its driver has none, or its ops refuse). Process context,
/// holding no usage reference on `dev` (its unregistration waits for them).
pub fn del_link(dev: &Arc<Device>) -> Result {
    let l = links();
    let list = l.list.lock();
    let e = list
        .iter()
        .find(|e| e.driver == dev.driver_id())
        .ok_or(EINVAL)?;
    e.ops.del_link(dev)
}
