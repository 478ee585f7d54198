// SPDX-License-Identifier: GPL-2.0

//! The direction of a request, one type for both sides: the client's
//! `rtrs::clt::Dir` and the server's `rtrs::srv::Dir` are this one.

/// The direction of a request, named as the client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The client reads: the server's ULP fills the data area of the
    /// chunk, which the server writes into the client's data slices.
    Read,
    /// The client writes: its data slices arrive in the data area of the
    /// server's chunk.
    Write,
}
