// SPDX-License-Identifier: GPL-2.0

//! Clients (ULPs) of the RDMA core: the `ib_client` model.
//!
//! A client implements [`Client`] and registers with
//! [`ClientRegistration::new`]. Then:
//!
//! - `add` runs for every registered device, and for every device registered
//!   later, in client registration order; what it returns is the client's
//!   data for that device ([`ClientRegistration::data`]);
//! - a failing `add` means no further callbacks for that (device, client);
//! - `remove` runs when a device the client was added to is unregistered
//!   (clients in reverse registration order) or when the client's
//!   registration is dropped; it runs with no core lock held and may sleep;
//!   the data is dropped after it returns unless the client kept a clone;
//! - when dropping the registration returns, no callback of the client runs
//!   any more.
//!
//! Callbacks run in process context.

use core::any::Any;
use core::marker::PhantomData;

use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::device::registry::{self, ClientEntry};
use crate::device::Device;

/// Callbacks of a client of the RDMA core.
pub trait Client: Send + Sync + 'static {
    /// What the client keeps per device (`ib_get_client_data`).
    type Data: Send + Sync + 'static;

    /// The client's name, for logs.
    fn name(&self) -> &CStr;

    /// A device appeared; the client may use it from now on.
    fn add(&self, dev: &Arc<Device>) -> Result<Self::Data>;

    /// A device the client was added to is going away; when this returns the
    /// client must be done with it.
    fn remove(&self, dev: &Arc<Device>, data: &Self::Data);
}

/// Client data as the core stores it, without its type.
pub(crate) type AnyData = Arc<dyn Any + Send + Sync>;

/// The type-erased view of a [`Client`] that the core keeps.
pub(crate) trait ClientOps: Send + Sync {
    fn name(&self) -> &CStr;
    fn add(&self, dev: &Arc<Device>) -> Result<AnyData>;
    fn remove(&self, dev: &Arc<Device>, data: &AnyData);
}

struct Adapter<C: Client>(C);

impl<C: Client> ClientOps for Adapter<C> {
    fn name(&self) -> &CStr {
        self.0.name()
    }

    fn add(&self, dev: &Arc<Device>) -> Result<AnyData> {
        let data = self.0.add(dev)?;
        Ok(Arc::new(data, GFP_KERNEL)?)
    }

    fn remove(&self, dev: &Arc<Device>, data: &AnyData) {
        if let Some(d) = data.downcast_ref::<C::Data>() {
            self.0.remove(dev, d);
        }
    }
}

/// A client registration: the client receives callbacks while this lives.
pub struct ClientRegistration<C: Client> {
    entry: Arc<ClientEntry>,
    _client: PhantomData<C>,
}

impl<C: Client> ClientRegistration<C> {
    /// Registers a client and calls its `add` for every registered device.
    /// Process context only.
    pub fn new(client: C) -> Result<Self> {
        crate::kshim::verb::might_sleep();
        let ops: Arc<dyn ClientOps> = Arc::new(Adapter(client), GFP_KERNEL)?;
        let entry = registry::get().register_client(ops)?;
        Ok(ClientRegistration {
            entry,
            _client: PhantomData,
        })
    }

    /// The client's data for `dev`, if the client was added to it and not
    /// yet removed from it (`ib_get_client_data`).
    pub fn data(&self, dev: &Device) -> Option<ClientData<C::Data>> {
        let data = registry::client_data(dev, &self.entry)?;
        // Cannot fail: the core stores what this client's `add` returned.
        data.downcast_ref::<C::Data>()?;
        Some(ClientData {
            data,
            _type: PhantomData,
        })
    }
}

impl<C: Client> Drop for ClientRegistration<C> {
    fn drop(&mut self) {
        registry::get().unregister_client(&self.entry);
    }
}

/// A client's data for one device, as [`ClientRegistration::data`] gives it.
pub struct ClientData<T: 'static> {
    data: AnyData,
    _type: PhantomData<T>,
}

impl<T: 'static> core::ops::Deref for ClientData<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // INVARIANT: `ClientRegistration::data` checked the type when it
        // built this, and the data is immutable behind the `Arc`.
        match self.data.downcast_ref::<T>() {
            Some(t) => t,
            None => unreachable!(),
        }
    }
}
