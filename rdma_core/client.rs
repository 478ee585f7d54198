// SPDX-License-Identifier: GPL-2.0

//! Clients (ULPs) of the RDMA core: the `ib_client` model.
//!
//! A client implements [`Client`] and registers with
//! [`ClientRegistration::new`]. Its `add` is called for every registered
//! device and every device registered later; `remove` for each device it was
//! added to when that device goes away or the client unregisters. A failing
//! `add` means no `remove` for that pair.

use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::device::Device;
use crate::registry;

/// Callbacks of a client of the RDMA core. Called in process context.
pub trait Client: Send + Sync {
    /// The client's name, for logs.
    fn name(&self) -> &CStr;

    /// A device appeared; the client may use it from now on.
    fn add(&self, dev: &Arc<Device>) -> Result;

    /// A device the client was added to is going away; when this returns the
    /// client must be done with it.
    fn remove(&self, dev: &Arc<Device>);
}

/// A client registration: the client receives callbacks while this lives.
pub struct ClientRegistration {
    client: Arc<dyn Client>,
}

impl ClientRegistration {
    /// Registers a client and calls its `add` for every registered device.
    /// Process context only.
    pub fn new(client: Arc<dyn Client>) -> Result<Self> {
        crate::might_sleep();
        registry::get().register_client(client.clone())?;
        Ok(ClientRegistration { client })
    }
}

impl Drop for ClientRegistration {
    fn drop(&mut self) {
        registry::get().unregister_client(&self.client);
    }
}
