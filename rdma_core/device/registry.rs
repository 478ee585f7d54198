// SPDX-License-Identifier: GPL-2.0

//! The core's registry of devices and clients, and the hot-plug protocol.
//!
//! Locks, outermost first:
//!
//! - `Registry::state` (mutex): the lists of devices and clients. Held while
//!   a client's `add` runs, so adds are serialised with registration and
//!   run in client registration order (as the C core holds its rwsems).
//! - `Device::clients` (mutex, per device): which clients are added to the
//!   device, with their data. Never held while a callback runs.
//!
//! `remove` runs with no lock held. Both a device's unregistration and a
//! client's may want to remove the same (device, client) pair; whichever
//! takes the pair out of `Device::clients` first runs `remove`, and records
//! the client in `DevClients::removing` until it returns. The other waits on
//! `Device::client_removed` for that record to go, so neither returns while
//! a `remove` it is responsible for is still running.

use kernel::error::code::{EEXIST, ENFILE};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use crate::device::client::{AnyData, ClientOps};
use crate::device::sysfs::Sysfs;
use crate::device::{self, Device, DeviceDesc, DeviceOps, DeviceRef};
use crate::kshim::global::Global;
use crate::kshim::vec;

/// The largest number a `%d` device name template is given.
const MAX_NAME_INDEX: u32 = 1 << 16;

/// A registered client.
pub(crate) struct ClientEntry {
    /// Registration order: ids only grow.
    id: u64,
    ops: Arc<dyn ClientOps>,
}

/// A client added to a device.
struct Slot {
    client: Arc<ClientEntry>,
    data: AnyData,
}

/// The clients of one device (guarded by `Device::clients`).
pub(crate) struct DevClients {
    /// Added clients, in ascending client id order.
    slots: KVec<Slot>,
    /// Ids of clients whose `remove` on this device is running.
    removing: KVec<u64>,
}

impl DevClients {
    pub(crate) fn new() -> Self {
        DevClients {
            slots: KVec::new(),
            removing: KVec::new(),
        }
    }
}

struct State {
    /// Devices, in registration order, until their unregistration is done
    /// with the clients.
    devices: KVec<Arc<Device>>,
    /// Devices whose unregistration has started: no new `add` for them.
    closing: KVec<Arc<Device>>,
    /// Registered clients, in registration order.
    clients: KVec<Arc<ClientEntry>>,
    next_client_id: u64,
}

/// Registered devices and clients.
#[pin_data]
pub(crate) struct Registry {
    #[pin]
    state: Mutex<State>,
}

/// The registry of the loaded module; set while `rdma_core` is loaded.
static REGISTRY: Global<Registry> = Global::new();

/// Returns the registry.
///
/// Only code of this crate runs it, on behalf of a caller in this module or
/// in a module that links against it; such a module can only run between
/// this module's init (which publishes the registry) and its exit (which
/// runs only once every dependent module is unloaded), so it is set.
pub(crate) fn get() -> Arc<Registry> {
    REGISTRY
        .get()
        .expect("rdma_core: the registry is used outside the module's lifetime")
}

/// Makes `reg` the registry that [`get`] returns (module init).
pub(crate) fn publish(reg: Arc<Registry>) {
    drop(REGISTRY.replace(Some(reg)));
}

/// Undoes [`publish`] (module exit).
pub(crate) fn unpublish() {
    drop(REGISTRY.replace(None));
}

fn is_closing(state: &State, dev: &Arc<Device>) -> bool {
    state.closing.iter().any(|d| Arc::ptr_eq(d, dev))
}

/// Calls `add` of `client` for `dev` and records the pair if it succeeds.
/// The caller holds `Registry::state`.
fn add_pair(dev: &Arc<Device>, client: &Arc<ClientEntry>) {
    // Room for the slot, and for its record in `removing` later, first: once
    // `add` succeeded the pair must be recorded without failing.
    {
        let mut clients = dev.clients.lock();
        // Every slot, the new one included, may be in `removing` at once on
        // top of the records already there.
        let want = clients.slots.len() + 1;
        let room = clients.slots.reserve(1, GFP_KERNEL).is_ok()
            && clients.removing.reserve(want, GFP_KERNEL).is_ok();
        if !room {
            pr_warn!(
                "out of memory: client {:?} not added to {:?}\n",
                client.ops.name(),
                dev.name()
            );
            return;
        }
    }
    let Ok(data) = client.ops.add(dev) else {
        // No further callbacks for this pair.
        return;
    };
    let mut clients = dev.clients.lock();
    let at = clients.slots.iter().position(|s| s.client.id > client.id);
    let at = at.unwrap_or(clients.slots.len());
    // Cannot fail: room was reserved above, and only this thread (holding
    // `Registry::state`) adds slots.
    let _ = clients.slots.push(
        Slot {
            client: client.clone(),
            data,
        },
        GFP_KERNEL,
    );
    let n = clients.slots.len();
    clients.slots.as_mut_slice()[at..n].rotate_right(1);
}

/// Takes the slot of `client` (or, with `None`, the last-added client) out of
/// `dev` and runs its `remove` with no lock held. Returns false when there
/// was no such slot.
fn remove_one(dev: &Arc<Device>, client: Option<&Arc<ClientEntry>>) -> bool {
    let mut clients = dev.clients.lock();
    let slot = match client {
        Some(c) => vec::remove_first(&mut clients.slots, |s| s.client.id == c.id),
        None => {
            let n = clients.slots.len();
            n.checked_sub(1)
                .and_then(|last| vec::remove(&mut clients.slots, last))
        }
    };
    let Some(slot) = slot else { return false };
    // Cannot fail: `add_pair` keeps room for one record per slot.
    let _ = clients.removing.push(slot.client.id, GFP_KERNEL);
    drop(clients);

    slot.client.ops.remove(dev, &slot.data);
    let id = slot.client.id;
    drop(slot);

    let mut clients = dev.clients.lock();
    vec::remove_first(&mut clients.removing, |r| *r == id);
    drop(clients);
    dev.client_removed.notify_all();
    true
}

/// Waits until no `remove` matching `pred` runs on `dev`.
fn wait_removes(dev: &Device, pred: impl Fn(u64) -> bool) {
    let mut clients = dev.clients.lock();
    while clients.removing.iter().any(|id| pred(*id)) {
        dev.client_removed.wait(&mut clients);
    }
}

impl Registry {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Registry {
            state <- new_mutex!(State {
                devices: KVec::new(),
                closing: KVec::new(),
                clients: KVec::new(),
                next_client_id: 0,
            }, "Registry::state"),
        })
    }

    /// Registers a device and adds every client to it. Process context.
    pub(crate) fn register_device(
        &self,
        desc: &DeviceDesc<'_>,
        driver_id: usize,
        ops: Arc<dyn DeviceOps>,
    ) -> Result<Arc<Device>> {
        desc.validate()?;
        let template = desc.name_template;
        let mut state = self.state.lock();
        let mut n = 0;
        let name = loop {
            let name = device::name_from_template(template, n)?;
            if !state
                .devices
                .iter()
                .any(|d| d.name().as_bytes() == name.as_bytes())
            {
                break name;
            }
            if name.as_bytes() == template.as_bytes() {
                return Err(EEXIST);
            }
            n += 1;
            if n >= MAX_NAME_INDEX {
                return Err(ENFILE);
            }
        };
        let dev = Device::new(name, desc, driver_id, ops)?;
        state.devices.reserve(1, GFP_KERNEL)?;
        *dev.sysfs.lock() = Some(Sysfs::add(&dev)?);
        // Cannot fail: room was reserved above.
        let _ = state.devices.push(dev.clone(), GFP_KERNEL);
        for i in 0..state.clients.len() {
            let client = state.clients[i].clone();
            add_pair(&dev, &client);
        }
        Ok(dev)
    }

    /// Unregisters a device: every client's `remove` (reverse registration
    /// order), then waits for the last usage reference. Process context.
    pub(crate) fn unregister_device(&self, dev: &Arc<Device>) {
        crate::kshim::verb::might_sleep();
        {
            let mut state = self.state.lock();
            if !state.devices.iter().any(|d| Arc::ptr_eq(d, dev)) {
                // Never registered here, or already fully unregistered.
                drop(state);
                dev.wait_gone();
                return;
            }
            if is_closing(&state, dev) {
                // Another thread is unregistering it: return when it is done.
                drop(state);
                dev.wait_gone();
                return;
            }
            if state.closing.push(dev.clone(), GFP_KERNEL).is_err() {
                // Cannot happen in practice (a few pointers); without the
                // mark, clients registering meanwhile would still be added,
                // and removed again by the loop below.
                pr_warn!(
                    "unregister of {:?}: no memory for the closing mark\n",
                    dev.name()
                );
            }
        }
        while remove_one(dev, None) {}
        wait_removes(dev, |_| true);
        crate::verbs::cq::pool::cleanup(dev);
        // Before the device leaves the list: its name stays taken until its
        // sysfs directory is gone. The tree points at `dev`, which the
        // caller's `Arc` keeps alive.
        drop(dev.sysfs.lock().take());
        {
            let mut state = self.state.lock();
            vec::remove_first(&mut state.devices, |d| Arc::ptr_eq(d, dev));
            vec::remove_first(&mut state.closing, |d| Arc::ptr_eq(d, dev));
        }
        crate::device::event::shutdown(dev);
        dev.close_and_wait();
    }

    /// Registers a client and adds it to every device. Process context.
    pub(crate) fn register_client(&self, ops: Arc<dyn ClientOps>) -> Result<Arc<ClientEntry>> {
        let mut state = self.state.lock();
        let entry = Arc::new(
            ClientEntry {
                id: state.next_client_id,
                ops,
            },
            GFP_KERNEL,
        )?;
        state.clients.push(entry.clone(), GFP_KERNEL)?;
        state.next_client_id += 1;
        for i in 0..state.devices.len() {
            let dev = state.devices[i].clone();
            if !is_closing(&state, &dev) {
                add_pair(&dev, &entry);
            }
        }
        Ok(entry)
    }

    /// Unregisters a client: its `remove` for every device it is added to;
    /// returns once none of its callbacks runs any more. Process context.
    pub(crate) fn unregister_client(&self, entry: &Arc<ClientEntry>) {
        crate::kshim::verb::might_sleep();
        vec::remove_first(&mut self.state.lock().clients, |c| Arc::ptr_eq(c, entry));
        // No new pair can appear now. Deal with one device at a time, the
        // most recently registered first, until no device has this client
        // added or has its `remove` running; this allocates nothing, so it
        // cannot fail.
        loop {
            let dev = {
                let state = self.state.lock();
                let busy = state.devices.iter().rev().find(|d| {
                    let clients = d.clients.lock();
                    clients.slots.iter().any(|s| s.client.id == entry.id)
                        || clients.removing.iter().any(|id| *id == entry.id)
                });
                match busy {
                    Some(d) => d.clone(),
                    None => return,
                }
            };
            remove_one(&dev, Some(entry));
            wait_removes(&dev, |id| id == entry.id);
        }
    }

    /// The first registered device matching `pred`, with a usage reference.
    pub(crate) fn find(&self, pred: impl Fn(&Device) -> bool) -> Option<DeviceRef> {
        let state = self.state.lock();
        state
            .devices
            .iter()
            .filter(|d| pred(d))
            .find_map(|d| d.try_get())
    }

    /// The first device of the list matching `pred`, which runs under
    /// `Registry::state`. Unlike [`Registry::find`] it takes no usage
    /// reference and sees devices whose unregistration has started too:
    /// they stay in the list until their sysfs tree is gone.
    pub(crate) fn find_listed(&self, pred: impl Fn(&Device) -> bool) -> Option<Arc<Device>> {
        let state = self.state.lock();
        state.devices.iter().find(|d| pred(d)).cloned()
    }

    /// Usage references to all registered devices.
    pub(crate) fn snapshot(&self) -> Result<KVec<DeviceRef>> {
        let state = self.state.lock();
        let mut out = KVec::with_capacity(state.devices.len(), GFP_KERNEL)?;
        for d in state.devices.iter() {
            if let Some(r) = d.try_get() {
                out.push(r, GFP_KERNEL)?;
            }
        }
        Ok(out)
    }

    /// The registered devices of a driver.
    pub(crate) fn devices_of(&self, driver_id: usize) -> Result<KVec<Arc<Device>>> {
        let state = self.state.lock();
        let mut out = KVec::new();
        for d in state.devices.iter().filter(|d| d.driver_id() == driver_id) {
            out.push(d.clone(), GFP_KERNEL)?;
        }
        Ok(out)
    }
}

/// The data `entry`'s client has for `dev`, if it was added to it.
pub(crate) fn client_data(dev: &Device, entry: &Arc<ClientEntry>) -> Option<AnyData> {
    let clients = dev.clients.lock();
    let slot = clients.slots.iter().find(|s| s.client.id == entry.id)?;
    Some(slot.data.clone())
}
