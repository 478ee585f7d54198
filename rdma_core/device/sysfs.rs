// SPDX-License-Identifier: GPL-2.0

//! Introspection in sysfs: `/sys/class/rdma_rs`, laid out as
//! `/sys/class/infiniband` is (see `sysfs_glue.c` for the tree), the port
//! groups other layers register (`ib_port_register_client_groups`), and,
//! on demand, the `/sys/class/infiniband` view.
//!
//! The class has its own name so that it never collides with the C stack's.
//!
//! # The `infiniband` view
//!
//! Unchanged user space (libibverbs, rdma-core's tests) looks for devices
//! in `/sys/class/infiniband/<dev>/` only. While an [`IbView`] from
//! [`register_ib_view`] is held, every registered device (now and later)
//! has a second tree there, made by the same code in a class of the bottom
//! layer's (`kshim::class`), with the same files as its `rdma_rs` tree less
//! `resources` and the port groups. Both trees link to the parent device
//! of the device's netdev when it has one (`device`; see [`shape`]). The
//! name belongs to the C stack's
//! ib_core: while that is loaded the registration fails (`EEXIST`), and
//! while the view is held ib_core cannot load.
//! The kobject plumbing is the bottom layer's (`kshim/sysfs.rs`,
//! `sysfs_glue.c` and, for the groups, `kshim/kobj.rs`); every file of the
//! device model is made here, from the same verbs a client would call.
//!
//! # Port groups
//!
//! A layer above (the CM's counters) registers [`PortGroup`]s with
//! [`register_port_groups`]: each is a directory of files under every port
//! its [`PortGroupShow`] wants (`ports/<N>/<group>/<file>`), on the devices
//! registered then and on every device registered later, until the
//! [`PortGroupsRegistration`] is dropped. The directories of one device
//! live in its [`Sysfs`], before its tree, and go before the tree does.
//!
//! # Locks
//!
//! Outermost first:
//!
//! - `Registry::state` (`device/registry.rs`): held while a device's trees
//!   and its groups are made, and while [`Registry::find_listed`] looks
//!   for a device whose groups or view tree to add or remove;
//! - `Device::sysfs` (mutex): the device's [`Sysfs`]; held while group
//!   directories or the view tree are added to it or removed from it, so
//!   a group's or the view's removal and the device's cannot interleave;
//! - `PortGroups::list` (mutex): the registered groups, and `View::class`
//!   (mutex): the view's class while an [`IbView`] is held; nothing is
//!   taken inside either, and neither inside the other;
//! - RTNL, taken by the glue while a tree is made, for a moment (to read
//!   the netdev's parent for the `device` link): no lock of ours is taken
//!   under it (network events reach us in atomic context).
//!
//! Removing a directory waits for the `show` calls in progress on its
//! files, so a [`PortGroupShow::show`] must take none of these locks
//! (it must not register or unregister groups or devices). A group's
//! removal takes it out of `PortGroups::list` first, then off every device
//! that has it, one at a time: a device being registered meanwhile sees
//! the group either in the list or, once listed, in the removal's search.
//! Each group directory holds a reference to the device and to the
//! `PortGroupShow`, so neither goes while a file can be read; once
//! [`PortGroupsRegistration`]'s drop returns, no `show` of it runs.
//!
//! The view goes the same way: [`register_ib_view`] registers the class
//! and lists it in `View::class`, then adds a tree to each device that has
//! none; [`IbView`]'s drop unlists the class, then takes the tree off each
//! device that has one, and drops the class last (each tree holds a
//! reference to it, so it goes with the last tree in any order).
//!
//! [`Registry::find_listed`]: crate::device::registry::Registry::find_listed

use core::fmt::{self, Write};

use kernel::c_str;
use kernel::error::code::{EEXIST, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

use crate::device::{registry, Device};
use crate::kshim::class::SysClass;
use crate::kshim::global::Global;
use crate::kshim::kobj::{KobjShow, StatsDir};
use crate::kshim::sysfs::{attr_id as id, Shape, SysfsShow, Tree};

use crate::kshim::sysfs::Page;
use crate::spec::attr::PortRate;

/// A registered device's tree, with the registered port groups'
/// directories on its ports, and its tree in the `infiniband` view while
/// one is held; removed when dropped. It holds a reference to the device,
/// given back when unregistration drops the tree.
pub(crate) struct Sysfs {
    /// The port groups' directories, one entry per registration (empty if
    /// no port of the device wants them). Dropped before `tree` (field
    /// order): the tree's removal takes the device's whole directory.
    groups: KVec<GroupDirs>,
    /// The device's tree in `/sys/class/infiniband` (see [`IbView`]).
    view: Option<Tree>,
    tree: Tree,
}

impl Sysfs {
    /// Creates the tree of a registered device, with the port groups
    /// registered now. The caller holds `Registry::state`.
    pub(crate) fn add(dev: &Arc<Device>) -> Result<Sysfs> {
        let shape = shape(dev)?;
        let source: Arc<dyn SysfsShow> = dev.clone();
        let mut sysfs = Sysfs {
            groups: KVec::new(),
            view: None,
            tree: Tree::add(None, dev.name(), source, shape)?,
        };
        if let Some(class) = VIEW.get().and_then(|v| v.class.lock().clone()) {
            sysfs.view = Some(view_tree(dev, &class)?);
        }
        let entries = match GROUPS.get() {
            Some(groups) => groups.snapshot()?,
            None => KVec::new(),
        };
        sysfs.groups.reserve(entries.len(), GFP_KERNEL)?;
        for entry in entries.iter() {
            let dirs = GroupDirs::add(dev, &sysfs.tree, entry)?;
            sysfs.groups.push(dirs, GFP_KERNEL)?;
        }
        Ok(sysfs)
    }

    fn has(&self, id: u64) -> bool {
        self.groups.iter().any(|g| g.id == id)
    }
}

/// The shape of `dev`'s trees. They link (`device`) to the parent of the
/// netdev of the first port that has one, if that netdev has a parent (a
/// PCI function or virtio device; a veth has none), as the C stack's trees
/// of hardware devices link to their PCI function: user space finds the
/// netdev in `device/net/` (rdma-core's tests look there for the device's
/// IP address). The link is made with the tree: a provider's netdevs do
/// not change while the device is registered (rxe: `EBUSY` for a new
/// netdev on an enabled item; its device goes when the netdev does).
fn shape(dev: &Device) -> Result<Shape> {
    Ok(Shape {
        ports: dev.port_count(),
        gids: dev.gid_tbl_len(),
        pkeys: dev.pkey_tbl_len(),
        counters: dev.ops()?.hw_counter_names(),
        link: (1..=dev.port_count()).find_map(|p| dev.netdev(p)),
    })
}

/// Makes `dev`'s tree in the view's class.
fn view_tree(dev: &Arc<Device>, class: &Arc<SysClass>) -> Result<Tree> {
    let source: Arc<dyn SysfsShow> = dev.clone();
    Tree::add(Some(class), dev.name(), source, shape(dev)?)
}

/// The class the C stack's ib_core registers, and the view's.
const IB_CLASS: &CStr = c_str!("infiniband");

/// The `infiniband` view's class, while an [`IbView`] is held.
#[pin_data]
struct View {
    #[pin]
    class: Mutex<Option<Arc<SysClass>>>,
}

/// The view's state while the module is loaded.
static VIEW: Global<View> = Global::new();

/// A held `/sys/class/infiniband` view of our devices (see the [module
/// docs](self)); dropping it removes the view.
pub struct IbView {
    view: Arc<View>,
}

/// Registers the class `/sys/class/infiniband` and gives every registered
/// device, now and later, a tree there, laid out as the C stack's, until
/// the returned [`IbView`] is dropped. For user space that reads only that
/// class (libibverbs). `EEXIST`, with a line in the kernel log, if
/// `/sys/class/infiniband` exists: the C stack's ib_core is loaded (or
/// another view is held). Process context, outside the device registry's
/// callbacks (a client's `add` or `remove`): register at module init.
pub fn register_ib_view() -> Result<IbView> {
    crate::kshim::verb::might_sleep();
    let view = VIEW.get().ok_or(ENODEV)?;
    let class = match SysClass::new(IB_CLASS) {
        Ok(class) => class,
        Err(e) if e == EEXIST => {
            pr_info!(
                "/sys/class/infiniband exists (the C stack's ib_core owns it): no infiniband view\n"
            );
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    {
        let mut cur = view.class.lock();
        // The class name is ours: no other view is listed.
        if cur.is_some() {
            return Err(EEXIST);
        }
        *cur = Some(class.clone());
    }
    // From here on `reg`'s drop undoes what is done, failure included.
    let reg = IbView { view };
    // The devices registered before the class was listed, one at a time.
    let devs = registry::get();
    while let Some(dev) =
        devs.find_listed(|d| d.sysfs.lock().as_ref().is_some_and(|s| s.view.is_none()))
    {
        let mut sysfs = dev.sysfs.lock();
        // Unregistered meanwhile, or given the view by its own `add`.
        let Some(s) = sysfs.as_mut().filter(|s| s.view.is_none()) else {
            continue;
        };
        s.view = Some(view_tree(&dev, &class)?);
    }
    Ok(reg)
}

impl Drop for IbView {
    fn drop(&mut self) {
        crate::kshim::verb::might_sleep();
        // No device gets a view tree any more.
        let class = self.view.class.lock().take();
        // Take the trees off the devices that have one, one at a time.
        let devs = registry::get();
        while let Some(dev) =
            devs.find_listed(|d| d.sysfs.lock().as_ref().is_some_and(|s| s.view.is_some()))
        {
            let mut sysfs = dev.sysfs.lock();
            let tree = sysfs.as_mut().and_then(|s| s.view.take());
            // Under `Device::sysfs`, as the device's own removal.
            drop(tree);
        }
        // The last reference unless a tree is still being removed by its
        // device's unregistration, which then unregisters the class.
        drop(class);
    }
}

/// A directory of files under a port (`ports/<N>/<name>`).
pub struct PortGroup {
    /// The directory's name.
    pub name: &'static CStr,
    /// The names of its files (mode 0444).
    pub files: &'static [&'static CStr],
}

/// What the files of registered [`PortGroup`]s show.
pub trait PortGroupShow: Send + Sync {
    /// Whether port `port` of `dev` gets the groups; asked once per port
    /// when the groups or the device are added.
    fn wants(&self, dev: &Device, port: u32) -> bool;

    /// Writes the text of file `file` of group `group` (indices into the
    /// registered groups and their files) of port `port` of `dev` into
    /// `out`. Process context; may sleep; may run concurrently for several
    /// files. Must not register or unregister port groups or devices
    /// (see the module's locking).
    fn show(&self, dev: &Device, port: u32, group: usize, file: usize, out: &mut Page) -> Result;
}

/// One registration of port groups.
struct GroupsEntry {
    id: u64,
    groups: &'static [PortGroup],
    show: Arc<dyn PortGroupShow>,
}

struct GroupList {
    entries: KVec<Arc<GroupsEntry>>,
    next_id: u64,
}

/// The registered port groups.
#[pin_data]
struct PortGroups {
    #[pin]
    list: Mutex<GroupList>,
}

impl PortGroups {
    /// The registered entries now.
    fn snapshot(&self) -> Result<KVec<Arc<GroupsEntry>>> {
        let list = self.list.lock();
        let mut out = KVec::with_capacity(list.entries.len(), GFP_KERNEL)?;
        for e in list.entries.iter() {
            out.push(e.clone(), GFP_KERNEL)?;
        }
        Ok(out)
    }
}

/// The port groups while the module is loaded.
static GROUPS: Global<PortGroups> = Global::new();

/// The files of one group on one port: what its directory shows.
struct GroupFiles {
    dev: Arc<Device>,
    port: u32,
    group: usize,
    show: Arc<dyn PortGroupShow>,
}

impl KobjShow for GroupFiles {
    fn show(&self, attr: usize, out: &mut Page) -> Result {
        self.show.show(&self.dev, self.port, self.group, attr, out)
    }
}

/// The directories of one registration on one device.
struct GroupDirs {
    id: u64,
    _dirs: KVec<StatsDir>,
}

impl GroupDirs {
    /// Adds `entry`'s groups to the ports of `dev` (whose tree is `tree`)
    /// that want them.
    fn add(dev: &Arc<Device>, tree: &Tree, entry: &GroupsEntry) -> Result<GroupDirs> {
        let mut dirs = KVec::new();
        for port in 1..=dev.port_count() {
            if !entry.show.wants(dev, port) {
                continue;
            }
            let parent = tree.port_dir(port)?;
            for (group, g) in entry.groups.iter().enumerate() {
                let files = Arc::new(
                    GroupFiles {
                        dev: dev.clone(),
                        port,
                        group,
                        show: entry.show.clone(),
                    },
                    GFP_KERNEL,
                )?;
                dirs.reserve(1, GFP_KERNEL)?;
                dirs.push(StatsDir::new(&parent, g.name, g.files, files)?, GFP_KERNEL)?;
            }
        }
        Ok(GroupDirs {
            id: entry.id,
            _dirs: dirs,
        })
    }
}

/// Registered port groups; taken off every port when dropped.
pub struct PortGroupsRegistration {
    id: u64,
    list: Arc<PortGroups>,
}

/// Registers `groups`, shown by `show`, on every port that `show` wants of
/// every registered device, now and later. `EEXIST` if a port has an
/// entry of a group's name already. Process context, outside the device
/// registry's callbacks (a client's `add` or `remove` runs with the
/// registry locked, which this takes): register at module init, as the
/// CM does.
pub fn register_port_groups(
    groups: &'static [PortGroup],
    show: Arc<dyn PortGroupShow>,
) -> Result<PortGroupsRegistration> {
    crate::kshim::verb::might_sleep();
    let list = GROUPS.get().ok_or(ENODEV)?;
    let reg = {
        let mut l = list.list.lock();
        let id = l.next_id;
        let entry = Arc::new(GroupsEntry { id, groups, show }, GFP_KERNEL)?;
        l.entries.push(entry.clone(), GFP_KERNEL)?;
        l.next_id += 1;
        drop(l);
        (
            PortGroupsRegistration {
                id,
                list: list.clone(),
            },
            entry,
        )
    };
    let (reg, entry) = reg;
    // The devices registered before the entry was listed: one at a time,
    // each marked with the entry (even with no port wanting it) so that it
    // is not found again. On failure `reg`'s drop takes the groups off
    // again.
    let reg_devs = registry::get();
    while let Some(dev) =
        reg_devs.find_listed(|d| d.sysfs.lock().as_ref().is_some_and(|s| !s.has(reg.id)))
    {
        let mut sysfs = dev.sysfs.lock();
        // Unregistered meanwhile, or given the groups by its own `add`.
        let Some(s) = sysfs.as_mut().filter(|s| !s.has(reg.id)) else {
            continue;
        };
        s.groups.reserve(1, GFP_KERNEL)?;
        let dirs = GroupDirs::add(&dev, &s.tree, &entry)?;
        s.groups.push(dirs, GFP_KERNEL)?;
    }
    Ok(reg)
}

impl Drop for PortGroupsRegistration {
    fn drop(&mut self) {
        crate::kshim::verb::might_sleep();
        let old = {
            let mut l = self.list.list.lock();
            crate::kshim::vec::remove_first(&mut l.entries, |e| e.id == self.id)
        };
        drop(old);
        // No device gets the groups any more: take them off the devices
        // that have them, one at a time (this allocates nothing).
        let reg = registry::get();
        while let Some(dev) =
            reg.find_listed(|d| d.sysfs.lock().as_ref().is_some_and(|s| s.has(self.id)))
        {
            let mut sysfs = dev.sysfs.lock();
            if let Some(s) = sysfs.as_mut() {
                // Under `Device::sysfs`, so the device's tree is still there
                // while the directories go.
                drop(crate::kshim::vec::remove_first(&mut s.groups, |g| {
                    g.id == self.id
                }));
            }
        }
    }
}

/// Registers the class and sets up the port groups. Module init.
pub(crate) fn init() -> Result {
    crate::kshim::sysfs::init()?;
    let groups = Arc::pin_init(
        pin_init!(PortGroups {
            list <- new_mutex!(GroupList { entries: KVec::new(), next_id: 0 }, "PortGroups::list"),
        }),
        GFP_KERNEL,
    );
    let view = Arc::pin_init(
        pin_init!(View {
            class <- new_mutex!(None, "View::class"),
        }),
        GFP_KERNEL,
    );
    match (groups, view) {
        (Ok(groups), Ok(view)) => {
            drop(GROUPS.replace(Some(groups)));
            drop(VIEW.replace(Some(view)));
            Ok(())
        }
        (Err(e), _) | (_, Err(e)) => {
            crate::kshim::sysfs::exit();
            Err(e)
        }
    }
}

/// Undoes [`init`]. Module exit, once every device, every group
/// registration and every view is gone.
pub(crate) fn exit() {
    drop(VIEW.replace(None));
    drop(GROUPS.replace(None));
    crate::kshim::sysfs::exit();
}

impl SysfsShow for Device {
    fn show(&self, attr: u32, port: u32, index: u32, out: &mut Page) -> Result {
        show(self, attr, port, index, out)
    }
}

fn write_guid(out: &mut Page, guid: u64) -> fmt::Result {
    writeln!(
        out,
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (guid >> 48) & 0xffff,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// Formats one file.
fn show(dev: &Device, attr: u32, port: u32, index: u32, out: &mut Page) -> Result {
    let w = |r: fmt::Result| r.map_err(|_| EINVAL);
    match attr {
        id::RDMA_RS_ATTR_NODE_GUID => w(write_guid(out, dev.node_guid())),
        id::RDMA_RS_ATTR_SYS_IMAGE_GUID => w(write_guid(out, dev.query_device()?.sys_image_guid)),
        id::RDMA_RS_ATTR_RESOURCES => w(dev.res.write_counts(out)),
        id::RDMA_RS_ATTR_NODE_TYPE => w(writeln!(out, "{}", dev.node_type().sysfs_name())),
        id::RDMA_RS_ATTR_NODE_DESC => {
            // At most 64 bytes, as the C stack keeps.
            let d = dev.ops()?.node_desc().as_bytes();
            let d = core::str::from_utf8(&d[..d.len().min(64)]).map_err(|_| EINVAL)?;
            w(writeln!(out, "{d}"))
        }
        id::RDMA_RS_ATTR_FW_VER => {
            let v = dev.query_device()?.fw_ver;
            w(writeln!(
                out,
                "{}.{}.{}",
                (v >> 32) & 0xffff,
                (v >> 16) & 0xffff,
                v & 0xffff
            ))
        }
        id::RDMA_RS_ATTR_PORT_STATE => w(writeln!(
            out,
            "{}",
            dev.query_port(port)?.state.sysfs_name()
        )),
        id::RDMA_RS_ATTR_PORT_PHYS_STATE => w(writeln!(
            out,
            "{}",
            dev.query_port(port)?.phys_state.sysfs_name()
        )),
        id::RDMA_RS_ATTR_PORT_LINK_LAYER => {
            w(writeln!(out, "{}", dev.link_layer(port)?.sysfs_name()))
        }
        id::RDMA_RS_ATTR_PORT_RATE => {
            let a = dev.query_port(port)?;
            let rate = PortRate {
                speed: a.active_speed,
                width: a.active_width,
            };
            w(rate.write_sysfs(out).and_then(|()| out.write_char('\n')))
        }
        id::RDMA_RS_ATTR_PORT_LID => w(writeln!(out, "0x{:x}", dev.query_port(port)?.lid)),
        id::RDMA_RS_ATTR_PORT_SM_LID => w(writeln!(out, "0x{:x}", dev.query_port(port)?.sm_lid)),
        id::RDMA_RS_ATTR_PORT_CAP_MASK => w(writeln!(
            out,
            "0x{:08x}",
            dev.query_port(port)?.port_cap_flags
        )),
        id::RDMA_RS_ATTR_GID => {
            // An empty entry reads as the zero GID, as in the C stack.
            let gid = dev
                .query_gid(port, index)
                .map(|e| e.gid)
                .unwrap_or_default();
            w(gid.write_sysfs(out).and_then(|()| out.write_char('\n')))
        }
        id::RDMA_RS_ATTR_GID_TYPE => w(writeln!(
            out,
            "{}",
            dev.query_gid(port, index)?.gid_type.sysfs_name()
        )),
        id::RDMA_RS_ATTR_GID_NDEV => {
            // An entry without a netdev fails the read, as in the C stack.
            let e = dev.query_gid(port, index)?;
            if e.ifindex == 0 {
                return Err(EINVAL);
            }
            let nd = dev.netdev(port).ok_or(EINVAL)?;
            let nd = if nd.ifindex() == e.ifindex {
                nd
            } else {
                nd.get_by_index_near(e.ifindex).ok_or(EINVAL)?
            };
            let name = nd.name().to_str().map_err(|_| EINVAL)?;
            w(writeln!(out, "{name}"))
        }
        id::RDMA_RS_ATTR_PKEY => w(writeln!(out, "0x{:04x}", dev.query_pkey(port, index)?)),
        id::RDMA_RS_ATTR_HW_COUNTER => w(writeln!(
            out,
            "{}",
            dev.ops()?.hw_counter(port, index as usize)
        )),
        _ => Err(EINVAL),
    }
}
