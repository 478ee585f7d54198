// SPDX-License-Identifier: GPL-2.0

//! Error codes the 6.12 kernel crate does not name, from the C headers'
//! values (`bindings`).

use kernel::error::Error;

use crate::kshim::bindings;

/// `EOPNOTSUPP`: the device does not support the operation.
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `ETIMEDOUT`: no answer in time.
pub fn etimedout() -> Error {
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}

/// `ENOTCONN`: not connected.
pub fn enotconn() -> Error {
    Error::from_errno(-(bindings::ENOTCONN as i32))
}

/// `EADDRNOTAVAIL`: no device of ours has that address.
pub fn eaddrnotavail() -> Error {
    Error::from_errno(-(bindings::EADDRNOTAVAIL as i32))
}

/// `ECONNREFUSED`: the peer rejected.
pub fn econnrefused() -> Error {
    Error::from_errno(-(bindings::ECONNREFUSED as i32))
}

/// `EPROTO`: the peer broke the protocol.
pub fn eproto() -> Error {
    Error::from_errno(-(bindings::EPROTO as i32))
}

/// `ECONNABORTED`: the connection or session went away.
pub fn econnaborted() -> Error {
    Error::from_errno(-(bindings::ECONNABORTED as i32))
}

/// `ECONNRESET`: the peer closed the connection.
pub fn econnreset() -> Error {
    Error::from_errno(-(bindings::ECONNRESET as i32))
}

/// `EHOSTUNREACH`: no route or no answer.
pub fn ehostunreach() -> Error {
    Error::from_errno(-(bindings::EHOSTUNREACH as i32))
}

/// `EMSGSIZE`: a message too long for its channel.
pub fn emsgsize() -> Error {
    Error::from_errno(-(bindings::EMSGSIZE as i32))
}

/// `EAFNOSUPPORT`: an address of a family not supported.
pub fn eafnosupport() -> Error {
    Error::from_errno(-(bindings::EAFNOSUPPORT as i32))
}

/// `ENOSYS`: a command of the ABI that is not implemented.
pub fn enosys() -> Error {
    Error::from_errno(-(bindings::ENOSYS as i32))
}
