// SPDX-License-Identifier: GPL-2.0

//! The server as an RTRS ULP ([`Srv`], the [`SrvOps`] of our RTRS
//! server): the client sessions by name, the devices they export, and
//! the four messages.
//!
//! - SESS_INFO: the version both sides speak (the lower major).
//! - OPEN: finds the device's path ([`full_path`]), opens it (read-only
//!   for `ro`), admits the access mode beside the device's other opens
//!   ([`admit`]), gives it the lowest free id of the session and answers
//!   with what the device announces. A name the session has open already
//!   gets the same answer again.
//! - IO: the device of that id, the operation ([`BlockOp::of`]) and its
//!   range ([`check_io`]) checked, then one bio on the request's data
//!   area itself, waited for in this worker; its errno is the answer.
//! - CLOSE: the id is free again once the device's last IO is done.
//!
//! A device closed from the server's side (`force_close`) keeps its id
//! until the client closes it: its IO gets `ENOTCONN` meanwhile, never
//! another device's.

use core::sync::atomic::Ordering;

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::kshim::block::{BioKind, BioOp, BlockDev, BlockInfo};
use rdma::kshim::global::Global;
use rdma::kshim::ratelimit::log_allowed;
use rdma::kshim::vec;
use rdma::kshim::work::OwnedQueue;
use rtrs::proto::rnbd::{
    self, AccessMode, Close, Io, Open, OpenRsp, SessInfo, SessInfoRsp, RNBD_FUA, RNBD_MSG_CLOSE,
    RNBD_MSG_IO, RNBD_MSG_OPEN, RNBD_MSG_SESS_INFO, RNBD_PROTO_VER_MAJOR, RNBD_WRITEBACK,
};
use rtrs::proto::rnbd_srv::{admit, check_io, full_path, sane_prio, BlockKind, BlockOp, PATH_MAX};
use rtrs::srv::{SrvOps, SrvRequest};

mod device;
mod session;
mod sysfs;

use device::Exported;
use session::{SessDev, Session};

const EINVAL_N: i32 = -22;
const ENOMEM_N: i32 = -12;
const EROFS_N: i32 = -30;
const ENOTCONN_N: i32 = -107;

/// The server while the module is loaded.
static SRV: Global<Srv> = Global::new();

/// The server: its sessions, the devices they have open, its sysfs tree.
#[pin_data]
pub(crate) struct Srv {
    /// `dev_search_path`.
    search: KVec<u8>,
    /// The client sessions, with their paths up.
    #[pin]
    sessions: Mutex<KVec<(Arc<Session>, u32)>>,
    /// The devices some session has open.
    #[pin]
    devices: Mutex<KVec<Exported>>,
    /// The closes `force_close` asks for run here.
    wq: OwnedQueue,
    /// `/sys/class/rdma_rs_rnbd_server/ctl/devices`.
    tree: sysfs::Tree,
}

impl Srv {
    /// Sets the server up (module init): its sysfs tree, with devices
    /// searched under `search`.
    pub(crate) fn start(search: &[u8]) -> Result<Arc<Srv>> {
        if search.is_empty() || search.len() >= PATH_MAX {
            return Err(EINVAL);
        }
        let mut s = KVec::with_capacity(search.len(), GFP_KERNEL)?;
        s.extend_from_slice(search, GFP_KERNEL)?;
        let wq = OwnedQueue::new(c_str!("rnbd_server"))?;
        let tree = sysfs::Tree::new()?;
        let srv = Arc::pin_init(
            pin_init!(Srv {
                search: s,
                sessions <- new_mutex!(KVec::new(), "rnbd_server::Srv::sessions"),
                devices <- new_mutex!(KVec::new(), "rnbd_server::Srv::devices"),
                wq,
                tree,
            }),
            GFP_KERNEL,
        )?;
        drop(SRV.replace(Some(srv.clone())));
        Ok(srv)
    }

    /// Takes the server down (module exit, after its RTRS server): the
    /// closes queued by `force_close` run first.
    pub(crate) fn stop() {
        if let Some(srv) = SRV.replace(None) {
            srv.wq.drain();
        }
    }

    /// The server, while the module is loaded.
    pub(crate) fn get() -> Option<Arc<Srv>> {
        SRV.get()
    }

    /// The session called `name`, made if it has none (a request may
    /// overtake the path's link event).
    fn session(&self, name: &[u8]) -> Result<Arc<Session>> {
        let mut list = self.sessions.lock();
        if let Some((s, _)) = list.iter().find(|(s, _)| s.name() == name) {
            return Ok(s.clone());
        }
        let s = Session::new(name)?;
        list.push((s.clone(), 0), GFP_KERNEL)?;
        Ok(s)
    }

    /// SESS_INFO: the version the session speaks, answered.
    fn sess_info(&self, sess: &Session, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = SessInfo::parse(req.usr) else {
            return EINVAL_N;
        };
        let ver = m.ver.min(RNBD_PROTO_VER_MAJOR);
        sess.ver.store(ver, Ordering::Relaxed);
        let mut out = [0u8; rnbd::SESS_INFO_LEN];
        match (SessInfoRsp { ver }).write(&mut out) {
            Ok(n) if req.write_data(0, &out[..n]).is_ok() => 0,
            _ => EINVAL_N,
        }
    }

    /// OPEN: the device opened (or found open) and announced.
    fn open(&self, sess: &Arc<Session>, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = Open::parse(req.usr) else {
            return EINVAL_N;
        };
        let mode = m.access_mode;
        let name = m.dev_name();
        let mut devs = sess.devs.lock();
        let sd = match devs.find_open(name) {
            Some(sd) => sd,
            None => match self.open_new(sess, &mut devs, name, mode) {
                Ok(sd) => sd,
                Err(e) => return e.to_errno(),
            },
        };
        drop(devs);
        answer_open(&sd, req)
    }

    /// Opens device `name` for `sess` in `mode` and gives it an id
    /// (`devs` is the session's table, locked).
    fn open_new(
        &self,
        sess: &Arc<Session>,
        devs: &mut session::Table,
        name: &[u8],
        mode: AccessMode,
    ) -> Result<Arc<SessDev>> {
        let mut path = KVec::from_elem(0u8, PATH_MAX, GFP_KERNEL)?;
        let n = full_path(&self.search, sess.name(), name, &mut path).map_err(|_| {
            if log_allowed() {
                pr_err!(
                    "rnbd_server: session \"{}\": bad device name \"{}\"\n",
                    sess.name_str(),
                    core::str::from_utf8(name).unwrap_or("?")
                );
            }
            EINVAL
        })?;
        let path = CStr::from_bytes_with_nul(&path[..=n]).map_err(|_| EINVAL)?;
        let bdev = BlockDev::open(path, mode != AccessMode::Ro).inspect_err(|e| {
            if log_allowed() {
                pr_err!(
                    "rnbd_server: session \"{}\": cannot open \"{}\" (errno {})\n",
                    sess.name_str(),
                    path.to_str().unwrap_or("?"),
                    e.to_errno()
                );
            }
        })?;
        let id = devs.free_id().ok_or(ENOMEM)?;
        let sd = SessDev::new(self, sess, id, bdev, mode, name)?;
        devs.put(id, sd.clone())?;
        pr_info!(
            "rnbd_server: session \"{}\": device \"{}\" ({}) opened as {}, id {}\n",
            sess.name_str(),
            core::str::from_utf8(name).unwrap_or("?"),
            sd.dev_name_str(),
            rtrs::proto::rnbd_srv::mode_name(mode),
            id
        );
        Ok(sd)
    }

    /// Counts a new open of the device called `dev` in `mode` by
    /// `sess`: the device's directories made for its first, and the
    /// session's directory in them (`dir` makes it). `EPERM` if the mode
    /// is refused beside the device's other opens.
    fn export(
        &self,
        bdev: &BlockDev,
        mode: AccessMode,
        dir: impl FnOnce(&Exported) -> Result<rdma::kshim::class::SysDir>,
    ) -> Result<rdma::kshim::class::SysDir> {
        let mut list = self.devices.lock();
        let i = match list.iter().position(|d| d.name() == bdev.name()) {
            Some(i) => i,
            None => {
                let d = Exported::new(&self.tree, bdev)?;
                list.push(d, GFP_KERNEL)?;
                list.len() - 1
            }
        };
        let d = &mut list[i];
        let r = match admit(d.writers, mode) {
            Ok(w) => dir(d).map(|sd| (sd, w)),
            Err(_) => {
                if log_allowed() {
                    pr_err!(
                        "rnbd_server: device {} refused as {}: opened for writing {} time(s)\n",
                        d.name_str(),
                        rtrs::proto::rnbd_srv::mode_name(mode),
                        d.writers
                    );
                }
                Err(EPERM)
            }
        };
        match r {
            Ok((sd, w)) => {
                d.writers = w;
                d.users += 1;
                Ok(sd)
            }
            Err(e) => {
                if d.users == 0 {
                    drop(vec::remove(&mut list, i));
                }
                Err(e)
            }
        }
    }

    /// A session's open of device `dev` in `mode` is over.
    fn unexport(&self, dev: &[u8], mode: AccessMode) {
        let mut list = self.devices.lock();
        let Some(i) = list.iter().position(|d| d.name() == dev) else {
            return;
        };
        let d = &mut list[i];
        d.users = d.users.saturating_sub(1);
        if mode != AccessMode::Ro {
            d.writers = d.writers.saturating_sub(1);
        }
        if d.users == 0 {
            let gone = vec::remove(&mut list, i);
            drop(list);
            drop(gone);
        }
    }

    /// IO: one bio on the request's data area, waited for.
    fn io(&self, sess: &Session, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = Io::parse(req.usr) else {
            return EINVAL_N;
        };
        let Ok(op) = BlockOp::of(m.rw) else {
            if log_allowed() {
                pr_err!(
                    "rnbd_server: session \"{}\": unknown operation {:#x}\n",
                    sess.name_str(),
                    m.rw
                );
            }
            return EINVAL_N;
        };
        let Some(sd) = sess.devs.lock().get(m.device_id) else {
            if log_allowed() {
                pr_err!(
                    "rnbd_server: session \"{}\": IO for device id {}, not open\n",
                    sess.name_str(),
                    m.device_id
                );
            }
            return ENOTCONN_N;
        };
        if op.kind.writes() && sd.read_only() {
            return EROFS_N;
        }
        let info = sd.bdev.info();
        if let Err(e) = check_io(
            op.kind,
            m.sector,
            m.bi_size,
            req.data_len(),
            info.nsectors,
            info.logical_block_size,
        ) {
            if log_allowed() {
                pr_err!(
                    "rnbd_server: session \"{}\": device id {}: bad IO: {}\n",
                    sess.name_str(),
                    m.device_id,
                    e
                );
            }
            return EINVAL_N;
        }
        let prio = if sess.ver.load(Ordering::Relaxed) < RNBD_PROTO_VER_MAJOR {
            0
        } else {
            sane_prio(m.prio)
        };
        let bio = BioOp {
            kind: bio_kind(op.kind),
            sync: op.sync,
            fua: op.fua,
        };
        let data = if op.kind.has_data() {
            req.bio_data()
        } else {
            None
        };
        match sd.bdev.io(bio, m.sector, data, m.bi_size, prio) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// CLOSE: the id freed, the device closed after its last IO.
    fn close(&self, sess: &Session, req: &SrvRequest<'_>) -> i32 {
        let Ok(m) = Close::parse(req.usr) else {
            return EINVAL_N;
        };
        let gone = sess.devs.lock().free(m.device_id);
        if let Some(sd) = &gone {
            pr_info!(
                "rnbd_server: session \"{}\": device {} closed by the client\n",
                sess.name_str(),
                sd.dev_name_str()
            );
        }
        drop(gone);
        0
    }
}

/// The kshim's block operation for the protocol's.
fn bio_kind(k: BlockKind) -> BioKind {
    match k {
        BlockKind::Read => BioKind::Read,
        BlockKind::Write => BioKind::Write,
        BlockKind::Flush => BioKind::Flush,
        BlockKind::Discard => BioKind::Discard,
        BlockKind::SecureErase => BioKind::SecureErase,
        BlockKind::WriteZeroes => BioKind::WriteZeroes,
    }
}

/// OPEN_RSP for `sd`, written into the request's data area.
fn answer_open(sd: &SessDev, req: &SrvRequest<'_>) -> i32 {
    let rsp = open_rsp(sd.id, &sd.bdev.info());
    let mut out = [0u8; rnbd::OPEN_RSP_LEN];
    match rsp.write(&mut out) {
        Ok(n) if req.write_data(0, &out[..n]).is_ok() => 0,
        _ => EINVAL_N,
    }
}

/// What OPEN_RSP says of a device.
fn open_rsp(id: u32, i: &BlockInfo) -> OpenRsp {
    let mut cache_policy = 0;
    if i.write_cache {
        cache_policy |= RNBD_WRITEBACK;
    }
    if i.fua {
        cache_policy |= RNBD_FUA;
    }
    OpenRsp {
        device_id: id,
        nsectors: i.nsectors,
        max_hw_sectors: i.max_hw_sectors,
        max_write_zeroes_sectors: i.max_write_zeroes_sectors,
        max_discard_sectors: i.max_discard_sectors,
        discard_granularity: i.discard_granularity,
        discard_alignment: i.discard_alignment,
        physical_block_size: i.physical_block_size.min(u16::MAX.into()) as u16,
        logical_block_size: i.logical_block_size.min(u16::MAX.into()) as u16,
        max_segments: i.max_segments.min(u16::MAX.into()) as u16,
        secure_discard: i.max_secure_erase_sectors.min(u16::MAX.into()) as u16,
        obsolete_rotational: 0,
        cache_policy,
    }
}

impl SrvOps for Srv {
    fn rdma_ev(&self, path: &[u8], req: &SrvRequest<'_>) -> i32 {
        let sess = match self.session(path) {
            Ok(s) => s,
            Err(_) => return ENOMEM_N,
        };
        match rnbd::msg_type(req.usr) {
            Ok(RNBD_MSG_IO) => self.io(&sess, req),
            Ok(RNBD_MSG_OPEN) => self.open(&sess, req),
            Ok(RNBD_MSG_SESS_INFO) => self.sess_info(&sess, req),
            Ok(RNBD_MSG_CLOSE) => self.close(&sess, req),
            t => {
                if log_allowed() {
                    pr_warn!(
                        "rnbd_server: session \"{}\": unexpected message type {:?}\n",
                        sess.name_str(),
                        t.ok()
                    );
                }
                EINVAL_N
            }
        }
    }

    fn link_ev(&self, path: &[u8], up: bool) {
        let gone = {
            let mut list = self.sessions.lock();
            let i = list.iter().position(|(s, _)| s.name() == path);
            match (i, up) {
                (Some(i), true) => {
                    list[i].1 += 1;
                    None
                }
                (None, true) => {
                    if let Ok(s) = Session::new(path) {
                        let _ = list.push((s, 1), GFP_KERNEL);
                    }
                    None
                }
                (Some(i), false) => {
                    list[i].1 = list[i].1.saturating_sub(1);
                    if list[i].1 == 0 {
                        vec::remove(&mut list, i).map(|e| e.0)
                    } else {
                        None
                    }
                }
                (None, false) => None,
            }
        };
        if let Some(s) = gone {
            // Its devices close as their last IO ends.
            s.close_all();
            pr_info!("rnbd_server: session \"{}\" disconnected\n", s.name_str());
        }
    }
}
