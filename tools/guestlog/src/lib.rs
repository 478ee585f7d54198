//! Reading what a test guest left behind.
//!
//! The guest writes its KTAP results to one serial port ([`ktap`]) and the
//! kernel log to another ([`splat`]); the harness turns both into a verdict:
//! every test passed, the guest reached its end marker, and the kernel said
//! nothing that counts as a splat.

pub mod ktap;
pub mod splat;

/// The line the guest writes last, after the final kmemleak scan.
pub const END_MARKER: &str = "# rdma-rs: guest done";
