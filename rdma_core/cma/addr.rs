// SPDX-License-Identifier: GPL-2.0

//! Addresses and their resolution: IP addresses and ports, what an id is
//! bound to (device, port, GID index, path MTU), `resolve_addr` through the
//! routing table of the id's namespace, `resolve_route` (made from the
//! address, without an SA) and `bind_addr`.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use super::event::{CmEvent, EventKind};
use super::id::{CmIdCore, Phase};
use crate::device::Device;
use crate::kshim::errno::eaddrnotavail;
use crate::spec::attr::{Gid, Mtu};
use crate::spec::cm_msg::CmaHeader;

/// An IP address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr {
    /// IPv4.
    V4([u8; 4]),
    /// IPv6 (an IPv4-mapped one counts as IPv4 where it matters).
    V6([u8; 16]),
}

impl IpAddr {
    /// The 16 bytes of the address, IPv4 mapped (`::ffff:a.b.c.d`).
    pub fn to16(self) -> [u8; 16] {
        match self {
            IpAddr::V4(a) => Gid::from_ipv4(a).0,
            IpAddr::V6(a) => a,
        }
    }

    /// The address of 16 bytes, IPv4 if mapped.
    pub fn from16(a: [u8; 16]) -> IpAddr {
        match Gid(a).to_ipv4() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(a),
        }
    }

    /// Whether this is the wildcard (`0.0.0.0` or `::`).
    pub fn is_any(self) -> bool {
        match self {
            IpAddr::V4(a) => a == [0; 4],
            IpAddr::V6(a) => a == [0; 16],
        }
    }
}

/// An IP address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockAddr {
    /// The address.
    pub ip: IpAddr,
    /// The port.
    pub port: u16,
}

/// What an id is bound to: our device, its port, the source GID's index
/// and the path MTU.
pub(super) struct Bound {
    pub(super) dev: Arc<Device>,
    pub(super) port: u32,
    pub(super) sgid_index: u8,
    pub(super) mtu: Mtu,
}

/// The GID of an address (IPv4-mapped for IPv4).
pub(super) fn gid_of(ip: IpAddr) -> Gid {
    Gid(ip.to16())
}

/// The addresses of an rdma_cm header: (source, destination).
pub(super) fn hdr_addrs(hdr: &CmaHeader) -> (IpAddr, IpAddr) {
    match (hdr.src_ipv4(), hdr.dst_ipv4()) {
        (Some(s), Some(d)) => (IpAddr::V4(s), IpAddr::V4(d)),
        _ => (IpAddr::from16(hdr.src_addr), IpAddr::from16(hdr.dst_addr)),
    }
}

impl CmIdCore {
    /// Finds our device, port and GID index of source address `src` on
    /// the netdev `ifindex` of the id's namespace.
    fn find_port(&self, ifindex: i32, src: [u8; 16]) -> Result<Bound> {
        for d in crate::device::devices()?.iter() {
            let dev = d.arc();
            for port in 1..=dev.port_count() {
                if !dev.has_mad(port) {
                    continue;
                }
                let Some(nd) = dev.netdev(port) else { continue };
                if nd.net_id() != self.ns.id() || (ifindex != 0 && nd.ifindex() != ifindex) {
                    continue;
                }
                let Some((_, index)) = dev.find_gid_on_port(port, &Gid(src)) else {
                    continue;
                };
                let mtu = dev.query_port(port)?.active_mtu;
                return Ok(Bound {
                    dev: dev.clone(),
                    port,
                    sgid_index: index as u8,
                    mtu,
                });
            }
        }
        Err(eaddrnotavail())
    }

    /// Resolves `dst` (`rdma_resolve_addr`): the route from `src` (or the
    /// one the routing table picks) in the id's namespace, and our device
    /// on its netdev. The outcome comes as `AddrResolved` or `AddrError`.
    pub fn resolve_addr(self: &Arc<Self>, src: Option<SockAddr>, dst: SockAddr) -> Result {
        let from = src.map_or([0u8; 16], |s| s.ip.to16());
        let route = match dst.ip {
            IpAddr::V4(d) => {
                let s4 = Gid(from).to_ipv4().unwrap_or([0; 4]);
                self.ns.route_v4(d, s4)
            }
            IpAddr::V6(d) => self.ns.route_v6(d, from),
        };
        let found = route.and_then(|r| {
            // To an address of this host: the device is the source
            // address's, on whichever netdev has it (as the C stack's).
            let ifindex = if r.is_loopback() { 0 } else { r.ifindex };
            let mut b = self.find_port(ifindex, r.src)?;
            if let Some(m) = Mtu::largest_within(r.mtu) {
                if m.bytes() < b.mtu.bytes() {
                    b.mtu = m;
                }
            }
            Ok((r, b))
        });
        let mut st = self.st.lock();
        if !matches!(st.phase, Phase::Idle | Phase::AddrBound) {
            return Err(EINVAL);
        }
        match found {
            Ok((r, b)) => {
                let port = match src {
                    Some(s) if s.port != 0 => s.port,
                    _ => 0x8000 | (crate::kshim::random::u32() as u16 & 0x3fff),
                };
                st.src = Some(SockAddr {
                    ip: IpAddr::from16(r.src),
                    port,
                });
                st.dst = Some(dst);
                st.bound = Some(b);
                st.phase = Phase::AddrResolved;
                drop(st);
                self.post(CmEvent::new(EventKind::AddrResolved, 0));
            }
            Err(e) => {
                drop(st);
                self.post(CmEvent::new(EventKind::AddrError, e.to_errno()));
            }
        }
        Ok(())
    }

    /// Resolves the route (`rdma_resolve_route`): over RoCE without an SA
    /// it is made from the address; `RouteResolved` follows.
    pub fn resolve_route(self: &Arc<Self>) -> Result {
        let mut st = self.st.lock();
        if st.phase != Phase::AddrResolved {
            return Err(EINVAL);
        }
        st.phase = Phase::RouteResolved;
        drop(st);
        self.post(CmEvent::new(EventKind::RouteResolved, 0));
        Ok(())
    }

    /// Binds a source address (`rdma_bind_addr`): the wildcard, or an
    /// address of ours in the id's namespace.
    pub fn bind_addr(self: &Arc<Self>, addr: SockAddr) -> Result {
        let on = if addr.ip.is_any() {
            None
        } else {
            let b = self.find_port(0, addr.ip.to16())?;
            Some((b.dev, b.port))
        };
        let mut st = self.st.lock();
        if st.phase != Phase::Idle {
            return Err(EINVAL);
        }
        st.bind_dev = on;
        st.src = Some(addr);
        st.phase = Phase::AddrBound;
        Ok(())
    }
}
