// SPDX-License-Identifier: GPL-2.0

//! The rdma_cm's internal client (`ib_client`): on a device's removal, the
//! `DeviceRemoval` event to each id on it, a bounded wait for the handlers
//! to see it, then the ids let go of the device's QP and connection. And
//! the rdma_cm's module init and exit.

use kernel::c_str;
use kernel::prelude::*;
use kernel::rbtree::RBTree;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc};

use super::event::{CmEvent, EventKind};
use super::id::{CmIdCore, Ids, IDS};
use crate::device::client::{Client, ClientRegistration};
use crate::device::Device;
use crate::kshim::global::Global;

impl CmIdCore {
    /// The device goes: tell the handler, then let go of it.
    fn device_removal(self: &Arc<Self>) {
        self.post(CmEvent::new(EventKind::DeviceRemoval, 0));
    }

    /// After the handler saw DeviceRemoval (or never will): the QP and
    /// connection go; the id stays, unusable.
    fn release_device(self: &Arc<Self>) {
        self.leave_all_multicast();
        let (conn, qp, sidr) = {
            let mut st = self.st.lock();
            Self::qp_to_err(&st);
            st.bound = None;
            (
                st.conn.take(),
                st.qp.take(),
                (st.sidr.take(), st.sidr_req.take()),
            )
        };
        drop(sidr);
        if let Some(c) = conn {
            c.set_user(None);
            c.destroy();
        }
        drop(qp);
    }

    /// Whether the id is on `dev` for `rdma res`: bound to it, or to an
    /// address of it.
    fn counts_on(&self, dev: &Device) -> bool {
        self.bound_device()
            .is_some_and(|(d, _)| core::ptr::eq(&*d, dev))
    }

    /// Whether the id is bound to `dev`.
    fn on_device(&self, dev: &Device) -> bool {
        self.st
            .lock()
            .bound
            .as_ref()
            .is_some_and(|b| core::ptr::eq(&*b.dev, dev))
    }
}

/// How long device removal waits for each id's handler to see the
/// `DeviceRemoval` event.
const REMOVAL_WAIT_MS: u32 = 5000;

/// How many live ids are on `dev` (the `cm_id` row of `rdma res`): bound
/// to it, or to an address of it (a listener's).
/// Process context.
pub fn ids_on(dev: &Device) -> usize {
    IDS.get().map_or(0, |ids| {
        ids.list
            .lock()
            .iter()
            .filter(|(_, i)| i.counts_on(dev))
            .count()
    })
}

/// The rdma_cm's internal client: device removal.
struct CmaClient;

impl Client for CmaClient {
    type Data = ();

    fn name(&self) -> &CStr {
        c_str!("rdma_cm")
    }

    fn add(&self, _dev: &Arc<Device>) -> Result<()> {
        Ok(())
    }

    fn remove(&self, dev: &Arc<Device>, _data: &()) {
        let Some(ids) = IDS.get() else { return };
        let on_dev: KVec<Arc<CmIdCore>> = {
            let list = ids.list.lock();
            let mut v = KVec::new();
            for (_, i) in list.iter() {
                if i.on_device(dev) {
                    let _ = v.push(i.clone(), GFP_KERNEL);
                }
            }
            v
        };
        for i in on_dev.iter() {
            i.device_removal();
        }
        // Let each handler see the event (bounded: a handler that blocks
        // does not hold the device forever), then let go of the device.
        for i in on_dev.iter() {
            i.wait_idle(REMOVAL_WAIT_MS);
            i.release_device();
        }
    }
}

/// Held while the module is loaded; unregisters when dropped.
struct Registration {
    _reg: ClientRegistration<CmaClient>,
}

static CMA: Global<Registration> = Global::new();

/// Sets up the rdma_cm (module init, after the CM).
pub(crate) fn init() -> Result {
    IDS.replace(Some(Arc::pin_init(
        pin_init!(Ids {
            list <- new_mutex!(RBTree::new(), "cma::IDS"),
        }),
        GFP_KERNEL,
    )?));
    let reg = ClientRegistration::new(CmaClient)?;
    CMA.replace(Some(Arc::new(Registration { _reg: reg }, GFP_KERNEL)?));
    Ok(())
}

/// Tears it down (module exit).
pub(crate) fn exit() {
    drop(CMA.replace(None));
    drop(IDS.replace(None));
}
