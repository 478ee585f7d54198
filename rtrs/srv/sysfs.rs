// SPDX-License-Identifier: GPL-2.0

//! The server's sysfs, laid out as the kernel's `rtrs-server` class but
//! under `/sys/class/rdma_rs_rtrs_server` (both stacks load in one guest):
//!
//! ```text
//! <sessname>/paths/<src@dst>/hca_name    ro  the device's name
//!     hca_port                           ro  its port
//!     src_addr                           ro  the client's address, "ip:a.b.c.d"
//!     dst_addr                           ro  ours
//!     disconnect                         rw  usage; 1 closes the path
//!     stats/rdma                         rw  "reads read_bytes writes write_bytes"; 1 resets
//! ```
//!
//! `<sessname>` is the name the client's INFO_REQ gives (its session's
//! name), `<src@dst>` the client's address and ours. A session directory
//! groups the paths of one client session (the `paths_uuid` of their
//! connection requests) and goes with its last path; another client
//! session of the same name is refused, as the kernel's server refuses it.
//! The texts are the kernel's (rtrs-srv-sysfs.c, rtrs-srv-stats.c). A
//! `disconnect` closes its path from the server's work queue, which removes
//! the directory after the store returned. The directories and the files
//! every path has are made as the client's are (`crate::sysfs`); a path is
//! seen through [`SysPath`], which it implements.

use core::fmt::Write;
use core::sync::atomic::Ordering;

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::kshim::class::{Page, SysDir, SysFile, SysFiles};

use crate::proto::conn::Uuid;
use crate::srv::stats::Stats;
use crate::sysfs::{fmt_err, one, path_dirs, Class, PathEnds};

/// `/sys/class/rdma_rs_rtrs_server`, registered while the module is loaded
/// (module init and exit, after every server).
pub(crate) static CLASS: Class = Class::new(c_str!("rdma_rs_rtrs_server"));

/// What a path's files show and do; the path implements it.
pub(crate) trait SysPath: Send + Sync {
    /// Its device and port, the client's address (`src_addr`) and ours.
    fn ends(&self) -> PathEnds<'_>;
    /// Its request counters.
    fn stats(&self) -> &Stats;
    /// `disconnect` was written: the path closes from the server's work
    /// queue (closing removes this very file).
    fn disconnect(self: Arc<Self>);
}

const DISCONNECT: u32 = 4;
const RDMA: u32 = 5;

/// A path's own files, besides those every path has.
const PATH_FILES: &[SysFile] = &[SysFile {
    name: c_str!("disconnect"),
    id: DISCONNECT,
    writable: true,
}];

const STATS_FILES: &[SysFile] = &[SysFile {
    name: c_str!("rdma"),
    id: RDMA,
    writable: true,
}];

/// The files of a directory that has none (a session's and its `paths`).
struct NoFiles;

impl SysFiles for NoFiles {
    fn show(&self, _id: u32, _out: &mut Page) -> Result {
        Err(ENOENT)
    }
}

/// A path's files and its stats' files.
struct PathFiles(Arc<dyn SysPath>);

impl SysFiles for PathFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let p = &self.0;
        if let Some(r) = p.ends().show(id, out) {
            return r;
        }
        let st = p.stats();
        let r = match id {
            DISCONNECT => writeln!(out, "Usage: echo 1 > disconnect"),
            RDMA => writeln!(
                out,
                "{} {} {} {}",
                st.reads.load(Ordering::Relaxed),
                st.read_bytes.load(Ordering::Relaxed),
                st.writes.load(Ordering::Relaxed),
                st.write_bytes.load(Ordering::Relaxed)
            ),
            _ => return Err(ENOENT),
        };
        r.map_err(fmt_err)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        one(input)?;
        let p = &self.0;
        match id {
            DISCONNECT => {
                p.clone().disconnect();
                Ok(())
            }
            RDMA => {
                p.stats().reset();
                Ok(())
            }
            _ => Err(EACCES),
        }
    }
}

/// A client session's directories and the paths in them.
struct Entry {
    uuid: Uuid,
    name: KVec<u8>,
    /// Paths that joined and did not leave.
    users: usize,
    /// `<sessname>` and its `paths`.
    dirs: KVec<SysDir>,
}

/// The client sessions of a server's paths, in sysfs.
///
/// Locks: `list` is held to find, add or remove a session and to add a
/// path's directories, which no `show` or `store` waits for; directories
/// are dropped after it is released.
#[pin_data]
pub(crate) struct Sessions {
    #[pin]
    list: Mutex<KVec<Entry>>,
}

/// A path's place in sysfs: its directories, and its use of its session's.
/// Dropping it removes them (the session's with its last path), waiting
/// for their readers: never from one of their stores, nor under a lock
/// their `show` or `store` takes.
pub(crate) struct PathDirs {
    own: KVec<SysDir>,
    sessions: Arc<Sessions>,
    uuid: Uuid,
}

impl Drop for PathDirs {
    fn drop(&mut self) {
        // The path's directories first, then the session's use.
        drop(core::mem::take(&mut self.own));
        self.sessions.leave(&self.uuid);
    }
}

/// A directory's name: `name` (a path component, at most 255 bytes).
fn dir_name<'a>(name: &[u8], buf: &'a mut [u8; 256]) -> Result<&'a CStr> {
    let n = name.len();
    if n >= buf.len() {
        return Err(EINVAL);
    }
    buf[..n].copy_from_slice(name);
    buf[n] = 0;
    CStr::from_bytes_with_nul(&buf[..=n]).map_err(|_| EINVAL)
}

impl Sessions {
    pub(crate) fn new() -> Result<Arc<Sessions>> {
        Arc::pin_init(
            pin_init!(Sessions {
                list <- new_mutex!(KVec::new(), "rtrs::srv::Sessions::list"),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds `path`, of client session `uuid` named `name`, to the
    /// session's directory (made with its first path): its own directory
    /// `<client>@<us>` in `paths`, with `stats`. `EPERM` if another client
    /// session has that name; `EEXIST` if the session has a path of these
    /// addresses (or another server of this module a session of that name).
    /// Process context.
    pub(crate) fn join(
        self: &Arc<Self>,
        uuid: Uuid,
        name: &[u8],
        path: Arc<dyn SysPath>,
    ) -> Result<PathDirs> {
        let mut list = self.list.lock();
        let i = match list.iter().position(|e| e.uuid == uuid) {
            Some(i) => i,
            None => {
                if list.iter().any(|e| e.name.as_slice() == name) {
                    return Err(EPERM);
                }
                let mut buf = [0u8; 256];
                let cname = dir_name(name, &mut buf)?;
                let dirs = CLASS.session_dirs(cname, &[], Arc::new(NoFiles, GFP_KERNEL)?)?;
                let mut n = KVec::new();
                n.extend_from_slice(name, GFP_KERNEL)?;
                list.push(
                    Entry {
                        uuid,
                        name: n,
                        users: 0,
                        dirs,
                    },
                    GFP_KERNEL,
                )?;
                list.len() - 1
            }
        };
        match Self::add_path(&list[i].dirs[1], path) {
            Ok(own) => {
                list[i].users += 1;
                Ok(PathDirs {
                    own,
                    sessions: self.clone(),
                    uuid,
                })
            }
            Err(e) => {
                // A session made for this path goes with it.
                let gone = if list[i].users == 0 {
                    rdma::kshim::vec::remove(&mut list, i)
                } else {
                    None
                };
                drop(list);
                drop(gone);
                Err(e)
            }
        }
    }

    /// A path of session `uuid` left; the session's directory goes with
    /// its last.
    fn leave(&self, uuid: &Uuid) {
        let gone = {
            let mut list = self.list.lock();
            let Some(i) = list.iter().position(|e| &e.uuid == uuid) else {
                return;
            };
            list[i].users -= 1;
            if list[i].users == 0 {
                rdma::kshim::vec::remove(&mut list, i)
            } else {
                None
            }
        };
        drop(gone);
    }

    /// A path's directories in `paths`: `<client>@<us>` and its `stats`.
    fn add_path(paths: &SysDir, p: Arc<dyn SysPath>) -> Result<KVec<SysDir>> {
        let ends = p.ends();
        let (src, dst) = (ends.src, ends.dst);
        path_dirs(
            paths,
            src,
            dst,
            PATH_FILES,
            STATS_FILES,
            Arc::new(PathFiles(p), GFP_KERNEL)?,
        )
    }
}
