// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: what providers register and clients use.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A provider implements [`DeviceOps`] and registers devices through its
//! [`Driver`](crate::device::driver::Driver). A [`Device`] is reference counted twice
//! over:
//!
//! - `Arc<Device>` keeps the memory alive, nothing more;
//! - a [`DeviceRef`] (from [`Device::try_get`] or [`get_by_name`]) is a
//!   *usage* reference, the `ib_device_try_get` of the C core: it can only be
//!   taken while the device is registered, and unregistration waits, after
//!   every client's `remove`, until the last one is dropped.

// The bottom layer (`kshim/`) alone holds `unsafe`.
#![deny(unsafe_code)]

pub mod chardevs;
pub mod client;
pub mod driver;
pub mod event;
pub mod link;
pub mod port;
pub(crate) mod registry;
pub mod sysfs;

use core::ops::Deref;

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::types::ARef;
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use crate::device::event::Event;
use crate::device::event::{EventQueue, Handlers};
use crate::device::port::GidEntry;
use crate::device::port::{PortAttr, Tables, MAX_TABLE_LEN};
use crate::device::registry::DevClients;
use crate::kshim::errno::eopnotsupp;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::attr::{LinkLayer, NodeType};
use crate::verbs::cq::CqCore;
use crate::verbs::mr::MrCore;
use crate::verbs::pd::PdCore;
use crate::verbs::qp::{QpCore, QpInfo, QpOps};
use crate::verbs::restrack::Resources;
use crate::verbs::srq::SrqCore;

/// The longest device name, terminator included (`IB_DEVICE_NAME_MAX`).
pub const NAME_MAX: usize = 64;

/// Device capability flags (`enum ib_device_cap_flags`, same bits): the
/// subset a software device can have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCaps(pub u64);

impl DeviceCaps {
    /// QP and CQ sizes can change.
    pub const RESIZE_MAX_WR: Self = Self(1 << 0);
    /// Ports raise `PortActive` events.
    pub const PORT_ACTIVE_EVENT: Self = Self(1 << 10);
    /// `sys_image_guid` is meaningful.
    pub const SYS_IMAGE_GUID: Self = Self(1 << 11);
    /// RC QPs send RNR NAKs.
    pub const RC_RNR_NAK_GEN: Self = Self(1 << 12);
    /// SRQs can be resized.
    pub const SRQ_RESIZE: Self = Self(1 << 13);
    /// Memory windows.
    pub const MEM_WINDOW: Self = Self(1 << 17);
    /// Fast registration: `REG_MR`, `LOCAL_INV`, `SEND_WITH_INV`.
    pub const MEM_MGT_EXTENSIONS: Self = Self(1 << 21);

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for DeviceCaps {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// Device attributes (`struct ib_device_attr`).
///
/// The core reads them once at registration: the `max_*` limits bound the
/// object tables (a limit of 0 means the device has no such objects, and
/// creating one fails with `EOPNOTSUPP`), `cap_flags` gates the optional
/// verbs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Capabilities.
    pub cap_flags: DeviceCaps,
    /// Node GUID in network byte order, as a number.
    pub node_guid: u64,
    /// System image GUID.
    pub sys_image_guid: u64,
    /// Firmware version.
    pub fw_ver: u64,
    /// Largest memory region, in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes (a bit per size).
    pub page_size_cap: u64,
    /// IEEE vendor id.
    pub vendor_id: u32,
    /// Vendor part id.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Largest number of QPs.
    pub max_qp: u32,
    /// Largest number of work requests per queue.
    pub max_qp_wr: u32,
    /// Largest scatter/gather list of a send work request.
    pub max_send_sge: u32,
    /// Largest scatter/gather list of a receive work request.
    pub max_recv_sge: u32,
    /// Largest number of CQs.
    pub max_cq: u32,
    /// Largest CQ.
    pub max_cqe: u32,
    /// Largest number of MRs.
    pub max_mr: u32,
    /// Largest number of PDs.
    pub max_pd: u32,
    /// Largest number of outstanding RDMA READ/atomic as a responder.
    pub max_qp_rd_atom: u32,
    /// Largest number of outstanding RDMA READ/atomic as a requester.
    pub max_qp_init_rd_atom: u32,
    /// Largest number of outstanding RDMA READ/atomic as a responder, over
    /// all QPs.
    pub max_res_rd_atom: u32,
    /// Largest scatter/gather list of an RDMA READ.
    pub max_sge_rd: u32,
    /// Atomic support (`enum ib_atomic_cap`): 0 none, 1 atomic within the
    /// device (`IB_ATOMIC_HCA`), 2 with the CPU too (`IB_ATOMIC_GLOB`).
    pub atomic_cap: u32,
    /// Local CA ACK delay (the exponent of 4.096 us, as in PortInfo).
    pub local_ca_ack_delay: u8,
    /// Largest number of SRQs.
    pub max_srq: u32,
    /// Largest SRQ.
    pub max_srq_wr: u32,
    /// Largest scatter/gather list of an SRQ work request.
    pub max_srq_sge: u32,
    /// Largest number of AHs.
    pub max_ah: u32,
    /// Largest number of MWs.
    pub max_mw: u32,
    /// Largest page list of a fast-registration MR.
    pub max_fast_reg_page_list_len: u32,
    /// Largest number of QPs attached to one multicast group (0: the
    /// device has no multicast).
    pub max_mcast_qp_attach: u32,
    /// Largest number of multicast groups.
    pub max_mcast_grp: u32,
    /// Largest number of QP attachments to multicast groups in all.
    pub max_total_mcast_qp_attach: u32,
    /// Tag matching (all zero: none).
    pub tm_caps: crate::verbs::srq::tm::TmCaps,
}

/// What a provider says about a device when it registers it.
#[derive(Clone, Copy, Debug)]
pub struct DeviceDesc<'a> {
    /// Name template: `rxe%d` takes the lowest free number; without `%d` the
    /// name is fixed.
    pub name_template: &'a CStr,
    /// Node type (a RoCE device is a CA).
    pub node_type: NodeType,
    /// Node GUID.
    pub node_guid: u64,
    /// Number of ports, from 1 to 255.
    pub port_count: u32,
    /// Link layer of every port.
    pub link_layer: LinkLayer,
    /// GID table entries per port, from 1 to [`MAX_TABLE_LEN`].
    pub gid_tbl_len: u32,
    /// P_Key table entries per port, from 1 to [`MAX_TABLE_LEN`].
    pub pkey_tbl_len: u32,
}

impl DeviceDesc<'_> {
    pub(crate) fn validate(&self) -> Result {
        let ok = (1..=255).contains(&self.port_count)
            && (1..=MAX_TABLE_LEN).contains(&self.gid_tbl_len)
            && (1..=MAX_TABLE_LEN).contains(&self.pkey_tbl_len);
        if ok {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }
}

/// The operations a provider implements for its devices.
///
/// The required methods are the mandatory operations: a provider without
/// them does not compile. Called by the core in process context; they may
/// sleep unless the verb's documentation says otherwise.
pub trait DeviceOps: Send + Sync {
    /// Returns the device's attributes (`query_device`).
    fn query_device(&self) -> Result<DeviceAttr>;

    /// Returns a port's attributes (`query_port`); `port` is valid.
    fn query_port(&self, port: u32) -> Result<PortAttr>;

    /// Creates the transport of a QP the core has set up (optional: a
    /// device without it has no QPs, and `create_qp` fails with
    /// `EOPNOTSUPP`). May sleep.
    fn create_qp(&self, _qp: &QpInfo) -> Result<Arc<dyn QpOps>> {
        Err(eopnotsupp())
    }

    /// The names of the port counters the device keeps, shown as the files
    /// of `/sys/class/rdma_rs/<dev>/ports/<N>/hw_counters/` (the C stack's
    /// `rdma_stat_desc` names where the C driver has the same counter).
    /// Read once, at registration; names are shorter than 32 bytes.
    fn hw_counter_names(&self) -> &'static [&'static CStr] {
        &[]
    }

    /// The node description (`ib_device.node_desc`, at most 64 bytes
    /// shown), the sysfs file `node_desc`. Empty unless the provider says.
    fn node_desc(&self) -> &'static CStr {
        kernel::c_str!("")
    }

    /// The value of counter `index` (into [`DeviceOps::hw_counter_names`])
    /// of `port`. Process context.
    fn hw_counter(&self, _port: u32, _index: usize) -> u64 {
        0
    }

    /// Whether `port` takes management datagrams on QP1 (`rdma_cap_ib_mad`
    /// of the C core: IB and RoCE ports). The core's MAD layer (a layer
    /// above this one) then owns the port's GSI QP from registration to
    /// unregistration, and a ULP's own `QpType::Gsi` QP is refused
    /// (`EBUSY`). Read once, when the device is added.
    fn has_mad(&self, _port: u32) -> bool {
        false
    }

    /// The netdev behind `port` (`ib_device_get_netdev`), for RoCE: the
    /// connection manager finds a device from an IP route with it.
    fn netdev(&self, _port: u32) -> Option<ARef<crate::kshim::net::NetDevice>> {
        None
    }

    /// Whether the device honours the invalidation of peer memory
    /// (`crate::verbs::umem`): a peer memory client that requires
    /// invalidation gives memory only to devices that do. Every access of
    /// a provider to a region goes through the core, which stops them all
    /// when the client invalidates; a provider answers `true` when it also
    /// turns the refused accesses into completions with an error (remote
    /// access error for a peer's, local protection error for its own)
    /// and keeps no copy of the memory's pages of its own.
    fn peer_invalidate(&self) -> bool {
        false
    }

    /// The core tells the provider that the memory of the region of key
    /// `lkey` was invalidated: no access reaches it any more (the core
    /// refuses them). Process context.
    fn mr_invalidated(&self, _lkey: u32) {}
}

/// The provider's operations of a device and how many [`OpsRef`]s are out.
struct OpsSlot {
    ops: Option<Arc<dyn DeviceOps>>,
    calls: usize,
}

/// A call into the provider under way ([`Device::ops`]): while it lives,
/// unregistration cannot let go of the provider, so its module cannot go
/// away under the caller. Borrowed from the device, so it cannot be kept;
/// dropped from any context.
pub(crate) struct OpsRef<'a> {
    dev: &'a Device,
    ops: Option<Arc<dyn DeviceOps>>,
}

impl Deref for OpsRef<'_> {
    type Target = dyn DeviceOps;

    fn deref(&self) -> &(dyn DeviceOps + 'static) {
        // Set from construction until drop.
        match &self.ops {
            Some(ops) => &**ops,
            None => unreachable!(),
        }
    }
}

impl Drop for OpsRef<'_> {
    fn drop(&mut self) {
        // Our reference goes first, so the unregistering thread's is the
        // last one and the provider's drop code runs there.
        drop(self.ops.take());
        let mut slot = self.dev.ops.lock();
        slot.calls -= 1;
        if slot.calls == 0 {
            self.dev.usage_released.notify_all();
        }
    }
}

/// The usage count of a device and whether new usage is still allowed.
struct Usage {
    /// References: the registration's own plus every [`DeviceRef`].
    count: usize,
    /// Set when unregistration starts: `try_get` fails from then on.
    closed: bool,
}

/// A registered RDMA device.
#[pin_data]
pub struct Device {
    name: CString,
    driver_id: usize,
    node_type: NodeType,
    node_guid: u64,
    port_count: u32,
    link_layer: LinkLayer,
    gid_tbl_len: u32,
    pkey_tbl_len: u32,
    /// The attributes read at registration.
    attr: DeviceAttr,
    /// The verbs objects of the device.
    #[pin]
    pub(crate) res: Resources,
    /// Shared CQs (`rdma::verbs::cq::pool`).
    #[pin]
    pub(crate) cq_pool: Mutex<KVec<crate::verbs::cq::pool::PoolEntry>>,
    /// GID and P_Key tables of every port; read from any context.
    #[pin]
    pub(crate) tables: SpinLockIrq<Tables>,
    /// The provider's operations and the calls into them under way; taken
    /// away once unregistration is done, and dropped when the last call
    /// returns, so no provider code is reachable from a device that
    /// outlives it.
    #[pin]
    ops: SpinLockIrq<OpsSlot>,
    #[pin]
    usage: SpinLockIrq<Usage>,
    #[pin]
    usage_released: CondVar,
    /// The clients added to this device and their data.
    #[pin]
    pub(crate) clients: Mutex<DevClients>,
    /// Signalled when a client's `remove` on this device returns.
    #[pin]
    pub(crate) client_removed: CondVar,
    /// Async events waiting for delivery; taken from any context.
    #[pin]
    pub(crate) events: SpinLockIrq<EventQueue>,
    /// Registered event handlers; held while they run.
    #[pin]
    pub(crate) handlers: Mutex<Handlers>,
    /// The sysfs tree while the device is registered.
    #[pin]
    pub(crate) sysfs: Mutex<Option<crate::device::sysfs::Sysfs>>,
    #[pin]
    pub(crate) event_work: Work<Device>,
    /// Runs a queued unregistration (`ib_unregister_device_queued`).
    #[pin]
    pub(crate) unreg_work: Work<Device, 1>,
}

impl_has_work! {
    impl HasWork<Self> for Device { self.event_work }
    impl HasWork<Self, 1> for Device { self.unreg_work }
}

impl WorkItem<1> for Device {
    type Pointer = Arc<Device>;

    fn run(this: Arc<Device>) {
        crate::device::registry::get().unregister_device(&this);
    }
}

impl WorkItem for Device {
    type Pointer = Arc<Device>;

    fn run(this: Arc<Device>) {
        event::deliver(&this);
    }
}

impl Device {
    pub(crate) fn new(
        name: CString,
        desc: &DeviceDesc<'_>,
        driver_id: usize,
        ops: Arc<dyn DeviceOps>,
    ) -> Result<Arc<Device>> {
        let tables = Tables::new(desc.port_count, desc.gid_tbl_len, desc.pkey_tbl_len)?;
        let attr = ops.query_device()?;
        Arc::pin_init(
            pin_init!(Device {
                name,
                driver_id,
                node_type: desc.node_type,
                node_guid: desc.node_guid,
                port_count: desc.port_count,
                link_layer: desc.link_layer,
                gid_tbl_len: desc.gid_tbl_len,
                pkey_tbl_len: desc.pkey_tbl_len,
                attr,
                res <- Resources::new(*attr),
                cq_pool <- new_mutex!(KVec::new(), "Device::cq_pool"),
                tables <- crate::new_spinlock_irq!(tables, "Device::tables"),
                ops <- crate::new_spinlock_irq!(OpsSlot { ops: Some(ops), calls: 0 }, "Device::ops"),
                usage <- crate::new_spinlock_irq!(Usage { count: 1, closed: false }, "Device::usage"),
                usage_released <- new_condvar!("Device::usage_released"),
                clients <- new_mutex!(DevClients::new(), "Device::clients"),
                client_removed <- new_condvar!("Device::client_removed"),
                events <- crate::new_spinlock_irq!(EventQueue::new(), "Device::events"),
                handlers <- new_mutex!(Handlers::new(), "Device::handlers"),
                sysfs <- new_mutex!(None, "Device::sysfs"),
                event_work <- new_work!("Device::event_work"),
                unreg_work <- new_work!("Device::unreg_work"),
            }),
            GFP_KERNEL,
        )
    }

    /// The device's name (`rxe0`).
    pub fn name(&self) -> &CStr {
        &self.name
    }

    pub(crate) fn driver_id(&self) -> usize {
        self.driver_id
    }

    /// The node type.
    pub fn node_type(&self) -> NodeType {
        self.node_type
    }

    /// The node GUID.
    pub fn node_guid(&self) -> u64 {
        self.node_guid
    }

    /// The number of ports; they are numbered from 1.
    pub fn port_count(&self) -> u32 {
        self.port_count
    }

    /// The link layer of a port.
    pub fn link_layer(&self, port: u32) -> Result<LinkLayer> {
        self.check_port(port)?;
        Ok(self.link_layer)
    }

    /// GID table entries per port.
    pub fn gid_tbl_len(&self) -> u32 {
        self.gid_tbl_len
    }

    /// P_Key table entries per port.
    pub fn pkey_tbl_len(&self) -> u32 {
        self.pkey_tbl_len
    }

    /// The attributes the provider reported at registration (the cached
    /// `ib_device.attrs`). Any context.
    pub fn attr(&self) -> &DeviceAttr {
        &self.attr
    }

    /// The number of live verbs objects of each kind, as in the sysfs
    /// `resources` file: (PDs, CQs, QPs, SRQs, MRs, AHs, MWs).
    pub fn resource_counts(&self) -> [u32; 7] {
        let r = &self.res;
        [
            r.pd.count(),
            r.cq.count(),
            r.qp.count() + r.gsi.count(),
            r.srq.count(),
            r.mr.count(),
            r.ah.count(),
            r.mw.count(),
        ]
    }

    /// The live QPs, the GSI QP first, in number order (`rdma res show
    /// qp`). Any context.
    pub fn qps(&self) -> Result<KVec<Arc<QpCore>>> {
        let mut all = self.res.gsi.matching(|_| true)?;
        all.extend_from_slice(&self.res.qp.matching(|_| true)?, GFP_KERNEL)?;
        Ok(all)
    }

    /// The live CQs, in number order. Any context.
    pub fn cqs(&self) -> Result<KVec<Arc<CqCore>>> {
        self.res.cq.matching(|_| true)
    }

    /// The live MRs, in number order. Any context.
    pub fn mrs(&self) -> Result<KVec<Arc<MrCore>>> {
        self.res.mr.matching(|_| true)
    }

    /// The live PDs, in number order. Any context.
    pub fn pds(&self) -> Result<KVec<Arc<PdCore>>> {
        self.res.pd.matching(|_| true)
    }

    /// The live SRQs, in number order. Any context.
    pub fn srqs(&self) -> Result<KVec<Arc<SrqCore>>> {
        self.res.srq.matching(|_| true)
    }

    /// The names of the port counters ([`DeviceOps::hw_counter_names`]),
    /// or `ENODEV` once the provider has let go.
    pub fn hw_counter_names(&self) -> Result<&'static [&'static CStr]> {
        Ok(self.ops()?.hw_counter_names())
    }

    /// The value of counter `index` of `port` ([`DeviceOps::hw_counter`]):
    /// what `ports/<port>/hw_counters/<name>` shows. `EINVAL` for a port
    /// the device does not have. Process context.
    pub fn hw_counter(&self, port: u32, index: usize) -> Result<u64> {
        self.check_port(port)?;
        Ok(self.ops()?.hw_counter(port, index))
    }

    /// Whether `port` has a MAD layer on QP1 ([`DeviceOps::has_mad`]).
    pub fn has_mad(&self, port: u32) -> bool {
        self.check_port(port).is_ok() && self.ops().is_ok_and(|o| o.has_mad(port))
    }

    /// Whether the device honours the invalidation of peer memory
    /// ([`DeviceOps::peer_invalidate`]).
    pub fn peer_invalidate(&self) -> bool {
        self.ops().is_ok_and(|o| o.peer_invalidate())
    }

    /// The netdev behind `port`, if the provider has one
    /// ([`DeviceOps::netdev`]).
    pub fn netdev(&self, port: u32) -> Option<ARef<crate::kshim::net::NetDevice>> {
        self.check_port(port).ok()?;
        self.ops().ok()?.netdev(port)
    }

    /// The provider's operations for one call, or `ENODEV` once
    /// unregistration has let go of them. Any context; unregistration
    /// waits for the returned reference to be dropped.
    pub(crate) fn ops(&self) -> Result<OpsRef<'_>> {
        let mut slot = self.ops.lock();
        let ops = slot.ops.clone().ok_or(ENODEV)?;
        slot.calls += 1;
        Ok(OpsRef {
            dev: self,
            ops: Some(ops),
        })
    }

    /// Queries the device's attributes from its provider. May sleep.
    pub fn query_device(&self) -> Result<DeviceAttr> {
        crate::kshim::verb::might_sleep();
        self.ops()?.query_device()
    }

    /// Takes a usage reference, unless the device is being unregistered
    /// (`ib_device_try_get`). Callable from any context.
    pub fn try_get(self: &Arc<Self>) -> Option<DeviceRef> {
        let mut usage = self.usage.lock();
        if usage.closed || usage.count == 0 {
            return None;
        }
        usage.count += 1;
        drop(usage);
        Some(DeviceRef { dev: self.clone() })
    }

    /// Drops one usage reference and wakes the unregistering thread on the
    /// last one.
    fn put(&self) {
        let mut usage = self.usage.lock();
        usage.count -= 1;
        if usage.count == 0 {
            self.usage_released.notify_all();
        }
    }

    /// Forbids new usage references, drops the registration's own, waits
    /// until every other one is dropped, then lets go of the provider.
    pub(crate) fn close_and_wait(&self) {
        let mut usage = self.usage.lock();
        usage.closed = true;
        usage.count -= 1;
        while usage.count > 0 {
            self.usage_released.wait(&mut usage);
        }
        // Nobody can create objects now (creation holds a usage reference):
        // tear down what ULPs left, while the provider is still here.
        drop(usage);
        self.res.teardown(&self.name);
        // No new call can start; wait for those under way (a peer memory
        // client's invalidation reaches the provider without a usage
        // reference), so that ours is the provider's last reference.
        let mut slot = self.ops.lock();
        let ops = slot.ops.take();
        while slot.calls > 0 {
            self.usage_released.wait(&mut slot);
        }
        drop(slot);
        let usage = self.usage.lock();
        // Under `usage`, so `wait_gone` cannot miss the wake-up.
        self.usage_released.notify_all();
        drop(usage);
        // The provider's drop code runs with no lock held.
        drop(ops);
    }

    /// Waits until an unregistration that another thread started is done.
    pub(crate) fn wait_gone(&self) {
        let mut usage = self.usage.lock();
        while usage.count > 0 || {
            let slot = self.ops.lock();
            slot.ops.is_some() || slot.calls > 0
        } {
            self.usage_released.wait(&mut usage);
        }
    }

    /// Whether the device is registered and not being unregistered.
    pub fn is_registered(&self) -> bool {
        let usage = self.usage.lock();
        !usage.closed && usage.count > 0
    }
}

/// A usage reference to a registered device (`ib_device_try_get` /
/// `ib_device_put`): while it lives, unregistration of the device cannot
/// complete. Drop it promptly; it can be dropped from any context.
pub struct DeviceRef {
    dev: Arc<Device>,
}

impl DeviceRef {
    /// The device as an `Arc`, to keep its memory past this reference.
    pub fn arc(&self) -> &Arc<Device> {
        &self.dev
    }
}

impl Deref for DeviceRef {
    type Target = Device;

    fn deref(&self) -> &Device {
        &self.dev
    }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        self.dev.put();
    }
}

/// The provider's handle on a device it registered
/// ([`Driver::register_device`](crate::device::driver::Driver::register_device)):
/// what only the provider may do, on top of everything a ULP may
/// ([`Device`], through `Deref`). ULPs reach devices through clients and
/// [`get_by_name`], as `Arc<Device>` or [`DeviceRef`], and cannot make one.
///
/// ```compile_fail
/// fn ulp(dev: &rdma::device::DeviceRef) {
///     dev.set_pkey(1, 0, 0xffff).unwrap(); // provider-only
/// }
/// ```
#[derive(Clone)]
pub struct ProviderDevice(Arc<Device>);

impl ProviderDevice {
    pub(crate) fn new(dev: Arc<Device>) -> ProviderDevice {
        ProviderDevice(dev)
    }

    /// The device as ULPs see it.
    pub fn arc(&self) -> &Arc<Device> {
        &self.0
    }

    /// Sets (or, with `None`, clears) GID table entry `index` of `port`.
    /// Any context.
    pub fn set_gid(&self, port: u32, index: u32, entry: Option<GidEntry>) -> Result {
        self.0.set_gid(port, index, entry)
    }

    /// Sets P_Key table entry `index` of `port`. Any context.
    pub fn set_pkey(&self, port: u32, index: u32, pkey: u16) -> Result {
        self.0.set_pkey(port, index, pkey)
    }

    /// Queues an asynchronous event for the device's handlers
    /// (`ib_dispatch_event`). Any context, hard IRQ included.
    pub fn dispatch_event(&self, event: Event) {
        self.0.dispatch_event(event)
    }
}

impl Deref for ProviderDevice {
    type Target = Arc<Device>;

    fn deref(&self) -> &Arc<Device> {
        &self.0
    }
}

/// Looks a registered device up by name and takes a usage reference.
pub fn get_by_name(name: &CStr) -> Option<DeviceRef> {
    crate::device::registry::get().find(|d| d.name().as_bytes() == name.as_bytes())
}

/// Usage references to every registered device, in registration order.
pub fn devices() -> Result<KVec<DeviceRef>> {
    crate::device::registry::get().snapshot()
}

/// Formats the name for index `n` of a template such as `rxe%d`.
///
/// A template without `%d` is a fixed name.
pub(crate) fn name_from_template(template: &CStr, n: u32) -> Result<CString> {
    let t = template.to_str().map_err(|_| EINVAL)?;
    let name = match t.find("%d") {
        Some(at) => CString::try_from_fmt(kernel::fmt!("{}{}{}", &t[..at], n, &t[at + 2..]))?,
        None => CString::try_from_fmt(kernel::fmt!("{}", t))?,
    };
    if name.is_empty()
        || name.len() >= NAME_MAX
        || name
            .to_str()
            .map_or(true, |s| s.contains('%') || s.contains('/'))
    {
        return Err(EINVAL);
    }
    Ok(name)
}
