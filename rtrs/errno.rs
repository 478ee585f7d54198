// SPDX-License-Identifier: GPL-2.0

//! The errnos of a transport that the 6.12 kernel crate does not name.

use kernel::error::Error;

/// `EPROTO` (71): the peer broke the protocol.
pub fn eproto() -> Error {
    Error::from_errno(-71)
}

/// `ECONNABORTED` (103): the session or path went away.
pub fn econnaborted() -> Error {
    Error::from_errno(-103)
}

/// `ECONNRESET` (104): the peer closed the connection.
pub fn econnreset() -> Error {
    Error::from_errno(-104)
}

/// `ENOTCONN` (107): nothing connected.
pub fn enotconn() -> Error {
    Error::from_errno(-107)
}

/// `ETIMEDOUT` (110): no answer in time.
pub fn etimedout() -> Error {
    Error::from_errno(-110)
}

/// `ECONNREFUSED` (111): the peer rejected.
pub fn econnrefused() -> Error {
    Error::from_errno(-111)
}

/// `EHOSTUNREACH` (113): no route or no answer.
pub fn ehostunreach() -> Error {
    Error::from_errno(-113)
}
