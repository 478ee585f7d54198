// SPDX-License-Identifier: GPL-2.0

//! The client ([`Clt`]): its sessions by name, its mappings (a disk each),
//! mapping and unmapping.
//!
//! - Map (`ctl/map_device`): the options parsed ([`MapOpts::parse`]);
//!   the session found by name, or opened over the paths given (in the
//!   writer's network namespace) and asked SESS_INFO; OPEN of the device;
//!   the disk made with the limits the answer allows ([`DevLimits::of`]),
//!   `/dev/rsrnbd<N>` with the lowest free `N`; its directory in
//!   `ctl/devices/`.
//! - Unmap (a mapping's `unmap_device`, `normal` or `force`): `normal`
//!   refuses a disk that is open (`EBUSY`); the disk goes (its IO in
//!   flight drained, waiting IO failed), CLOSE is sent, the session closes
//!   with its last device, and the directory goes from a work item (a
//!   store must not remove its own directory).
//!
//! Lock order: `ops` (one map or unmap at a time), then `sessions`, then
//! `maps`, then a session's locks (`client/session.rs`). No directory is
//! dropped under `ops` (their stores take it).

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::c_str;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};
use kernel::ThisModule;

use rdma::cma::{IpAddr, SockAddr};
use rdma::kshim::blk::{BlkDisk, BlkLimits, BlkOps};
use rdma::kshim::class::SysDir;
use rdma::kshim::cpu;
use rdma::kshim::global::Global;
use rdma::kshim::route::NetNs;
use rdma::kshim::vec;
use rdma::kshim::work::OwnedQueue;
use rtrs::clt::{Config, LinkOps, PathAddr, Session};
use rtrs::proto::rnbd::AccessMode;
use rtrs::proto::rnbd_clt::{dev_dir_name, DevLimits, MapOpts, NAME_MAX};
use rtrs::proto::rnbd_srv::mode_name;

mod device;
mod session;
mod sysfs;

use device::{DevIo, DevState};
use session::{CltSess, Link};

/// The client while the module is loaded.
static CLT: Global<Clt> = Global::new();

/// The most requests in flight on one disk.
const MAX_DEPTH: u32 = 128;

/// The most segments of a request (its data is copied into one buffer).
const MAX_SEGMENTS: u32 = 128;

/// A mapped device.
struct Mapping {
    io: Arc<DevIo>,
    disk: BlkDisk,
    /// `/dev/rsrnbd<index>`.
    index: u32,
    /// Its directory's name, `path@session` (`/` made `!`).
    dirname: KVec<u8>,
    dir: SysDir,
}

/// Directories waiting for the reaper. (A type of this crate's: the
/// `rtrs` crate's own instance of a mutex of directories is not exported
/// to other modules.)
struct Dead(KVec<SysDir>);

/// The client: sessions, mappings, the sysfs tree.
#[pin_data]
pub(crate) struct Clt {
    module: &'static ThisModule,
    #[pin]
    ops: Mutex<()>,
    #[pin]
    sessions: Mutex<KVec<(Arc<CltSess>, Arc<Link>)>>,
    #[pin]
    maps: Mutex<KVec<Mapping>>,
    /// Session work (reopen, waiting IO) and the reaper run here.
    pub(crate) wq: OwnedQueue,
    /// Directories of unmapped devices, dropped by the reaper.
    #[pin]
    dead: Mutex<Dead>,
    #[pin]
    reaper: Work<Clt>,
    /// Set at exit (under `ops`): no more maps.
    closing: AtomicBool,
    /// Taken down at exit, explicitly: a store may hold the client
    /// longer, and must not drop the directory it runs in.
    #[pin]
    tree: Mutex<Option<sysfs::Tree>>,
}

impl_has_work! {
    impl HasWork<Self> for Clt { self.reaper }
}

impl WorkItem for Clt {
    type Pointer = Arc<Clt>;

    fn run(this: Arc<Clt>) {
        let dead = core::mem::take(&mut this.dead.lock().0);
        drop(dead);
    }
}

impl Clt {
    /// Sets the client up (module init): its sysfs tree.
    pub(crate) fn start(module: &'static ThisModule) -> Result<Arc<Clt>> {
        let wq = OwnedQueue::new(c_str!("rnbd_client"))?;
        let tree = sysfs::Tree::new()?;
        let clt = Arc::pin_init(
            pin_init!(Clt {
                module,
                ops <- new_mutex!((), "rnbd_client::Clt::ops"),
                sessions <- new_mutex!(KVec::new(), "rnbd_client::Clt::sessions"),
                maps <- new_mutex!(KVec::new(), "rnbd_client::Clt::maps"),
                wq,
                dead <- new_mutex!(Dead(KVec::new()), "rnbd_client::Clt::dead"),
                reaper <- new_work!("rnbd_client::Clt::reaper"),
                closing: AtomicBool::new(false),
                tree <- new_mutex!(Some(tree), "rnbd_client::Clt::tree"),
            }),
            GFP_KERNEL,
        )?;
        drop(CLT.replace(Some(clt.clone())));
        Ok(clt)
    }

    /// The client, while the module is loaded.
    pub(crate) fn get() -> Option<Arc<Clt>> {
        CLT.get()
    }

    /// Takes the client down (module exit): `map_device` goes first, then
    /// every mapping (forced), every session, the tree.
    pub(crate) fn stop() {
        let Some(clt) = CLT.get() else {
            return;
        };
        let mut dirs = KVec::new();
        {
            let _g = clt.ops.lock();
            clt.closing.store(true, Ordering::Release);
            loop {
                let Some(m) = vec::pop(&mut clt.maps.lock()) else {
                    break;
                };
                if let Some(d) = clt.teardown(m, true) {
                    let _ = dirs.push(d, GFP_KERNEL);
                }
            }
        }
        drop(dirs);
        clt.wq.drain();
        // Waits for any store in progress (which finds `closing`).
        let tree = clt.tree.lock().take();
        drop(tree);
        drop(CLT.replace(None));
        clt.wq.drain();
    }

    /// `map_device`: maps what `text` asks.
    pub(crate) fn map(&self, text: &[u8]) -> Result {
        let o = MapOpts::parse(text, cpu::count()).map_err(|e| {
            pr_err!("rnbd_client: map_device: {}\n", e.what());
            EINVAL
        })?;
        if o.nr_poll_queues != 0 {
            pr_err!("rnbd_client: map_device: nr_poll_queues: poll queues are not supported\n");
            return Err(EINVAL);
        }
        let mut dn = [0u8; NAME_MAX + 1];
        let n = dev_dir_name(o.device_path, o.sessname, &mut dn).map_err(|_| {
            pr_err!("rnbd_client: map_device: device_path@sessname too long\n");
            EINVAL
        })?;
        let dirname = &dn[..n];
        let _g = self.ops.lock();
        if self.closing.load(Ordering::Acquire) {
            return Err(ENODEV);
        }
        if self.maps.lock().iter().any(|m| m.dirname == dirname) {
            pr_err!(
                "rnbd_client: map_device: {} is mapped already\n",
                core::str::from_utf8(dirname).unwrap_or("?")
            );
            return Err(EEXIST);
        }
        let sess = self.session(&o)?;
        let r = self.map_on(&sess, &o, dirname);
        if r.is_err() && sess.ndevs() == 0 {
            self.drop_session(&sess);
        }
        r
    }

    /// The session `o` names, opened if it is not.
    fn session(&self, o: &MapOpts<'_>) -> Result<Arc<CltSess>> {
        if let Some((s, _)) = self
            .sessions
            .lock()
            .iter()
            .find(|(s, _)| s.name() == o.sessname)
        {
            return Ok(s.clone());
        }
        if o.n_paths == 0 {
            pr_err!("rnbd_client: map_device: a new session needs a path\n");
            return Err(EINVAL);
        }
        let mut paths = KVec::with_capacity(o.n_paths, GFP_KERNEL)?;
        for p in o.paths() {
            paths.push(
                PathAddr {
                    src: p.src.map(|ip| SockAddr {
                        ip: IpAddr::V4(ip),
                        port: 0,
                    }),
                    dst: SockAddr {
                        ip: IpAddr::V4(p.dst),
                        port: p.port,
                    },
                },
                GFP_KERNEL,
            )?;
        }
        let link = Link::new()?;
        let ops: Arc<dyn LinkOps> = link.clone();
        let cfg = Config::new(o.sessname, &paths);
        let rtrs = Session::open(NetNs::current()?, &cfg, Some(ops)).inspect_err(|e| {
            pr_err!(
                "rnbd_client: map_device: session {}: no path connected ({})\n",
                core::str::from_utf8(o.sessname).unwrap_or("?"),
                e.to_errno()
            );
        })?;
        let sess = CltSess::new(o.sessname, rtrs, &link)?;
        self.sessions
            .lock()
            .push((sess.clone(), link.clone()), GFP_KERNEL)
            .map_err(|_| ENOMEM)
            .and_then(|()| sess.sess_info())
            .inspect_err(|e| {
                pr_err!(
                    "rnbd_client: map_device: session {}: SESS_INFO failed ({})\n",
                    sess.name_str(),
                    e.to_errno()
                );
                self.drop_session(&sess);
            })?;
        Ok(sess)
    }

    /// Closes `sess` and forgets it (it has no device).
    fn drop_session(&self, sess: &Arc<CltSess>) {
        let found = vec::remove_first(&mut self.sessions.lock(), |(s, _)| Arc::ptr_eq(s, sess));
        if let Some((_, link)) = &found {
            link.clear();
        }
        sess.rtrs.close();
        drop(found);
    }

    /// OPEN, the disk, its directory.
    fn map_on(&self, sess: &Arc<CltSess>, o: &MapOpts<'_>, dirname: &[u8]) -> Result {
        let path = core::str::from_utf8(o.device_path).unwrap_or("?");
        let attrs = sess.rtrs.query()?;
        let rsp = sess.open(o.device_path, o.access_mode).inspect_err(|e| {
            pr_err!(
                "rnbd_client: map_device: {}@{}: OPEN refused ({})\n",
                path,
                sess.name_str(),
                e.to_errno()
            );
        })?;
        let lim = match DevLimits::of(&rsp, attrs.max_io_size) {
            Ok(l) => l,
            Err(e) => {
                pr_err!(
                    "rnbd_client: map_device: {}@{}: unusable OPEN answer: {}\n",
                    path,
                    sess.name_str(),
                    e
                );
                let _ = sess.close_dev(rsp.device_id);
                return Err(EINVAL);
            }
        };
        let depth = attrs.queue_depth.clamp(1, MAX_DEPTH);
        let io = DevIo::new(
            sess.clone(),
            rsp.device_id,
            o.device_path,
            o.access_mode,
            lim.nsectors,
            depth,
            lim.max_hw_sectors as usize * 512,
        )?;
        let idx = match sess.attach(io.clone()) {
            Ok(i) => i,
            Err(e) => {
                let _ = sess.close_dev(rsp.device_id);
                return Err(e);
            }
        };
        io.opened(idx);
        let r = self.add_disk(&io, o.access_mode, &lim, depth, dirname);
        match r {
            Ok(disk_name) => {
                pr_info!(
                    "rnbd_client: {}@{} mapped as {} ({}, {} sectors, blocks {}/{}, max {} sectors, discard {}, write zeroes {}, write cache {}, fua {})\n",
                    path,
                    sess.name_str(),
                    disk_name.to_str().unwrap_or("?"),
                    mode_name(o.access_mode),
                    lim.nsectors,
                    lim.logical_block_size,
                    lim.physical_block_size,
                    lim.max_hw_sectors,
                    lim.max_discard_sectors,
                    lim.max_write_zeroes_sectors,
                    lim.write_cache,
                    lim.fua
                );
                Ok(())
            }
            Err(e) => {
                io.unmapping();
                drop(sess.detach(idx));
                let _ = sess.close_dev(rsp.device_id);
                Err(e)
            }
        }
    }

    /// The lowest disk index no mapping has.
    fn free_index(&self) -> u32 {
        let maps = self.maps.lock();
        let mut i = 0;
        while maps.iter().any(|m| m.index == i) {
            i += 1;
        }
        i
    }

    /// Adds the disk of `io` and its directory; records the mapping.
    fn add_disk(
        &self,
        io: &Arc<DevIo>,
        mode: AccessMode,
        lim: &DevLimits,
        depth: u32,
        dirname: &[u8],
    ) -> Result<CString> {
        let index = self.free_index();
        let name = CString::try_from_fmt(fmt!("rsrnbd{}", index))?;
        let blim = BlkLimits {
            nsectors: lim.nsectors,
            logical_block_size: lim.logical_block_size,
            physical_block_size: lim.physical_block_size,
            max_hw_sectors: lim.max_hw_sectors,
            max_segments: MAX_SEGMENTS,
            max_discard_sectors: lim.max_discard_sectors,
            discard_granularity: lim.discard_granularity,
            max_write_zeroes_sectors: lim.max_write_zeroes_sectors,
            max_secure_erase_sectors: lim.max_secure_erase_sectors,
            queue_depth: depth,
            write_cache: lim.write_cache,
            fua: lim.fua,
            read_only: mode == AccessMode::Ro,
        };
        let ops: Arc<dyn BlkOps> = io.clone();
        let disk = BlkDisk::add(&name, &blim, self.module, ops)?;
        let mut dn = KVec::with_capacity(dirname.len(), GFP_KERNEL)?;
        dn.extend_from_slice(dirname, GFP_KERNEL)?;
        let dir = self
            .tree
            .lock()
            .as_ref()
            .ok_or(ENODEV)?
            .mapping_dir(&dn, io.clone(), &disk)?;
        self.maps.lock().push(
            Mapping {
                io: io.clone(),
                disk,
                index,
                dirname: dn,
                dir,
            },
            GFP_KERNEL,
        )?;
        Ok(name)
    }

    /// `unmap_device` of the mapping whose IO is `io`.
    pub(crate) fn unmap(self: &Arc<Self>, io: &Arc<DevIo>, force: bool) -> Result {
        let dir = {
            let _g = self.ops.lock();
            let m = {
                let mut maps = self.maps.lock();
                let pos = maps
                    .iter()
                    .position(|m| Arc::ptr_eq(&m.io, io))
                    .ok_or(ENODEV)?;
                if !force && maps[pos].disk.openers() > 0 {
                    pr_err!(
                        "rnbd_client: {}: unmap_device: the device is in use\n",
                        io.path_str()
                    );
                    return Err(EBUSY);
                }
                vec::remove(&mut maps, pos).ok_or(ENODEV)?
            };
            self.teardown(m, force)
        };
        if let Some(d) = dir {
            let _ = self.dead.lock().0.push(d, GFP_KERNEL);
            let _ = self.wq.enqueue(self.clone());
        }
        Ok(())
    }

    /// `resize` of the mapping whose IO is `io`: its disk gets `nsectors`
    /// sectors. As the kernel's client, only an open device (`ENOENT`);
    /// unlike it, never more than the server's device has (its last OPEN
    /// answer), which the server would refuse IO to (`EINVAL`).
    pub(crate) fn resize(&self, io: &Arc<DevIo>, nsectors: u64) -> Result {
        // Under `maps`, the mapping (and its disk) cannot be taken down.
        let maps = self.maps.lock();
        let m = maps.iter().find(|m| Arc::ptr_eq(&m.io, io)).ok_or(ENODEV)?;
        if io.state() != DevState::Open {
            pr_err!(
                "rnbd_client: {}: resize: the device is not open\n",
                io.path_str()
            );
            return Err(ENOENT);
        }
        let max = io.nsectors.load(Ordering::Acquire);
        if nsectors > max {
            pr_err!(
                "rnbd_client: {}: resize: {} sectors, the server's device has {}\n",
                io.path_str(),
                nsectors,
                max
            );
            return Err(EINVAL);
        }
        m.disk.set_capacity(nsectors);
        pr_info!(
            "rnbd_client: {}@{}: resized to {} sectors\n",
            io.path_str(),
            io.sess.name_str(),
            nsectors
        );
        Ok(())
    }

    /// Takes mapping `m` down; returns its directory, for the caller to
    /// drop outside `ops`.
    fn teardown(&self, m: Mapping, force: bool) -> Option<SysDir> {
        let Mapping { io, disk, dir, .. } = m;
        let sess = io.sess.clone();
        pr_info!(
            "rnbd_client: {}@{}: unmapping ({})\n",
            io.path_str(),
            sess.name_str(),
            if force { "force" } else { "normal" }
        );
        // Waiting IO would hold the disk's removal until the link is
        // back: it fails first when forced or when there is no link.
        if force || io.state() != DevState::Open {
            io.unmapping();
        }
        drop(disk);
        io.unmapping();
        drop(sess.detach(io.idx()));
        if sess.is_up() {
            let e = match sess.close_dev(io.id()) {
                Ok(e) => e,
                Err(e) => e.to_errno(),
            };
            if e != 0 {
                pr_warn!("rnbd_client: {}: CLOSE failed ({})\n", io.path_str(), e);
            }
        }
        if sess.ndevs() == 0 {
            self.drop_session(&sess);
        }
        Some(dir)
    }
}
