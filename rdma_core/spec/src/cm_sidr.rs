// SPDX-License-Identifier: GPL-2.0

//! Service ID resolution (SIDR) in the connection manager, sans-IO: which
//! SIDR REQs of ours wait for their REP, which REP answers which of them,
//! and which received SIDR REQs wait for their listener's answer (so that
//! a duplicate is dropped, as the C CM's `remote_sidr_table` drops it).
//!
//! SIDR has no connection: a SIDR REQ (IBA table 118) names a service ID
//! and a request ID; its sender resends it until a SIDR REP (table 119)
//! with the same request ID comes back, or it gives up. The receiver
//! answers once, with a status and, on success, the QPN and Q_Key of the
//! service's UD QP.
//!
//! [`SidrTable`] keeps both sides, generic over the ordered map it is
//! built from ([`Maps`], as [`super::cm_table::Table`]):
//!
//! - ours, by request ID: each with its port and the address it went to
//!   ([`Source`]). A SIDR REP takes the request only if it names its
//!   request ID and came on the same port from that address
//!   ([`SidrTable::take_rep`]); the C CM looks at the request ID alone,
//!   but an answer from elsewhere is not an answer to ours. The request
//!   IDs of ours come from the space of our communication IDs, as in
//!   the C CM, where they are its ids' local IDs.
//! - theirs, by (port, sender's address, request ID): a SIDR REQ is
//!   taken ([`SidrTable::begin_remote`]) unless one with the same key
//!   waits for its answer (a duplicate, a resend of the peer's, counted
//!   and dropped as the C CM does) or [`MAX_REMOTE`] wait on the port
//!   already (a bound the C CM does not have); it waits until answered
//!   ([`SidrTable::end_remote`]). The C CM keys it by request ID and
//!   source LID; on RoCE every LID is zero, so the sender's GID stands
//!   for it here.
//!
//! Nothing here locks, allocates by itself or looks at time: retries and
//! timeouts are the MAD layer's ([`super::mad_send`]).

use super::cm_msg::SidrRep;
use super::cm_table::{Maps, OrdMap, Source};

/// How many received SIDR REQs may wait for their answer on one port: a
/// listener's owner answers each in its own time, and a peer could send
/// any number of them. Beyond, a new one is dropped.
pub const MAX_REMOTE: u32 = 4096;

/// A request of ours.
struct Ours<V> {
    to: Source,
    value: V,
}

/// Why [`SidrTable::start`] did not take a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError<E> {
    /// The request ID is in use.
    Exists,
    /// An insertion failed.
    Map(E),
}

/// Why [`SidrTable::begin_remote`] did not take a SIDR REQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteError<E> {
    /// One with the same key waits for its answer: a duplicate.
    Duplicate,
    /// [`MAX_REMOTE`] wait on the port.
    Full,
    /// An insertion failed.
    Map(E),
}

/// The key of a received SIDR REQ: where it came from, and its request
/// ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct RemoteKey {
    /// The port and the sender's address.
    pub from: Source,
    /// The sender's request ID.
    pub request_id: u32,
}

/// The SIDR requests of the CM, both sides.
pub struct SidrTable<M: Maps, V> {
    ours: M::Map<u32, Ours<V>>,
    theirs: M::Map<RemoteKey, ()>,
    /// How many of `theirs` are on each port.
    per_port: M::Map<u64, u32>,
}

impl<M: Maps, V> Default for SidrTable<M, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Maps, V> SidrTable<M, V> {
    /// Empty.
    pub fn new() -> Self {
        SidrTable {
            ours: Default::default(),
            theirs: Default::default(),
            per_port: Default::default(),
        }
    }

    /// Whether a request of ours has ID `request_id`.
    pub fn contains(&self, request_id: u32) -> bool {
        self.ours.get(&request_id).is_some()
    }

    /// Adds our request `request_id`, sent to `to`.
    pub fn start(
        &mut self,
        request_id: u32,
        to: Source,
        value: V,
    ) -> Result<(), StartError<M::Error>> {
        if self.contains(request_id) {
            return Err(StartError::Exists);
        }
        self.ours
            .insert(request_id, Ours { to, value })
            .map_err(StartError::Map)
    }

    /// Removes our request `request_id` (answered, timed out, or
    /// cancelled), returning its value.
    pub fn take(&mut self, request_id: u32) -> Option<V> {
        self.ours.remove(&request_id).map(|o| o.value)
    }

    /// The request of ours that `rep`, received from `from`, answers,
    /// removed; `None` (and nothing removed) if none: no such request ID,
    /// or it went elsewhere.
    pub fn take_rep(&mut self, from: &Source, rep: &SidrRep) -> Option<V> {
        if self.ours.get(&rep.request_id)?.to != *from {
            return None;
        }
        self.take(rep.request_id)
    }

    /// How many received SIDR REQs wait on `port`.
    pub fn remote_on(&self, port: u64) -> u32 {
        self.per_port.get(&port).copied().unwrap_or(0)
    }

    /// Takes a received SIDR REQ: it waits for its answer until
    /// [`SidrTable::end_remote`].
    pub fn begin_remote(&mut self, key: RemoteKey) -> Result<(), RemoteError<M::Error>> {
        if self.theirs.get(&key).is_some() {
            return Err(RemoteError::Duplicate);
        }
        let n = self.remote_on(key.from.port);
        if n >= MAX_REMOTE {
            return Err(RemoteError::Full);
        }
        self.per_port
            .insert(key.from.port, n + 1)
            .map_err(RemoteError::Map)?;
        if let Err(e) = self.theirs.insert(key, ()) {
            self.set_count(key.from.port, n);
            return Err(RemoteError::Map(e));
        }
        Ok(())
    }

    /// The received SIDR REQ `key` was answered (or given up): a new one
    /// with its key is no duplicate any more. Whether it waited.
    pub fn end_remote(&mut self, key: &RemoteKey) -> bool {
        if self.theirs.remove(key).is_none() {
            return false;
        }
        let n = self.remote_on(key.from.port);
        self.set_count(key.from.port, n.saturating_sub(1));
        true
    }

    /// Sets the count of `port` to `n`, lower than it was (no insertion
    /// needed: a count of 0 is removed, another changed in place).
    fn set_count(&mut self, port: u64, n: u32) {
        if n == 0 {
            self.per_port.remove(&port);
        } else if let Some(c) = self.per_port.get_mut(&port) {
            *c = n;
        }
    }

    /// Removes every request of ours and every received one on `port`
    /// (its device goes), handing each value of ours to `f`.
    pub fn remove_port(&mut self, port: u64, mut f: impl FnMut(V)) {
        while let Some(id) = self.first_of_port(port) {
            if let Some(v) = self.take(id) {
                f(v);
            }
        }
        while let Some(k) = self.first_remote_of_port(port) {
            self.end_remote(&k);
        }
    }

    fn first_of_port(&self, port: u64) -> Option<u32> {
        let mut found = None;
        self.ours.for_each(|id, o| {
            if found.is_none() && o.to.port == port {
                found = Some(*id);
            }
        });
        found
    }

    fn first_remote_of_port(&mut self, port: u64) -> Option<RemoteKey> {
        let from = RemoteKey {
            from: Source {
                port,
                addr: [0; 16],
            },
            request_id: 0,
        };
        self.theirs
            .lower_bound(&from)
            .filter(|k| k.from.port == port)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::collections::BTreeMap;

    struct TestMap<K, V>(BTreeMap<K, V>);

    impl<K, V> Default for TestMap<K, V> {
        fn default() -> Self {
            TestMap(BTreeMap::new())
        }
    }

    std::thread_local! {
        static FAIL: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    }

    #[derive(Debug, PartialEq, Eq)]
    struct NoMem;

    impl<K: Ord + Copy, V> OrdMap<K, V> for TestMap<K, V> {
        type Error = NoMem;
        fn get(&self, k: &K) -> Option<&V> {
            self.0.get(k)
        }
        fn get_mut(&mut self, k: &K) -> Option<&mut V> {
            self.0.get_mut(k)
        }
        fn insert(&mut self, k: K, v: V) -> Result<(), NoMem> {
            if FAIL.with(|f| f.get()) {
                return Err(NoMem);
            }
            self.0.insert(k, v);
            Ok(())
        }
        fn remove(&mut self, k: &K) -> Option<V> {
            self.0.remove(k)
        }
        fn lower_bound(&mut self, k: &K) -> Option<K> {
            self.0.range(*k..).next().map(|(k, _)| *k)
        }
        fn first(&mut self) -> Option<K> {
            self.0.keys().next().copied()
        }
        fn for_each(&self, mut f: impl FnMut(&K, &V)) {
            for (k, v) in self.0.iter() {
                f(k, v);
            }
        }
    }

    struct T;

    impl Maps for T {
        type Error = NoMem;
        type Map<K: Ord + Copy, V> = TestMap<K, V>;
    }

    fn src(port: u64, last: u8) -> Source {
        let mut addr = [0u8; 16];
        addr[15] = last;
        Source { port, addr }
    }

    fn rep(request_id: u32) -> SidrRep {
        SidrRep {
            request_id,
            ..SidrRep::default()
        }
    }

    #[test]
    fn reps_match_request_port_and_source() {
        let mut t: SidrTable<T, &str> = SidrTable::new();
        t.start(7, src(1, 2), "a").unwrap();
        t.start(8, src(1, 3), "b").unwrap();
        assert_eq!(t.start(7, src(1, 9), "c"), Err(StartError::Exists));
        // Unknown ID, other source, other port: nothing taken.
        assert_eq!(t.take_rep(&src(1, 2), &rep(9)), None);
        assert_eq!(t.take_rep(&src(1, 3), &rep(7)), None);
        assert_eq!(t.take_rep(&src(2, 2), &rep(7)), None);
        assert!(t.contains(7));
        assert_eq!(t.take_rep(&src(1, 2), &rep(7)), Some("a"));
        // Once: a duplicate REP finds nothing.
        assert_eq!(t.take_rep(&src(1, 2), &rep(7)), None);
        assert!(!t.contains(7));
        assert_eq!(t.take(8), Some("b"));
        assert_eq!(t.take(8), None);
    }

    #[test]
    fn duplicates_wait_until_answered() {
        let mut t: SidrTable<T, ()> = SidrTable::new();
        let k = RemoteKey {
            from: src(1, 2),
            request_id: 5,
        };
        t.begin_remote(k).unwrap();
        assert_eq!(t.begin_remote(k), Err(RemoteError::Duplicate));
        // Same request ID from another sender or port: not a duplicate.
        let other = RemoteKey {
            from: src(1, 3),
            ..k
        };
        t.begin_remote(other).unwrap();
        t.begin_remote(RemoteKey {
            from: src(2, 2),
            ..k
        })
        .unwrap();
        assert_eq!(t.remote_on(1), 2);
        assert_eq!(t.remote_on(2), 1);
        assert!(t.end_remote(&k));
        assert!(!t.end_remote(&k));
        assert_eq!(t.remote_on(1), 1);
        // Answered: the same key is new again (the C CM's table forgets
        // an answered request too).
        t.begin_remote(k).unwrap();
    }

    #[test]
    fn remote_bound_per_port() {
        let mut t: SidrTable<T, ()> = SidrTable::new();
        for i in 0..MAX_REMOTE {
            t.begin_remote(RemoteKey {
                from: src(1, 1),
                request_id: i,
            })
            .unwrap();
        }
        let next = RemoteKey {
            from: src(1, 1),
            request_id: MAX_REMOTE,
        };
        assert_eq!(t.begin_remote(next), Err(RemoteError::Full));
        // Another port has its own bound.
        t.begin_remote(RemoteKey {
            from: src(2, 1),
            ..next
        })
        .unwrap();
        assert!(t.end_remote(&RemoteKey {
            from: src(1, 1),
            request_id: 0
        }));
        t.begin_remote(next).unwrap();
    }

    #[test]
    fn failed_insertions_leave_it_consistent() {
        let mut t: SidrTable<T, u8> = SidrTable::new();
        let k = RemoteKey {
            from: src(1, 1),
            request_id: 1,
        };
        FAIL.with(|f| f.set(true));
        assert_eq!(t.start(1, src(1, 1), 0), Err(StartError::Map(NoMem)));
        assert_eq!(t.begin_remote(k), Err(RemoteError::Map(NoMem)));
        FAIL.with(|f| f.set(false));
        assert!(!t.contains(1));
        assert_eq!(t.remote_on(1), 0);
        assert!(!t.end_remote(&k));
        t.begin_remote(k).unwrap();
        assert_eq!(t.remote_on(1), 1);
    }

    #[test]
    fn removing_a_port() {
        let mut t: SidrTable<T, u32> = SidrTable::new();
        for i in 0..5 {
            t.start(i, src(u64::from(i % 2) + 1, 1), i).unwrap();
            t.begin_remote(RemoteKey {
                from: src(u64::from(i % 2) + 1, 1),
                request_id: i,
            })
            .unwrap();
        }
        let mut gone = std::vec::Vec::new();
        t.remove_port(1, |v| gone.push(v));
        gone.sort();
        assert_eq!(gone, [0, 2, 4]);
        assert_eq!(t.remote_on(1), 0);
        assert_eq!(t.remote_on(2), 2);
        assert!(t.contains(1) && t.contains(3));
    }
}
