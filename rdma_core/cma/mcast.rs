// SPDX-License-Identifier: GPL-2.0

//! Multicast of UD ids over RoCE (`rdma_join_multicast`,
//! `rdma_leave_multicast`) and the Q_Key of UD ids.
//!
//! Over RoCE there is no SA to join: the group of an IPv4 multicast
//! address is its IPv4-mapped GID (RoCE v2), a join is done at once and
//! reported by a `MulticastJoin` event whose [`UdParam`] addresses the
//! group (QPN `0xFFFFFF`, the id's Q_Key, hop limit 64); a full member
//! (not send-only) also joins the IP group on the port's netdev, so that
//! the host takes the group's datagrams in and says so on the wire
//! (IGMP), until it leaves. Attaching a QP to the group is its owner's
//! business (librdmacm attaches user space's after the event). IPv6
//! groups have no RoCE v2 mapping: `EOPNOTSUPP`.

use kernel::error::code::{EEXIST, EINVAL, ENOENT};
use kernel::prelude::*;
use kernel::sync::Arc;

use super::addr::{gid_of, IpAddr};
use super::event::{CmEvent, EventKind};
use super::id::{CmIdCore, Phase, PortSpace};
use crate::device::Device;
use crate::kshim::errno::{eaddrnotavail, eopnotsupp};
use crate::spec::attr::Gid;
use crate::verbs::ah::{AhAttr, GlobalRoute};

/// The Q_Key of the ids of the UDP port space (`RDMA_UDP_QKEY`).
pub const UDP_QKEY: u32 = 0x0123_4567;
/// The QPN a datagram to a multicast group is sent to.
pub const MULTICAST_QPN: u32 = 0xff_ffff;
/// The hop limit of a RoCE v2 group's address (IPv6's default).
const MC_HOP_LIMIT: u8 = 64;

/// Where a UD id's datagrams go (`struct rdma_ud_param`, less the
/// private data).
#[derive(Clone, Copy, Debug)]
pub struct UdParam {
    /// The address of the peer or group.
    pub ah: AhAttr,
    /// The peer's QPN ([`MULTICAST_QPN`] for a group).
    pub qp_num: u32,
    /// The Q_Key to send with.
    pub qkey: u32,
}

/// A group an id joined.
pub(super) struct Membership {
    /// What the joiner named the join by.
    context: u64,
    mgid: Gid,
    send_only: bool,
    dev: Arc<Device>,
    port: u32,
}

impl Membership {
    /// Leaves the IP group, if the join took it.
    fn leave_ip(&self) {
        if self.send_only {
            return;
        }
        if let Some(nd) = self.dev.netdev(self.port) {
            let _ = nd.multicast(&self.mgid.0, false);
        }
    }
}

impl CmIdCore {
    /// The Q_Key of a UD id's QP: [`UDP_QKEY`] for the UDP port space;
    /// `EINVAL` for an RC id, and for IPoIB's, whose Q_Key only an SA
    /// knows (as the C rdma_cm fails it over RoCE).
    pub fn qkey(&self) -> Result<u32> {
        match self.ps {
            PortSpace::Udp => Ok(UDP_QKEY),
            PortSpace::Tcp | PortSpace::Ipoib => Err(EINVAL),
        }
    }

    /// Joins the multicast group of `group` (`rdma_join_multicast`), as a
    /// send-only member if `send_only`; `context` names the join in its
    /// event and to [`Self::leave_multicast`] (one join per context).
    /// The id must be a UD id with an address bound or resolved
    /// (`EINVAL`). `MulticastJoin` follows.
    pub fn join_multicast(
        self: &Arc<Self>,
        group: IpAddr,
        send_only: bool,
        context: u64,
    ) -> Result {
        let qkey = self.qkey()?;
        let mgid = match group {
            IpAddr::V4(a) => Gid::from_ipv4(a),
            IpAddr::V6(_) => return Err(eopnotsupp()),
        };
        if !mgid.is_multicast() {
            return Err(EINVAL);
        }
        let (dev, port, src) = {
            let st = self.st.lock();
            if !matches!(st.phase, Phase::AddrBound | Phase::AddrResolved) {
                return Err(EINVAL);
            }
            if st.mcs.iter().any(|m| m.context == context) {
                return Err(EEXIST);
            }
            let (dev, port) = match st.bound.as_ref() {
                Some(b) => (b.dev.clone(), b.port),
                None => st.bind_dev.clone().ok_or(EINVAL)?,
            };
            (dev, port, st.src.ok_or(EINVAL)?)
        };
        let (_, sgid_index) = dev
            .find_gid_on_port(port, &gid_of(src.ip))
            .ok_or_else(eaddrnotavail)?;
        let m = Membership {
            context,
            mgid,
            send_only,
            dev: dev.clone(),
            port,
        };
        if !send_only {
            dev.netdev(port).ok_or(EINVAL)?.multicast(&mgid.0, true)?;
        }
        {
            let mut st = self.st.lock();
            // Destroyed, or gone to another phase, meanwhile: undone.
            if !matches!(st.phase, Phase::AddrBound | Phase::AddrResolved) {
                drop(st);
                m.leave_ip();
                return Err(EINVAL);
            }
            if let Err(e) = st.mcs.push(m, GFP_KERNEL) {
                drop(st);
                if !send_only {
                    if let Some(nd) = dev.netdev(port) {
                        let _ = nd.multicast(&mgid.0, false);
                    }
                }
                return Err(e.into());
            }
        }
        let mut ev = CmEvent::new(EventKind::MulticastJoin, 0);
        ev.mc = context;
        ev.ud = Some(UdParam {
            ah: AhAttr {
                port_num: port,
                sl: 0,
                static_rate: 0,
                grh: GlobalRoute {
                    dgid: mgid,
                    flow_label: 0,
                    sgid_index: sgid_index as u8,
                    hop_limit: MC_HOP_LIMIT,
                    traffic_class: 0,
                },
                dmac: [0; 6],
            },
            qp_num: MULTICAST_QPN,
            qkey,
        });
        self.post(ev);
        Ok(())
    }

    /// Leaves the join named `context` (`rdma_leave_multicast`); its
    /// event, if not delivered yet, may still come. `ENOENT` if there is
    /// no such join.
    pub fn leave_multicast(&self, context: u64) -> Result {
        let m = {
            let mut st = self.st.lock();
            let i = st
                .mcs
                .iter()
                .position(|m| m.context == context)
                .ok_or(ENOENT)?;
            crate::kshim::vec::remove(&mut st.mcs, i).ok_or(ENOENT)?
        };
        m.leave_ip();
        Ok(())
    }

    /// Leaves every group (the id is destroyed or loses its device).
    pub(super) fn leave_all_multicast(&self) {
        let all = core::mem::take(&mut self.st.lock().mcs);
        for m in all.iter() {
            m.leave_ip();
        }
    }
}
