// SPDX-License-Identifier: GPL-2.0

//! What the client's and the server's sysfs share: addresses as the
//! kernel's RTRS writes them, and the writes its files take.

use kernel::prelude::*;

use rdma::cma::IpAddr;

/// An address as the kernel's RTRS writes it: `ip:a.b.c.d` (or the IPv6
/// groups); `ip:0.0.0.0` when there is none yet.
pub(crate) struct Addr(pub(crate) Option<IpAddr>);

impl core::fmt::Display for Addr {
    fn fmt(&self, out: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0.unwrap_or(IpAddr::V4([0; 4])) {
            IpAddr::V4(a) => write!(out, "ip:{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
            IpAddr::V6(a) => {
                write!(out, "ip:")?;
                for (i, g) in a.chunks(2).enumerate() {
                    let sep = if i == 0 { "" } else { ":" };
                    write!(out, "{}{:x}", sep, u16::from_be_bytes([g[0], g[1]]))?;
                }
                Ok(())
            }
        }
    }
}

/// The text written to a file, without its newline.
pub(crate) fn trim(input: &[u8]) -> &[u8] {
    input.strip_suffix(b"\n").unwrap_or(input)
}

/// Takes "1" (the kernel's files that act take nothing else).
pub(crate) fn one(input: &[u8]) -> Result {
    if trim(input) == b"1" {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// A `show` whose text did not fit.
pub(crate) fn fmt_err(_: core::fmt::Error) -> Error {
    EINVAL
}
