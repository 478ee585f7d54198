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
//!
//! This file is the configfs front end only: it parses what is written and
//! formats what is read; the items and their devices are the registry's
//! (`registry.rs`).

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use rdma::provider::{
    configfs::{Group, Item},
    sysfs::Page,
};

use crate::registry::{Rxe, RxeItem};
use crate::wire::fault::FaultSpec;

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
        let r = match attr {
            ATTR_NETDEV => match &self.netdev() {
                Some(n) => writeln!(out, "{}", n.name().to_str().unwrap_or("?")),
                None => Ok(()),
            },
            ATTR_ENABLE => writeln!(out, "{}", u8::from(self.device().is_some())),
            ATTR_IBDEV => match self.device().and_then(|r| r.device()) {
                Some(d) => writeln!(out, "{}", d.name().to_str().unwrap_or("?")),
                None => Ok(()),
            },
            ATTR_COUNTERS => match &self.device() {
                Some(rd) => rd.write_counters(out),
                None => Ok(()),
            },
            ATTR_FAULT => match &self.device() {
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
            ATTR_NETDEV => self.set_netdev(text),
            ATTR_ENABLE => {
                let on = match text {
                    b"1" => true,
                    b"0" => false,
                    _ => return Err(EINVAL),
                };
                self.set_enabled(on)
            }
            ATTR_FAULT => {
                let text = core::str::from_utf8(text).map_err(|_| EINVAL)?;
                let spec = FaultSpec::parse(text).map_err(|_| EINVAL)?;
                self.set_fault(spec)
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
        let item: Arc<dyn Item> = self.0.new_item(name)?;
        Ok(item)
    }

    fn drop_item(&self, item: &Arc<dyn Item>) {
        // Find ours by address: the configfs item is one of the registry's.
        let target = core::ptr::from_ref::<dyn Item>(&**item).cast::<u8>();
        self.0.remove_item(target);
    }
}
