// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events (`ib_dispatch_event`, `ib_register_event_handler`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A provider calls [`Device::dispatch_event`] from any context, hard IRQ
//! included: the event goes into a fixed ring (no allocation) under an
//! IRQ-safe spinlock, and the device's event work item is queued. The work
//! item delivers events to the registered handlers in process context, one
//! at a time and in dispatch order. A full ring drops the event and counts it
//! ([`Device::events_dropped`]).

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::workqueue;

use crate::device::Device;

/// The kind of an event (`enum ib_event_type`, same values).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A CQ overran or hit an error.
    CqErr = 0,
    /// A QP went to the error state because of a fatal error.
    QpFatal = 1,
    /// Invalid request on a QP.
    QpReqErr = 2,
    /// Access violation on a QP.
    QpAccessErr = 3,
    /// First packet received on a QP in RTR.
    CommEst = 4,
    /// The send queue of a QP in SQD drained.
    SqDrained = 5,
    /// Path migration completed.
    PathMig = 6,
    /// Path migration failed.
    PathMigErr = 7,
    /// The device failed; it is unusable.
    DeviceFatal = 8,
    /// A port became active.
    PortActive = 9,
    /// A port left the active state.
    PortErr = 10,
    /// A port's LID changed.
    LidChange = 11,
    /// A port's P_Key table changed.
    PkeyChange = 12,
    /// The subnet manager changed.
    SmChange = 13,
    /// An SRQ hit an error.
    SrqErr = 14,
    /// An SRQ fell below its limit.
    SrqLimitReached = 15,
    /// The last WQE of a QP attached to an SRQ was consumed.
    QpLastWqeReached = 16,
    /// The subnet manager asks clients to re-register.
    ClientReregister = 17,
    /// A port's GID table changed.
    GidChange = 18,
    /// A WQ hit a fatal error.
    WqFatal = 19,
}

/// What an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// The whole device.
    Device,
    /// A port, by number (from 1).
    Port(u32),
    /// A CQ, by the provider's identifier.
    Cq(u32),
    /// A QP, by number.
    Qp(u32),
    /// An SRQ, by the provider's identifier.
    Srq(u32),
    /// A WQ, by the provider's identifier.
    Wq(u32),
}

/// An asynchronous event (`struct ib_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// To what.
    pub element: Element,
}

/// Receives a device's asynchronous events, in process context, in order.
pub trait EventHandler: Send + Sync {
    /// Handles one event. It may sleep, but must not drop its own
    /// [`EventHandlerRegistration`].
    fn handle(&self, dev: &Device, event: &Event);
}

/// How many undelivered events a device holds before it drops new ones.
const QUEUE_LEN: usize = 64;

/// Events waiting for delivery (guarded by `Device::events`).
pub(crate) struct EventQueue {
    ring: [Option<Event>; QUEUE_LEN],
    head: usize,
    len: usize,
    dropped: u64,
    /// Set when the device is unregistered: nothing is queued any more.
    shut: bool,
}

impl EventQueue {
    pub(crate) fn new() -> Self {
        EventQueue {
            ring: [None; QUEUE_LEN],
            head: 0,
            len: 0,
            dropped: 0,
            shut: false,
        }
    }

    fn push(&mut self, event: Event) -> bool {
        if self.shut || self.len == QUEUE_LEN {
            self.dropped += u64::from(!self.shut);
            return false;
        }
        self.ring[(self.head + self.len) % QUEUE_LEN] = Some(event);
        self.len += 1;
        true
    }

    fn pop(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        let event = self.ring[self.head].take();
        self.head = (self.head + 1) % QUEUE_LEN;
        self.len -= 1;
        event
    }
}

/// Registered handlers of a device (guarded by `Device::handlers`).
pub(crate) struct Handlers {
    list: KVec<(u64, Arc<dyn EventHandler>)>,
    next_id: u64,
}

impl Handlers {
    pub(crate) fn new() -> Self {
        Handlers {
            list: KVec::new(),
            next_id: 0,
        }
    }
}

/// An event handler registration; the handler is called while this lives.
pub struct EventHandlerRegistration {
    dev: Arc<Device>,
    id: u64,
}

impl Drop for EventHandlerRegistration {
    fn drop(&mut self) {
        // Delivery holds the lock while handlers run: once it is ours, the
        // handler is not running and will not run again.
        let mut handlers = self.dev.handlers.lock();
        crate::kshim::vec::remove_first(&mut handlers.list, |(id, _)| *id == self.id);
    }
}

impl Device {
    /// Queues an event for delivery to the device's handlers. Callable from
    /// any context, hard IRQ included; never sleeps or allocates.
    pub(crate) fn dispatch_event(self: &Arc<Self>, event: Event) {
        if !self.events.lock().push(event) {
            return;
        }
        // Already queued is fine: the running or pending work sees the event.
        let _ = workqueue::system().enqueue::<Arc<Device>, 0>(self.clone());
    }

    /// How many events were dropped because the queue was full.
    pub fn events_dropped(&self) -> u64 {
        self.events.lock().dropped
    }

    /// Registers a handler for this device's events. Process context.
    pub fn register_event_handler(
        self: &Arc<Self>,
        handler: Arc<dyn EventHandler>,
    ) -> Result<EventHandlerRegistration> {
        crate::kshim::verb::might_sleep();
        let mut handlers = self.handlers.lock();
        let id = handlers.next_id;
        handlers.list.push((id, handler), GFP_KERNEL)?;
        handlers.next_id += 1;
        Ok(EventHandlerRegistration {
            dev: self.clone(),
            id,
        })
    }
}

/// Delivers queued events in order (the device's event work item).
pub(crate) fn deliver(dev: &Arc<Device>) {
    loop {
        let Some(event) = dev.events.lock().pop() else {
            return;
        };
        let handlers = dev.handlers.lock();
        for (_, h) in handlers.list.iter() {
            h.handle(dev, &event);
        }
    }
}

/// Stops event delivery for an unregistered device: queues nothing more and
/// waits for a delivery in progress.
pub(crate) fn shutdown(dev: &Device) {
    {
        let mut events = dev.events.lock();
        events.shut = true;
        while events.pop().is_some() {}
    }
    crate::kshim::work::flush(&dev.event_work);
}
