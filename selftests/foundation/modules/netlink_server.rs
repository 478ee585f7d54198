// SPDX-License-Identifier: GPL-2.0

//! The NLDEV server of the netlink selftests, shared by
//! `rdma_netlink_test` (unit 31) and `rdma_netlink_rdma` (unit 20,
//! `NETLINK_RDMA`, for the real `rdma` tool): [`NDEVS`] made-up devices
//! `nltest0`... (index `i`, one port on `lo`, node GUID `0x1000 + i`,
//! character device `uverbs<i>` at 231:192+i). It answers as the C RDMA
//! netlink does: a request's replies, then an acknowledgement if it asked
//! for one; an error (with the errno of the codec) instead of replies; a
//! dump's messages with `NLM_F_MULTI`, then `NLMSG_DONE`, and no
//! acknowledgement; NEWLINK and DELLINK acknowledged with `CAP_NET_ADMIN`,
//! else `EPERM`. A template for the uverbs module's server.

use kernel::error::code::EINVAL;
use kernel::prelude::*;

use rdma::kshim::netlink::{NlHandler, NlRequest};
use rdma::spec::netlink::msg::{Message, Messages, Out};
use rdma::spec::netlink::nldev::{self, Cmd, ReplyTo, Request};
use rdma::spec::netlink::{NlError, ENODEV, EPERM};

/// Made-up devices: enough for a dump of several datagrams.
pub(crate) const NDEVS: u32 = 40;

/// `nltest<i>`: its bytes in `buf`, returned as a slice.
fn dev_name(i: u32, buf: &mut [u8; 16]) -> &[u8] {
    buf[..6].copy_from_slice(b"nltest");
    let mut n = 6;
    let mut digits = [0u8; 10];
    let mut d = 0;
    let mut v = i;
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        buf[n] = digits[d];
        n += 1;
    }
    &buf[..n]
}

fn dev_info(i: u32, name: &[u8]) -> nldev::DevInfo<'_> {
    nldev::DevInfo {
        index: i,
        name,
        port_count: 1,
        cap_flags: 0,
        fw_version: b"",
        node_guid: 0x1000 + u64::from(i),
        sys_image_guid: 0x1000,
        node_type: nldev::NODE_IB_CA,
        dim: false,
        name_assign_type: 1,
        protocol: b"roce",
    }
}

pub(crate) struct Server;

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

impl Server {
    /// Answers one request; `Err(errno)` is sent as an `NLMSG_ERROR`.
    fn serve(&self, r: &mut Replier<'_, '_>, q: &Request<'_>) -> Result<(), i32> {
        let to: ReplyTo = q.reply_to(r.req.portid());
        let mut name = [0u8; 16];
        let sent = |res: Result| res.map_err(|e| -e.to_errno());
        match q.cmd {
            Cmd::GetDump => {
                for i in 0..NDEVS {
                    let d = dev_info(i, dev_name(i, &mut name));
                    sent(r.add(|o| nldev::put_dev(o, to, true, &d)))?;
                }
                sent(r.add(|o| nldev::put_done(o, to)))?;
            }
            Cmd::Get { index } if index < NDEVS => {
                let d = dev_info(index, dev_name(index, &mut name));
                sent(r.add(|o| nldev::put_dev(o, to, false, &d)))?;
            }
            Cmd::PortGet { index, port } if index < NDEVS && port == 1 => {
                let p = nldev::PortInfo {
                    dev_index: index,
                    dev_name: dev_name(index, &mut name),
                    port: 1,
                    state: 4,
                    phys_state: 5,
                    netdev: Some((1, b"lo")),
                };
                sent(r.add(|o| nldev::put_port(o, to, false, &p)))?;
            }
            Cmd::GetChardev {
                index: Some(index),
                port: None,
                chardev_type: b"uverbs",
            } if index < NDEVS => {
                let mut cname = [0u8; 16];
                cname[..6].copy_from_slice(b"uverbs");
                let digits = &dev_name(index, &mut name)[6..];
                cname[6..6 + digits.len()].copy_from_slice(digits);
                let c = nldev::ChardevInfo {
                    name: &cname[..6 + digits.len()],
                    major: 231,
                    minor: 192 + index,
                    abi: nldev::UVERBS_ABI_VERSION,
                    driver_id: Some(nldev::RDMA_DRIVER_RXE),
                };
                sent(r.add(|o| nldev::put_chardev(o, to, &c)))?;
            }
            Cmd::SysGet => {
                let s = nldev::SysInfo {
                    netns_shared: true,
                    privileged_qkey: false,
                    monitor: false,
                    copy_on_fork: true,
                };
                sent(r.add(|o| nldev::put_sys(o, to, &s)))?;
            }
            Cmd::NewLink { .. } | Cmd::DelLink { .. } => {}
            _ => return Err(ENODEV),
        }
        Ok(())
    }
}

impl NlHandler for Server {
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
                    if m.hdr.flags & rdma::spec::netlink::msg::flags::ACK != 0 {
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
