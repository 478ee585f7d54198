// SPDX-License-Identifier: GPL-2.0

//! Fault injection on a device's packets, for tests: the configfs item's
//! `fault` file sets a [`FaultSpec`] (see `wire/src/fault.rs` for its
//! language and the decisions), and the send and receive paths ask
//! [`FaultInjector::tx`] and [`FaultInjector::rx`] what to do with each
//! packet. Everything done is counted (`fault_*` counters).
//!
//! A reordered packet is copied and held until the next packet in the same
//! direction has gone; a held packet is given up when the spec changes or
//! the device goes. Held packets are sent or delivered after the lock is
//! released, so the loopback path may re-enter (an ACK sent back while a
//! request is delivered) without deadlock.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::prelude::*;

use rdma::provider::sync::SpinLockIrq;

use crate::counters::{Counter, Counters};
use crate::wire::fault::{Action, Dir, FaultSpec, Faults};

/// Where the bytes after the IP and UDP headers start in `frame`.
fn transport_offset(frame: &[u8]) -> usize {
    let ip = match frame.first().map(|b| b >> 4) {
        Some(6) => 40,
        _ => 20,
    };
    ip + 8
}

/// Flips one byte of the transport part of `frame` (so its ICRC fails).
fn corrupt(frame: &mut [u8], offset: u32, xor: u8) {
    let start = transport_offset(frame);
    if frame.len() > start {
        let at = start + offset as usize % (frame.len() - start);
        frame[at] ^= xor;
    }
}

struct Inner {
    faults: Faults,
    /// A packet held back, by direction.
    held: [Option<KVec<u8>>; 2],
}

/// A device's faults.
#[pin_data]
pub(crate) struct FaultInjector {
    /// Whether a spec is in force or a packet is held: the packet paths
    /// take the lock only then.
    active: AtomicBool,
    #[pin]
    inner: SpinLockIrq<Inner>,
}

/// What the send or receive path does with one packet.
pub(crate) enum Verdict {
    /// Goes on, unchanged.
    Pass,
    /// Lost.
    Drop,
    /// Goes on twice.
    Dup,
    /// Held back; an older held packet, if any, goes in its place.
    Hold(Option<KVec<u8>>),
    /// Goes on as these bytes.
    Changed(KVec<u8>),
}

impl Verdict {
    /// Whether the packet went on, so a held one may follow it.
    pub(crate) fn went(&self) -> bool {
        !matches!(self, Verdict::Drop | Verdict::Hold(_))
    }
}

impl FaultInjector {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(FaultInjector {
            active: AtomicBool::new(false),
            inner <- rdma::provider::new_spinlock_irq!(
                Inner { faults: Faults::default(), held: [None, None] },
                "FaultInjector::inner"
            ),
        })
    }

    /// Puts `spec` in force (from its seed, nothing seen), giving up any
    /// held packet.
    pub(crate) fn set(&self, spec: FaultSpec) {
        let mut inner = self.inner.lock();
        inner.faults = Faults::new(spec);
        inner.held = [None, None];
        self.active.store(spec.is_active(), Ordering::Release);
    }

    /// The spec in force, as `fault` shows it.
    pub(crate) fn write(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        let inner = self.inner.lock();
        writeln!(out, "{}", inner.faults.spec())?;
        writeln!(out, "hits_pending {}", inner.faults.hits_pending())
    }

    /// Decides what happens to `frame`, a packet going in direction `dir`
    /// with BTH PSN `psn`.
    fn decide(&self, c: &Counters, dir: Dir, psn: u32, frame: &[u8]) -> Verdict {
        if !self.active.load(Ordering::Acquire) {
            return Verdict::Pass;
        }
        let pick = |t: Counter, r: Counter| if dir == Dir::Tx { t } else { r };
        let action = self.inner.lock().faults.decide(dir, Some(psn));
        match action {
            Action::Pass => Verdict::Pass,
            Action::Drop => {
                c.inc(pick(Counter::FaultTxDrop, Counter::FaultRxDrop));
                Verdict::Drop
            }
            Action::Dup => {
                c.inc(pick(Counter::FaultTxDup, Counter::FaultRxDup));
                Verdict::Dup
            }
            Action::Reorder => {
                let mut copy = KVec::new();
                if copy.extend_from_slice(frame, GFP_ATOMIC).is_err() {
                    return Verdict::Pass;
                }
                c.inc(pick(Counter::FaultTxReorder, Counter::FaultRxReorder));
                Verdict::Hold(self.inner.lock().held[dir as usize].replace(copy))
            }
            Action::Corrupt { offset, xor } => {
                let mut copy = KVec::new();
                if copy.extend_from_slice(frame, GFP_ATOMIC).is_err() {
                    return Verdict::Pass;
                }
                corrupt(&mut copy, offset, xor);
                c.inc(pick(Counter::FaultTxCorrupt, Counter::FaultRxCorrupt));
                Verdict::Changed(copy)
            }
        }
    }

    /// What happens to a packet the device sends.
    pub(crate) fn tx(&self, c: &Counters, psn: u32, frame: &[u8]) -> Verdict {
        self.decide(c, Dir::Tx, psn, frame)
    }

    /// What happens to a packet the device receives.
    pub(crate) fn rx(&self, c: &Counters, psn: u32, frame: &[u8]) -> Verdict {
        self.decide(c, Dir::Rx, psn, frame)
    }

    /// Whether a fault is armed: packets must then go as frames, which is
    /// what faults act on.
    pub(crate) fn armed(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The packet held back in direction `dir`, now that another one went.
    pub(crate) fn release(&self, dir: Dir) -> Option<KVec<u8>> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        self.inner.lock().held[dir as usize].take()
    }
}
