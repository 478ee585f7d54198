// SPDX-License-Identifier: GPL-2.0

//! The RDMA netlink family (`NETLINK_RDMA`) for our devices: what
//! libibverbs asks before anything else (the device list, then each
//! device's `uverbs` character device) and what iproute2's `rdma` shows
//! (`rdma dev`, `rdma link`, `rdma system`).
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
//! Holding the family also keeps the C `ib_core` from being autoloaded by
//! the socket libibverbs opens. If `ib_core` holds it (`EBUSY`), the
//! module goes on without it: libibverbs then asks `ib_core`, which does
//! not know our devices (Documentation/uverbs.rst).

use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use rdma::device::link;
use rdma::kshim::netlink::{NlHandler, NlRequest};
use rdma::spec::netlink::msg::{flags, Message, Messages, Out};
use rdma::spec::netlink::nldev::{self, Cmd, Request};
use rdma::spec::netlink::{NlError, EINVAL as NL_EINVAL, ENODEV, EOPNOTSUPP, EPERM};

use crate::device::{DevTable, Entry, DRIVER_ABI_VERSION};

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
                sent(link::new_link(name, link_type, netdev))?;
            }
            Cmd::DelLink { index } => {
                // The device, not a usage reference: its unregistration
                // waits for those.
                let dev = find(index).map_err(|_| NL_EINVAL)?.dev.clone();
                drop(table);
                sent(link::del_link(&dev))?;
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
        return Err(NL_EINVAL);
    }
    buf[..text.len()].copy_from_slice(text);
    buf[text.len()] = 0;
    CStr::from_bytes_with_nul(&buf[..=text.len()]).map_err(|_| NL_EINVAL)
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
