// SPDX-License-Identifier: GPL-2.0

//! The connection manager's tables, sans-IO: its connections keyed so
//! that each received message and each timer run costs O(log n) in the
//! number of connections, and the bound on the half-open connections
//! (REQ received, not yet established) that a port keeps and that one
//! peer may hold on it.
//!
//! A [`Table`] is generic over the ordered map it is built from
//! ([`Maps`]): the kernel gives it its red-black tree, the host tests a
//! `BTreeMap`. It never locks or allocates by itself; every insertion goes
//! through [`OrdMap::insert`], which may fail (the kernel's allocation),
//! and leaves the table consistent when it does.
//!
//! # Keys
//!
//! Every connection is found by our communication ID (the primary key,
//! which holds the value). Besides, while it has them, by:
//!
//! - the peer's `(communication ID, CA GUID)`: a REQ seen again is a
//!   duplicate of the connection that has them;
//! - the peer's `(QPN, CA GUID)`: a new REQ from a QP that a connection
//!   still holds is for a stale connection;
//! - its deadline: the timer takes the connections whose deadline passed
//!   in deadline order ([`Table::take_due`]), and is armed for the first
//!   one left ([`Table::next_deadline`]), without asking any connection.
//!
//! The secondary keys end with our communication ID, so two connections
//! may share the rest (a confused peer) without losing either.
//!
//! The caller reads a connection's keys ([`Keys`]) from its state and
//! hands them to [`Table::update`] after every change; the table keeps
//! the keys it indexed, so it never needs to ask the connection again.
//!
//! # Half-open connections
//!
//! A passive connection enters the table through [`Table::admit`], which
//! counts it against its port and against its source (the address its
//! REQ came from) and refuses it beyond [`Limits`]; it stays counted until
//! an update says it is no longer half-open (established, or back to
//! idle, rejected or timed out) or it leaves the table. The C CM keeps no
//! such bound; the stack answers a refused REQ with a REJ of reason
//! NO_RESOURCES (3).

/// An ordered map, as the table needs it.
pub trait OrdMap<K: Ord + Copy, V> {
    /// What a failed insertion returns.
    type Error;

    /// The value of `k`.
    fn get(&self, k: &K) -> Option<&V>;

    /// The value of `k`, to change.
    fn get_mut(&mut self, k: &K) -> Option<&mut V>;

    /// Inserts `v` at `k`, replacing what was there; on an error the map
    /// is as before.
    fn insert(&mut self, k: K, v: V) -> Result<(), Self::Error>;

    /// Removes `k`, returning its value.
    fn remove(&mut self, k: &K) -> Option<V>;

    /// The first key not less than `k`.
    fn lower_bound(&mut self, k: &K) -> Option<K>;

    /// The least key.
    fn first(&mut self) -> Option<K>;

    /// Calls `f` for every entry, in key order.
    fn for_each(&self, f: impl FnMut(&K, &V));
}

/// The family of ordered maps a table is built from.
pub trait Maps {
    /// What a failed insertion returns.
    type Error;

    /// The map of `K` to `V`.
    type Map<K: Ord + Copy, V>: OrdMap<K, V, Error = Self::Error> + Default;
}

/// Where a half-open connection's REQ came from: the port (an opaque,
/// non-zero identity the caller chooses) and the sender's address on it
/// (its GID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Source {
    /// The port.
    pub port: u64,
    /// The sender's address.
    pub addr: [u8; 16],
}

/// The keys of a connection besides our communication ID, as its state
/// gives them now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Keys {
    /// The peer's `(communication ID, CA GUID)`, once known.
    pub peer: Option<(u32, u64)>,
    /// The peer's `(QPN, CA GUID)`, while the connection holds it.
    pub remote_qp: Option<(u32, u64)>,
    /// When the connection's timer fires (ms), if it runs.
    pub deadline: Option<u64>,
    /// Whether it is still half-open (passive, REQ received, not yet
    /// established). Ignored for a connection not admitted as half-open,
    /// and it cannot become half-open again.
    pub half_open: bool,
}

/// The bounds on half-open connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// On one port.
    pub per_port: u32,
    /// From one source on one port.
    pub per_source: u32,
}

/// The stack's bounds: 4096 half-open connections a port, 1024 of them
/// from one source. A REQ costs a connection (a few hundred bytes) and,
/// through the rdma_cm, an id and usually a QP until its REP times out,
/// so 4096 bounds what unanswered REQs can pin; one source cannot take
/// more than a quarter of it, so a flood from one peer leaves room for
/// the others' connections. Far above what the stack's users open at once
/// (tens to hundreds of connections being set up).
pub const DEFAULT_LIMITS: Limits = Limits {
    per_port: 4096,
    per_source: 1024,
};

/// Why [`Table::admit`] did not take a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmitError<E> {
    /// The port has [`Limits::per_port`] half-open connections.
    PortFull,
    /// The source has [`Limits::per_source`] on the port.
    SourceFull,
    /// The communication ID is in the table already.
    Exists,
    /// An insertion failed.
    Map(E),
}

/// What the table holds for one connection.
struct Entry<V> {
    value: V,
    /// The keys indexed now (`half_open`: the source counted).
    peer: Option<(u32, u64)>,
    remote_qp: Option<(u32, u64)>,
    deadline: Option<u64>,
    half_open: Option<Source>,
}

/// The connections of a CM, with their keys.
pub struct Table<M: Maps, V> {
    by_local: M::Map<u32, Entry<V>>,
    by_peer: M::Map<(u32, u64, u32), ()>,
    by_remote_qp: M::Map<(u32, u64, u32), ()>,
    by_deadline: M::Map<(u64, u32), ()>,
    half_open_port: M::Map<u64, u32>,
    half_open_source: M::Map<Source, u32>,
    len: usize,
}

impl<M: Maps, V> Default for Table<M, V> {
    fn default() -> Self {
        Table {
            by_local: Default::default(),
            by_peer: Default::default(),
            by_remote_qp: Default::default(),
            by_deadline: Default::default(),
            half_open_port: Default::default(),
            half_open_source: Default::default(),
            len: 0,
        }
    }
}

/// Adds `d` (1 or -1) to the count at `k`, dropping a count that reaches
/// zero. Only a new count can fail (an increment).
fn add<K: Ord + Copy, Mp: OrdMap<K, u32>>(m: &mut Mp, k: K, up: bool) -> Result<(), Mp::Error> {
    match m.get_mut(&k) {
        Some(n) if up => *n += 1,
        Some(n) if *n > 1 => *n -= 1,
        Some(_) => {
            m.remove(&k);
        }
        None if up => m.insert(k, 1)?,
        None => {}
    }
    Ok(())
}

/// Finds the first `(a, b, _)` key of a multi-key index.
fn find_multi<Mp: OrdMap<(u32, u64, u32), ()>>(m: &mut Mp, a: u32, b: u64) -> Option<u32> {
    m.lower_bound(&(a, b, 0))
        .filter(|k| k.0 == a && k.1 == b)
        .map(|k| k.2)
}

/// Moves `id`'s key in a multi-key index from `old` to `new`; on an error
/// the old key is gone and `slot` says so.
fn rekey<K: Ord + Copy, Mp: OrdMap<K, ()>>(
    m: &mut Mp,
    slot: &mut Option<K>,
    new: Option<K>,
) -> Result<(), Mp::Error> {
    if *slot == new {
        return Ok(());
    }
    if let Some(k) = slot.take() {
        m.remove(&k);
    }
    if let Some(k) = new {
        m.insert(k, ())?;
        *slot = Some(k);
    }
    Ok(())
}

impl<M: Maps, V> Table<M, V> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many connections it has.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The half-open connections on `port`.
    pub fn half_open(&self, port: u64) -> u32 {
        self.half_open_port.get(&port).copied().unwrap_or(0)
    }

    /// The half-open connections from `source`.
    pub fn half_open_from(&self, source: &Source) -> u32 {
        self.half_open_source.get(source).copied().unwrap_or(0)
    }

    /// The connection of our communication ID `id`.
    pub fn get(&self, id: u32) -> Option<&V> {
        self.by_local.get(&id).map(|e| &e.value)
    }

    /// Whether `id` is in the table.
    pub fn contains(&self, id: u32) -> bool {
        self.by_local.get(&id).is_some()
    }

    /// Adds a connection (not half-open) with no keys yet; `Exists` if
    /// `id` is taken.
    pub fn insert(&mut self, id: u32, value: V) -> Result<(), AdmitError<M::Error>> {
        self.insert_entry(id, value, None)
    }

    fn insert_entry(
        &mut self,
        id: u32,
        value: V,
        half_open: Option<Source>,
    ) -> Result<(), AdmitError<M::Error>> {
        if self.contains(id) {
            return Err(AdmitError::Exists);
        }
        let e = Entry {
            value,
            peer: None,
            remote_qp: None,
            deadline: None,
            half_open,
        };
        self.by_local.insert(id, e).map_err(AdmitError::Map)?;
        self.len += 1;
        Ok(())
    }

    /// Adds a passive connection whose REQ came from `source`, counted as
    /// half-open, unless the port or the source has its bound.
    pub fn admit(
        &mut self,
        id: u32,
        value: V,
        source: Source,
        limits: &Limits,
    ) -> Result<(), AdmitError<M::Error>> {
        if self.contains(id) {
            return Err(AdmitError::Exists);
        }
        if self.half_open(source.port) >= limits.per_port {
            return Err(AdmitError::PortFull);
        }
        if self.half_open_from(&source) >= limits.per_source {
            return Err(AdmitError::SourceFull);
        }
        add(&mut self.half_open_port, source.port, true).map_err(AdmitError::Map)?;
        if let Err(e) = add(&mut self.half_open_source, source, true) {
            let _ = add(&mut self.half_open_port, source.port, false);
            return Err(AdmitError::Map(e));
        }
        if let Err(e) = self.insert_entry(id, value, Some(source)) {
            let _ = add(&mut self.half_open_port, source.port, false);
            let _ = add(&mut self.half_open_source, source, false);
            return Err(e);
        }
        Ok(())
    }

    /// Sets the keys of connection `id` to `keys`. On an error (an index
    /// could not grow) the connection lacks that key until the next
    /// update; `false` if `id` is not in the table.
    pub fn update(&mut self, id: u32, keys: &Keys) -> Result<bool, M::Error> {
        let Some(e) = self.by_local.get_mut(&id) else {
            return Ok(false);
        };
        let mut peer = e.peer.map(|(a, b)| (a, b, id));
        let mut rqp = e.remote_qp.map(|(a, b)| (a, b, id));
        let mut dl = e.deadline.map(|d| (d, id));
        let was_half_open = e.half_open;
        if !keys.half_open {
            e.half_open = None;
        }
        if let (Some(src), false) = (was_half_open, keys.half_open) {
            let _ = add(&mut self.half_open_port, src.port, false);
            let _ = add(&mut self.half_open_source, src, false);
        }
        let r1 = rekey(
            &mut self.by_peer,
            &mut peer,
            keys.peer.map(|(a, b)| (a, b, id)),
        );
        let r2 = rekey(
            &mut self.by_remote_qp,
            &mut rqp,
            keys.remote_qp.map(|(a, b)| (a, b, id)),
        );
        let r3 = rekey(
            &mut self.by_deadline,
            &mut dl,
            keys.deadline.map(|d| (d, id)),
        );
        if let Some(e) = self.by_local.get_mut(&id) {
            e.peer = peer.map(|k| (k.0, k.1));
            e.remote_qp = rqp.map(|k| (k.0, k.1));
            e.deadline = dl.map(|k| k.0);
        }
        r1.and(r2).and(r3).map(|()| true)
    }

    /// Removes connection `id` and all of its keys.
    pub fn remove(&mut self, id: u32) -> Option<V> {
        let e = self.by_local.remove(&id)?;
        self.len -= 1;
        if let Some(k) = e.peer {
            self.by_peer.remove(&(k.0, k.1, id));
        }
        if let Some(k) = e.remote_qp {
            self.by_remote_qp.remove(&(k.0, k.1, id));
        }
        if let Some(d) = e.deadline {
            self.by_deadline.remove(&(d, id));
        }
        if let Some(src) = e.half_open {
            let _ = add(&mut self.half_open_port, src.port, false);
            let _ = add(&mut self.half_open_source, src, false);
        }
        Some(e.value)
    }

    /// The connection whose peer is `(comm_id, guid)`.
    pub fn find_peer(&mut self, comm_id: u32, guid: u64) -> Option<&V> {
        let id = find_multi(&mut self.by_peer, comm_id, guid)?;
        self.get(id)
    }

    /// A connection that holds the peer's QP `(qpn, guid)`.
    pub fn find_remote_qp(&mut self, qpn: u32, guid: u64) -> Option<&V> {
        let id = find_multi(&mut self.by_remote_qp, qpn, guid)?;
        self.get(id)
    }

    /// The earliest deadline.
    pub fn next_deadline(&mut self) -> Option<u64> {
        self.by_deadline.first().map(|k| k.0)
    }

    /// Takes the deadlines that are not after `now`, earliest first, and
    /// calls `f` with each one's connection; those connections keep no
    /// deadline until their next update. At most `max` of them.
    pub fn take_due(&mut self, now: u64, max: usize, mut f: impl FnMut(u32, &V)) -> usize {
        let mut n = 0;
        while n < max {
            let Some((d, id)) = self.by_deadline.first() else {
                break;
            };
            if d > now {
                break;
            }
            self.by_deadline.remove(&(d, id));
            if let Some(e) = self.by_local.get_mut(&id) {
                e.deadline = None;
                f(id, &e.value);
            }
            n += 1;
        }
        n
    }

    /// Calls `f` for every connection, in communication ID order.
    pub fn for_each(&self, mut f: impl FnMut(u32, &V)) {
        self.by_local.for_each(|k, e| f(*k, &e.value));
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::collections::BTreeMap;
    use std::vec::Vec;

    /// A `BTreeMap` whose insertions fail while `FAIL` is set (one test
    /// thread at a time uses it: thread-local).
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

    struct Test;
    impl Maps for Test {
        type Error = NoMem;
        type Map<K: Ord + Copy, V> = TestMap<K, V>;
    }

    type T = Table<Test, &'static str>;

    const LIM: Limits = Limits {
        per_port: 3,
        per_source: 2,
    };

    fn src(port: u64, b: u8) -> Source {
        Source {
            port,
            addr: [b; 16],
        }
    }

    #[test]
    fn lookups_by_every_key() {
        let mut t = T::new();
        t.insert(1, "a").unwrap();
        t.insert(2, "b").unwrap();
        assert_eq!(t.insert(2, "x"), Err(AdmitError::Exists));
        assert_eq!(t.get(2), Some(&"b"));
        assert_eq!(t.find_peer(7, 9), None);
        let k = Keys {
            peer: Some((7, 9)),
            remote_qp: Some((0x11, 9)),
            deadline: Some(100),
            half_open: false,
        };
        assert_eq!(t.update(2, &k), Ok(true));
        assert_eq!(t.update(3, &k), Ok(false));
        assert_eq!(t.find_peer(7, 9), Some(&"b"));
        assert_eq!(t.find_peer(7, 8), None);
        assert_eq!(t.find_peer(6, 9), None);
        assert_eq!(t.find_remote_qp(0x11, 9), Some(&"b"));
        assert_eq!(t.find_remote_qp(0x11, 10), None);
        assert_eq!(t.next_deadline(), Some(100));
        // The peer's id changes (a new REP): the old key is gone.
        let k2 = Keys {
            peer: Some((8, 9)),
            ..k
        };
        t.update(2, &k2).unwrap();
        assert_eq!(t.find_peer(7, 9), None);
        assert_eq!(t.find_peer(8, 9), Some(&"b"));
        assert_eq!(t.remove(2), Some("b"));
        assert_eq!(t.find_peer(8, 9), None);
        assert_eq!(t.find_remote_qp(0x11, 9), None);
        assert_eq!(t.next_deadline(), None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.remove(2), None);
    }

    #[test]
    fn shared_secondary_keys_keep_both() {
        let mut t = T::new();
        let k = Keys {
            peer: Some((7, 9)),
            remote_qp: Some((5, 9)),
            ..Keys::default()
        };
        for (id, v) in [(10, "x"), (20, "y")] {
            t.insert(id, v).unwrap();
            t.update(id, &k).unwrap();
        }
        assert_eq!(t.find_peer(7, 9), Some(&"x"));
        t.remove(10);
        assert_eq!(t.find_peer(7, 9), Some(&"y"));
        assert_eq!(t.find_remote_qp(5, 9), Some(&"y"));
    }

    #[test]
    fn deadlines_in_order_and_taken_once() {
        let mut t = T::new();
        for (id, d) in [(1u32, 30u64), (2, 10), (3, 20), (4, 10)] {
            t.insert(id, "c").unwrap();
            t.update(
                id,
                &Keys {
                    deadline: Some(d),
                    ..Keys::default()
                },
            )
            .unwrap();
        }
        assert_eq!(t.next_deadline(), Some(10));
        let mut seen = Vec::new();
        assert_eq!(t.take_due(20, 10, |id, _| seen.push(id)), 3);
        assert_eq!(seen, [2, 4, 3]);
        assert_eq!(t.next_deadline(), Some(30));
        assert_eq!(t.take_due(20, 10, |_, _| panic!("taken twice")), 0);
        // A deadline moved later is not due at its old time.
        t.update(
            1,
            &Keys {
                deadline: Some(50),
                ..Keys::default()
            },
        )
        .unwrap();
        assert_eq!(t.take_due(40, 10, |_, _| panic!("old deadline")), 0);
        // The bound on one run.
        for id in 2..=4 {
            t.update(
                id,
                &Keys {
                    deadline: Some(5),
                    ..Keys::default()
                },
            )
            .unwrap();
        }
        assert_eq!(t.take_due(60, 2, |_, _| {}), 2);
        assert_eq!(t.take_due(60, 10, |_, _| {}), 2);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn half_open_bounded_per_source_and_port() {
        let mut t = T::new();
        let (a, b, c) = (src(1, 0xa), src(1, 0xb), src(1, 0xc));
        t.admit(1, "1", a, &LIM).unwrap();
        t.admit(2, "2", a, &LIM).unwrap();
        assert_eq!(t.admit(3, "3", a, &LIM), Err(AdmitError::SourceFull));
        assert!(!t.contains(3));
        t.admit(4, "4", b, &LIM).unwrap();
        assert_eq!(t.admit(5, "5", c, &LIM), Err(AdmitError::PortFull));
        // Another port has its own bound.
        t.admit(6, "6", src(2, 0xa), &LIM).unwrap();
        assert_eq!(t.half_open(1), 3);
        assert_eq!(t.half_open(2), 1);
        assert_eq!(t.half_open_from(&a), 2);
        assert_eq!(t.admit(1, "dup", c, &LIM), Err(AdmitError::Exists));
        // Established: no longer counted, and never again.
        let open = Keys {
            half_open: false,
            ..Keys::default()
        };
        t.update(1, &open).unwrap();
        assert_eq!(t.half_open(1), 2);
        assert_eq!(t.half_open_from(&a), 1);
        t.update(
            1,
            &Keys {
                half_open: true,
                ..Keys::default()
            },
        )
        .unwrap();
        assert_eq!(t.half_open(1), 2);
        t.admit(3, "3", a, &LIM).unwrap();
        // Removing a half-open connection uncounts it.
        t.remove(4);
        t.remove(3);
        t.remove(2);
        assert_eq!(t.half_open(1), 0);
        assert_eq!(t.half_open_from(&a), 0);
        t.remove(1);
        t.remove(6);
        assert!(t.is_empty());
        assert!(t.half_open_port.0.is_empty() && t.half_open_source.0.is_empty());
    }

    #[test]
    fn failed_insertions_leave_it_consistent() {
        let mut t = T::new();
        FAIL.with(|f| f.set(true));
        assert_eq!(
            t.admit(1, "1", src(1, 1), &LIM),
            Err(AdmitError::Map(NoMem))
        );
        assert_eq!(t.insert(2, "2"), Err(AdmitError::Map(NoMem)));
        FAIL.with(|f| f.set(false));
        assert!(t.is_empty());
        assert_eq!(t.half_open(1), 0);
        t.admit(1, "1", src(1, 1), &LIM).unwrap();
        let k = Keys {
            peer: Some((7, 9)),
            deadline: Some(5),
            half_open: true,
            ..Keys::default()
        };
        FAIL.with(|f| f.set(true));
        assert_eq!(t.update(1, &k), Err(NoMem));
        FAIL.with(|f| f.set(false));
        assert_eq!(t.find_peer(7, 9), None);
        assert_eq!(t.next_deadline(), None);
        // The next update puts the keys in.
        assert_eq!(t.update(1, &k), Ok(true));
        assert_eq!(t.find_peer(7, 9), Some(&"1"));
        assert_eq!(t.next_deadline(), Some(5));
        t.remove(1);
        assert!(t.by_peer.0.is_empty() && t.by_deadline.0.is_empty());
        assert_eq!(t.half_open(1), 0);
    }

    /// Ten thousand half-open connections: each found by its keys, the
    /// due half taken in one run, and every count back to zero after.
    #[test]
    fn ten_thousand() {
        let mut t = T::new();
        let lim = Limits {
            per_port: 20_000,
            per_source: 20_000,
        };
        for id in 1..=10_000u32 {
            t.admit(id, "c", src(1, 1), &lim).unwrap();
            t.update(
                id,
                &Keys {
                    peer: Some((id ^ 0x5555, 42)),
                    remote_qp: Some((id + 0x100, 42)),
                    deadline: Some(u64::from(id % 100)),
                    half_open: true,
                },
            )
            .unwrap();
        }
        assert_eq!(t.half_open(1), 10_000);
        assert!(t.find_peer(77 ^ 0x5555, 42).is_some());
        let mut n = 0;
        t.take_due(49, usize::MAX, |id, _| {
            assert!(id % 100 < 50);
            n += 1;
        });
        assert_eq!(n, 5_000);
        for id in 1..=10_000u32 {
            t.remove(id);
        }
        assert_eq!(t.half_open(1), 0);
        assert!(t.by_peer.0.is_empty() && t.by_remote_qp.0.is_empty());
    }
}
