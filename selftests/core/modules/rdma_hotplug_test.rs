// SPDX-License-Identifier: GPL-2.0

//! Selftest of the midlayer's device, client and event contract.
//!
//! Each case registers its own test devices (a provider with no hardware)
//! and test clients, and checks what the core promises: `add` in client
//! registration order and `remove` in reverse, typed client data, usage
//! references that hold unregistration back, events delivered in order in
//! process context whatever context dispatched them, registration racing on
//! several CPUs, and the driver fence.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::c_str;
use kernel::error::code::{EEXIST, EINVAL};
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue;

use rdma::device::client::{Client, ClientRegistration};
use rdma::device::driver::Driver;
use rdma::device::event::{Element, Event, EventHandler, EventKind};
use rdma::device::port::{GidEntry, PortAttr};
use rdma::device::{self, Device, DeviceAttr, DeviceDesc, DeviceOps, ProviderDevice};
use rdma::kshim::testing;
use rdma::kshim::time;
use rdma::spec::attr::{Gid, GidType, LinkLayer, Mtu, NodeType, PhysState, PortState};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/verify.rs"]
mod verify;
use verify::wait_until;

module! {
    type: HotplugTest,
    name: "rdma_hotplug_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma_core hot-plug, client data, references and events",
    license: "GPL",
}

/// How often the cases poll a condition they wait for (ms).
const POLL_MS: u32 = 10;

struct NoHw;

impl DeviceOps for NoHw {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr::default())
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr {
            state: PortState::Active,
            phys_state: PhysState::LinkUp,
            ..PortAttr::down(Mtu::Mtu4096)
        })
    }
}

/// A two-port RoCE-like device description named from `template`.
fn desc(template: &'static CStr) -> DeviceDesc<'static> {
    DeviceDesc {
        name_template: template,
        node_type: NodeType::Ca,
        node_guid: 0x5054_00ff_fe12_3456,
        port_count: 2,
        link_layer: LinkLayer::Ethernet,
        gid_tbl_len: 8,
        pkey_tbl_len: 4,
    }
}

fn no_hw() -> Result<Arc<dyn DeviceOps>> {
    Ok(Arc::new(NoHw, GFP_KERNEL)?)
}

/// Callbacks seen, as `"<client><+|-><device>"`.
#[pin_data]
struct Log {
    #[pin]
    events: Mutex<KVec<CString>>,
}

impl Log {
    fn new() -> Result<Arc<Log>> {
        Arc::pin_init(
            pin_init!(Log { events <- new_mutex!(KVec::new()) }),
            GFP_KERNEL,
        )
    }

    fn record(&self, client: &CStr, sign: char, dev: &CStr) {
        if let Ok(s) = CString::try_from_fmt(kernel::fmt!("{}{}{}", client, sign, dev)) {
            let _ = self.events.lock().push(s, GFP_KERNEL);
        }
    }

    /// Checks the events since the last call against `want`, then forgets them.
    fn expect(&self, want: &[&str]) -> Result {
        let mut events = self.events.lock();
        let same = events.len() == want.len()
            && events
                .iter()
                .zip(want)
                .all(|(g, w)| g.as_bytes() == w.as_bytes());
        if !same {
            for e in events.iter() {
                pr_err!("  got {:?}\n", &**e);
            }
            pr_err!("  want {:?}\n", want);
        }
        *events = KVec::new();
        check(same, "client callback sequence")
    }
}

/// Whether `dev` is one of this test's devices (others may be registered,
/// such as `rdma_swdev`'s).
fn ours(dev: &Device) -> bool {
    dev.name().as_bytes().starts_with(b"hp")
}

/// A client whose data for a device is the device name's length plus 1000,
/// and that counts its adds and removes.
struct Recorder {
    name: &'static CStr,
    log: Option<Arc<Log>>,
    adds: AtomicU32,
    removes: AtomicU32,
}

impl Recorder {
    fn new(name: &'static CStr, log: Option<&Arc<Log>>) -> Self {
        Recorder {
            name,
            log: log.cloned(),
            adds: AtomicU32::new(0),
            removes: AtomicU32::new(0),
        }
    }
}

impl Client for Recorder {
    type Data = usize;

    fn name(&self) -> &CStr {
        self.name
    }

    fn add(&self, dev: &Arc<Device>) -> Result<usize> {
        if !ours(dev) {
            return Ok(dev.name().len() + 1000);
        }
        self.adds.fetch_add(1, Ordering::Relaxed);
        if let Some(log) = &self.log {
            log.record(self.name, '+', dev.name());
        }
        Ok(dev.name().len() + 1000)
    }

    fn remove(&self, dev: &Arc<Device>, data: &usize) {
        if *data != dev.name().len() + 1000 {
            pr_err!("remove got the wrong client data\n");
            return;
        }
        if !ours(dev) {
            return;
        }
        self.removes.fetch_add(1, Ordering::Relaxed);
        if let Some(log) = &self.log {
            log.record(self.name, '-', dev.name());
        }
    }
}

fn order_fifo_add_lifo_remove() -> Result {
    let log = Log::new()?;
    let driver = Driver::new(c_str!("hptest"))?;
    let a = ClientRegistration::new(Recorder::new(c_str!("A"), Some(&log)))?;
    let b = ClientRegistration::new(Recorder::new(c_str!("B"), Some(&log)))?;
    let d0 = driver.register_device(&desc(c_str!("hporder%d")), no_hw()?)?;
    log.expect(&["A+hporder0", "B+hporder0"])?;
    let c = ClientRegistration::new(Recorder::new(c_str!("C"), Some(&log)))?;
    log.expect(&["C+hporder0"])?;
    let d1 = driver.register_device(&desc(c_str!("hporder%d")), no_hw()?)?;
    log.expect(&["A+hporder1", "B+hporder1", "C+hporder1"])?;
    driver.unregister_device(&d0);
    log.expect(&["C-hporder0", "B-hporder0", "A-hporder0"])?;
    drop(b);
    log.expect(&["B-hporder1"])?;
    driver.unregister_device(&d1);
    log.expect(&["C-hporder1", "A-hporder1"])?;
    drop(a);
    drop(c);
    log.expect(&[])
}

fn client_data_is_typed_and_scoped() -> Result {
    let driver = Driver::new(c_str!("hptest"))?;
    let reg = ClientRegistration::new(Recorder::new(c_str!("D"), None))?;
    let dev = driver.register_device(&desc(c_str!("hpdata%d")), no_hw()?)?;
    let data = reg.data(&dev).map(|d| *d);
    check(
        data == Some(dev.name().len() + 1000),
        "data() is what add() returned",
    )?;
    driver.unregister_device(&dev);
    check(reg.data(&dev).is_none(), "no data after remove")
}

fn lookup_by_name_and_list() -> Result {
    let driver = Driver::new(c_str!("hptest"))?;
    let dev = driver.register_device(&desc(c_str!("hplookup%d")), no_hw()?)?;
    let found = device::get_by_name(c_str!("hplookup0"));
    check(
        found.as_ref().is_some_and(|r| Arc::ptr_eq(r.arc(), &dev)),
        "found by name",
    )?;
    drop(found);
    check(
        device::get_by_name(c_str!("hpnosuch0")).is_none(),
        "unknown name",
    )?;
    let all = device::devices()?;
    check(
        all.iter().any(|r| Arc::ptr_eq(r.arc(), &dev)),
        "listed by devices()",
    )?;
    drop(all);
    driver.unregister_device(&dev);
    check(
        device::get_by_name(c_str!("hplookup0")).is_none(),
        "gone after unregister",
    )
}

fn unregister_waits_for_usage_refs() -> Result {
    let driver: Arc<Pin<KBox<Driver>>> = Arc::new(Driver::new(c_str!("hptest"))?, GFP_KERNEL)?;
    let dev = driver.register_device(&desc(c_str!("hpref%d")), no_hw()?)?;
    let held = dev.try_get().ok_or(EINVAL)?;
    let done = Arc::new(AtomicBool::new(false), GFP_KERNEL)?;
    {
        let (driver, dev, done) = (driver.clone(), dev.clone(), done.clone());
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
            driver.unregister_device(&dev);
            done.store(true, Ordering::Release);
        })?;
    }
    // Unregistration has started once try_get fails.
    check(
        wait_until(5000, POLL_MS, || !dev.is_registered()),
        "unregistration starts",
    )?;
    time::msleep(200);
    check(
        !done.load(Ordering::Acquire),
        "unregister blocks while a reference is held",
    )?;
    check(
        dev.try_get().is_none(),
        "try_get fails during unregistration",
    )?;
    drop(held);
    check(
        wait_until(10000, POLL_MS, || done.load(Ordering::Acquire)),
        "unregister returns after the put",
    )
}

/// Records the port numbers of events, and whether each ran in a task.
#[pin_data]
struct PortLog {
    #[pin]
    seen: Mutex<KVec<u32>>,
    not_in_task: AtomicU32,
}

impl EventHandler for PortLog {
    fn handle(&self, _dev: &Device, event: &Event) {
        if !testing::in_task() {
            self.not_in_task.fetch_add(1, Ordering::Relaxed);
        }
        rdma::kshim::verb::might_sleep();
        if let (EventKind::PortActive, Element::Port(p)) = (event.kind, event.element) {
            let _ = self.seen.lock().push(p, GFP_KERNEL);
        }
    }
}

fn events_in_order_from_any_context() -> Result {
    let driver = Driver::new(c_str!("hptest"))?;
    let dev = driver.register_device(&desc(c_str!("hpevent%d")), no_hw()?)?;
    let log = Arc::pin_init(
        pin_init!(PortLog { seen <- new_mutex!(KVec::new()), not_in_task: AtomicU32::new(0) }),
        GFP_KERNEL,
    )?;
    let reg = dev.register_event_handler(log.clone())?;
    let mut next = 0u32;
    let mut burst = |n: u32| {
        for _ in 0..n {
            dev.dispatch_event(Event {
                kind: EventKind::PortActive,
                element: Element::Port(next),
            });
            next += 1;
        }
    };
    testing::in_hardirq(&mut || burst(10));
    testing::with_irqs_disabled(&mut || burst(10));
    testing::with_bh_disabled(&mut || burst(10));
    burst(10);
    let all = wait_until(10000, POLL_MS, || log.seen.lock().len() >= 40);
    let in_order = log
        .seen
        .lock()
        .iter()
        .enumerate()
        .all(|(i, p)| *p as usize == i);
    drop(reg);
    driver.unregister_device(&dev);
    check(all, "all 40 events delivered")?;
    check(in_order, "events delivered in dispatch order")?;
    check(
        log.not_in_task.load(Ordering::Relaxed) == 0,
        "handlers ran in process context",
    )?;
    check(dev.events_dropped() == 0, "nothing dropped")
}

fn concurrent_registration() -> Result {
    const ROUNDS: u32 = 25;
    let driver: Arc<Pin<KBox<Driver>>> = Arc::new(Driver::new(c_str!("hptest"))?, GFP_KERNEL)?;
    let stable = Arc::new(Recorder::new(c_str!("S"), None), GFP_KERNEL)?;
    let stable_reg = ClientRegistration::new(ArcClient(stable.clone()))?;
    let finished = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
    let failures = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
    // Two threads register and unregister devices, two clients, one looks
    // devices up and takes and drops usage references.
    for _ in 0..2 {
        let (driver, finished, failures) = (driver.clone(), finished.clone(), failures.clone());
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
            for _ in 0..ROUNDS {
                match driver.register_device(
                    &desc(c_str!("hprace%d")),
                    match no_hw() {
                        Ok(o) => o,
                        Err(_) => break,
                    },
                ) {
                    Ok(dev) => driver.unregister_device(&dev),
                    Err(_) => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            finished.fetch_add(1, Ordering::Release);
        })?;
    }
    for _ in 0..2 {
        let (finished, failures) = (finished.clone(), failures.clone());
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
            for _ in 0..ROUNDS {
                let rec = Recorder::new(c_str!("R"), None);
                match ClientRegistration::new(rec) {
                    Ok(reg) => drop(reg),
                    Err(_) => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            finished.fetch_add(1, Ordering::Release);
        })?;
    }
    {
        let finished = finished.clone();
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
            while finished.load(Ordering::Acquire) < 4 {
                if let Ok(all) = device::devices() {
                    for r in all.iter() {
                        let again = r.arc().try_get();
                        drop(again);
                    }
                }
                let _ = device::get_by_name(c_str!("hprace0"));
            }
            finished.fetch_add(1, Ordering::Release);
        })?;
    }
    let all_done = wait_until(120_000, POLL_MS, || finished.load(Ordering::Acquire) == 5);
    drop(stable_reg);
    check(all_done, "all threads finished")?;
    check(
        failures.load(Ordering::Relaxed) == 0,
        "no registration failed",
    )?;
    let (adds, removes) = (
        stable.adds.load(Ordering::Relaxed),
        stable.removes.load(Ordering::Relaxed),
    );
    if adds != removes || adds != 2 * ROUNDS {
        pr_err!(
            "stable client: {} adds, {} removes, want {} each\n",
            adds,
            removes,
            2 * ROUNDS
        );
    }
    check(
        adds == removes && adds == 2 * ROUNDS,
        "every device added and removed once",
    )
}

/// A client shared with the test through an `Arc`, to read its counters.
struct ArcClient(Arc<Recorder>);

impl Client for ArcClient {
    type Data = usize;

    fn name(&self) -> &CStr {
        self.0.name()
    }

    fn add(&self, dev: &Arc<Device>) -> Result<usize> {
        self.0.add(dev)
    }

    fn remove(&self, dev: &Arc<Device>, data: &usize) {
        self.0.remove(dev, data)
    }
}

fn driver_fence_unregisters_everything() -> Result {
    let rec = Arc::new(Recorder::new(c_str!("F"), None), GFP_KERNEL)?;
    let reg = ClientRegistration::new(ArcClient(rec.clone()))?;
    let driver = Driver::new(c_str!("hptest"))?;
    let d0 = driver.register_device(&desc(c_str!("hpfence%d")), no_hw()?)?;
    let _d1 = driver.register_device(&desc(c_str!("hpfence%d")), no_hw()?)?;
    let _d2 = driver.register_device(&desc(c_str!("hpfence%d")), no_hw()?)?;
    driver.unregister_device_queued(&d0);
    drop(driver);
    let gone = device::get_by_name(c_str!("hpfence0")).is_none()
        && device::get_by_name(c_str!("hpfence1")).is_none()
        && device::get_by_name(c_str!("hpfence2")).is_none();
    let counts = (
        rec.adds.load(Ordering::Relaxed),
        rec.removes.load(Ordering::Relaxed),
    );
    drop(reg);
    check(gone, "no device of the driver left")?;
    check(counts == (3, 3), "three adds and three removes")?;
    check(
        d0.query_device().is_err(),
        "verbs on an unregistered device fail",
    )
}

fn bad_descriptions_are_rejected() -> Result {
    let driver = Driver::new(c_str!("hptest"))?;
    let bad = [
        DeviceDesc {
            port_count: 0,
            ..desc(c_str!("hpbad%d"))
        },
        DeviceDesc {
            port_count: 256,
            ..desc(c_str!("hpbad%d"))
        },
        DeviceDesc {
            gid_tbl_len: 0,
            ..desc(c_str!("hpbad%d"))
        },
        DeviceDesc {
            pkey_tbl_len: 100_000,
            ..desc(c_str!("hpbad%d"))
        },
        desc(c_str!("")),
        desc(c_str!("hp/bad%d")),
        desc(c_str!("hp%dbad%d")),
        desc(c_str!(
            "a_name_that_is_far_too_long_for_an_rdma_device_name_whose_limit_is_63_bytes_%d"
        )),
    ];
    for (i, d) in bad.iter().enumerate() {
        if driver.register_device(d, no_hw()?).is_ok() {
            pr_err!("bad description {} was accepted\n", i);
            return Err(EINVAL);
        }
    }
    let fixed = driver.register_device(&desc(c_str!("hpfixed")), no_hw()?)?;
    let again = driver.register_device(&desc(c_str!("hpfixed")), no_hw()?);
    check(
        matches!(again, Err(e) if e == EEXIST),
        "a taken fixed name is EEXIST",
    )?;
    check(fixed.name().as_bytes() == b"hpfixed", "fixed name kept")
}

/// Records GID change events.
#[pin_data]
struct GidEvents {
    #[pin]
    ports: Mutex<KVec<u32>>,
}

impl EventHandler for GidEvents {
    fn handle(&self, _dev: &Device, event: &Event) {
        if let (EventKind::GidChange, Element::Port(p)) = (event.kind, event.element) {
            let _ = self.ports.lock().push(p, GFP_KERNEL);
        }
    }
}

fn ports_and_tables() -> Result {
    let driver = Driver::new(c_str!("hptest"))?;
    let dev = driver.register_device(&desc(c_str!("hpport%d")), no_hw()?)?;
    check(
        dev.port_count() == 2 && dev.node_type() == NodeType::Ca,
        "description kept",
    )?;
    let attr = dev.query_port(2)?;
    check(
        attr.state == PortState::Active && attr.gid_tbl_len == 8 && attr.pkey_tbl_len == 4,
        "query_port merges the provider's answer with the table sizes",
    )?;
    check(
        dev.query_port(0).is_err() && dev.query_port(3).is_err(),
        "bad ports are EINVAL",
    )?;
    check(dev.link_layer(1)? == LinkLayer::Ethernet, "link layer")?;

    let events = Arc::pin_init(
        pin_init!(GidEvents { ports <- new_mutex!(KVec::new()) }),
        GFP_KERNEL,
    )?;
    let reg = dev.register_event_handler(events.clone())?;
    let gid = Gid::from_ipv4([10, 77, 3, 1]);
    let entry = GidEntry {
        gid,
        gid_type: GidType::RoceV2,
        ifindex: 7,
    };
    check(dev.query_gid(1, 1).is_err(), "empty entries are EINVAL")?;
    dev.set_gid(2, 1, Some(entry))?;
    check(
        dev.query_gid(2, 1)? == entry,
        "query_gid reads what set_gid wrote",
    )?;
    check(
        dev.find_gid(&gid, GidType::RoceV2, 0)? == (2, 1),
        "find_gid finds it",
    )?;
    check(
        dev.find_gid(&gid, GidType::RoceV2, 7)? == (2, 1),
        "find_gid by netdev",
    )?;
    check(
        dev.find_gid(&gid, GidType::RoceV2, 8).is_err(),
        "other netdev: not found",
    )?;
    check(
        dev.find_gid(&gid, GidType::RoceV1, 0).is_err(),
        "other type: not found",
    )?;
    check(
        dev.set_gid(1, 8, Some(entry)).is_err(),
        "index past the table is EINVAL",
    )?;
    check(
        dev.set_gid(
            1,
            0,
            Some(GidEntry {
                gid: Gid::ZERO,
                ..entry
            }),
        )
        .is_err(),
        "the zero GID cannot be stored",
    )?;
    // Readable from hard IRQ context.
    let mut from_irq = None;
    testing::in_hardirq(&mut || from_irq = dev.query_gid(2, 1).ok());
    check(from_irq == Some(entry), "query_gid from hard IRQ")?;
    dev.set_gid(2, 1, None)?;
    check(dev.query_gid(2, 1).is_err(), "cleared entry is empty")?;

    dev.set_pkey(1, 0, 0xffff)?;
    dev.set_pkey(1, 2, 0x7fff)?;
    check(dev.query_pkey(1, 0)? == 0xffff, "query_pkey")?;
    check(
        dev.find_pkey(1, 0x7fff)? == 0,
        "find_pkey prefers the full member",
    )?;
    check(dev.find_pkey(1, 0x1234).is_err(), "unknown P_Key")?;
    check(dev.query_pkey(1, 4).is_err(), "P_Key index past the table")?;

    check(
        wait_until(5000, POLL_MS, || events.ports.lock().len() >= 2),
        "GID change events",
    )?;
    let ports_ok = events.ports.lock().iter().all(|p| *p == 2);
    drop(reg);
    driver.unregister_device(&dev);
    check(ports_ok, "GID change events name port 2")
}

/// A client for the every-order test: logs `client * 4 + device * 2 + sign`
/// codes (sign 0 = add, 1 = remove).
struct PermClient {
    index: u8,
    log: Arc<CodeLog>,
}

#[pin_data]
struct CodeLog {
    #[pin]
    codes: Mutex<KVec<u8>>,
}

/// Device index from the fixed names `hppermA` and `hppermB`.
fn perm_device_index(dev: &Device) -> u8 {
    u8::from(dev.name().as_bytes().last() == Some(&b'B'))
}

impl Client for PermClient {
    type Data = ();

    fn name(&self) -> &CStr {
        c_str!("perm")
    }

    fn add(&self, dev: &Arc<Device>) -> Result {
        if !dev.name().as_bytes().starts_with(b"hpperm") {
            return Ok(());
        }
        let code = self.index * 4 + perm_device_index(dev) * 2;
        self.log.codes.lock().push(code, GFP_KERNEL)?;
        Ok(())
    }

    fn remove(&self, dev: &Arc<Device>, _data: &()) {
        if !dev.name().as_bytes().starts_with(b"hpperm") {
            return;
        }
        let code = self.index * 4 + perm_device_index(dev) * 2 + 1;
        let _ = self.log.codes.lock().push(code, GFP_KERNEL);
    }
}

/// The live devices or clients of the model, in registration order.
#[derive(Default)]
struct Live {
    items: [u8; 2],
    len: usize,
}

impl Live {
    fn add(&mut self, x: u8) {
        self.items[self.len] = x;
        self.len += 1;
    }

    fn remove(&mut self, x: u8) {
        if let Some(at) = self.iter().position(|y| *y == x) {
            self.items[at..self.len].rotate_left(1);
            self.len -= 1;
        }
    }

    fn iter(&self) -> core::slice::Iter<'_, u8> {
        self.items[..self.len].iter()
    }
}

/// Rearranges `a` into the next permutation in lexicographic order; false
/// after the last one.
fn next_permutation(a: &mut [u8]) -> bool {
    let Some(i) = (1..a.len()).rev().find(|&i| a[i - 1] < a[i]) else {
        return false;
    };
    let j = (i..a.len()).rev().find(|&j| a[j] > a[i - 1]).unwrap_or(i);
    a.swap(i - 1, j);
    a[i..].reverse();
    true
}

/// Every interleaving of registering and unregistering two devices and two
/// clients (each registered before it is unregistered: 2520 orders) gives
/// exactly the callbacks of the model: `add` for each pair while both are
/// registered, clients in registration order; `remove` in reverse.
///
/// The two clients are the same to the core (one name, no data of their
/// own but the index their log codes carry), so an order and its mirror
/// with the clients' roles swapped make the same calls: only the 1260
/// orders that register client 0 first run, each order of calls once.
fn hotplug_in_every_order() -> Result {
    // Operations: 0/1 register/unregister device A, 2/3 device B, 4/5 client
    // 0, 6/7 client 1.
    let mut ops: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
    let log = Arc::pin_init(
        pin_init!(CodeLog { codes <- new_mutex!(KVec::new()) }),
        GFP_KERNEL,
    )?;
    let driver = Driver::new(c_str!("hptest"))?;
    let names = [c_str!("hppermA"), c_str!("hppermB")];
    let mut orders = 0u32;
    loop {
        let valid = (0..4).all(|k| {
            let r = ops.iter().position(|o| *o == 2 * k);
            let u = ops.iter().position(|o| *o == 2 * k + 1);
            r < u
        }) && ops.iter().position(|o| *o == 4) < ops.iter().position(|o| *o == 6);
        if valid {
            orders += 1;
            // The model: registration order of live devices and clients.
            let mut want: KVec<u8> = KVec::new();
            let mut devs = Live::default();
            let mut clis = Live::default();
            let mut dev_h: [Option<ProviderDevice>; 2] = [None, None];
            let mut cli_h: [Option<ClientRegistration<PermClient>>; 2] = [None, None];
            for op in ops {
                let (obj, unreg) = (op / 2, op % 2 == 1);
                if obj < 2 {
                    let d = obj;
                    if !unreg {
                        for c in clis.iter() {
                            want.push(c * 4 + d * 2, GFP_KERNEL)?;
                        }
                        devs.add(d);
                        let desc = DeviceDesc {
                            gid_tbl_len: 1,
                            pkey_tbl_len: 1,
                            port_count: 1,
                            ..desc(names[d as usize])
                        };
                        dev_h[d as usize] = Some(driver.register_device(&desc, no_hw()?)?);
                    } else {
                        for c in clis.iter().rev() {
                            want.push(c * 4 + d * 2 + 1, GFP_KERNEL)?;
                        }
                        devs.remove(d);
                        if let Some(h) = dev_h[d as usize].take() {
                            driver.unregister_device(&h);
                        }
                    }
                } else {
                    let c = obj - 2;
                    if !unreg {
                        for d in devs.iter() {
                            want.push(c * 4 + d * 2, GFP_KERNEL)?;
                        }
                        clis.add(c);
                        cli_h[c as usize] = Some(ClientRegistration::new(PermClient {
                            index: c,
                            log: log.clone(),
                        })?);
                    } else {
                        for d in devs.iter().rev() {
                            want.push(c * 4 + d * 2 + 1, GFP_KERNEL)?;
                        }
                        clis.remove(c);
                        drop(cli_h[c as usize].take());
                    }
                }
            }
            let mut got = log.codes.lock();
            if got.as_slice() != want.as_slice() {
                pr_err!(
                    "order {:?}: got {:?}, want {:?}\n",
                    ops,
                    &got[..],
                    &want[..]
                );
                return Err(EINVAL);
            }
            *got = KVec::new();
        }
        if !next_permutation(&mut ops) {
            break;
        }
    }
    check(orders == 1260, "all 1260 orders ran")
}

const CASES: &[FnCase<()>] = &[
    case!(order_fifo_add_lifo_remove),
    case!(client_data_is_typed_and_scoped),
    case!(lookup_by_name_and_list),
    case!(unregister_waits_for_usage_refs),
    case!(events_in_order_from_any_context),
    case!(concurrent_registration),
    case!(driver_fence_unregisters_everything),
    case!(bad_descriptions_are_rejected),
    case!(ports_and_tables),
    case!(hotplug_in_every_order),
];

struct HotplugTest;

impl kernel::Module for HotplugTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(HotplugTest)
    }
}
