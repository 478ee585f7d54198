// SPDX-License-Identifier: GPL-2.0

//! Small `KVec` helpers that the 6.12 kernel crate does not have yet
//! (`remove`, `pop`, `retain`, `clear`), for this crate and the modules that use it.

use kernel::prelude::*;

/// Removes and returns the element at `index`, shifting the rest down, as
/// `Vec::remove` does. Returns `None` when `index` is out of bounds.
pub fn remove<T>(v: &mut KVec<T>, index: usize) -> Option<T> {
    let len = v.len();
    if index >= len {
        return None;
    }
    v.as_mut_slice()[index..].rotate_left(1);
    // SAFETY: `len - 1 < len`, so the slot is initialised; after the read it
    // is logically moved out, and `set_len` below drops it from the vector
    // without dropping it twice.
    let item = unsafe { core::ptr::read(v.as_ptr().add(len - 1)) };
    // SAFETY: the first `len - 1` elements are initialised and the last one
    // was moved out above.
    unsafe { v.set_len(len - 1) };
    Some(item)
}

/// Removes the first element for which `pred` holds and returns it.
pub fn remove_first<T>(v: &mut KVec<T>, pred: impl Fn(&T) -> bool) -> Option<T> {
    let index = v.iter().position(pred)?;
    remove(v, index)
}

/// Removes and returns the last element, as `Vec::pop` does.
pub fn pop<T>(v: &mut KVec<T>) -> Option<T> {
    let len = v.len();
    if len == 0 {
        return None;
    }
    remove(v, len - 1)
}

/// Keeps only the elements for which `keep` holds, in order, as
/// `Vec::retain` does.
pub fn retain<T>(v: &mut KVec<T>, keep: impl Fn(&T) -> bool) {
    while let Some(i) = v.iter().position(|x| !keep(x)) {
        drop(remove(v, i));
    }
}

/// Drops every element.
pub fn clear<T>(v: &mut KVec<T>) {
    while pop(v).is_some() {}
}
