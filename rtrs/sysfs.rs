// SPDX-License-Identifier: GPL-2.0

//! What the client's and the server's sysfs share: the class each
//! registers, a session's directory and its `paths`, a path's directory
//! `<src@dst>` with the files both sides give every path (`hca_name`,
//! `hca_port`, `src_addr`, `dst_addr`) and its `stats`, addresses as the
//! kernel's RTRS writes them, and the writes its files take.

use core::fmt::Write;

use kernel::c_str;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::Arc;

use rdma::cma::IpAddr;
use rdma::kshim::class::{Page, SysClass, SysDir, SysFile, SysFiles};
use rdma::kshim::global::Global;

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

/// A side's class, `/sys/class/<name>`, registered from module init to
/// module exit.
pub(crate) struct Class {
    name: &'static CStr,
    class: Global<SysClass>,
}

impl Class {
    pub(crate) const fn new(name: &'static CStr) -> Class {
        Class {
            name,
            class: Global::new(),
        }
    }

    /// Registers it (module init).
    pub(crate) fn init(&self) -> Result {
        drop(self.class.replace(Some(SysClass::new(self.name)?)));
        Ok(())
    }

    /// Unregisters it (module exit, after every session and server).
    pub(crate) fn exit(&self) {
        drop(self.class.replace(None));
    }

    /// A session's directories: `<name>` with `files`, then its `paths`
    /// (no files), both shown and stored by `ops`. `ENODEV` outside module
    /// init and exit; `EEXIST` if the class has a directory `name`.
    pub(crate) fn session_dirs(
        &self,
        name: &CStr,
        files: &[SysFile],
        ops: Arc<dyn SysFiles>,
    ) -> Result<KVec<SysDir>> {
        let class = self.class.get().ok_or(ENODEV)?;
        let top = SysDir::top(&class, name, files, ops.clone())?;
        let paths = top.child(c_str!("paths"), &[], ops)?;
        let mut v = KVec::with_capacity(2, GFP_KERNEL)?;
        v.push(top, GFP_KERNEL)?;
        v.push(paths, GFP_KERNEL)?;
        Ok(v)
    }
}

/// The ids of the files every path's directory has (a side numbers its
/// own files below these).
pub(crate) const HCA_NAME: u32 = 100;
pub(crate) const HCA_PORT: u32 = 101;
pub(crate) const SRC_ADDR: u32 = 102;
pub(crate) const DST_ADDR: u32 = 103;

/// The files every path's directory has, read only.
const PATH_FILES: [SysFile; 4] = [
    SysFile {
        name: c_str!("hca_name"),
        id: HCA_NAME,
        writable: false,
    },
    SysFile {
        name: c_str!("hca_port"),
        id: HCA_PORT,
        writable: false,
    },
    SysFile {
        name: c_str!("src_addr"),
        id: SRC_ADDR,
        writable: false,
    },
    SysFile {
        name: c_str!("dst_addr"),
        id: DST_ADDR,
        writable: false,
    },
];

/// A path as the files every path's directory has show it.
pub(crate) struct PathEnds<'a> {
    /// Its device's name (empty before it has one).
    pub(crate) hca: &'a [u8],
    /// Its device's port.
    pub(crate) port: u32,
    /// `src_addr`: the client's address.
    pub(crate) src: Option<IpAddr>,
    /// `dst_addr`: the server's.
    pub(crate) dst: Option<IpAddr>,
}

impl PathEnds<'_> {
    /// Writes the text of file `id` if it is one every path has; `None`
    /// for another (the side's own).
    pub(crate) fn show(&self, id: u32, out: &mut Page) -> Option<Result> {
        let r = match id {
            HCA_NAME => writeln!(out, "{}", core::str::from_utf8(self.hca).unwrap_or("?")),
            HCA_PORT => writeln!(out, "{}", self.port),
            SRC_ADDR => writeln!(out, "{}", Addr(self.src)),
            DST_ADDR => writeln!(out, "{}", Addr(self.dst)),
            _ => return None,
        };
        Some(r.map_err(fmt_err))
    }
}

/// A path's directories in its session's `paths`: `<src>@<dst>` with
/// the files every path has and `own`, then its `stats` with `stats`; all
/// shown and stored by `ops`. Dropping them removes them.
pub(crate) fn path_dirs(
    paths: &SysDir,
    src: Option<IpAddr>,
    dst: Option<IpAddr>,
    own: &[SysFile],
    stats: &[SysFile],
    ops: Arc<dyn SysFiles>,
) -> Result<KVec<SysDir>> {
    let name = CString::try_from_fmt(fmt!("{}@{}", Addr(src), Addr(dst)))?;
    let mut files = KVec::with_capacity(own.len() + PATH_FILES.len(), GFP_KERNEL)?;
    files.extend_from_slice(own, GFP_KERNEL)?;
    files.extend_from_slice(&PATH_FILES, GFP_KERNEL)?;
    let dir = paths.child(&name, &files, ops.clone())?;
    let stats = dir.child(c_str!("stats"), stats, ops)?;
    let mut v = KVec::with_capacity(2, GFP_KERNEL)?;
    v.push(dir, GFP_KERNEL)?;
    v.push(stats, GFP_KERNEL)?;
    Ok(v)
}
