// SPDX-License-Identifier: GPL-2.0

//! Error codes the 6.12 kernel crate does not name.

use kernel::error::Error;

/// `EOPNOTSUPP`: the device does not support the operation.
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(crate::kshim::bindings::EOPNOTSUPP as i32))
}
