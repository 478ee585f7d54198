// SPDX-License-Identifier: GPL-2.0

//! Selftest: connections made by our rdma_cm between two guests, over
//! the virtual link (`selftests/multihost/cm.sh`).
//!
//! Guest 0 has our rxe `rxm` on eth0 (10.77.9.1) and guest 1 the kernel's
//! rxe on its eth0 (10.77.9.2), with `rping -s -S 100` listening on port
//! 7175. Each guest also has our rxe `rxv` on VLAN 7 of eth0 in namespace
//! mhv (10.77.10.1 and 10.77.10.2). The module's role follows the devices
//! it finds:
//!
//! - guest 0 (it has `rxm`): our rping client to the kernel's rxe in the
//!   other guest (`rping -s`), then to our rping server in the other guest
//!   over VLAN 7; five iterations each, the data compared;
//! - guest 1: our rping server on `rxv`, port 7174, which checks rping's
//!   pattern in every iteration it READs.
//!
//! The guests boot and set up in parallel: the client retries for up to
//! three minutes until each server answers.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::time;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{Ep, COUNT};

module! {
    type: RxeMultihostTest,
    name: "rdma_rxe_multihost_test",
    author: "rdma-rs developers",
    description: "Selftest: rdma_cm connections between two guests",
    license: "GPL",
}

/// Pings `dst` from device `dev` until a server answers (three minutes).
fn ping_until_up(dev: &kernel::str::CStr, dst: SockAddr) -> Result {
    let mut last = Ok(());
    for _ in 0..180 {
        let ep = Ep::new(dev)?;
        last = rping::ping(&ep, dst);
        if last.is_ok() {
            return Ok(());
        }
        drop(ep);
        time::msleep(1000);
    }
    last
}

fn is_guest0() -> bool {
    rdma::device::get_by_name(c_str!("rxm")).is_some()
}

/// Guest 0: our client to the kernel's rxe in the other guest.
fn ours_to_kernel_rxe_across_guests() -> Result {
    ping_until_up(
        c_str!("rxm"),
        SockAddr {
            ip: IpAddr::V4([10, 77, 9, 2]),
            port: 7175,
        },
    )
}

/// Guest 0: our client to our server in the other guest (VLAN 7).
fn ours_to_ours_across_guests() -> Result {
    ping_until_up(
        c_str!("rxv"),
        SockAddr {
            ip: IpAddr::V4([10, 77, 10, 2]),
            port: 7174,
        },
    )
}

/// Guest 1: our server for the client in the other guest.
fn serve_the_other_guest() -> Result {
    let ep = Ep::new(c_str!("rxv"))?;
    let done = rping::serve(&ep, 7174, 300)?;
    check(done == COUNT, "every iteration from the other guest")
}

/// Guest 0's cases: the clients.
const CLIENT: &[FnCase<()>] = &[
    case!("ours_to_kernel_rxe_across_guests", |()| {
        ours_to_kernel_rxe_across_guests()
    }),
    case!("ours_to_ours_across_guests", |()| {
        ours_to_ours_across_guests()
    }),
];

/// Guest 1's case: the server.
const SERVER: &[FnCase<()>] = &[case!("serve_the_other_guest", |()| {
    serve_the_other_guest()
})];

struct RxeMultihostTest;

impl kernel::Module for RxeMultihostTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(if is_guest0() { CLIENT } else { SERVER }, &mut ())?;
        Ok(RxeMultihostTest)
    }
}
