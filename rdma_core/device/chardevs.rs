// SPDX-License-Identifier: GPL-2.0

//! Character devices of modules above the core that RDMA netlink names
//! for user space without a device (`RDMA_NLDEV_CMD_GET_CHARDEV` of a type
//! such as "rdma_cm"), what the C core asks its clients'
//! `get_global_nl_info` for. A module registers its device with
//! [`register_global`] and keeps the [`GlobalChardev`] while it serves;
//! the netlink server finds it with [`find_global`].

use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::error::code::{EEXIST, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

use crate::kshim::global::Global;

/// A character device as netlink names it.
#[derive(Clone, Copy, Debug)]
pub struct ChardevEntry {
    /// Its type, and its name under `/dev/infiniband` ("rdma_cm").
    pub name: &'static CStr,
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// Its ABI version.
    pub abi: u64,
}

#[pin_data]
struct Chardevs {
    #[pin]
    list: Mutex<KVec<(usize, ChardevEntry)>>,
}

static CHARDEVS: Global<Chardevs> = Global::new();
static NEXT: AtomicUsize = AtomicUsize::new(1);

/// Sets the table up (module init).
pub(crate) fn init() -> Result {
    CHARDEVS.replace(Some(Arc::pin_init(
        pin_init!(Chardevs {
            list <- new_mutex!(KVec::new(), "device::CHARDEVS"),
        }),
        GFP_KERNEL,
    )?));
    Ok(())
}

/// Drops it (module exit: every module that registered is gone).
pub(crate) fn exit() {
    drop(CHARDEVS.replace(None));
}

/// A registered device; unregistered when dropped.
pub struct GlobalChardev {
    id: usize,
}

/// Registers `e`; `EEXIST` if a device of its name is registered.
pub fn register_global(e: ChardevEntry) -> Result<GlobalChardev> {
    let t = CHARDEVS.get().ok_or(ENODEV)?;
    let mut list = t.list.lock();
    if list
        .iter()
        .any(|(_, x)| x.name.as_bytes() == e.name.as_bytes())
    {
        return Err(EEXIST);
    }
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    list.push((id, e), GFP_KERNEL)?;
    Ok(GlobalChardev { id })
}

impl Drop for GlobalChardev {
    fn drop(&mut self) {
        if let Some(t) = CHARDEVS.get() {
            crate::kshim::vec::remove_first(&mut t.list.lock(), |(id, _)| *id == self.id);
        }
    }
}

/// The registered device of type `name`.
pub fn find_global(name: &[u8]) -> Option<ChardevEntry> {
    let t = CHARDEVS.get()?;
    let list = t.list.lock();
    list.iter()
        .find(|(_, e)| e.name.as_bytes() == name)
        .map(|(_, e)| *e)
}
