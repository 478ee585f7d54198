// SPDX-License-Identifier: GPL-2.0

//! The multipath client's decisions against what the C client does: the
//! policy text of sysfs, the path each policy picks, the reconnect
//! schedule, the heartbeat's miss count and round trip, and the permit
//! bitmap.

use rtrs_proto::consts::*;
use rtrs_proto::mpath::{
    check_max_attempts, choose, Backoff, HbAction, Heartbeat, PathView, PermitMap, Policy,
    MAX_PERMITS,
};
use rtrs_proto::Error;

const ALL: [Policy; 3] = [Policy::RoundRobin, Policy::MinInflight, Policy::MinLatency];

fn up(inflight: u32, latency_ns: u64) -> PathView {
    PathView {
        connected: true,
        inflight,
        latency_ns,
    }
}

fn down() -> PathView {
    PathView {
        connected: false,
        inflight: 0,
        latency_ns: 1,
    }
}

// ---------------------------------------------------------------------------
// Policy

#[test]
fn policy_values_and_default() {
    assert_eq!(Policy::default(), Policy::MinInflight);
    for (v, p) in ALL.iter().enumerate() {
        assert_eq!(p.to_u32(), v as u32);
        assert_eq!(Policy::from_u32(v as u32), Some(*p));
    }
    assert_eq!(Policy::from_u32(3), None);
}

#[test]
fn policy_show_is_the_sysfs_text() {
    assert_eq!(Policy::RoundRobin.show(), "round-robin (RR: 0)");
    assert_eq!(Policy::MinInflight.show(), "min-inflight (MI: 1)");
    assert_eq!(Policy::MinLatency.show(), "min-latency (ML: 2)");
    // What sysfs shows can be written back.
    for p in ALL {
        assert_eq!(Policy::parse(p.show().as_bytes()), Ok(p));
    }
}

#[test]
fn policy_parse_accepts_what_the_store_accepts() {
    let cases: &[(&[u8], Policy)] = &[
        (b"0", Policy::RoundRobin),
        (b"0\n", Policy::RoundRobin),
        (b"+0", Policy::RoundRobin),
        (b"-0", Policy::RoundRobin),
        (b"000\n", Policy::RoundRobin),
        (b"1", Policy::MinInflight),
        (b"01\n", Policy::MinInflight),
        (b"2", Policy::MinLatency),
        (b"+2\n", Policy::MinLatency),
        (b"round-robin", Policy::RoundRobin),
        (b"round-robin\n", Policy::RoundRobin),
        (b"Round-Robin", Policy::RoundRobin),
        (b"rr", Policy::RoundRobin),
        (b"RR\n", Policy::RoundRobin),
        (b"min-inflight", Policy::MinInflight),
        (b"MIN-INFLIGHT\n", Policy::MinInflight),
        (b"mi", Policy::MinInflight),
        (b"Mi\n", Policy::MinInflight),
        (b"min-latency", Policy::MinLatency),
        (b"min-latency\n", Policy::MinLatency),
        (b"ml", Policy::MinLatency),
        (b"mL\n", Policy::MinLatency),
        // strncasecmp compares only the name's length.
        (b"round-robinx", Policy::RoundRobin),
        (b"min-latency please", Policy::MinLatency),
        // The C string ends at the first NUL.
        (b"1\0junk", Policy::MinInflight),
        (b"rr\0", Policy::RoundRobin),
    ];
    for (text, p) in cases {
        assert_eq!(
            Policy::parse(text),
            Ok(*p),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn policy_parse_refuses_the_rest() {
    let cases: &[&[u8]] = &[
        b"",
        b"\n",
        b"3",
        b"-1",
        b"-2",
        b"1\n\n",
        b" 1",
        b"1 ",
        b"+-1",
        b"-+1",
        b"+",
        b"0x1",
        b"4294967296",
        b"99999999999999999999999",
        b"round",
        b"round-robi",
        b"rr\n\n",
        b"rrr",
        b"r",
        b"rr ",
        b"mil",
        b"min",
        b"min-",
        b"min-infligh",
        b"\0rr",
        b"ml\r\n",
        b"min_latency",
    ];
    for text in cases {
        assert_eq!(
            Policy::parse(text),
            Err(Error::BadPolicy),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

// ---------------------------------------------------------------------------
// Path choice

#[test]
fn choose_nothing_without_a_connected_path() {
    let mut cursor = 0;
    for p in ALL {
        assert_eq!(choose(p, &[], &mut cursor, None), None);
        assert_eq!(choose(p, &[down(), down()], &mut cursor, None), None);
        // The only connected path is the one the IO failed on.
        assert_eq!(choose(p, &[down(), up(0, 5)], &mut cursor, Some(1)), None);
        assert_eq!(cursor, 0);
    }
    let mut cursor = 7;
    assert_eq!(choose(Policy::RoundRobin, &[], &mut cursor, None), None);
    assert_eq!(cursor, 7);
}

#[test]
fn round_robin_visits_connected_paths_evenly() {
    let paths = [up(0, 0), down(), up(9, 0), up(3, 0), down(), up(0, 0)];
    let mut cursor = 0;
    let mut hits = [0usize; 6];
    let mut order = Vec::new();
    for _ in 0..400 {
        let i = choose(Policy::RoundRobin, &paths, &mut cursor, None).unwrap();
        hits[i] += 1;
        order.push(i);
    }
    assert_eq!(hits, [100, 0, 100, 100, 0, 100]);
    assert_eq!(&order[..8], &[0, 2, 3, 5, 0, 2, 3, 5]);
}

#[test]
fn round_robin_never_takes_the_skipped_path() {
    let paths = [up(0, 0), up(0, 0), up(0, 0)];
    let mut cursor = 1;
    let mut hits = [0usize; 3];
    for _ in 0..100 {
        let i = choose(Policy::RoundRobin, &paths, &mut cursor, Some(1)).unwrap();
        hits[i] += 1;
    }
    assert_eq!(hits, [50, 0, 50]);
    // A skip beyond the paths skips nothing.
    let mut cursor = 0;
    let got: Vec<_> = (0..3)
        .map(|_| choose(Policy::RoundRobin, &paths, &mut cursor, Some(9)).unwrap())
        .collect();
    assert_eq!(got, [0, 1, 2]);
}

#[test]
fn cursor_follows_the_choice_and_wraps() {
    let paths = [up(0, 0), up(0, 0), up(0, 0)];
    let mut cursor = 2;
    assert_eq!(
        choose(Policy::RoundRobin, &paths, &mut cursor, None),
        Some(2)
    );
    assert_eq!(cursor, 0);
    // A cursor past the end (paths were removed) counts modulo.
    let mut cursor = 7;
    assert_eq!(
        choose(Policy::RoundRobin, &paths, &mut cursor, None),
        Some(1)
    );
    assert_eq!(cursor, 2);
    let mut cursor = usize::MAX;
    assert!(choose(Policy::RoundRobin, &paths, &mut cursor, None).is_some());
    assert!(cursor < 3);
}

#[test]
fn min_inflight_takes_the_least_loaded() {
    let paths = [up(5, 0), down(), up(2, 0), up(7, 0), up(3, 0)];
    // A down path with no load is not a candidate.
    for start in 0..5 {
        let mut cursor = start;
        assert_eq!(
            choose(Policy::MinInflight, &paths, &mut cursor, None),
            Some(2)
        );
        assert_eq!(cursor, 3);
    }
    let mut cursor = 0;
    assert_eq!(
        choose(Policy::MinInflight, &paths, &mut cursor, Some(2)),
        Some(4)
    );
}

#[test]
fn min_inflight_spreads_ties() {
    // Equal loads that never change (IO completing as fast as it comes):
    // the cursor spreads them anyway.
    let paths = [up(4, 0), up(1, 0), down(), up(1, 0), up(1, 0)];
    let mut cursor = 0;
    let mut hits = [0usize; 5];
    for _ in 0..300 {
        hits[choose(Policy::MinInflight, &paths, &mut cursor, None).unwrap()] += 1;
    }
    assert_eq!(hits, [0, 100, 0, 100, 100]);

    // With the load counted as the C counts it, IO spreads evenly.
    let mut paths = [up(0, 0), up(0, 0), up(0, 0)];
    for _ in 0..30 {
        let i = choose(Policy::MinInflight, &paths, &mut cursor, None).unwrap();
        paths[i].inflight += 1;
    }
    assert!(paths.iter().all(|p| p.inflight == 10));
}

#[test]
fn min_latency_prefers_measured_paths() {
    // Unmeasured (0) paths lose to any measured one, however idle.
    let paths = [up(0, 0), up(50, 900), up(0, 0), up(80, 300), down()];
    for start in 0..5 {
        let mut cursor = start;
        assert_eq!(
            choose(Policy::MinLatency, &paths, &mut cursor, None),
            Some(3)
        );
    }
    let mut cursor = 0;
    assert_eq!(
        choose(Policy::MinLatency, &paths, &mut cursor, Some(3)),
        Some(1)
    );
    // A down path's latency does not count.
    let paths = [
        up(0, 500),
        PathView {
            latency_ns: 1,
            ..down()
        },
    ];
    assert_eq!(
        choose(Policy::MinLatency, &paths, &mut cursor, None),
        Some(0)
    );
    // With nothing measured, the least loaded.
    let paths = [up(3, 0), up(1, 0), up(2, 0)];
    assert_eq!(
        choose(Policy::MinLatency, &paths, &mut cursor, None),
        Some(1)
    );
}

#[test]
fn min_latency_ties_by_inflight_then_cursor() {
    let paths = [up(9, 100), up(2, 100), up(2, 100), up(0, 101)];
    let mut cursor = 0;
    let mut hits = [0usize; 4];
    for _ in 0..10 {
        hits[choose(Policy::MinLatency, &paths, &mut cursor, None).unwrap()] += 1;
    }
    assert_eq!(hits, [0, 5, 5, 0]);
    // A measured latency of u64::MAX still beats an unmeasured path.
    let paths = [up(0, 0), up(0, u64::MAX)];
    assert_eq!(
        choose(Policy::MinLatency, &paths, &mut cursor, None),
        Some(1)
    );
}

// ---------------------------------------------------------------------------
// Reconnect

#[test]
fn max_attempts_bounds_are_the_sysfs_ones() {
    assert_eq!(MIN_MAX_RECONN_ATT, -1);
    assert_eq!(MAX_MAX_RECONN_ATT, 9999);
    for v in [-1, 0, 1, 9999] {
        assert_eq!(check_max_attempts(v), Ok(v));
    }
    for v in [-2, 10000, i32::MIN, i32::MAX] {
        assert_eq!(
            check_max_attempts(v),
            Err(Error::NotInRange {
                field: "max_reconnect_attempts",
                value: v.into(),
                min: -1,
                max: 9999,
            })
        );
    }
}

#[test]
fn backoff_gives_delay_plus_jitter_then_gives_up() {
    let mut b = Backoff::new(3000, 3);
    assert_eq!(b.delay_ms(), 3000);
    assert_eq!(b.max_attempts(), 3);
    assert_eq!(b.next(0), Some(3000));
    assert_eq!(b.next(7), Some(3007));
    assert_eq!(b.attempts(), 2);
    // The jitter is below RTRS_RECONNECT_SEED ms.
    assert_eq!(b.next(8), Some(3000));
    assert_eq!(b.attempts(), 3);
    assert_eq!(b.next(1), None);
    assert_eq!(b.next(1), None);
    assert_eq!(b.attempts(), 3);
    // Connected again: a full set of attempts.
    b.reset();
    assert_eq!(b.attempts(), 0);
    for r in 0..3 {
        assert_eq!(b.next(u32::MAX - r), Some(3000 + 7 - r));
    }
    assert_eq!(b.next(0), None);
}

#[test]
fn backoff_jitter_stays_within_the_seed() {
    let mut b = Backoff::new(1000, -1);
    let mut seen = [false; RTRS_RECONNECT_SEED as usize];
    for r in 0..1000u32 {
        let d = b.next(r.wrapping_mul(2_654_435_761)).unwrap();
        assert!((1000..1000 + RTRS_RECONNECT_SEED).contains(&d));
        seen[(d - 1000) as usize] = true;
    }
    assert!(seen.iter().all(|s| *s));
    // Saturates rather than wrapping.
    assert_eq!(Backoff::new(u32::MAX, 1).next(7), Some(u32::MAX));
}

#[test]
fn backoff_never_and_forever() {
    let mut never = Backoff::new(1000, 0);
    assert_eq!(never.next(0), None);
    assert_eq!(never.attempts(), 0);

    for max in [-1, -2, i32::MIN] {
        let mut forever = Backoff::new(10, max);
        for _ in 0..100_000 {
            assert!(forever.next(3).is_some());
        }
        assert_eq!(forever.attempts(), 100_000);
    }
}

#[test]
fn backoff_disable_and_set_max() {
    let mut b = Backoff::new(10, -1);
    assert!(b.next(0).is_some());
    // The server changed its queue depth: no more attempts until asked.
    b.disable();
    assert_eq!(b.next(0), None);
    b.reset();
    assert_eq!(b.next(0), Some(10));

    // Lowering the maximum below the attempts made stops at once.
    let mut b = Backoff::new(10, 5);
    for _ in 0..3 {
        b.next(0).unwrap();
    }
    b.set_max_attempts(2);
    assert_eq!(b.next(0), None);
    b.set_max_attempts(4);
    assert_eq!(b.next(0), Some(10));
    assert_eq!(b.next(0), None);
}

// ---------------------------------------------------------------------------
// Heartbeat

#[test]
fn heartbeat_constants_are_the_c_ones() {
    assert_eq!(RTRS_HB_INTERVAL_MS, 5000);
    assert_eq!(RTRS_HB_MISSED_MAX, 5);
    assert_eq!(RTRS_RECONNECT_BACKOFF_MS, 1000);
    assert_eq!(RTRS_RECONNECT_SEED, 8);
    assert_eq!(Heartbeat::default(), Heartbeat::new(RTRS_HB_MISSED_MAX));
    assert_eq!(Heartbeat::default().max_missed(), 5);
}

#[test]
fn heartbeat_fails_after_the_c_count_of_silent_periods() {
    // hb_work fails if missed > max, else sends only if missed was 0,
    // and counts: missed goes 0 -> 1 (send), 1..=5 -> 2..=6 (wait, 5
    // times), then 6 > 5 fails the 7th period, 30 s after the heartbeat.
    let mut hb = Heartbeat::new(RTRS_HB_MISSED_MAX);
    assert_eq!(hb.tick(), HbAction::Send);
    for n in 2..=6 {
        assert_eq!(hb.tick(), HbAction::Wait, "period {n}");
        assert_eq!(hb.missed(), n);
    }
    assert_eq!(hb.tick(), HbAction::Fail);
    // It stays failed.
    assert_eq!(hb.tick(), HbAction::Fail);
    assert_eq!(hb.missed(), 6);
    // rtrs_stop_hb, then a new connection: it starts over.
    hb.reset();
    assert_eq!(hb.tick(), HbAction::Send);

    for max in [0u32, 1, 2, 10] {
        let mut hb = Heartbeat::new(max);
        // One send, `max` waits, then failure.
        let actions: Vec<_> = (0..max + 2).map(|_| hb.tick()).collect();
        assert_eq!(actions[0], HbAction::Send);
        assert!(actions[1..=max as usize]
            .iter()
            .all(|a| *a == HbAction::Wait));
        assert_eq!(actions[max as usize + 1], HbAction::Fail, "max {max}");
    }
}

#[test]
fn heartbeat_any_receive_keeps_the_path_alive() {
    let mut hb = Heartbeat::new(RTRS_HB_MISSED_MAX);
    // Any receive (an IO response, say) in each period: a heartbeat goes
    // out every period and the path never fails.
    for _ in 0..100 {
        assert_eq!(hb.tick(), HbAction::Send);
        hb.any_rx();
    }
    // Receiving late, but before failing, starts the count over.
    for _ in 0..6 {
        assert_ne!(hb.tick(), HbAction::Fail);
    }
    hb.any_rx();
    assert_eq!(hb.missed(), 0);
    assert_eq!(hb.tick(), HbAction::Send);
    // Even a failed path comes back if something arrives.
    for _ in 0..10 {
        hb.tick();
    }
    assert_eq!(hb.tick(), HbAction::Fail);
    hb.any_rx();
    assert_eq!(hb.tick(), HbAction::Send);
}

#[test]
fn heartbeat_latency_is_the_ack_round_trip() {
    let mut hb = Heartbeat::new(RTRS_HB_MISSED_MAX);
    assert_eq!(hb.latency_ns(), 0);
    // An ack with no heartbeat sent measures nothing, but is a receive.
    hb.tick();
    hb.tick();
    hb.acked(1_000);
    assert_eq!(hb.latency_ns(), 0);
    assert_eq!(hb.missed(), 0);

    assert_eq!(hb.tick(), HbAction::Send);
    hb.sent(10_000);
    assert_eq!(hb.tick(), HbAction::Wait);
    hb.acked(10_250);
    assert_eq!(hb.latency_ns(), 250);
    assert_eq!(hb.missed(), 0);
    assert_eq!(hb.tick(), HbAction::Send);
    hb.sent(20_000);
    // Same instant: still measured (0 would read as unmeasured).
    hb.acked(20_000);
    assert_eq!(hb.latency_ns(), 1);
    // A clock going backwards keeps the last value.
    hb.acked(5);
    assert_eq!(hb.latency_ns(), 1);
    // The latency survives a reset, as hb_cur_latency does.
    hb.sent(30_000);
    hb.acked(31_000);
    hb.reset();
    assert_eq!(hb.latency_ns(), 1_000);
}

// ---------------------------------------------------------------------------
// Permits

#[test]
fn permit_map_counts() {
    for bad in [0, MAX_PERMITS + 1, u32::MAX] {
        assert_eq!(
            PermitMap::new(bad),
            Err(Error::NotInRange {
                field: "permit count",
                value: bad.into(),
                min: 1,
                max: 1024,
            })
        );
    }
    assert_eq!(PermitMap::new(1).unwrap().count(), 1);
    assert_eq!(PermitMap::new(MAX_PERMITS).unwrap().count(), 1024);
}

#[test]
fn permit_map_exhausts_at_count() {
    for count in [1, 2, 63, 64, 65, 100, 512, 1023, 1024] {
        let mut m = PermitMap::new(count).unwrap();
        for id in 0..count {
            assert_eq!(m.take(), Some(id), "count {count}");
            assert!(m.is_taken(id));
        }
        assert_eq!(m.in_use(), count);
        assert_eq!(m.take(), None);
        assert_eq!(m.in_use(), count);
        assert!(!m.is_taken(count));
    }
}

#[test]
fn permit_map_takes_the_lowest_free() {
    let mut m = PermitMap::new(200).unwrap();
    for _ in 0..200 {
        m.take().unwrap();
    }
    m.put(130).unwrap();
    m.put(7).unwrap();
    m.put(64).unwrap();
    assert_eq!(m.in_use(), 197);
    assert_eq!(m.take(), Some(7));
    assert_eq!(m.take(), Some(64));
    assert_eq!(m.take(), Some(130));
    assert_eq!(m.take(), None);
}

#[test]
fn permit_map_rejects_double_free_and_strangers() {
    let mut m = PermitMap::new(100).unwrap();
    assert_eq!(m.put(0), Err(Error::NotTaken(0)));
    let a = m.take().unwrap();
    let b = m.take().unwrap();
    assert_eq!(m.put(a), Ok(()));
    assert_eq!(m.put(a), Err(Error::NotTaken(a)));
    assert!(m.is_taken(b));
    assert_eq!(m.in_use(), 1);
    for id in [100, 101, 1023, 1024, u32::MAX] {
        assert_eq!(
            m.put(id),
            Err(Error::OutOfRange {
                field: "permit",
                value: id.into(),
                limit: 100,
            })
        );
        assert!(!m.is_taken(id));
    }
    assert_eq!(m.in_use(), 1);
}
