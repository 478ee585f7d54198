// SPDX-License-Identifier: GPL-2.0

//! 24-bit packet sequence number arithmetic.
//!
//! PSNs count modulo 2^24 and wrap, so "before" and "after" only make
//! sense for PSNs less than half the space apart. Following rxe's
//! `psn_compare()` (drivers/infiniband/sw/rxe/rxe_verbs.h), the distance
//! from `b` to `a` is `a - b` taken modulo 2^24 and read as a signed 24-bit
//! number, in `-2^23 ..= 2^23 - 1`: a PSN exactly half the space away
//! counts as before. Only the low 24 bits of any `u32` given here matter,
//! so values that overflowed into the top byte compare correctly.
//!
//! This module uses only `core` and nothing else of its crate, so it can be
//! compiled as a module of another crate.

use core::cmp::Ordering;

/// The bits of a PSN.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// `a + n` modulo 2^24.
pub const fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - n` modulo 2^24.
pub const fn psn_sub(a: u32, n: u32) -> u32 {
    a.wrapping_sub(n) & PSN_MASK
}

/// The signed distance from `b` to `a` (`a - b` across the wrap), in
/// `-2^23 ..= 2^23 - 1`.
pub const fn psn_diff(a: u32, b: u32) -> i32 {
    // Put the 24-bit difference in the top of a 32-bit word, reinterpret
    // it as signed and shift back down with sign extension.
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// How `a` orders against `b` across the wrap, as rxe's `psn_compare()`.
pub const fn psn_compare(a: u32, b: u32) -> Ordering {
    let d = psn_diff(a, b);
    if d < 0 {
        Ordering::Less
    } else if d > 0 {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// A packet sequence number: always within 24 bits.
///
/// Deliberately not `Ord`: the order across the wrap is not transitive.
/// Use [`Psn::compare`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Psn(u32);

impl Psn {
    /// The PSN made of the low 24 bits of `value`.
    pub const fn new(value: u32) -> Psn {
        Psn(value & PSN_MASK)
    }

    /// The PSN as a number below 2^24.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// This PSN plus `n`, wrapping.
    pub const fn add(self, n: u32) -> Psn {
        Psn(psn_add(self.0, n))
    }

    /// This PSN minus `n`, wrapping.
    pub const fn sub(self, n: u32) -> Psn {
        Psn(psn_sub(self.0, n))
    }

    /// The next PSN.
    pub const fn next(self) -> Psn {
        self.add(1)
    }

    /// The signed distance from `other` to this PSN.
    pub const fn diff(self, other: Psn) -> i32 {
        psn_diff(self.0, other.0)
    }

    /// How this PSN orders against `other`, across the wrap.
    pub const fn compare(self, other: Psn) -> Ordering {
        psn_compare(self.0, other.0)
    }

    /// Whether this PSN comes before `other`.
    pub const fn is_before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// Whether this PSN comes after `other`.
    pub const fn is_after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }
}

impl From<Psn> for u32 {
    fn from(psn: Psn) -> u32 {
        psn.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rxe's formulation, written out on the host for comparison.
    fn kernel_psn_compare(a: u32, b: u32) -> i32 {
        (a.wrapping_sub(b) << 8) as i32
    }

    #[test]
    fn wraps_at_24_bits() {
        let top = Psn::new(PSN_MASK);
        assert_eq!(top.next(), Psn::new(0));
        assert_eq!(top.add(5).value(), 4);
        assert_eq!(Psn::new(3).sub(5).value(), PSN_MASK - 1);
        assert_eq!(Psn::new(0x0123_4567).value(), 0x23_4567);
        assert_eq!(Psn::new(2).diff(top), 3);
        assert_eq!(top.diff(Psn::new(2)), -3);
        assert!(top.is_before(Psn::new(0)));
        assert!(Psn::new(0).is_after(top));
        assert_eq!(Psn::new(7).compare(Psn::new(7)), Ordering::Equal);
        assert_eq!(psn_add(u32::MAX, 1), 0);
    }

    #[test]
    fn half_way_counts_as_before() {
        let half = 1 << 23;
        assert_eq!(psn_diff(half, 0), -(half as i32));
        assert_eq!(psn_compare(half, 0), Ordering::Less);
        assert_eq!(psn_compare(0, half), Ordering::Less);
        assert_eq!(psn_diff(half - 1, 0), (half - 1) as i32);
        assert_eq!(psn_compare(half - 1, 0), Ordering::Greater);
    }

    #[test]
    fn agrees_with_rxe_formulation() {
        let interesting = [
            0u32,
            1,
            2,
            0x7f_fffe,
            0x7f_ffff,
            0x80_0000,
            0x80_0001,
            0xff_fffe,
            0xff_ffff,
            0x100_0000,
            0x1ff_ffff,
            u32::MAX,
        ];
        let mut x = 0x2545_f491u32;
        let mut values = interesting.to_vec();
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            values.push(x);
        }
        for &a in &values {
            for &b in interesting.iter().chain(values.iter().take(50)) {
                let want = kernel_psn_compare(a, b).cmp(&0);
                assert_eq!(psn_compare(a, b), want, "{a:#x} vs {b:#x}");
                let d = psn_diff(a, b);
                assert!((-(1 << 23)..(1 << 23)).contains(&d));
                assert_eq!(psn_add(b, d as u32), a & PSN_MASK);
            }
        }
    }
}
