// SPDX-License-Identifier: GPL-2.0

//! Error codes the 6.12 kernel crate does not name.

use kernel::error::Error;

/// `EOPNOTSUPP`: the device does not support the operation.
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(crate::kshim::bindings::EOPNOTSUPP as i32))
}

/// `ETIMEDOUT` (110): no answer in time.
pub fn etimedout() -> Error {
    Error::from_errno(-110)
}

/// `ENOTCONN` (107): not connected.
pub fn enotconn() -> Error {
    Error::from_errno(-107)
}

/// `EADDRNOTAVAIL` (99): no device of ours has that address.
pub fn eaddrnotavail() -> Error {
    Error::from_errno(-99)
}

/// `ECONNREFUSED` (111): the peer rejected.
pub fn econnrefused() -> Error {
    Error::from_errno(-111)
}

/// `EPROTO` (71): the peer broke the protocol.
pub fn eproto() -> Error {
    Error::from_errno(-71)
}

/// `ECONNABORTED` (103): the connection or session went away.
pub fn econnaborted() -> Error {
    Error::from_errno(-103)
}

/// `ECONNRESET` (104): the peer closed the connection.
pub fn econnreset() -> Error {
    Error::from_errno(-104)
}

/// `EHOSTUNREACH` (113): no route or no answer.
pub fn ehostunreach() -> Error {
    Error::from_errno(-113)
}
