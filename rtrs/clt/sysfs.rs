// SPDX-License-Identifier: GPL-2.0

//! The client's sysfs, laid out as the kernel's `rtrs-client` class but
//! under `/sys/class/rdma_rs_rtrs_client` (both stacks load in one guest):
//!
//! ```text
//! <sessname>/max_reconnect_attempts   rw  %d (-1..9999)
//! <sessname>/mpath_policy             rw  "min-inflight (MI: 1)"; takes 0..2 or a name
//! <sessname>/add_path                 rw  usage; takes [ip:src@]ip:dst
//! <sessname>/paths/<src@dst>/state    ro  connected | disconnected
//!     reconnect, disconnect, remove_path   rw  usage; take 1
//!     hca_name, hca_port, src_addr, dst_addr, cur_latency ("%lld ns")
//!     stats/reconnects  rw  "successful failed"; 1 resets
//!     stats/rdma        rw  "reads read_bytes writes write_bytes inflight failovers"; 1 resets
//!     stats/reset_all   rw  usage; 1 resets every counter
//! ```
//!
//! The texts are the kernel's (rtrs-clt-sysfs.c), so its tools read ours.
//! A store that removes its own path defers the removal to a work item.
//! The directories and the files every path has are made as the server's
//! are (`crate::sysfs`); a session is seen through [`SessCtl`], which it
//! implements.

use core::fmt::Write;
use core::sync::atomic::Ordering;

use kernel::c_str;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::Arc;

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::class::{Page, SysDir, SysFile, SysFiles};

use crate::clt::path::{ClPath, PathAddr, Phase, SYSFS_WAIT_SECS};
use crate::proto::mpath::Policy;
use crate::sysfs::{fmt_err, one, path_dirs, trim, Class, PathEnds};

/// `/sys/class/rdma_rs_rtrs_client`, registered while the module is loaded
/// (module init and exit, after every session).
pub(crate) static CLASS: Class = Class::new(c_str!("rdma_rs_rtrs_client"));

/// What a session's files show and change; the session implements it.
pub(crate) trait SessCtl: Send + Sync {
    /// Reconnect attempts per failure.
    fn max_reconnect_attempts(&self) -> i32;
    /// Sets them (`EINVAL` outside the kernel's bounds).
    fn set_max_reconnect_attempts(&self, v: i32) -> Result;
    /// The multipath policy.
    fn policy(&self) -> Policy;
    /// Sets it.
    fn set_policy(&self, p: Policy);
    /// The server's port (of the session's first path).
    fn port(&self) -> u16;
    /// Adds a path to `addr` and waits for its connection (removed
    /// again, with the errno, if it fails).
    fn add_path_wait(self: Arc<Self>, addr: PathAddr) -> Result;
}

const MAX_RECONNECT: u32 = 0;
const MPATH_POLICY: u32 = 1;
const ADD_PATH: u32 = 2;

const SESS_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("max_reconnect_attempts"),
        id: MAX_RECONNECT,
        writable: true,
    },
    SysFile {
        name: c_str!("mpath_policy"),
        id: MPATH_POLICY,
        writable: true,
    },
    SysFile {
        name: c_str!("add_path"),
        id: ADD_PATH,
        writable: true,
    },
];

const STATE: u32 = 10;
const RECONNECT: u32 = 11;
const DISCONNECT: u32 = 12;
const REMOVE_PATH: u32 = 13;
const CUR_LATENCY: u32 = 18;

/// A path's own files, besides those every path has.
const PATH_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("state"),
        id: STATE,
        writable: false,
    },
    SysFile {
        name: c_str!("reconnect"),
        id: RECONNECT,
        writable: true,
    },
    SysFile {
        name: c_str!("disconnect"),
        id: DISCONNECT,
        writable: true,
    },
    SysFile {
        name: c_str!("remove_path"),
        id: REMOVE_PATH,
        writable: true,
    },
    SysFile {
        name: c_str!("cur_latency"),
        id: CUR_LATENCY,
        writable: false,
    },
];

const RECONNECTS: u32 = 20;
const RDMA: u32 = 21;
const RESET_ALL: u32 = 22;

const STATS_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("reconnects"),
        id: RECONNECTS,
        writable: true,
    },
    SysFile {
        name: c_str!("rdma"),
        id: RDMA,
        writable: true,
    },
    SysFile {
        name: c_str!("reset_all"),
        id: RESET_ALL,
        writable: true,
    },
];

/// Parses `[ip:]a.b.c.d`.
fn parse_ip(s: &[u8]) -> Result<IpAddr> {
    let s = s.strip_prefix(b"ip:").unwrap_or(s);
    let mut a = [0u8; 4];
    let mut n = 0;
    for part in s.split(|&c| c == b'.') {
        if n >= 4 || part.is_empty() || part.len() > 3 {
            return Err(EINVAL);
        }
        let mut v: u32 = 0;
        for &c in part {
            if !c.is_ascii_digit() {
                return Err(EINVAL);
            }
            v = v * 10 + u32::from(c - b'0');
        }
        a[n] = u8::try_from(v).map_err(|_| EINVAL)?;
        n += 1;
    }
    if n != 4 {
        return Err(EINVAL);
    }
    Ok(IpAddr::V4(a))
}

/// The session's files.
struct SessFiles(Arc<dyn SessCtl>);

impl SysFiles for SessFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let s = &self.0;
        match id {
            MAX_RECONNECT => writeln!(out, "{}", s.max_reconnect_attempts()),
            MPATH_POLICY => writeln!(out, "{}", s.policy().show()),
            _ => write!(
                out,
                "Usage: echo [<source addr>@]<destination addr> > add_path\n\n*addr ::= [ ip:<ipv4> ]\n"
            ),
        }
        .map_err(fmt_err)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        let s = &self.0;
        match id {
            MAX_RECONNECT => {
                let t = core::str::from_utf8(trim(input)).map_err(|_| EINVAL)?;
                let v: i32 = t.parse().map_err(|_| EINVAL)?;
                s.set_max_reconnect_attempts(v)
            }
            MPATH_POLICY => {
                s.set_policy(Policy::parse(input).map_err(|_| EINVAL)?);
                Ok(())
            }
            _ => {
                let t = trim(input);
                let (src, dst) = match t.iter().position(|&c| c == b'@' || c == b',') {
                    Some(i) => (Some(parse_ip(&t[..i])?), parse_ip(&t[i + 1..])?),
                    None => (None, parse_ip(t)?),
                };
                let port = s.port();
                s.clone().add_path_wait(PathAddr {
                    src: src.map(|ip| SockAddr { ip, port: 0 }),
                    dst: SockAddr { ip: dst, port },
                })
            }
        }
    }
}

/// A path's files and its stats' files.
struct PathFiles(Arc<ClPath>);

impl SysFiles for PathFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let p = &self.0;
        let mut hca = [0u8; 64];
        let l = p.hca_name(&mut hca);
        let ends = PathEnds {
            hca: &hca[..l],
            port: 1,
            src: p.src().map(|a| a.ip),
            dst: Some(p.addr.dst.ip),
        };
        if let Some(r) = ends.show(id, out) {
            return r;
        }
        let st = &p.stats;
        let r = match id {
            STATE => writeln!(
                out,
                "{}",
                if p.phase() == Phase::Connected {
                    "connected"
                } else {
                    "disconnected"
                }
            ),
            RECONNECT | DISCONNECT | REMOVE_PATH => {
                let name = match id {
                    RECONNECT => "reconnect",
                    DISCONNECT => "disconnect",
                    _ => "remove_path",
                };
                writeln!(out, "Usage: echo 1 > {}", name)
            }
            CUR_LATENCY => writeln!(out, "{} ns", p.latency_ns()),
            RECONNECTS => writeln!(
                out,
                "{} {}",
                st.reconnects.load(Ordering::Relaxed),
                st.fail_cnt.load(Ordering::Relaxed)
            ),
            RDMA => writeln!(
                out,
                "{} {} {} {} {} {}",
                st.reads.load(Ordering::Relaxed),
                st.read_bytes.load(Ordering::Relaxed),
                st.writes.load(Ordering::Relaxed),
                st.write_bytes.load(Ordering::Relaxed),
                p.inflight.load(Ordering::Relaxed),
                st.failovers.load(Ordering::Relaxed)
            ),
            _ => writeln!(out, "echo 1 to reset all statistics"),
        };
        r.map_err(fmt_err)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        one(input)?;
        let p = &self.0;
        match id {
            RECONNECT => {
                let before = p.attempts();
                p.reconnect_now()?;
                p.wait_attempt(before, SYSFS_WAIT_SECS)
            }
            DISCONNECT => p.disconnect_now(),
            REMOVE_PATH => p.remove_later(),
            RECONNECTS => {
                p.stats.reconnects.store(0, Ordering::Relaxed);
                p.stats.fail_cnt.store(0, Ordering::Relaxed);
                Ok(())
            }
            RDMA => {
                p.stats.reset_rdma();
                Ok(())
            }
            RESET_ALL => {
                p.stats.reset_rdma();
                p.stats.reconnects.store(0, Ordering::Relaxed);
                p.stats.fail_cnt.store(0, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(EACCES),
        }
    }
}

/// The directories of session `name`: its own and `paths`.
pub(crate) fn add_session(name: &[u8], s: Arc<dyn SessCtl>) -> Result<KVec<SysDir>> {
    let name = CString::try_from_fmt(fmt!("{}", core::str::from_utf8(name).map_err(|_| EINVAL)?))?;
    CLASS.session_dirs(&name, SESS_FILES, Arc::new(SessFiles(s), GFP_KERNEL)?)
}

/// A path's directories (`<src@dst>` in `paths`, and its `stats`).
pub(crate) fn add_path(paths: &SysDir, p: &Arc<ClPath>) -> Result<KVec<SysDir>> {
    path_dirs(
        paths,
        p.src().map(|a| a.ip),
        Some(p.addr.dst.ip),
        PATH_FILES,
        STATS_FILES,
        Arc::new(PathFiles(p.clone()), GFP_KERNEL)?,
    )
}
