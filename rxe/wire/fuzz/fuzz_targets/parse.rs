// SPDX-License-Identifier: GPL-2.0

//! Fuzz target: any byte string as a received frame, through the check of
//! `tools/wirefuzz` (which also runs it, bounded, on the stable toolchain
//! in `make check`): the parser must not panic, and whatever it accepts
//! must build back into the same bytes and parse again to the same packet.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = wirefuzz::check(data);
});
