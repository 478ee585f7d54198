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

use core::fmt::Write;
use core::sync::atomic::Ordering;

use kernel::c_str;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::Arc;

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::class::{Page, SysClass, SysDir, SysFile, SysFiles};
use rdma::kshim::global::Global;

use crate::clt::path::{ClPath, Phase};
use crate::clt::session::{PathAddr, SessInner};
use crate::proto::mpath::Policy;
use crate::sysfs::{fmt_err, one, trim, Addr};

/// `/sys/class/rdma_rs_rtrs_client`, while the module is loaded.
pub(crate) static CLASS: Global<SysClass> = Global::new();

/// Registers the class (module init).
pub(crate) fn init() -> Result {
    CLASS.replace(Some(SysClass::new(c_str!("rdma_rs_rtrs_client"))?));
    Ok(())
}

/// Unregisters it (module exit, after every session).
pub(crate) fn exit() {
    drop(CLASS.replace(None));
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
const HCA_NAME: u32 = 14;
const HCA_PORT: u32 = 15;
const SRC_ADDR: u32 = 16;
const DST_ADDR: u32 = 17;
const CUR_LATENCY: u32 = 18;

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
pub(crate) struct SessFiles(pub(crate) Arc<SessInner>);

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
                s.add_path_later(PathAddr {
                    src: src.map(|ip| SockAddr { ip, port: 0 }),
                    dst: SockAddr { ip: dst, port },
                })
            }
        }
    }
}

/// A path's files and its stats' files.
pub(crate) struct PathFiles(pub(crate) Arc<ClPath>);

impl SysFiles for PathFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let p = &self.0;
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
            HCA_NAME => {
                let mut n = [0u8; 64];
                let l = p.hca_name(&mut n);
                writeln!(out, "{}", core::str::from_utf8(&n[..l]).unwrap_or("?"))
            }
            HCA_PORT => writeln!(out, "1"),
            SRC_ADDR => writeln!(out, "{}", Addr(p.src().map(|a| a.ip))),
            DST_ADDR => writeln!(out, "{}", Addr(Some(p.addr.dst.ip))),
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
            RECONNECT => p.reconnect_now(),
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

/// The session's directories: its own and `paths`.
pub(crate) fn add_session(s: &Arc<SessInner>) -> Result<KVec<SysDir>> {
    let class = CLASS.get().ok_or(ENODEV)?;
    let name = CString::try_from_fmt(fmt!(
        "{}",
        core::str::from_utf8(s.name()).map_err(|_| EINVAL)?
    ))?;
    let top = SysDir::top(
        &class,
        &name,
        SESS_FILES,
        Arc::new(SessFiles(s.clone()), GFP_KERNEL)?,
    )?;
    let paths = top.child(
        c_str!("paths"),
        &[],
        Arc::new(SessFiles(s.clone()), GFP_KERNEL)?,
    )?;
    let mut v = KVec::with_capacity(2, GFP_KERNEL)?;
    v.push(top, GFP_KERNEL)?;
    v.push(paths, GFP_KERNEL)?;
    Ok(v)
}

/// A path's directories (`<src@dst>` in `paths`, and its `stats`).
pub(crate) fn add_path(paths: &SysDir, p: &Arc<ClPath>) -> Result<KVec<SysDir>> {
    let cname = CString::try_from_fmt(fmt!(
        "{}@{}",
        Addr(p.src().map(|a| a.ip)),
        Addr(Some(p.addr.dst.ip))
    ))?;
    let dir = paths.child(
        &cname,
        PATH_FILES,
        Arc::new(PathFiles(p.clone()), GFP_KERNEL)?,
    )?;
    let stats = dir.child(
        c_str!("stats"),
        STATS_FILES,
        Arc::new(PathFiles(p.clone()), GFP_KERNEL)?,
    )?;
    let mut v = KVec::with_capacity(2, GFP_KERNEL)?;
    v.push(dir, GFP_KERNEL)?;
    v.push(stats, GFP_KERNEL)?;
    Ok(v)
}
