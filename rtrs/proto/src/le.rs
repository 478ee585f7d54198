// SPDX-License-Identifier: GPL-2.0

//! Little-endian field access for the message codecs of this crate.
//!
//! Every multi-byte field of RTRS and RNBD is little-endian (`__le16`,
//! `__le32`, `__le64` in the C). These helpers read and write them at byte
//! offsets with `get`, so they cannot panic: callers check a buffer's
//! length once ([`need`]) and then read fields inside it; a read outside a
//! buffer gives zero and a write outside one writes nothing, which the
//! length check makes impossible.
//!
//! This module uses only `core` and its sibling [`super::error`].

use super::error::Error;

/// Fails with [`Error::TooShort`] unless `got >= needed`.
pub(crate) fn need(got: usize, needed: usize) -> Result<(), Error> {
    if got < needed {
        Err(Error::TooShort { needed, got })
    } else {
        Ok(())
    }
}

/// The `N` bytes at `at`, or zeros.
pub(crate) fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = at.checked_add(N).and_then(|end| b.get(at..end)) {
        for (d, s) in out.iter_mut().zip(src) {
            *d = *s;
        }
    }
    out
}

/// The `__le16` at `at`.
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes(b, at))
}

/// The `__le32` at `at`.
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes(b, at))
}

/// The `__le64` at `at`.
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes(b, at))
}

/// Copies `v` to `b` at `at`.
pub(crate) fn put(b: &mut [u8], at: usize, v: &[u8]) {
    for (d, s) in b.iter_mut().skip(at).zip(v) {
        *d = *s;
    }
}

/// Zeroes the first `len` bytes of `b` (reserved fields and padding).
pub(crate) fn zero(b: &mut [u8], len: usize) {
    for d in b.iter_mut().take(len) {
        *d = 0;
    }
}
