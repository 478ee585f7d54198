// SPDX-License-Identifier: GPL-2.0

//! Cross-module selftest: this module calls `rdma_core`'s exported Rust API,
//! and `rdma_core` calls back into this module through trait objects
//! (`DeviceOps` of a test device, `Client` of test clients).
//!
//! Also checks the order of the client callbacks and the crate's
//! bindgen-backed `NetDevice` lookup.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::c_str;
use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::device::client::{Client, ClientRegistration};
use rdma::device::driver::Driver;
use rdma::device::port::PortAttr;
use rdma::device::{Device, DeviceAttr, DeviceDesc, DeviceOps, ProviderDevice};
use rdma::kshim::net::NetDevice;
use rdma::spec::attr::{LinkLayer, Mtu, NodeType};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

module! {
    type: XmodTest,
    name: "rdma_xmod_test",
    author: "rdma-rs developers",
    description: "Selftest: cross-module Rust API of rdma_core",
    license: "GPL",
}

const GUID: u64 = 0x0002_c903_00aa_bb01;

const DESC: DeviceDesc<'static> = DeviceDesc {
    name_template: c_str!("xmodtest%d"),
    node_type: NodeType::Ca,
    node_guid: GUID,
    port_count: 1,
    link_layer: LinkLayer::Ethernet,
    gid_tbl_len: 16,
    pkey_tbl_len: 1,
};

/// A provider's device operations, implemented in this module.
struct TestOps {
    calls: AtomicU32,
}

impl DeviceOps for TestOps {
    fn query_device(&self) -> Result<DeviceAttr> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(DeviceAttr {
            node_guid: GUID,
            fw_ver: 7,
            max_qp: 64,
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::down(Mtu::Mtu1024))
    }
}

/// The callbacks all clients saw, in order, as `"<client><+|-><device>"`.
#[pin_data]
struct Log {
    #[pin]
    events: Mutex<KVec<CString>>,
}

impl Log {
    fn record(&self, client: &CStr, sign: char, dev: &CStr) {
        if let Ok(s) = CString::try_from_fmt(kernel::fmt!("{}{}{}", client, sign, dev)) {
            let _ = self.events.lock().push(s, GFP_KERNEL);
        }
    }

    /// Checks the events since the last call against `want`, then forgets them.
    fn expect(&self, want: &[&str]) -> Result {
        let mut events = self.events.lock();
        let got: KVec<&str> = {
            let mut v = KVec::new();
            for e in events.iter() {
                v.push(e.to_str().map_err(|_| EINVAL)?, GFP_KERNEL)?;
            }
            v
        };
        let same = got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g == w);
        if !same {
            pr_err!("events: got {:?}, want {:?}\n", &got[..], want);
        }
        drop(got);
        *events = KVec::new();
        check(same, "client callback sequence")
    }
}

/// Whether `dev` is one of this test's devices (others may be registered).
fn ours(dev: &Device) -> bool {
    dev.name().as_bytes().starts_with(b"xmodtest")
}

/// A client that records its callbacks, and optionally fails `add`.
struct Recorder {
    name: &'static CStr,
    log: Arc<Log>,
    fail_add: bool,
}

impl Client for Recorder {
    type Data = ();

    fn name(&self) -> &CStr {
        self.name
    }

    fn add(&self, dev: &Arc<Device>) -> Result {
        if !ours(dev) {
            return Ok(());
        }
        self.log
            .record(self.name, if self.fail_add { '!' } else { '+' }, dev.name());
        if self.fail_add {
            Err(EINVAL)
        } else {
            Ok(())
        }
    }

    fn remove(&self, dev: &Arc<Device>, _data: &()) {
        if !ours(dev) {
            return;
        }
        self.log.record(self.name, '-', dev.name());
    }
}

fn client(
    name: &'static CStr,
    log: &Arc<Log>,
    fail_add: bool,
) -> Result<ClientRegistration<Recorder>> {
    ClientRegistration::new(Recorder {
        name,
        log: log.clone(),
        fail_add,
    })
}

/// What the cases build and tear down, one step each.
struct Steps {
    log: Arc<Log>,
    ops: Arc<TestOps>,
    driver: Option<Pin<KBox<Driver>>>,
    dev0: Option<ProviderDevice>,
    dev1: Option<ProviderDevice>,
    a: Option<ClientRegistration<Recorder>>,
    b: Option<ClientRegistration<Recorder>>,
    c: Option<ClientRegistration<Recorder>>,
}

impl Steps {
    fn new() -> Result<Steps> {
        Ok(Steps {
            log: Arc::pin_init(
                pin_init!(Log { events <- new_mutex!(KVec::new()) }),
                GFP_KERNEL,
            )?,
            ops: Arc::new(
                TestOps {
                    calls: AtomicU32::new(0),
                },
                GFP_KERNEL,
            )?,
            driver: None,
            dev0: None,
            dev1: None,
            a: None,
            b: None,
            c: None,
        })
    }

    fn driver(&self) -> Result<&Driver> {
        self.driver.as_deref().ok_or(ENODEV)
    }
}

fn device_register_calls_client_add(s: &mut Steps) -> Result {
    s.a = Some(client(c_str!("A"), &s.log, false)?);
    s.driver = Some(Driver::new(c_str!("xmodtest"))?);
    s.dev0 = Some(s.driver()?.register_device(&DESC, s.ops.clone())?);
    s.log.expect(&["A+xmodtest0"])
}

fn core_calls_provider_ops(s: &mut Steps) -> Result {
    let dev0 = s.dev0.as_ref().ok_or(ENODEV)?;
    // Registration read the attributes once (the core caches them).
    let before = s.ops.calls.load(Ordering::Relaxed);
    let attr = dev0.query_device();
    check(
        matches!(
            attr,
            Ok(DeviceAttr {
                node_guid: GUID,
                fw_ver: 7,
                max_qp: 64,
                ..
            })
        ) && s.ops.calls.load(Ordering::Relaxed) == before + 1
            && dev0.attr().max_qp == 64,
        "query_device through the core reaches TestOps",
    )
}

fn client_register_adds_existing_devices(s: &mut Steps) -> Result {
    s.b = Some(client(c_str!("B"), &s.log, false)?);
    s.log.expect(&["B+xmodtest0"])
}

fn name_template_and_add_order(s: &mut Steps) -> Result {
    let dev1 = s.driver()?.register_device(&DESC, s.ops.clone())?;
    let named = dev1.name().as_bytes() == b"xmodtest1";
    s.dev1 = Some(dev1);
    s.log
        .expect(&["A+xmodtest1", "B+xmodtest1"])
        .and(check(named, "second device is xmodtest1"))
}

fn failing_add_is_reported(s: &mut Steps) -> Result {
    s.c = Some(client(c_str!("C"), &s.log, true)?);
    s.log.expect(&["C!xmodtest0", "C!xmodtest1"])
}

fn device_unregister_removes_in_reverse(s: &mut Steps) -> Result {
    s.driver()?
        .unregister_device(s.dev1.as_ref().ok_or(ENODEV)?);
    s.log.expect(&["B-xmodtest1", "A-xmodtest1"])
}

fn failed_pair_gets_no_remove(s: &mut Steps) -> Result {
    drop(s.c.take());
    s.log.expect(&[])
}

fn client_unregister_removes(s: &mut Steps) -> Result {
    drop(s.a.take());
    drop(s.b.take());
    let driver = s.driver.take().ok_or(ENODEV)?;
    driver.unregister_device(s.dev0.as_ref().ok_or(ENODEV)?);
    drop(driver);
    s.log.expect(&["A-xmodtest0", "B-xmodtest0"])
}

fn netdev_lookup_through_bindgen() -> Result {
    let lo = NetDevice::get_by_name(c_str!("lo"));
    check(
        matches!(&lo, Ok(d) if d.name().as_bytes() == b"lo" && d.ifindex() == 1 && d.mtu() == 65536),
        "lo is ifindex 1 with MTU 65536",
    )
}

fn netdev_lookup_unknown_is_enodev() -> Result {
    check(
        matches!(NetDevice::get_by_name(c_str!("nosuchdev9")), Err(e) if e == ENODEV),
        "unknown name gives ENODEV",
    )
}

const CASES: &[FnCase<Steps>] = &[
    case!(device_register_calls_client_add(_)),
    case!(core_calls_provider_ops(_)),
    case!(client_register_adds_existing_devices(_)),
    case!(name_template_and_add_order(_)),
    case!(failing_add_is_reported(_)),
    case!(device_unregister_removes_in_reverse(_)),
    case!(failed_pair_gets_no_remove(_)),
    case!(client_unregister_removes(_)),
    case!(netdev_lookup_through_bindgen),
    case!(netdev_lookup_unknown_is_enodev),
];

struct XmodTest;

impl kernel::Module for XmodTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut Steps::new()?)?;
        Ok(XmodTest)
    }
}
