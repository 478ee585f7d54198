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
use rdma::device::{Device, DeviceAttr, DeviceDesc, DeviceOps};
use rdma::kshim::net::NetDevice;
use rdma::spec::attr::{LinkLayer, Mtu, NodeType};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{check, Ktap};

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

fn run(t: &mut Ktap) -> Result {
    let log = Arc::pin_init(
        pin_init!(Log { events <- new_mutex!(KVec::new()) }),
        GFP_KERNEL,
    )?;
    let ops = Arc::new(
        TestOps {
            calls: AtomicU32::new(0),
        },
        GFP_KERNEL,
    )?;

    let a = client(c_str!("A"), &log, false)?;
    let driver = Driver::new(c_str!("xmodtest"))?;
    let dev0 = driver.register_device(&DESC, ops.clone())?;
    t.case(
        "device_register_calls_client_add",
        log.expect(&["A+xmodtest0"]),
    );

    // Registration read the attributes once (the core caches them).
    let before = ops.calls.load(Ordering::Relaxed);
    let attr = dev0.query_device();
    t.case(
        "core_calls_provider_ops",
        check(
            matches!(
                attr,
                Ok(DeviceAttr {
                    node_guid: GUID,
                    fw_ver: 7,
                    max_qp: 64,
                    ..
                })
            ) && ops.calls.load(Ordering::Relaxed) == before + 1
                && dev0.attr().max_qp == 64,
            "query_device through the core reaches TestOps",
        ),
    );

    let b = client(c_str!("B"), &log, false)?;
    t.case(
        "client_register_adds_existing_devices",
        log.expect(&["B+xmodtest0"]),
    );

    let dev1 = driver.register_device(&DESC, ops.clone())?;
    t.case(
        "name_template_and_add_order",
        log.expect(&["A+xmodtest1", "B+xmodtest1"]).and(check(
            dev1.name().as_bytes() == b"xmodtest1",
            "second device is xmodtest1",
        )),
    );

    let c = client(c_str!("C"), &log, true)?;
    t.case(
        "failing_add_is_reported",
        log.expect(&["C!xmodtest0", "C!xmodtest1"]),
    );

    driver.unregister_device(&dev1);
    t.case(
        "device_unregister_removes_in_reverse",
        log.expect(&["B-xmodtest1", "A-xmodtest1"]),
    );

    drop(c);
    t.case("failed_pair_gets_no_remove", log.expect(&[]));

    drop(a);
    drop(b);
    driver.unregister_device(&dev0);
    drop(driver);
    t.case(
        "client_unregister_removes",
        log.expect(&["A-xmodtest0", "B-xmodtest0"]),
    );

    let lo = NetDevice::get_by_name(c_str!("lo"));
    t.case(
        "netdev_lookup_through_bindgen",
        check(
            matches!(&lo, Ok(d) if d.name().as_bytes() == b"lo" && d.ifindex() == 1 && d.mtu() == 65536),
            "lo is ifindex 1 with MTU 65536",
        ),
    );
    drop(lo);
    t.case(
        "netdev_lookup_unknown_is_enodev",
        check(
            matches!(NetDevice::get_by_name(c_str!("nosuchdev9")), Err(e) if e == ENODEV),
            "unknown name gives ENODEV",
        ),
    );
    Ok(())
}

struct XmodTest;

impl kernel::Module for XmodTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut t = Ktap::new(10);
        run(&mut t)?;
        t.finish()?;
        Ok(XmodTest)
    }
}
