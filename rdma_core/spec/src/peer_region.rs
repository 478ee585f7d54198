// SPDX-License-Identifier: GPL-2.0

//! The life of a memory region built on a peer memory client's memory
//! (Peer-Direct), as the broker (`peer_mem`) drives it: which of the
//! client's callbacks each event leads to, and in what order.
//!
//! A region is *building* from the client's `acquire` until its pages are
//! mapped; an invalidation by the client meanwhile is remembered and takes
//! effect as soon as the region is built. A *live* region's memory is in
//! use. The client's invalidation closes the memory region's gate (no
//! access after it) and gives the pages back (`dma_unmap`, `put_pages`),
//! unless the client unmaps its memory itself (`PEER_MEM_INVALIDATE_UNMAPS`):
//! then the core keeps the pages only to drop them, without a callback. The
//! region's release (its memory region deregistered, or the client
//! unregistered) gives back what is left and then the context (`release`).
//!
//! Sans-IO: [`step`] maps a phase and an event to the next phase and the
//! [`Actions`] to take, which the broker carries out in the order the
//! fields of [`Actions`] are listed.

/// Where a region is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Between `acquire` and the end of `dma_map`; `pending`: the client
    /// invalidated it meanwhile.
    Building {
        /// An invalidation came before the region was built.
        pending: bool,
    },
    /// Built: the pages are in use.
    Live,
    /// The client invalidated it; `kept`: its pages are kept, to be
    /// dropped without a callback (a client that unmaps itself).
    Invalidated {
        /// The pages were not given back to the client.
        kept: bool,
    },
    /// Released: nothing is left.
    Gone,
}

/// What happens to a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `get_pages` and `dma_map` succeeded.
    Built,
    /// The client invalidated the region.
    ClientInvalidate,
    /// Its memory region is deregistered (or the device that holds it is
    /// removed), or the client unregisters.
    Release,
}

/// What the broker does for a step, in the order of the fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    /// Close the memory region's gate: no access reaches the memory when
    /// this is done.
    pub close_gate: bool,
    /// Give the pages back: `dma_unmap`, then `put_pages`.
    pub unmap: bool,
    /// Count the region's pages and bytes as given back.
    pub count_unpinned: bool,
    /// Give the context back: `release`.
    pub release: bool,
    /// Drop the pages kept for a client that unmapped itself (after
    /// `release`, which may still look at them; no callback).
    pub drop_kept: bool,
    /// Count the region as released.
    pub count_dealloc: bool,
}

/// The next phase of a region in `phase` on `event`, and what to do;
/// `client_unmaps`: the client unmaps its memory itself when it
/// invalidates.
pub fn step(phase: Phase, event: Event, client_unmaps: bool) -> (Phase, Actions) {
    let none = Actions::default();
    match (phase, event) {
        (Phase::Building { pending: false }, Event::Built) => (Phase::Live, none),
        (Phase::Building { pending: true }, Event::Built) => {
            step(Phase::Live, Event::ClientInvalidate, client_unmaps)
        }
        (Phase::Building { .. }, Event::ClientInvalidate) => {
            (Phase::Building { pending: true }, none)
        }
        // The builder still holds what it made: it releases the region
        // itself once it is built (the unregistration told it so).
        (Phase::Building { pending }, Event::Release) => (Phase::Building { pending }, none),
        (Phase::Live, Event::ClientInvalidate) => (
            Phase::Invalidated {
                kept: client_unmaps,
            },
            Actions {
                close_gate: true,
                unmap: !client_unmaps,
                count_unpinned: true,
                ..none
            },
        ),
        (Phase::Live, Event::Release) => (
            Phase::Gone,
            Actions {
                close_gate: true,
                unmap: true,
                count_unpinned: true,
                release: true,
                count_dealloc: true,
                ..none
            },
        ),
        (Phase::Invalidated { kept }, Event::Release) => (
            Phase::Gone,
            Actions {
                release: true,
                drop_kept: kept,
                count_dealloc: true,
                ..none
            },
        ),
        (Phase::Invalidated { kept }, _) => (Phase::Invalidated { kept }, none),
        (Phase::Live, Event::Built) => (Phase::Live, none),
        (Phase::Gone, _) => (Phase::Gone, none),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENTS: [Event; 3] = [Event::Built, Event::ClientInvalidate, Event::Release];

    /// What a sequence of events did, summed over its steps.
    #[derive(Default, Debug)]
    struct Tally {
        unmaps: u32,
        drops: u32,
        releases: u32,
        gate_closed: bool,
        unmap_before_gate: bool,
        unmap_after_client_inval: bool,
        unpinned: u32,
        dealloc: u32,
    }

    fn run(events: &[Event], unmaps: bool) -> (Phase, Tally) {
        let mut p = Phase::Building { pending: false };
        let mut t = Tally::default();
        let mut client_invalidated = false;
        for &e in events {
            let (next, a) = step(p, e, unmaps);
            if a.close_gate {
                t.gate_closed = true;
            }
            if a.unmap {
                if !t.gate_closed {
                    t.unmap_before_gate = true;
                }
                if unmaps && client_invalidated {
                    t.unmap_after_client_inval = true;
                }
                t.unmaps += 1;
            }
            if a.drop_kept {
                t.drops += 1;
            }
            if a.release {
                t.releases += 1;
            }
            if a.count_unpinned {
                t.unpinned += 1;
            }
            if a.count_dealloc {
                t.dealloc += 1;
            }
            if e == Event::ClientInvalidate {
                client_invalidated = true;
            }
            p = next;
        }
        (p, t)
    }

    /// Every sequence of up to `n` (at most 8) events.
    fn sequences(n: usize, mut f: impl FnMut(&[Event])) {
        fn go(seq: &mut [Event; 8], len: usize, n: usize, f: &mut dyn FnMut(&[Event])) {
            f(&seq[..len]);
            if len == n {
                return;
            }
            for e in EVENTS {
                seq[len] = e;
                go(seq, len + 1, n, f);
            }
        }
        let mut seq = [Event::Built; 8];
        go(&mut seq, 0, n, &mut f);
    }

    #[test]
    fn pages_and_context_go_back_once() {
        for unmaps in [false, true] {
            sequences(6, |s| {
                let (p, t) = run(s, unmaps);
                // Pages go back (by a callback or a drop) at most once, the
                // context at most once, the counts with them.
                assert!(t.unmaps + t.drops <= 1, "{s:?} {unmaps}: {t:?}");
                assert!(t.releases <= 1, "{s:?}: {t:?}");
                assert_eq!(t.dealloc, t.releases, "{s:?}");
                if p == Phase::Gone {
                    // Everything given back once the region is gone.
                    assert_eq!(t.releases, 1, "{s:?}");
                    assert_eq!(t.unmaps + t.drops, 1, "{s:?} {unmaps}: {t:?}");
                    assert_eq!(t.unpinned, 1, "{s:?}");
                }
            });
        }
    }

    #[test]
    fn gate_closes_before_pages_go_back() {
        for unmaps in [false, true] {
            sequences(6, |s| {
                let (_, t) = run(s, unmaps);
                assert!(!t.unmap_before_gate, "{s:?}: {t:?}");
            });
        }
    }

    #[test]
    fn an_unmapping_client_is_not_asked_to_unmap_what_it_invalidated() {
        sequences(6, |s| {
            let (_, t) = run(s, true);
            assert!(!t.unmap_after_client_inval, "{s:?}: {t:?}");
        });
    }

    #[test]
    fn an_invalidation_while_building_takes_effect_when_built() {
        let (p, a) = step(Phase::Building { pending: true }, Event::Built, false);
        assert_eq!(p, Phase::Invalidated { kept: false });
        assert!(a.close_gate && a.unmap && !a.release);
        let (p, _) = step(
            Phase::Building { pending: false },
            Event::ClientInvalidate,
            false,
        );
        assert_eq!(p, Phase::Building { pending: true });
    }

    #[test]
    fn release_of_a_building_region_waits_for_its_builder() {
        let (p, a) = step(Phase::Building { pending: false }, Event::Release, false);
        assert_eq!(p, Phase::Building { pending: false });
        assert_eq!(a, Actions::default());
    }

    #[test]
    fn invalidation_then_release() {
        let (p, a) = step(Phase::Live, Event::ClientInvalidate, true);
        assert_eq!(p, Phase::Invalidated { kept: true });
        assert!(a.close_gate && !a.unmap && a.count_unpinned);
        let (p, a) = step(p, Event::Release, true);
        assert_eq!(p, Phase::Gone);
        assert!(a.release && a.drop_kept && !a.unmap && a.count_dealloc);
        // A second invalidation or release does nothing.
        assert_eq!(step(p, Event::ClientInvalidate, true).1, Actions::default());
        assert_eq!(step(p, Event::Release, true).1, Actions::default());
    }
}
