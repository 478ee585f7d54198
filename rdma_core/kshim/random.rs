// SPDX-License-Identifier: GPL-2.0

//! Random numbers from the kernel's generator, for what must not be
//! guessed or repeat soon: the key byte of every new MR and MW.

/// A random 32-bit number (`get_random_u32`). Any context.
pub fn u32() -> u32 {
    // SAFETY: `get_random_u32` takes no arguments, touches only the
    // generator's per-CPU batches, and may be called from any context,
    // interrupts included.
    unsafe { kernel::bindings::get_random_u32() }
}

/// A random byte. Any context.
pub fn u8() -> u8 {
    u32() as u8
}
