// SPDX-License-Identifier: GPL-2.0

//! The RDMA netlink family (`NETLINK_RDMA`) for our devices: what
//! libibverbs asks before anything else (the device list, then each
//! device's `uverbs` character device) and what iproute2's `rdma` shows
//! (`rdma dev`, `rdma link`, `rdma system`, `rdma res`, `rdma
//! statistic`).
//!
//! A device's index is its `N` of `uverbsN`. Requests are decoded and
//! replies built by `rdma::spec::netlink::nldev`: a request's replies, an
//! acknowledgement if asked; an error (`NLMSG_ERROR` with the errno)
//! instead of replies; a dump's messages, then `NLMSG_DONE`. Every other
//! command is `EOPNOTSUPP`, as the codec decides.
//!
//! `NEWLINK` and `DELLINK` (`rdma link add NAME type rxe netdev IF`, `rdma
//! link delete NAME`) need `CAP_NET_ADMIN` and go to the core's link types
//! (`rdma::device::link`), which a provider registers (rdma_rs_rxe: "rxe"),
//! with none of this module's locks held: `NEWLINK` answers `EINVAL` for a
//! bad name or an unknown type, `ENODEV` for an unknown netdev, `EEXIST`
//! for a name or netdev taken; `DELLINK` answers `EINVAL` for an unknown
//! index (as the C core does) or a device its provider will not remove (an
//! rxe device made through configfs).
//!
//! Resources and counters, as the C `nldev` answers them (an unknown
//! device or port is `EINVAL` there, not `ENODEV`):
//!
//! - `RES_GET` (one device, or a dump of all): the summary, from the
//!   device's object tables (`Device::resource_counts`, the sysfs
//!   `resources` file), the rdma_cm ids bound to it
//!   (`rdma::cma::ids_on`) and the device's open files with a context.
//! - `RES_QP_GET`, `RES_CQ_GET`, `RES_MR_GET`, `RES_PD_GET`,
//!   `RES_SRQ_GET` dumps: a snapshot of the table (`Device::qps` and the
//!   like), each object as the C kernel describes it (QPs of one port
//!   only, if one is asked for; keys only for `CAP_NET_ADMIN`; an SRQ with
//!   the QPs that use it, in runs). A table longer than what is left of a
//!   datagram goes on in a new message in the next one
//!   (`Replier::add_table`). A user object carries the PID of the thread
//!   that made its file's context and that context's number, found
//!   through the device's open files (`Owners`); a kernel object carries
//!   no name (not recorded). `RES_CTX_GET` lists the open contexts. The
//!   CM ID list is `EOPNOTSUPP`, as is the single-object form of each list
//!   (iproute2 falls back to the dump).
//! - `STAT_GET` of a port: the provider's counters
//!   (`Device::hw_counter_names`, `Device::hw_counter`), the same set
//!   and values as `ports/N/hw_counters/`. The dump of counters bound to
//!   QPs is empty (binding is not built); MR statistics are
//!   `EOPNOTSUPP`.
//!
//! Locks: none held while replying. The context count takes a device's
//! file list, then each file's state (the order device events use).
//!
//! Holding the family also keeps the C `ib_core` from being autoloaded by
//! the socket libibverbs opens. If `ib_core` holds it (`EBUSY`), the
//! module goes on without it: libibverbs then asks `ib_core`, which does
//! not know our devices (Documentation/uverbs.rst).

use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use rdma::device::link;
use rdma::kshim::netlink::{NlHandler, NlRequest};
use rdma::kshim::pid::Pid;
use rdma::spec::netlink::msg::{flags, Message, Messages, Out};
use rdma::spec::netlink::nldev::{
    self, attr, Cmd, CqEntry, CtxEntry, DevHandle, MrEntry, Owner, PdEntry, QpEntry, ReplyTo,
    Request, ResEntry, ResKind, SrqEntry,
};
use rdma::spec::netlink::{NlError, ENODEV, EOPNOTSUPP, EPERM};
use rdma::verbs::cq::PollCtx;
use rdma::verbs::srq::SrqCore;

use crate::device::{DevTable, Entry, DRIVER_ABI_VERSION};
use crate::objects::Obj;

/// `NETLINK_RDMA`.
pub(crate) const NETLINK_RDMA: u32 = 20;

/// The server of the family.
pub(crate) struct NlServer {
    table: Arc<DevTable>,
}

impl NlServer {
    pub(crate) fn new(table: Arc<DevTable>) -> Self {
        NlServer { table }
    }
}

/// The replies to one datagram, sent a datagram at a time.
struct Replier<'r, 'a> {
    req: &'r NlRequest<'a>,
    out: Out<'r>,
}

impl Replier<'_, '_> {
    fn flush(&mut self) -> Result {
        if !self.out.is_empty() {
            let r = self.req.reply(self.out.bytes());
            self.out.clear();
            r?;
        }
        Ok(())
    }

    /// Appends a message with `put`; if the datagram is full, sends it
    /// and appends to the next one.
    fn add(&mut self, put: impl Fn(&mut Out<'_>) -> Result<(), NlError>) -> Result {
        match put(&mut self.out) {
            Err(NlError::NoSpace) => {
                self.flush()?;
                put(&mut self.out).map_err(|_| EINVAL)
            }
            r => r.map_err(|_| EINVAL),
        }
    }

    /// Appends a RES_*_GET table of `entries` for `dev`, in as many
    /// messages (and datagrams) as it takes: each message holds the
    /// entries that fit in what is left of the datagram, and a full
    /// datagram is sent before the next message starts.
    fn add_table<E: ResEntry>(&mut self, to: ReplyTo, dev: DevHandle<'_>, entries: &[E]) -> Result {
        let mut done = 0;
        while let Some(rest) = entries.get(done..).filter(|r| !r.is_empty()) {
            match nldev::put_res_table(&mut self.out, to, dev, rest) {
                Ok(n) => done += n,
                Err(NlError::NoSpace) if !self.out.is_empty() => self.flush()?,
                Err(_) => return Err(EINVAL),
            }
        }
        Ok(())
    }

    fn error(&mut self, m: &Message<'_>, errno: i32) -> Result {
        let pid = self.req.portid();
        self.add(|o| nldev::put_error(o, &m.hdr, pid, errno))
    }
}

fn dev_info(e: &Entry) -> nldev::DevInfo<'_> {
    let a = e.dev.attr();
    nldev::DevInfo {
        index: e.index,
        name: e.dev.name().as_bytes(),
        port_count: e.dev.port_count(),
        cap_flags: a.cap_flags.0,
        fw_version: b"",
        node_guid: e.dev.node_guid(),
        sys_image_guid: a.sys_image_guid,
        node_type: nldev::NODE_IB_CA,
        dim: false,
        name_assign_type: 1,
        protocol: b"roce",
    }
}

impl NlServer {
    /// Answers one request; `Err(errno)` is sent as an `NLMSG_ERROR`.
    fn serve(&self, r: &mut Replier<'_, '_>, q: &Request<'_>) -> Result<(), i32> {
        let to = q.reply_to(r.req.portid());
        let sent = |res: Result| res.map_err(|e| -e.to_errno());
        let table = self.table.snapshot().map_err(|e| -e.to_errno())?;
        let find = |index: u32| table.iter().find(|e| e.index == index).ok_or(ENODEV);
        match q.cmd {
            Cmd::GetDump => {
                for e in table.iter() {
                    let d = dev_info(e);
                    sent(r.add(|o| nldev::put_dev(o, to, true, &d)))?;
                }
                sent(r.add(|o| nldev::put_done(o, to)))?;
            }
            Cmd::Get { index } => {
                let d = dev_info(find(index)?);
                sent(r.add(|o| nldev::put_dev(o, to, false, &d)))?;
            }
            Cmd::PortGet { index, port } => {
                let e = find(index)?;
                let a = e.dev.query_port(port).map_err(|_| ENODEV)?;
                let netdev = e.dev.netdev(port);
                let p = nldev::PortInfo {
                    dev_index: e.index,
                    dev_name: e.dev.name().as_bytes(),
                    port,
                    state: a.state as u8,
                    phys_state: a.phys_state as u8,
                    netdev: netdev
                        .as_ref()
                        .map(|n| (n.ifindex() as u32, n.name().as_bytes())),
                };
                sent(r.add(|o| nldev::put_port(o, to, false, &p)))?;
            }
            Cmd::GetChardev {
                index: Some(index),
                port: None,
                chardev_type: b"uverbs",
            } => {
                let e = find(index)?;
                let mut name = [0u8; 16];
                let n = uverbs_name(e.index, &mut name);
                let c = nldev::ChardevInfo {
                    name: &name[..n],
                    major: e.devt.0,
                    minor: e.devt.1,
                    // The driver's ABI, as in `uverbsN/abi_version` (the
                    // C nldev reports the driver's `uverbs_abi_ver` too).
                    abi: u64::from(DRIVER_ABI_VERSION),
                    // rxe is the only provider of this stack.
                    driver_id: Some(nldev::RDMA_DRIVER_RXE),
                };
                sent(r.add(|o| nldev::put_chardev(o, to, &c)))?;
            }
            // A device of a module above the core with no device of its
            // own (rdma_rs_ucm's "rdma_cm"), as the C core answers from
            // its clients' `get_global_nl_info`.
            Cmd::GetChardev {
                index: None,
                port: None,
                chardev_type,
            } => {
                let e = rdma::device::chardevs::find_global(chardev_type).ok_or(ENODEV)?;
                let c = nldev::ChardevInfo {
                    name: e.name.as_bytes(),
                    major: e.major,
                    minor: e.minor,
                    abi: e.abi,
                    driver_id: None,
                };
                sent(r.add(|o| nldev::put_chardev(o, to, &c)))?;
            }
            Cmd::GetChardev { .. } => return Err(ENODEV),
            Cmd::SysGet => {
                let s = nldev::SysInfo {
                    netns_shared: true,
                    privileged_qkey: false,
                    monitor: false,
                    copy_on_fork: true,
                };
                sent(r.add(|o| nldev::put_sys(o, to, &s)))?;
            }
            Cmd::NewLink {
                name,
                link_type,
                netdev,
            } => {
                let (mut n, mut t, mut d) = ([0u8; 64], [0u8; 16], [0u8; 16]);
                let name = c_string(name, &mut n)?;
                let link_type = c_string(link_type, &mut t)?;
                let netdev = c_string(netdev, &mut d)?;
                let nd = r.req.netdev_by_name(netdev).map_err(|e| -e.to_errno())?;
                sent(link::new_link(name, link_type, &nd))?;
            }
            Cmd::DelLink { index } => {
                // The device, not a usage reference: its unregistration
                // waits for those.
                let dev = find(index).map_err(|_| EINVAL_NL)?.dev.clone();
                drop(table);
                sent(link::del_link(&dev))?;
            }
            // An unknown device is EINVAL for the RES and STAT commands,
            // as in the kernel.
            Cmd::ResGet { index } => {
                let e = find(index).map_err(|_| EINVAL_NL)?;
                let sum = summary(e);
                sent(r.add(|o| nldev::put_res_summary(o, to, false, handle(e), &sum)))?;
            }
            Cmd::ResGetDump => {
                for e in table.iter() {
                    let sum = summary(e);
                    sent(r.add(|o| nldev::put_res_summary(o, to, true, handle(e), &sum)))?;
                }
                sent(r.add(|o| nldev::put_done(o, to)))?;
            }
            Cmd::ResDump { kind, index, port } => {
                let e = find(index).map_err(|_| EINVAL_NL)?;
                if let Some(p) = port {
                    e.dev.check_port(p).map_err(|_| EINVAL_NL)?;
                }
                let admin = r.req.net_admin();
                let o = Owners::of(e)?;
                let h = handle(e);
                match kind {
                    ResKind::Qp => sent(r.add_table(to, h, &qp_entries(e, &o, port)?))?,
                    ResKind::Cq => sent(r.add_table(to, h, &cq_entries(e, &o)?))?,
                    ResKind::Mr => sent(r.add_table(to, h, &mr_entries(e, &o, admin)?))?,
                    ResKind::Pd => sent(r.add_table(to, h, &pd_entries(e, &o, admin)?))?,
                    ResKind::Srq => {
                        let srqs = srqs_with_qps(e)?;
                        sent(r.add_table(to, h, &srq_entries(&srqs, &o)?))?;
                    }
                    ResKind::Ctx => sent(r.add_table(to, h, &ctx_entries(e)?))?,
                    ResKind::CmId => return Err(EOPNOTSUPP),
                }
                sent(r.add(|o| nldev::put_done(o, to)))?;
            }
            Cmd::StatGet { index, port } => {
                let e = find(index).map_err(|_| EINVAL_NL)?;
                e.dev.check_port(port).map_err(|_| EINVAL_NL)?;
                // A device without counters has no default counter set.
                let names = e.dev.hw_counter_names().map_err(|_| EINVAL_NL)?;
                if names.is_empty() {
                    return Err(EINVAL_NL);
                }
                let mut counters = KVec::with_capacity(names.len(), GFP_KERNEL).map_err(nomem)?;
                for (i, name) in names.iter().enumerate() {
                    let value = e.dev.hw_counter(port, i).map_err(|_| EINVAL_NL)?;
                    let c = nldev::HwCounter {
                        name: name.as_bytes(),
                        value,
                    };
                    counters.push(c, GFP_KERNEL).map_err(nomem)?;
                }
                sent(r.add(|o| nldev::put_stat(o, to, handle(e), port, &counters)))?;
            }
            Cmd::StatGetDump { index, port, res } => {
                let e = find(index).map_err(|_| EINVAL_NL)?;
                if let Some(p) = port {
                    e.dev.check_port(p).map_err(|_| EINVAL_NL)?;
                }
                match res {
                    // No counters are ever bound to QPs here (`rdma
                    // statistic qp set` is not built): an empty list.
                    r_ if r_ == u32::from(attr::RES_QP) => {}
                    r_ if r_ == u32::from(attr::RES_MR) => return Err(EOPNOTSUPP),
                    _ => return Err(EINVAL_NL),
                }
                sent(r.add(|o| nldev::put_done(o, to)))?;
            }
            _ => return Err(EOPNOTSUPP),
        }
        Ok(())
    }
}

/// `text` (an attribute's string, checked by the codec) as a C string in
/// `buf`: `EINVAL` if it does not fit or holds a NUL.
fn c_string<'b>(text: &[u8], buf: &'b mut [u8]) -> Result<&'b CStr, i32> {
    if text.len() >= buf.len() {
        return Err(EINVAL_NL);
    }
    buf[..text.len()].copy_from_slice(text);
    buf[text.len()] = 0;
    CStr::from_bytes_with_nul(&buf[..=text.len()]).map_err(|_| EINVAL_NL)
}

/// `EINVAL` as the errno the server answers with.
const EINVAL_NL: i32 = rdma::spec::netlink::EINVAL;

fn nomem(_: kernel::alloc::AllocError) -> i32 {
    -ENOMEM.to_errno()
}

fn handle(e: &Entry) -> DevHandle<'_> {
    DevHandle {
        index: e.index,
        name: e.dev.name().as_bytes(),
    }
}

/// The counts of `rdma res`, from the device's object tables, the
/// rdma_cm's ids bound to it and the files with a context.
fn summary(e: &Entry) -> nldev::ResSummary {
    // (PDs, CQs, QPs, SRQs, MRs, AHs, MWs)
    let [pd, cq, qp, srq, mr, _ah, _mw] = e.dev.resource_counts();
    nldev::ResSummary {
        pd: pd.into(),
        cq: cq.into(),
        qp: qp.into(),
        cm_id: Some(rdma::cma::ids_on(&e.dev) as u64),
        mr: mr.into(),
        ctx: Some(e.udev.contexts()),
        srq: srq.into(),
    }
}

/// The user objects of a device, from its files' tables: each with the
/// number of its file's context and the PID (in the requester's namespace)
/// of the thread that made that context.
struct Owners(KVec<Owned>);

#[derive(Clone, Copy)]
struct Owned {
    kind: ResKind,
    num: u32,
    ctxn: u32,
    pid: Option<u32>,
}

impl Owners {
    fn of(e: &Entry) -> Result<Owners, i32> {
        let mut v = KVec::new();
        let mut pushed = Ok(());
        e.udev.for_each_context(|ctx| {
            let pid = ctx.creator.as_ref().and_then(Pid::nr);
            for o in ctx.objects.iter() {
                let (kind, num) = match o {
                    Obj::Pd(pd) => (ResKind::Pd, pd.num()),
                    // The index part of the keys, as the table numbers it.
                    Obj::Mr(mr) => (ResKind::Mr, mr.lkey() >> 8),
                    Obj::Cq(c) => (ResKind::Cq, c.cq.num()),
                    Obj::Qp(q) => (ResKind::Qp, q.qp.qpn()),
                    Obj::Srq(s) => (ResKind::Srq, s.srq.num()),
                    Obj::Mw(_) | Obj::Ah(_) => continue,
                };
                let ctxn = ctx.ctxn;
                if pushed.is_ok() {
                    pushed = v.push(
                        Owned {
                            kind,
                            num,
                            ctxn,
                            pid,
                        },
                        GFP_KERNEL,
                    );
                }
            }
        });
        pushed.map_err(nomem)?;
        Ok(Owners(v))
    }

    /// Who made object `num` of `kind`, and its context's number: the
    /// file's owner if a file holds it; otherwise a user object whose
    /// file let go of it meanwhile (`user`), or a kernel user's (whose
    /// name is not recorded).
    fn owner(&self, kind: ResKind, num: u32, user: bool) -> (Owner<'static>, u32) {
        match self.0.iter().find(|o| o.kind == kind && o.num == num) {
            Some(o) => (Owner::User { pid: o.pid }, o.ctxn),
            None if user => (Owner::User { pid: None }, 0),
            None => (Owner::Kernel { name: b"" }, 0),
        }
    }
}

/// The open contexts of a device, in number order.
fn ctx_entries(e: &Entry) -> Result<KVec<CtxEntry<'static>>, i32> {
    let mut v = KVec::new();
    let mut pushed = Ok(());
    e.udev.for_each_context(|ctx| {
        let entry = CtxEntry {
            ctxn: ctx.ctxn,
            owner: Owner::User {
                pid: ctx.creator.as_ref().and_then(Pid::nr),
            },
        };
        if pushed.is_ok() {
            pushed = v.push(entry, GFP_KERNEL);
        }
    });
    pushed.map_err(nomem)?;
    v.sort_unstable_by_key(|c| c.ctxn);
    Ok(v)
}

fn qp_entries(
    e: &Entry,
    owners: &Owners,
    port: Option<u32>,
) -> Result<KVec<QpEntry<'static>>, i32> {
    let qps = e.dev.qps().map_err(|_| -ENOMEM.to_errno())?;
    let mut v = KVec::with_capacity(qps.len(), GFP_KERNEL).map_err(nomem)?;
    for qp in qps.iter() {
        let a = qp.attr();
        let (owner, _) = owners.owner(ResKind::Qp, qp.qpn(), qp.user_rings().is_some());
        let entry = QpEntry {
            // The port is set by the modify to INIT (the GSI QP's at
            // creation).
            port: (a.port_num != 0).then_some(a.port_num),
            lqpn: qp.qpn(),
            pdn: qp.pd().num(),
            rqpn: a.dest_qp_num,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            // Path migration is not supported: always migrated.
            path_mig_state: 0,
            qp_type: qp.qp_type() as u8,
            state: qp.state() as u8,
            owner,
        };
        if entry.on_port(port) {
            v.push(entry, GFP_KERNEL).map_err(nomem)?;
        }
    }
    Ok(v)
}

fn cq_entries(e: &Entry, owners: &Owners) -> Result<KVec<CqEntry<'static>>, i32> {
    let cqs = e.dev.cqs().map_err(|_| -ENOMEM.to_errno())?;
    let mut v = KVec::with_capacity(cqs.len(), GFP_KERNEL).map_err(nomem)?;
    for cq in cqs.iter() {
        let (owner, ctxn) = owners.owner(ResKind::Cq, cq.num(), cq.user_ring().is_some());
        let entry = CqEntry {
            cqn: cq.num(),
            cqe: cq.capacity() as u32,
            users: cq.users().into(),
            poll_ctx: cq.poll_ctx().map(|c| match c {
                PollCtx::Softirq => 0,
                PollCtx::Workqueue => 1,
                PollCtx::UnboundWorkqueue => 2,
                PollCtx::Direct => 3,
            }),
            dim: false,
            ctxn,
            owner,
        };
        v.push(entry, GFP_KERNEL).map_err(nomem)?;
    }
    Ok(v)
}

fn mr_entries(e: &Entry, owners: &Owners, admin: bool) -> Result<KVec<MrEntry<'static>>, i32> {
    let mrs = e.dev.mrs().map_err(|_| -ENOMEM.to_errno())?;
    let mut v = KVec::with_capacity(mrs.len(), GFP_KERNEL).map_err(nomem)?;
    for mr in mrs.iter() {
        let (owner, _) = owners.owner(ResKind::Mr, mr.lkey() >> 8, mr.user_mem().is_some());
        let entry = MrEntry {
            // The index part of the keys, as the table numbers it.
            mrn: mr.lkey() >> 8,
            keys: admin.then(|| (mr.rkey(), mr.lkey())),
            length: mr.length(),
            pdn: mr.pd().num(),
            owner,
        };
        v.push(entry, GFP_KERNEL).map_err(nomem)?;
    }
    Ok(v)
}

fn pd_entries(e: &Entry, owners: &Owners, admin: bool) -> Result<KVec<PdEntry<'static>>, i32> {
    let pds = e.dev.pds().map_err(|_| -ENOMEM.to_errno())?;
    let mut v = KVec::with_capacity(pds.len(), GFP_KERNEL).map_err(nomem)?;
    for pd in pds.iter() {
        let (owner, ctxn) = owners.owner(ResKind::Pd, pd.num(), false);
        let entry = PdEntry {
            pdn: pd.num(),
            keys: admin.then(|| pd.unsafe_global_rkey()),
            users: pd.users().into(),
            ctxn,
            owner,
        };
        v.push(entry, GFP_KERNEL).map_err(nomem)?;
    }
    Ok(v)
}

/// An SRQ and the numbers of the QPs that use it, ascending.
type SrqQps = (Arc<SrqCore>, KVec<u32>);

/// The live SRQs, each with its QPs.
fn srqs_with_qps(e: &Entry) -> Result<KVec<SrqQps>, i32> {
    let srqs = e.dev.srqs().map_err(|_| -ENOMEM.to_errno())?;
    let qps = e.dev.qps().map_err(|_| -ENOMEM.to_errno())?;
    let mut v = KVec::with_capacity(srqs.len(), GFP_KERNEL).map_err(nomem)?;
    for srq in srqs.iter() {
        let mut qpns = KVec::new();
        for qp in qps.iter() {
            if qp.srq().is_some_and(|s| Arc::ptr_eq(s, srq)) {
                qpns.push(qp.qpn(), GFP_KERNEL).map_err(nomem)?;
            }
        }
        qpns.sort_unstable();
        v.push((srq.clone(), qpns), GFP_KERNEL).map_err(nomem)?;
    }
    Ok(v)
}

fn srq_entries<'a>(srqs: &'a [SrqQps], owners: &Owners) -> Result<KVec<SrqEntry<'a>>, i32> {
    let mut v = KVec::with_capacity(srqs.len(), GFP_KERNEL).map_err(nomem)?;
    for (srq, qpns) in srqs {
        let (owner, _) = owners.owner(ResKind::Srq, srq.num(), srq.user_ring().is_some());
        let entry = SrqEntry {
            srqn: srq.num(),
            // IB_SRQT_BASIC: the only kind there is.
            srq_type: 0,
            pdn: srq.pd().num(),
            qpns,
            owner,
        };
        v.push(entry, GFP_KERNEL).map_err(nomem)?;
    }
    Ok(v)
}

/// Writes `uverbs<index>` into `buf` and returns its length.
fn uverbs_name(index: u32, buf: &mut [u8; 16]) -> usize {
    buf[..6].copy_from_slice(b"uverbs");
    let mut digits = [0u8; 10];
    let (mut d, mut v) = (0, index);
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut n = 6;
    while d > 0 {
        d -= 1;
        buf[n] = digits[d];
        n += 1;
    }
    n
}

impl NlHandler for NlServer {
    fn request(&self, req: &NlRequest<'_>) {
        let Ok(mut buf) = KVec::from_elem(0u8, nldev::DATAGRAM_MAX, GFP_KERNEL) else {
            return;
        };
        let mut r = Replier {
            req,
            out: Out::new(&mut buf),
        };
        for m in Messages::new(req.bytes()) {
            // A malformed message ends the datagram, as in the kernel.
            let Ok(m) = m else { break };
            let res = match nldev::decode(&m) {
                Err(NlError::NotRequest) => {
                    if m.hdr.flags & flags::ACK != 0 {
                        r.error(&m, 0)
                    } else {
                        Ok(())
                    }
                }
                Err(e) => r.error(&m, e.errno()),
                Ok(q) if q.needs_admin() && !req.net_admin() => r.error(&m, EPERM),
                Ok(q) => match self.serve(&mut r, &q) {
                    Err(errno) => r.error(&m, errno),
                    Ok(()) if q.wants_ack() && !q.is_dump() => r.error(&m, 0),
                    Ok(()) => Ok(()),
                },
            };
            if res.is_err() {
                return;
            }
        }
        let _ = r.flush();
    }
}
