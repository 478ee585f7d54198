// SPDX-License-Identifier: GPL-2.0

//! The uverbs device of each of our RDMA devices: `/dev/infiniband/uverbsN`
//! and `/sys/class/infiniband_verbs/uverbsN`, made when the device appears
//! and removed when it goes (an RDMA client), and the device's
//! asynchronous events, handed to every open file with a context.
//!
//! `N` is the lowest number free when the device appears. The files of
//! `uverbsN` are what libibverbs reads: `ibdev` (the RDMA device's name),
//! `dev` (`major:minor` of the node, which libibverbs compares with the
//! node it opens) and `abi_version` (the driver ABI: 2 for Soft-RoCE,
//! `RXE_UVERBS_ABI_VERSION`, the only provider this stack has).
//!
//! When the device goes, the node and the directory go first (no new
//! open), then every open file is disassociated: its objects are
//! destroyed, its event file says so to its readers, and its later
//! commands fail with `EIO`; the files themselves stay open until user
//! space closes them.

use core::fmt::Write;

use kernel::c_str;
use kernel::error::code::ENOSPC;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::uaccess::{UserSliceReader, UserSliceWriter};

use rdma::device::event::{Event, EventHandler, EventHandlerRegistration};
use rdma::kshim::chardev::{CharDevOps, MiscDev, Vma};
use rdma::kshim::class::{Page, SysClass, SysDir, SysFile, SysFiles};
use rdma::prelude::{Client, Device};

use crate::file::{UFile, UverbsDev};

/// Uverbs devices at most (the numbers `N` of `uverbsN`).
const MAX_DEVICES: usize = 256;

/// The ABI version of the uverbs core (`IB_USER_VERBS_ABI_VERSION`), in
/// `/sys/class/infiniband_verbs/abi_version`.
const CORE_ABI_VERSION: u32 = 6;

/// The driver ABI version `uverbsN/abi_version` shows: Soft-RoCE's
/// (`RXE_UVERBS_ABI_VERSION`; librxe accepts it).
pub(crate) const DRIVER_ABI_VERSION: u32 = 2;

/// The class's own file, `abi_version`: the uverbs core ABI.
struct ClassFiles;

impl SysFiles for ClassFiles {
    fn show(&self, _id: u32, out: &mut Page) -> Result {
        writeln!(out, "{}", CORE_ABI_VERSION).map_err(|_| EINVAL)
    }
}

/// Registers `/sys/class/infiniband_verbs` with its `abi_version`
/// (`EEXIST` if the kernel's ib_uverbs has it).
pub(crate) fn new_class() -> Result<Arc<SysClass>> {
    let files = [SysFile {
        name: c_str!("abi_version"),
        id: 0,
        writable: false,
    }];
    SysClass::with_files(
        c_str!("infiniband_verbs"),
        &files,
        Arc::new(ClassFiles, GFP_KERNEL)?,
    )
}

/// The node's operations: each open file is a [`UFile`].
pub(crate) struct UverbsOps {
    udev: Arc<UverbsDev>,
}

impl CharDevOps for UverbsOps {
    type File = Arc<UFile>;

    fn open(&self) -> Result<Arc<UFile>> {
        let file = UFile::new(self.udev.clone())?;
        self.udev.attach(&file)?;
        Ok(file)
    }

    /// The ioctl ABI is not implemented. libibverbs probes it once and,
    /// on exactly `ENOTTY`, sends every command through `write()`.
    fn ioctl(&self, _file: &Arc<UFile>, _cmd: u32, _arg: usize) -> Result<isize> {
        Err(ENOTTY)
    }

    fn write(&self, file: &Arc<UFile>, data: UserSliceReader, _nonblock: bool) -> Result<usize> {
        crate::dispatch::write(file, data)
    }

    fn read(&self, _file: &Arc<UFile>, _out: UserSliceWriter, _nonblock: bool) -> Result<usize> {
        Err(EINVAL)
    }

    /// Maps a CQ's or QP's ring, at the offset its create command gave.
    fn mmap(&self, file: &Arc<UFile>, vma: &mut Vma) -> Result {
        file.mmap(vma)
    }

    fn release(&self, file: Arc<UFile>) {
        self.udev.detach(&file);
        file.disassociate();
    }
}

/// The files of `uverbsN`.
struct DirFiles {
    udev: Arc<UverbsDev>,
    devt: (u32, u32),
}

const F_IBDEV: u32 = 0;
const F_DEV: u32 = 1;
const F_ABI: u32 = 2;

const DIR_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("ibdev"),
        id: F_IBDEV,
        writable: false,
    },
    SysFile {
        name: c_str!("dev"),
        id: F_DEV,
        writable: false,
    },
    SysFile {
        name: c_str!("abi_version"),
        id: F_ABI,
        writable: false,
    },
];

impl SysFiles for DirFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let r = match id {
            F_IBDEV => writeln!(out, "{}", self.udev.dev.name()),
            F_DEV => writeln!(out, "{}:{}", self.devt.0, self.devt.1),
            F_ABI => writeln!(out, "{DRIVER_ABI_VERSION}"),
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

/// Forwards a device's events to its open files.
struct Events {
    udev: Arc<UverbsDev>,
}

impl EventHandler for Events {
    fn handle(&self, _dev: &Device, event: &Event) {
        self.udev.device_event(event);
    }
}

/// What a device's uverbs presence holds; dropped in `remove`.
pub(crate) struct DevHandle {
    udev: Arc<UverbsDev>,
    devt: (u32, u32),
    parts: Pin<KBox<Mutex<Option<Parts>>>>,
}

/// The node, the directory and the event registration, in drop order.
struct Parts {
    _events: EventHandlerRegistration,
    _dir: SysDir,
    _misc: Pin<KBox<MiscDev<UverbsOps>>>,
}

/// A device with its uverbs device, as the netlink server reports it.
#[derive(Clone)]
pub(crate) struct Entry {
    /// `N` of `uverbsN`, also the device's index in RDMA netlink.
    pub(crate) index: u32,
    pub(crate) dev: Arc<Device>,
    /// The node's `(major, minor)`.
    pub(crate) devt: (u32, u32),
    /// Its open files (for the count of user contexts).
    pub(crate) udev: Arc<UverbsDev>,
}

/// The devices that have a uverbs device now.
#[pin_data]
pub(crate) struct DevTable {
    #[pin]
    list: Mutex<KVec<Entry>>,
}

impl DevTable {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(DevTable { list <- new_mutex!(KVec::new()) }),
            GFP_KERNEL,
        )
    }

    /// A copy of the table, in index order of registration.
    pub(crate) fn snapshot(&self) -> Result<KVec<Entry>> {
        let list = self.list.lock();
        let mut out = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        for e in list.iter() {
            out.push(e.clone(), GFP_KERNEL)?;
        }
        Ok(out)
    }
}

/// The RDMA client that gives each of our devices its uverbs device.
pub(crate) struct UverbsClient {
    table: Arc<DevTable>,
    class: Arc<SysClass>,
    module: &'static ThisModule,
    /// Which numbers `N` are taken.
    used: Pin<KBox<Mutex<[bool; MAX_DEVICES]>>>,
}

impl UverbsClient {
    pub(crate) fn new(
        class: Arc<SysClass>,
        table: Arc<DevTable>,
        module: &'static ThisModule,
    ) -> Result<Self> {
        Ok(UverbsClient {
            table,
            class,
            module,
            used: KBox::pin_init(new_mutex!([false; MAX_DEVICES]), GFP_KERNEL)?,
        })
    }

    fn take_index(&self) -> Result<u32> {
        let mut used = self.used.lock();
        let i = used.iter().position(|u| !*u).ok_or(ENOSPC)?;
        used[i] = true;
        Ok(i as u32)
    }

    fn put_index(&self, i: u32) {
        if let Some(u) = self.used.lock().get_mut(i as usize) {
            *u = false;
        }
    }

    fn make(&self, dev: &Arc<Device>, index: u32) -> Result<DevHandle> {
        let udev = UverbsDev::new(index, dev.clone(), self.module)?;
        let name = CString::try_from_fmt(fmt!("uverbs{index}"))?;
        let node = CString::try_from_fmt(fmt!("infiniband/uverbs{index}"))?;
        let ops = Arc::new(UverbsOps { udev: udev.clone() }, GFP_KERNEL)?;
        let misc = MiscDev::register_node(&name, Some(&node), 0o666, ops, self.module)?;
        let files = Arc::new(
            DirFiles {
                udev: udev.clone(),
                devt: misc.devt(),
            },
            GFP_KERNEL,
        )?;
        let devt = misc.devt();
        let dir = SysDir::top(&self.class, &name, DIR_FILES, files)?;
        let events =
            dev.register_event_handler(Arc::new(Events { udev: udev.clone() }, GFP_KERNEL)?)?;
        Ok(DevHandle {
            udev,
            devt,
            parts: KBox::pin_init(
                new_mutex!(Some(Parts {
                    _events: events,
                    _dir: dir,
                    _misc: misc,
                })),
                GFP_KERNEL,
            )?,
        })
    }
}

impl Client for UverbsClient {
    type Data = DevHandle;

    fn name(&self) -> &CStr {
        c_str!("uverbs")
    }

    fn add(&self, dev: &Arc<Device>) -> Result<DevHandle> {
        let index = self.take_index()?;
        let h = self
            .make(dev, index)
            .inspect_err(|_| self.put_index(index))?;
        let entry = Entry {
            index,
            dev: dev.clone(),
            devt: h.devt,
            udev: h.udev.clone(),
        };
        if let Err(e) = self.table.list.lock().push(entry, GFP_KERNEL) {
            self.undo(&h);
            return Err(e.into());
        }
        Ok(h)
    }

    fn remove(&self, _dev: &Arc<Device>, data: &DevHandle) {
        rdma::kshim::vec::remove_first(&mut self.table.list.lock(), |e| e.index == data.udev.index);
        self.undo(data);
    }
}

impl UverbsClient {
    /// Removes what `make` made.
    fn undo(&self, data: &DevHandle) {
        // No event, no new open, no sysfs reader once the parts are gone.
        let parts = data.parts.lock().take();
        drop(parts);
        data.udev.disassociate_all();
        self.put_index(data.udev.index);
    }
}
