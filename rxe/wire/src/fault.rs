// SPDX-License-Identifier: GPL-2.0

//! Fault injection for tests: what to do to each packet a device sends or
//! receives.
//!
//! A [`FaultSpec`] is written as one line of `key=value` words (the
//! device's configfs `fault` file):
//!
//! ```text
//! seed=7 tx_drop=5 rx_dup=0.5 rx_reorder=1 tx_corrupt=0.1
//! hit=tx_drop@psn=0x123        # the first packet sent with PSN 0x123
//! hit=rx_dup@nth=3             # the third packet received from now on
//! hit=rx_drop@psn=5 hit=tx_dup@psn=9   # several (up to eight)
//! off                          # no faults
//! ```
//!
//! Rates are percentages with up to four decimals (`0.0001` is one in a
//! million); `tx_*` act on packets sent, `rx_*` on packets received; the
//! actions are `drop`, `dup` (delivered twice), `reorder` (held back and
//! sent after the next packet in the same direction) and `corrupt` (one
//! byte after the UDP header flipped, so the ICRC fails). One random draw
//! from a generator seeded by `seed` decides each packet, so a run that
//! sees the same packets makes the same choices. A `hit` acts once, on
//! the `nth` packet in its direction counted from when it was written, or
//! on the first one whose BTH carries `psn`, and then disarms; it takes
//! precedence over the rates.
//!
//! Pure logic over `core`: the kernel module applies the [`Action`]s.

use core::fmt;

/// Which packets a fault acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Packets the device sends.
    Tx = 0,
    /// Packets the device receives.
    Rx = 1,
}

/// What happens to one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Goes on unchanged.
    Pass,
    /// Lost.
    Drop,
    /// Goes on twice.
    Dup,
    /// Held back until the next packet in the same direction has gone.
    Reorder,
    /// Goes on with the byte at `offset` (counted from the end of the UDP
    /// header, within the packet) flipped by `xor` (never 0).
    Corrupt {
        /// A byte offset; the caller reduces it modulo the bytes there are.
        offset: u32,
        /// The bits flipped.
        xor: u8,
    },
}

/// The kind of an [`Action`] that a rate or a hit names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// [`Action::Drop`].
    Drop = 0,
    /// [`Action::Dup`].
    Dup = 1,
    /// [`Action::Reorder`].
    Reorder = 2,
    /// [`Action::Corrupt`].
    Corrupt = 3,
}

const KINDS: [Kind; 4] = [Kind::Drop, Kind::Dup, Kind::Reorder, Kind::Corrupt];
const KIND_NAMES: [&str; 4] = ["drop", "dup", "reorder", "corrupt"];
const DIR_NAMES: [&str; 2] = ["tx", "rx"];

/// Rates are kept in parts per million.
const MILLION: u32 = 1_000_000;

/// Which packet a one-time fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The `n`th packet (from 1) in its direction after the spec was set.
    Nth(u32),
    /// The first packet in its direction whose BTH PSN is this.
    Psn(u32),
}

/// A one-time fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The direction it watches.
    pub dir: Dir,
    /// What it does.
    pub kind: Kind,
    /// Which packet.
    pub target: Target,
}

/// Why a spec was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// A word that is not `key=value` with a known key, or `off`.
    UnknownKey,
    /// A value that is not a number, or a rate above 100 %.
    BadValue,
    /// More than [`MAX_HITS`] hits.
    TooManyHits,
    /// The rates of one direction add up to more than 100 %.
    TooMuch,
}

/// The most one-time faults a spec holds.
pub const MAX_HITS: usize = 8;

/// The faults of a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultSpec {
    /// The seed of the generator.
    pub seed: u64,
    /// Rates in parts per million, by direction and [`Kind`].
    pub rates: [[u32; 4]; 2],
    /// One-time faults, in the order given.
    pub hits: [Option<Hit>; MAX_HITS],
}

fn parse_u64(s: &str) -> Result<u64, SpecError> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() {
        return Err(SpecError::BadValue);
    }
    u64::from_str_radix(digits, radix).map_err(|_| SpecError::BadValue)
}

/// A percentage with up to four decimals, in parts per million.
fn parse_rate(s: &str) -> Result<u32, SpecError> {
    let s = s.strip_suffix('%').unwrap_or(s);
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty() && frac.is_empty()
        || frac.len() > 4
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(SpecError::BadValue);
    }
    let int: u32 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| SpecError::BadValue)?
    };
    if int > 100 {
        return Err(SpecError::BadValue);
    }
    let mut f = 0u32;
    for i in 0..4 {
        f = f * 10 + frac.as_bytes().get(i).map_or(0, |b| u32::from(b - b'0'));
    }
    let ppm = int * 10_000 + f;
    if ppm > MILLION {
        return Err(SpecError::BadValue);
    }
    Ok(ppm)
}

/// `tx_drop` and the like: the direction and kind.
fn parse_action(s: &str) -> Option<(Dir, Kind)> {
    let (d, k) = s.split_once('_')?;
    let dir = match d {
        "tx" => Dir::Tx,
        "rx" => Dir::Rx,
        _ => return None,
    };
    let kind = KIND_NAMES.iter().position(|&n| n == k)?;
    Some((dir, KINDS[kind]))
}

impl FaultSpec {
    /// Parses a spec line (see the module documentation). An empty line
    /// or `off` is no faults.
    pub fn parse(line: &str) -> Result<FaultSpec, SpecError> {
        let mut spec = FaultSpec::default();
        for word in line.split_ascii_whitespace() {
            if word == "off" {
                spec = FaultSpec::default();
                continue;
            }
            let (key, value) = word.split_once('=').ok_or(SpecError::UnknownKey)?;
            match key {
                "seed" => spec.seed = parse_u64(value)?,
                "hit" => {
                    let (action, target) = value.split_once('@').ok_or(SpecError::BadValue)?;
                    let (dir, kind) = parse_action(action).ok_or(SpecError::BadValue)?;
                    let (how, n) = target.split_once('=').ok_or(SpecError::BadValue)?;
                    let n = parse_u64(n)?;
                    let target = match how {
                        "nth" if n >= 1 && n <= u64::from(u32::MAX) => Target::Nth(n as u32),
                        "psn" if n < 1 << 24 => Target::Psn(n as u32),
                        _ => return Err(SpecError::BadValue),
                    };
                    let slot = spec
                        .hits
                        .iter_mut()
                        .find(|h| h.is_none())
                        .ok_or(SpecError::TooManyHits)?;
                    *slot = Some(Hit { dir, kind, target });
                }
                _ => {
                    let (dir, kind) = parse_action(key).ok_or(SpecError::UnknownKey)?;
                    spec.rates[dir as usize][kind as usize] = parse_rate(value)?;
                }
            }
        }
        for r in &spec.rates {
            if r.iter().sum::<u32>() > MILLION {
                return Err(SpecError::TooMuch);
            }
        }
        Ok(spec)
    }

    /// Whether any fault is set.
    pub fn is_active(&self) -> bool {
        self.hits.iter().any(Option::is_some) || self.rates.iter().flatten().any(|&r| r != 0)
    }
}

impl fmt::Display for FaultSpec {
    /// The spec in the form [`FaultSpec::parse`] reads (`off` for none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_active() {
            return f.write_str("off");
        }
        write!(f, "seed={}", self.seed)?;
        for (d, rates) in self.rates.iter().enumerate() {
            for (k, &ppm) in rates.iter().enumerate() {
                if ppm != 0 {
                    write!(
                        f,
                        " {}_{}={}.{:04}",
                        DIR_NAMES[d],
                        KIND_NAMES[k],
                        ppm / 10_000,
                        ppm % 10_000
                    )?;
                }
            }
        }
        for h in self.hits.iter().flatten() {
            write!(
                f,
                " hit={}_{}@",
                DIR_NAMES[h.dir as usize], KIND_NAMES[h.kind as usize]
            )?;
            match h.target {
                Target::Nth(n) => write!(f, "nth={n}")?,
                Target::Psn(p) => write!(f, "psn={p:#x}")?,
            }
        }
        Ok(())
    }
}

/// A spec in force: the generator and the packets seen so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    spec: FaultSpec,
    state: u64,
    /// Packets seen by direction since the spec was set.
    seen: [u32; 2],
    /// The hits that have not fired yet.
    hits: [Option<Hit>; MAX_HITS],
}

impl Faults {
    /// Puts `spec` in force, from its seed and with nothing seen.
    pub fn new(spec: FaultSpec) -> Faults {
        Faults {
            spec,
            state: spec.seed,
            seen: [0; 2],
            hits: spec.hits,
        }
    }

    /// The spec in force.
    pub fn spec(&self) -> &FaultSpec {
        &self.spec
    }

    /// How many one-time faults are still to fire.
    pub fn hits_pending(&self) -> usize {
        self.hits.iter().flatten().count()
    }

    /// Whether anything can happen to a packet (a cheap test for the
    /// packet paths).
    pub fn is_active(&self) -> bool {
        self.hits_pending() != 0 || self.spec.rates.iter().flatten().any(|&r| r != 0)
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn action(&mut self, kind: Kind) -> Action {
        match kind {
            Kind::Drop => Action::Drop,
            Kind::Dup => Action::Dup,
            Kind::Reorder => Action::Reorder,
            Kind::Corrupt => {
                let r = self.next();
                Action::Corrupt {
                    offset: r as u32,
                    xor: ((r >> 32) as u8) | 1,
                }
            }
        }
    }

    /// What to do to the next packet in direction `dir`, whose BTH PSN is
    /// `psn` (None if it has no BTH one can read).
    pub fn decide(&mut self, dir: Dir, psn: Option<u32>) -> Action {
        let seen = &mut self.seen[dir as usize];
        *seen = seen.saturating_add(1);
        let n = *seen;
        let fires = |h: &Hit| {
            h.dir == dir
                && match h.target {
                    Target::Nth(k) => k == n,
                    Target::Psn(p) => psn == Some(p),
                }
        };
        if let Some(slot) = self.hits.iter_mut().find(|h| h.as_ref().is_some_and(fires)) {
            if let Some(h) = slot.take() {
                return self.action(h.kind);
            }
        }
        let rates = self.spec.rates[dir as usize];
        if rates.iter().all(|&r| r == 0) {
            return Action::Pass;
        }
        let r = (self.next() % u64::from(MILLION)) as u32;
        let mut bound = 0;
        for (k, &rate) in rates.iter().enumerate() {
            bound += rate;
            if r < bound {
                return self.action(KINDS[k]);
            }
        }
        Action::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let s = FaultSpec::parse(
            "seed=7 tx_drop=5 rx_dup=0.5 tx_corrupt=0.0001 hit=rx_reorder@psn=0x123",
        )
        .unwrap();
        assert_eq!(s.seed, 7);
        assert_eq!(s.rates[0][Kind::Drop as usize], 50_000);
        assert_eq!(s.rates[1][Kind::Dup as usize], 5_000);
        assert_eq!(s.rates[0][Kind::Corrupt as usize], 1);
        assert_eq!(
            s.hits[0],
            Some(Hit {
                dir: Dir::Rx,
                kind: Kind::Reorder,
                target: Target::Psn(0x123)
            })
        );
        assert_eq!(s.hits[1], None);
        let text = std::format!("{s}");
        assert_eq!(
            text,
            "seed=7 tx_drop=5.0000 tx_corrupt=0.0001 rx_dup=0.5000 hit=rx_reorder@psn=0x123"
        );
        assert_eq!(FaultSpec::parse(&text).unwrap(), s);
        assert_eq!(FaultSpec::parse("off").unwrap(), FaultSpec::default());
        assert_eq!(FaultSpec::parse("").unwrap(), FaultSpec::default());
        assert_eq!(std::format!("{}", FaultSpec::default()), "off");
    }

    #[test]
    fn refuses_nonsense() {
        for bad in [
            "tx_drop=101",
            "tx_drop=-1",
            "tx_drop=1.00001",
            "tx_drop=",
            "tx_drop=x",
            "tx_fly=1",
            "drop=1",
            "seed=q",
            "hit=tx_drop",
            "hit=tx_drop@nth=0",
            "hit=tx_drop@psn=0x1000000",
            "hit=tx_drop@when=3",
            "word",
        ] {
            assert!(FaultSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            FaultSpec::parse("rx_drop=60 rx_dup=50"),
            Err(SpecError::TooMuch)
        );
        assert!(FaultSpec::parse("rx_drop=60 tx_dup=50").is_ok());
    }

    #[test]
    fn hits_once() {
        let mut f = Faults::new(FaultSpec::parse("hit=tx_drop@nth=3").unwrap());
        let acts: std::vec::Vec<_> = (0..5).map(|_| f.decide(Dir::Tx, None)).collect();
        assert_eq!(
            acts,
            [
                Action::Pass,
                Action::Pass,
                Action::Drop,
                Action::Pass,
                Action::Pass
            ]
        );
        let mut f = Faults::new(FaultSpec::parse("hit=rx_dup@psn=9").unwrap());
        assert_eq!(f.decide(Dir::Tx, Some(9)), Action::Pass, "other direction");
        assert_eq!(f.decide(Dir::Rx, Some(8)), Action::Pass);
        assert_eq!(f.decide(Dir::Rx, Some(9)), Action::Dup);
        assert_eq!(f.decide(Dir::Rx, Some(9)), Action::Pass, "only once");
        assert_eq!(f.hits_pending(), 0);
        let mut f = Faults::new(
            FaultSpec::parse("hit=rx_drop@psn=5 hit=rx_dup@psn=5 hit=tx_reorder@nth=1").unwrap(),
        );
        assert_eq!(f.hits_pending(), 3);
        assert_eq!(
            f.decide(Dir::Rx, Some(5)),
            Action::Drop,
            "the first that matches"
        );
        assert_eq!(f.decide(Dir::Rx, Some(5)), Action::Dup);
        assert_eq!(f.decide(Dir::Rx, Some(5)), Action::Pass);
        assert_eq!(f.decide(Dir::Tx, Some(5)), Action::Reorder);
        assert!(!f.is_active());
        let nine = "hit=tx_drop@nth=1 ".repeat(9);
        assert_eq!(FaultSpec::parse(&nine), Err(SpecError::TooManyHits));
        let text = std::format!(
            "{}",
            FaultSpec::parse("hit=rx_drop@psn=5 hit=tx_dup@nth=2").unwrap()
        );
        assert_eq!(text, "seed=0 hit=rx_drop@psn=0x5 hit=tx_dup@nth=2");
    }

    #[test]
    fn rates_are_about_right_and_repeatable() {
        let spec = FaultSpec::parse("seed=42 tx_drop=20 tx_dup=5 tx_corrupt=1").unwrap();
        let mut a = Faults::new(spec);
        let mut b = Faults::new(spec);
        let mut counts = [0u32; 5];
        for _ in 0..100_000 {
            let x = a.decide(Dir::Tx, None);
            assert_eq!(x, b.decide(Dir::Tx, None), "same seed, same choices");
            let i = match x {
                Action::Pass => 0,
                Action::Drop => 1,
                Action::Dup => 2,
                Action::Reorder => 3,
                Action::Corrupt { xor, .. } => {
                    assert_ne!(xor, 0);
                    4
                }
            };
            counts[i] += 1;
        }
        assert!((19_000..21_000).contains(&counts[1]), "{counts:?}");
        assert!((4_500..5_500).contains(&counts[2]), "{counts:?}");
        assert_eq!(counts[3], 0);
        assert!((800..1_200).contains(&counts[4]), "{counts:?}");
        // Receive untouched.
        assert!((0..1000).all(|_| a.decide(Dir::Rx, None) == Action::Pass));
    }
}
