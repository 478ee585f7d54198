// SPDX-License-Identifier: GPL-2.0

//! Selftest of `rdma::device::sysfs::register_ib_view`: holds the
//! `/sys/class/infiniband` view of our devices while loaded, as the uverbs
//! module will. Loading fails as the registration does (`EEXIST` while the
//! C stack's ib_core is loaded); unloading drops the view.

#![forbid(unsafe_code)]

use kernel::prelude::*;

use rdma::device::sysfs::{register_ib_view, IbView};

module! {
    type: IbViewTest,
    name: "rdma_ib_view_test",
    author: "rdma-rs developers",
    description: "Selftest: holds the /sys/class/infiniband view while loaded",
    license: "GPL",
}

struct IbViewTest {
    _view: IbView,
}

impl kernel::Module for IbViewTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(IbViewTest {
            _view: register_ib_view()?,
        })
    }
}
