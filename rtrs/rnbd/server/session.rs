// SPDX-License-Identifier: GPL-2.0

//! A client session ([`Session`], named by the client, over any number of
//! paths) and the devices it has open ([`SessDev`]), by id ([`Table`]).
//!
//! A device stays open while its id is in the table or an IO on it runs
//! (each holds a reference); its last reference closes it: its sysfs
//! directory goes, its open is no longer counted on the device, and the
//! block device is closed. References are never dropped under the
//! table's lock: `force_close`'s store takes that lock, and dropping a
//! device waits for any store on its directory.

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use rdma::kshim::block::BlockDev;
use rdma::kshim::class::SysDir;
use rtrs::proto::rnbd::AccessMode;

use super::sysfs::{self, SessDevFiles};
use super::Srv;

/// A slot of a session's table.
enum Slot {
    /// Free for the next OPEN.
    Free,
    /// A device open under this id.
    Open(Arc<SessDev>),
    /// Closed by the server (`force_close`), the id kept until the
    /// client's CLOSE: its IO gets `ENOTCONN`.
    Closed,
}

/// A session's devices by id (the index).
pub(crate) struct Table {
    slots: KVec<Slot>,
    /// Server-side closes waiting for the session's work item.
    closing: KVec<Arc<SessDev>>,
}

/// The most devices a session may have open.
const MAX_DEVS: usize = 1 << 16;

impl Table {
    /// The device open under `name` (the name the client mapped).
    pub(crate) fn find_open(&self, name: &[u8]) -> Option<Arc<SessDev>> {
        self.slots.iter().find_map(|s| match s {
            Slot::Open(d) if d.mapping_path == name => Some(d.clone()),
            _ => None,
        })
    }

    /// The device open under `id`.
    pub(crate) fn get(&self, id: u32) -> Option<Arc<SessDev>> {
        match self.slots.get(id as usize) {
            Some(Slot::Open(d)) => Some(d.clone()),
            _ => None,
        }
    }

    /// The lowest free id.
    pub(crate) fn free_id(&self) -> Option<u32> {
        match self.slots.iter().position(|s| matches!(s, Slot::Free)) {
            Some(i) => Some(i as u32),
            None if self.slots.len() < MAX_DEVS => Some(self.slots.len() as u32),
            None => None,
        }
    }

    /// Puts `d` under `id` (from [`Table::free_id`]).
    pub(crate) fn put(&mut self, id: u32, d: Arc<SessDev>) -> Result {
        let i = id as usize;
        while self.slots.len() <= i {
            self.slots.push(Slot::Free, GFP_KERNEL)?;
        }
        self.slots[i] = Slot::Open(d);
        Ok(())
    }

    /// Frees `id` (the client's CLOSE): the device it held, for the
    /// caller to drop after the lock.
    pub(crate) fn free(&mut self, id: u32) -> Option<Arc<SessDev>> {
        let slot = self.slots.get_mut(id as usize)?;
        match core::mem::replace(slot, Slot::Free) {
            Slot::Open(d) => Some(d),
            _ => None,
        }
    }
}

/// A client session.
#[pin_data]
pub(crate) struct Session {
    name: KVec<u8>,
    /// The protocol major both sides speak (SESS_INFO; 2 until then).
    pub(crate) ver: AtomicU8,
    #[pin]
    pub(crate) devs: Mutex<Table>,
    #[pin]
    close_work: Work<Session>,
}

impl_has_work! {
    impl HasWork<Self> for Session { self.close_work }
}

impl WorkItem for Session {
    type Pointer = Arc<Session>;

    /// Drops the devices `force_close` closed.
    fn run(this: Arc<Session>) {
        let closing = core::mem::take(&mut this.devs.lock().closing);
        drop(closing);
    }
}

impl Session {
    /// A session called `name`, with nothing open.
    pub(crate) fn new(name: &[u8]) -> Result<Arc<Session>> {
        let mut n = KVec::with_capacity(name.len(), GFP_KERNEL)?;
        n.extend_from_slice(name, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Session {
                name: n,
                ver: AtomicU8::new(rtrs::proto::rnbd::RNBD_PROTO_VER_MAJOR),
                devs <- new_mutex!(
                    Table {
                        slots: KVec::new(),
                        closing: KVec::new(),
                    },
                    "rnbd_server::Session::devs"
                ),
                close_work <- new_work!("rnbd_server::Session::close_work"),
            }),
            GFP_KERNEL,
        )
    }

    /// The session's name.
    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    /// The name for log lines.
    pub(crate) fn name_str(&self) -> &str {
        core::str::from_utf8(&self.name).unwrap_or("?")
    }

    /// The session is gone (its last path closed): every device closes
    /// once its last IO ends.
    pub(crate) fn close_all(&self) {
        let (slots, closing) = {
            let mut t = self.devs.lock();
            (
                core::mem::take(&mut t.slots),
                core::mem::take(&mut t.closing),
            )
        };
        drop(slots);
        drop(closing);
    }

    /// `force_close` of the device open under `id` whose serial is
    /// `serial`: its id is kept for the client, and the device is dropped
    /// from the session's work item (a store must not drop its own
    /// directory).
    pub(crate) fn force_close(self: &Arc<Self>, id: u32, serial: u64) -> Result {
        {
            let mut t = self.devs.lock();
            let Some(slot) = t.slots.get_mut(id as usize) else {
                return Err(ENODEV);
            };
            match slot {
                Slot::Open(d) if d.serial == serial => {}
                _ => return Err(ENODEV),
            }
            t.closing.reserve(1, GFP_KERNEL)?;
            let Slot::Open(d) = core::mem::replace(&mut t.slots[id as usize], Slot::Closed) else {
                return Err(ENODEV);
            };
            d.forced.store(true, Ordering::Relaxed);
            t.closing.push(d, GFP_KERNEL)?;
        }
        let srv = Srv::get().ok_or(ENODEV)?;
        // Already queued: that run takes this one too.
        let _ = srv.wq.enqueue(self.clone());
        Ok(())
    }
}

/// A device a session has open.
pub(crate) struct SessDev {
    /// Its id in the session.
    pub(crate) id: u32,
    /// Unique among every open of this module's life.
    pub(crate) serial: u64,
    /// The open device (read-only for `ro`).
    pub(crate) bdev: BlockDev,
    /// How the client opened it.
    pub(crate) mode: AccessMode,
    /// The name the client asked for.
    pub(crate) mapping_path: KVec<u8>,
    /// The device's own name (`ram0`).
    dev_name: CString,
    /// Closed by `force_close`.
    forced: AtomicBool,
    /// `devices/<dev>/sessions/<session>`.
    dir: Option<SysDir>,
}

impl SessDev {
    /// The open of `bdev` by `sess` under `id`, as the client asked for
    /// it (`name`, `mode`): counted on the device (`EPERM` if the mode
    /// is refused there), with its sysfs directory.
    pub(crate) fn new(
        srv: &Srv,
        sess: &Arc<Session>,
        id: u32,
        bdev: BlockDev,
        mode: AccessMode,
        name: &[u8],
    ) -> Result<Arc<SessDev>> {
        static SERIAL: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        let mut mapping_path = KVec::with_capacity(name.len(), GFP_KERNEL)?;
        mapping_path.extend_from_slice(name, GFP_KERNEL)?;
        let dev_name = CString::try_from_fmt(fmt!(
            "{}",
            core::str::from_utf8(bdev.name()).map_err(|_| EINVAL)?
        ))?;
        let files = Arc::new(
            SessDevFiles::new(sess.clone(), id, serial, mode, name)?,
            GFP_KERNEL,
        )?;
        let sess_name = CString::try_from_fmt(fmt!("{}", sess.name_str()))?;
        let dir = srv.export(&bdev, mode, |d| sysfs::session_dir(d, &sess_name, files))?;
        // Were the allocation to fail, the value's drop would uncount the
        // open and remove the directory.
        let sd = Arc::new(
            SessDev {
                id,
                serial,
                bdev,
                mode,
                mapping_path,
                dev_name,
                forced: AtomicBool::new(false),
                dir: Some(dir),
            },
            GFP_KERNEL,
        )?;
        Ok(sd)
    }

    /// Whether the client may only read.
    pub(crate) fn read_only(&self) -> bool {
        self.mode == AccessMode::Ro
    }

    /// The device's name for log lines.
    pub(crate) fn dev_name_str(&self) -> &str {
        self.dev_name.to_str().unwrap_or("?")
    }
}

impl Drop for SessDev {
    fn drop(&mut self) {
        // The directory first (no store or show runs past this), then
        // the open uncounted; the block device closes with the fields.
        drop(self.dir.take());
        if let Some(srv) = Srv::get() {
            srv.unexport(self.dev_name.as_bytes(), self.mode);
        }
        if self.forced.load(Ordering::Relaxed) {
            pr_info!(
                "rnbd_server: device {} (id {}) closed by force_close\n",
                self.dev_name_str(),
                self.id
            );
        }
    }
}
