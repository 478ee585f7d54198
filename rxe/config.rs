// SPDX-License-Identifier: GPL-2.0

//! Configuration through configfs: `/sys/kernel/config/rdma_rs_rxe/`.
//!
//! ```text
//! mkdir /sys/kernel/config/rdma_rs_rxe/rxe_a     # an unbound item
//! echo veth0 > .../rxe_a/netdev                  # in the writer's netns
//! echo 1 > .../rxe_a/enable                      # registers device rxe_a
//! cat .../rxe_a/ibdev                            # rxe_a
//! echo 0 > .../rxe_a/enable; rmdir .../rxe_a
//! ```
//!
//! `counters` shows the device's counters (also in
//! `/sys/class/rdma_rs/<dev>/ports/1/hw_counters/`); `fault` sets fault
//! injection on its packets, for tests (`echo "seed=1 tx_drop=5" > fault`,
//! `echo off > fault`; the language is in `wire/src/fault.rs`): only on an
//! enabled item (`ENODEV` otherwise), `EINVAL` for a spec it cannot read,
//! reset when the device is disabled.
//!
//! A VLAN netdev is bound like any other Ethernet device (its packets go
//! out tagged through the VLAN device, as with the C rxe). Errors: an
//! unknown netdev is `ENODEV`; a loopback or non-Ethernet device `EINVAL`; a netdev another item has
//! claimed `EBUSY`; changing the netdev of an enabled item `EBUSY`; enabling
//! without a netdev `EINVAL`; anything but `0` or `1` in `enable` `EINVAL`;
//! a device name already registered `EEXIST`. The device name is the item's
//! name. When the netdev is unregistered, the device is too, and the item
//! goes back to unbound.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use kernel::c_str;
use kernel::error::code::{EBUSY, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::types::ARef;

use rdma::device::driver::Driver;
use rdma::device::DeviceDesc;
use rdma::kshim::configfs::{Group, Item};
use rdma::kshim::net::{NetDevice, NetEvent, NetListener};
use rdma::kshim::sync::SpinLockIrq;
use rdma::kshim::sysfs::Page;
use rdma::kshim::work::OwnedQueue;
use rdma::spec::attr::{Gid, LinkLayer, NodeType};

use crate::device::{self, RxeDev, RxeOps, GID_TBL_LEN};
use crate::net::sockets::Sockets;
use crate::wire::fault::FaultSpec;

/// The module's state: the driver, the items, the bound devices.
#[pin_data]
pub(crate) struct Rxe {
    driver: Pin<KBox<Driver>>,
    /// Every item (configfs directory).
    #[pin]
    items: Mutex<KVec<Arc<RxeItem>>>,
    /// Devices bound to a netdev, for the netdev listener (atomic context).
    #[pin]
    bound: SpinLockIrq<KVec<Arc<RxeDev>>>,
    /// Netdevs named by an item: (item id, netdev). The claim holds the
    /// item's reference to its netdev; the netdev listener drops it when
    /// the netdev is unregistered, so an item that names a netdev never
    /// keeps it from going.
    #[pin]
    claims: SpinLockIrq<KVec<(usize, ARef<NetDevice>)>>,
    /// The UDP sockets, one per namespace in use.
    #[pin]
    pub(crate) sockets: Sockets,
    next_item: AtomicUsize,
    rx_unclaimed: AtomicU64,
    /// The devices' work (netdev changes): drained at module exit, so none
    /// of it runs once the module is gone.
    pub(crate) wq: OwnedQueue,
}

impl Rxe {
    pub(crate) fn new() -> Result<Arc<Rxe>> {
        let driver = Driver::new(c_str!("rdma_rs_rxe"))?;
        let wq = OwnedQueue::new(c_str!("rdma_rs_rxe"))?;
        Arc::pin_init(
            pin_init!(Rxe {
                driver,
                items <- new_mutex!(KVec::new(), "Rxe::items"),
                bound <- rdma::new_spinlock_irq!(KVec::new(), "Rxe::bound"),
                claims <- rdma::new_spinlock_irq!(KVec::new(), "Rxe::claims"),
                sockets <- Sockets::new(),
                next_item: AtomicUsize::new(1),
                rx_unclaimed: AtomicU64::new(0),
                wq,
            }),
            GFP_KERNEL,
        )
    }

    /// Module exit: configfs is gone (so no item is left) and netdev events
    /// stopped; the devices' queued work runs to its end first.
    pub(crate) fn shutdown(&self) {
        self.wq.drain();
        let bound = core::mem::take(&mut *self.bound.lock());
        for rd in bound.iter() {
            if let Some(dev) = rd.take_device() {
                self.driver.unregister_device(&dev);
            }
        }
        self.sockets.close_all();
    }

    /// The bound device of namespace `net` whose GID table holds `gid`
    /// (the destination of a received packet). Any context.
    pub(crate) fn device_for(&self, net: usize, gid: &Gid) -> Option<Arc<RxeDev>> {
        let bound = self.bound.lock();
        bound
            .iter()
            .find(|rd| {
                rd.netdev.net_id() == net
                    && rd
                        .device()
                        .is_some_and(|d| d.find_gid_on_port(1, gid).is_some())
            })
            .cloned()
    }

    /// Counts a received packet that no device of ours took (malformed,
    /// bad ICRC, not for one of our addresses).
    pub(crate) fn count_unclaimed(&self) {
        self.rx_unclaimed.fetch_add(1, Ordering::Relaxed);
    }

    /// Claims `netdev` for item `id`: `EBUSY` if another item has it.
    fn claim(&self, id: usize, netdev: ARef<NetDevice>) -> Result {
        let mut c = self.claims.lock();
        if c.iter().any(|(i, n)| n.same(&netdev) && *i != id) {
            return Err(EBUSY);
        }
        c.reserve(1, GFP_ATOMIC)?;
        let old = rdma::kshim::vec::remove_first(&mut c, |(i, _)| *i == id);
        let _ = c.push((id, netdev), GFP_ATOMIC);
        drop(c);
        drop(old);
        Ok(())
    }

    /// The netdev item `id` names, if it still exists.
    fn claimed(&self, id: usize) -> Option<ARef<NetDevice>> {
        let c = self.claims.lock();
        c.iter().find(|(i, _)| *i == id).map(|(_, n)| n.clone())
    }

    fn unclaim(&self, id: usize) {
        let old = rdma::kshim::vec::remove_first(&mut self.claims.lock(), |(i, _)| *i == id);
        drop(old);
    }

    /// Registers a device for `item` on `netdev`.
    fn enable(self: &Arc<Self>, name: &CStr, netdev: &ARef<NetDevice>) -> Result<Arc<RxeDev>> {
        self.sockets.get(self, netdev)?;
        let rd = match RxeDev::new(self.clone(), netdev.clone()) {
            Ok(rd) => rd,
            Err(e) => {
                self.sockets.put(netdev);
                return Err(e);
            }
        };
        let r = self.register(name, netdev, &rd);
        if r.is_err() {
            self.sockets.put(netdev);
        }
        r.map(|()| rd)
    }

    fn register(&self, name: &CStr, netdev: &ARef<NetDevice>, rd: &Arc<RxeDev>) -> Result {
        let desc = DeviceDesc {
            name_template: name,
            node_type: NodeType::Ca,
            node_guid: device::node_guid(&netdev.mac()),
            port_count: 1,
            link_layer: LinkLayer::Ethernet,
            gid_tbl_len: GID_TBL_LEN,
            pkey_tbl_len: 1,
        };
        {
            let mut b = self.bound.lock();
            b.reserve(1, GFP_ATOMIC)?;
        }
        let ops = Arc::new(RxeOps { rd: rd.clone() }, GFP_KERNEL)?;
        let dev = self.driver.register_device(&desc, ops)?;
        dev.set_pkey(1, 0, 0xffff)?;
        rd.set_device(dev);
        rd.sync_port();
        let _ = self.bound.lock().push(rd.clone(), GFP_ATOMIC);
        Ok(())
    }

    /// Unregisters the device of `rd`.
    fn disable(&self, rd: &Arc<RxeDev>) {
        rdma::kshim::vec::remove_first(&mut self.bound.lock(), |b| Arc::ptr_eq(b, rd));
        if let Some(dev) = rd.take_device() {
            self.driver.unregister_device(&dev);
            // Its QPs left their groups as they went; whatever is left goes.
            rd.mcast.leave_all(&rd.netdev);
            self.sockets.put(&rd.netdev);
        }
    }

    /// The bound device of namespace `net` on the netdev of index
    /// `ifindex` (where a multicast datagram came in). Any context.
    pub(crate) fn device_on(&self, net: usize, ifindex: i32) -> Option<Arc<RxeDev>> {
        let bound = self.bound.lock();
        bound
            .iter()
            .find(|rd| rd.netdev.net_id() == net && rd.netdev.ifindex() == ifindex)
            .cloned()
    }

    /// The netdev of `rd` is being unregistered (from its work item).
    pub(crate) fn netdev_gone(&self, rd: &Arc<RxeDev>) {
        let items = self.items.lock();
        for item in items.iter() {
            let mut st = item.state.lock();
            if st.rd.as_ref().is_some_and(|r| Arc::ptr_eq(r, rd)) {
                st.rd = None;
                self.unclaim(item.id);
            }
        }
        drop(items);
        self.disable(rd);
        pr_info!(
            "{:?}: netdev {:?} is gone; device removed\n",
            rd.netdev.name(),
            rd.netdev.name()
        );
    }
}

impl NetListener for Rxe {
    fn event(&self, dev: &NetDevice, event: NetEvent) {
        if event == NetEvent::Unregister {
            // Items that only name it let go at once (a bound device lets
            // go from its work, below).
            let gone =
                rdma::kshim::vec::remove_first(&mut self.claims.lock(), |(_, n)| n.same(dev));
            drop(gone);
        }
        let bound = self.bound.lock();
        for rd in bound.iter().filter(|rd| rd.netdev.same(dev)) {
            match event {
                NetEvent::Unregister => rd.netdev_unregistering(),
                _ => rd.changed(),
            }
        }
    }
}

struct ItemState {
    rd: Option<Arc<RxeDev>>,
}

/// One configfs directory.
#[pin_data]
pub(crate) struct RxeItem {
    rxe: Arc<Rxe>,
    id: usize,
    name: CString,
    #[pin]
    state: Mutex<ItemState>,
}

/// Attribute indices, in the order of the module's attribute list.
const ATTR_NETDEV: usize = 0;
const ATTR_ENABLE: usize = 1;
const ATTR_IBDEV: usize = 2;
const ATTR_COUNTERS: usize = 3;
const ATTR_FAULT: usize = 4;

/// The text written to an attribute, without surrounding white space.
fn trimmed(data: &[u8]) -> &[u8] {
    let start = data
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(data.len());
    let end = data
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &data[start..end]
}

impl Item for RxeItem {
    fn show(&self, attr: usize, out: &mut Page) -> Result {
        use core::fmt::Write;
        let st = self.state.lock();
        let r = match attr {
            ATTR_NETDEV => match &self.rxe.claimed(self.id) {
                Some(n) => writeln!(out, "{}", n.name().to_str().unwrap_or("?")),
                None => Ok(()),
            },
            ATTR_ENABLE => writeln!(out, "{}", u8::from(st.rd.is_some())),
            ATTR_IBDEV => match st.rd.as_ref().and_then(|r| r.device()) {
                Some(d) => writeln!(out, "{}", d.name().to_str().unwrap_or("?")),
                None => Ok(()),
            },
            ATTR_COUNTERS => match &st.rd {
                Some(rd) => rd.write_counters(out),
                None => Ok(()),
            },
            ATTR_FAULT => match &st.rd {
                Some(rd) => rd.faults.write(out),
                None => Ok(()),
            },
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }

    fn store(&self, attr: usize, data: &[u8]) -> Result {
        let text = trimmed(data);
        match attr {
            ATTR_NETDEV => {
                if text.is_empty() || text.len() >= 16 {
                    return Err(EINVAL);
                }
                let st = self.state.lock();
                if st.rd.is_some() {
                    return Err(EBUSY);
                }
                let mut name = [0u8; 17];
                name[..text.len()].copy_from_slice(text);
                let name = CStr::from_bytes_with_nul(&name[..=text.len()]).map_err(|_| EINVAL)?;
                let netdev = NetDevice::get_by_name_in_current_ns(name)?;
                if netdev.is_loopback() || !netdev.is_ether() {
                    return Err(EINVAL);
                }
                self.rxe.claim(self.id, netdev)
            }
            ATTR_ENABLE => {
                let on = match text {
                    b"1" => true,
                    b"0" => false,
                    _ => return Err(EINVAL),
                };
                let mut st = self.state.lock();
                match (on, st.rd.take()) {
                    (true, Some(rd)) => {
                        st.rd = Some(rd);
                        Ok(())
                    }
                    (true, None) => {
                        let netdev = self.rxe.claimed(self.id).ok_or(EINVAL)?;
                        st.rd = Some(self.rxe.enable(&self.name, &netdev)?);
                        Ok(())
                    }
                    (false, Some(rd)) => {
                        drop(st);
                        self.rxe.disable(&rd);
                        Ok(())
                    }
                    (false, None) => Ok(()),
                }
            }
            ATTR_FAULT => {
                let text = core::str::from_utf8(text).map_err(|_| EINVAL)?;
                let spec = FaultSpec::parse(text).map_err(|_| EINVAL)?;
                let st = self.state.lock();
                let rd = st.rd.as_ref().ok_or(ENODEV)?;
                rd.faults.set(spec);
                Ok(())
            }
            ATTR_IBDEV | ATTR_COUNTERS => Err(EINVAL),
            _ => Err(EINVAL),
        }
    }
}

/// The configfs group: `mkdir` makes an [`RxeItem`].
pub(crate) struct RxeGroup(pub(crate) Arc<Rxe>);

impl Group for RxeGroup {
    fn make_item(&self, name: &CStr) -> Result<Arc<dyn Item>> {
        if name.len() >= rdma::device::NAME_MAX || name.as_bytes().contains(&b'%') {
            return Err(EINVAL);
        }
        let text = name.to_str().map_err(|_| EINVAL)?;
        let owned = CString::try_from_fmt(kernel::fmt!("{}", text))?;
        let item = Arc::pin_init(
            pin_init!(RxeItem {
                rxe: self.0.clone(),
                id: self.0.next_item.fetch_add(1, Ordering::Relaxed),
                name: owned,
                state <- new_mutex!(ItemState { rd: None }, "RxeItem::state"),
            }),
            GFP_KERNEL,
        )?;
        self.0.items.lock().push(item.clone(), GFP_KERNEL)?;
        Ok(item)
    }

    fn drop_item(&self, item: &Arc<dyn Item>) {
        // Find ours by address: the configfs item is one of `items`.
        let target = core::ptr::from_ref::<dyn Item>(&**item).cast::<u8>();
        let mine = {
            let mut items = self.0.items.lock();
            let pos = items
                .iter()
                .position(|i| core::ptr::eq(core::ptr::from_ref(&**i).cast::<u8>(), target));
            pos.and_then(|p| rdma::kshim::vec::remove(&mut items, p))
        };
        let Some(it) = mine else { return };
        let rd = {
            let mut st = it.state.lock();
            st.rd.take()
        };
        self.0.unclaim(it.id);
        if let Some(rd) = rd {
            self.0.disable(&rd);
            // The device is gone: none of its work may be left behind.
            rd.flush_work();
        }
    }
}
