// SPDX-License-Identifier: GPL-2.0

//! `tmbench`: matches per second of the tag-matching list
//! (`rdma_spec::tm::list::TagList`) beside a plain linked-list matcher (one
//! list in posting order, walked from its head: the obvious
//! implementation), in the same process, with 16, 1 Ki and 64 Ki tags
//! posted, exact (mask all ones) and masked (the low byte a wildcard).
//!
//! Each step takes a posted tag at random, lets a message with it arrive
//! (it must match the right entry), gives the entry back and posts the tag
//! again, so the list stays full and its order churns. A second loop sends
//! tags that match nothing. Each figure is the count of steps in a fixed
//! time (`TMBENCH_MS`, 300 ms by default) on one core; the ratio ours/list
//! is the figure to read. `make bench` runs it (`BENCH=tm` alone).

use std::time::{Duration, Instant};

use rdma_spec::tm::list::{Arrival, Handle, Slot, SlotInfo, TagList};

/// What the benchmark asks of a matcher; ids are what `add` returned.
trait Matcher {
    fn add(&mut self, tag: u64, mask: u64) -> u32;
    /// Matches and consumes; `None`: unexpected.
    fn arrive(&mut self, tag: u64) -> Option<u32>;
    fn release(&mut self, id: u32);
}

struct Ours(TagList<Vec<Slot>, Vec<SlotInfo>, Vec<u32>>);

impl Ours {
    fn new(n: usize) -> Self {
        let buckets = n.next_power_of_two();
        Ours(
            TagList::new(
                vec![Slot::default(); n],
                vec![SlotInfo::default(); n],
                vec![0; buckets],
                0x1234_5678_9abc_def1,
            )
            .unwrap(),
        )
    }
}

impl Matcher for Ours {
    fn add(&mut self, tag: u64, mask: u64) -> u32 {
        self.0.add(tag, mask).unwrap().0
    }

    fn arrive(&mut self, tag: u64) -> Option<u32> {
        match self.0.arrive(tag) {
            Arrival::Matched(h) => Some(h.0),
            Arrival::Unexpected => {
                // Software has seen it at once: matching stays on.
                let n = self.0.unexpected_count();
                self.0.sync(n);
                None
            }
        }
    }

    fn release(&mut self, id: u32) {
        self.0.release(Handle(id)).unwrap();
    }
}

/// The plain matcher: nodes in a vector, linked in posting order.
struct Plain {
    nodes: Vec<(u64, u64, u32, u32)>, // tag, mask, prev, next
    head: u32,
    tail: u32,
    free: Vec<u32>,
}

const NIL: u32 = u32::MAX;

impl Plain {
    fn new(n: usize) -> Self {
        Plain {
            nodes: vec![(0, 0, NIL, NIL); n],
            head: NIL,
            tail: NIL,
            free: (0..n as u32).rev().collect(),
        }
    }
}

impl Matcher for Plain {
    fn add(&mut self, tag: u64, mask: u64) -> u32 {
        let i = self.free.pop().unwrap();
        self.nodes[i as usize] = (tag, mask, self.tail, NIL);
        if self.tail == NIL {
            self.head = i;
        } else {
            self.nodes[self.tail as usize].3 = i;
        }
        self.tail = i;
        i
    }

    fn arrive(&mut self, tag: u64) -> Option<u32> {
        let mut i = self.head;
        while i != NIL {
            let (t, m, prev, next) = self.nodes[i as usize];
            if tag & m == t {
                if prev == NIL {
                    self.head = next;
                } else {
                    self.nodes[prev as usize].3 = next;
                }
                if next == NIL {
                    self.tail = prev;
                } else {
                    self.nodes[next as usize].2 = prev;
                }
                return Some(i);
            }
            i = next;
        }
        None
    }

    fn release(&mut self, id: u32) {
        self.free.push(id);
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Steps per second: (matches, misses).
fn run(m: &mut impl Matcher, n: usize, masked: bool, budget: Duration) -> (f64, f64) {
    let (shift, mask) = if masked { (8, !0xffu64) } else { (0, u64::MAX) };
    // The tag posted in each of the n places, and the id holding it.
    let mut posted: Vec<(u64, u32)> = (0..n as u64)
        .map(|t| (t << shift, m.add(t << shift, mask)))
        .collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let timed = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        let mut steps = 0u64;
        loop {
            for _ in 0..64 {
                f();
            }
            steps += 64;
            let e = start.elapsed();
            if e >= budget {
                return steps as f64 / e.as_secs_f64();
            }
        }
    };
    let hits = timed(&mut || {
        let k = rng.below(n as u64) as usize;
        let (tag, id) = posted[k];
        let wild = if masked { rng.below(256) } else { 0 };
        // The earliest entry that matches: the one holding this tag.
        let got = m.arrive(tag | wild);
        assert_eq!(got, Some(id), "the wrong entry matched");
        m.release(id);
        posted[k] = (tag, m.add(tag, mask));
    });
    let mut rng2 = Rng(0x2545_f491_4f6c_dd1d);
    let misses = timed(&mut || {
        let t = (n as u64 + rng2.below(1 << 20)) << shift;
        assert_eq!(m.arrive(t), None);
    });
    (hits, misses)
}

fn main() {
    let ms = std::env::var("TMBENCH_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let budget = Duration::from_millis(ms);
    println!("tag matching on the host (one core, {ms} ms a figure): messages per second");
    println!(
        "{:<7} {:>6} {:>8} {:>14} {:>14} {:>7}",
        "kind", "tags", "message", "ours", "linked list", "ratio"
    );
    for masked in [false, true] {
        for n in [16usize, 1024, 65536] {
            let (oh, om) = run(&mut Ours::new(n), n, masked, budget);
            let (ph, pm) = run(&mut Plain::new(n), n, masked, budget);
            let kind = if masked { "masked" } else { "exact" };
            for (what, o, p) in [("matches", oh, ph), ("misses", om, pm)] {
                println!(
                    "{kind:<7} {n:>6} {what:>8} {o:>14.0} {p:>14.0} {:>7.2}",
                    o / p
                );
            }
        }
    }
}
