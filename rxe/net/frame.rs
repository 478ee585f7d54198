// SPDX-License-Identifier: GPL-2.0

//! What both directions know of a frame: the largest payload, the CRC the
//! codec's ICRC is computed with, and the GIDs of an IP header (and the
//! header of a path between two GIDs). The receive path (`recv.rs`), the
//! transmit path (`xmit.rs`) and the transports use them; this file uses
//! neither path.

use rdma::provider::Gid;

use crate::wire::packet::{IpHeader, Ipv4, Ipv6};

/// The largest payload of a packet: the largest IB MTU.
pub(crate) const MAX_PAYLOAD: usize = 4096;

/// The CRC-32 the codec computes ICRCs with: the kernel's, which uses
/// carry-less multiplication where the CPU has it.
pub(crate) fn crc(seed: u32, data: &[u8]) -> u32 {
    rdma::provider::udp::crc32_le(seed, data)
}

/// The IP header of packets from `sgid` to `dgid` (both IPv4-mapped or
/// both IPv6), without its identification. None for a mixed pair.
pub(crate) fn ip_header(
    sgid: &Gid,
    dgid: &Gid,
    traffic_class: u8,
    hop_limit: u8,
) -> Option<IpHeader> {
    let hop_limit = if hop_limit == 0 { 64 } else { hop_limit };
    match (sgid.to_ipv4(), dgid.to_ipv4()) {
        (Some(src), Some(dst)) => Some(IpHeader::V4(Ipv4 {
            tos: traffic_class,
            id: 0,
            dont_fragment: true,
            ttl: hop_limit,
            src,
            dst,
        })),
        (None, None) => Some(IpHeader::V6(Ipv6 {
            traffic_class,
            // rxe sends flow label 0.
            flow_label: 0,
            hop_limit,
            src: sgid.0,
            dst: dgid.0,
        })),
        _ => None,
    }
}

/// The destination address of an IP header, as a GID.
pub(crate) fn dst_gid(ip: &IpHeader) -> Gid {
    match ip {
        IpHeader::V4(ip) => Gid::from_ipv4(ip.dst),
        IpHeader::V6(ip) => Gid(ip.dst),
    }
}

/// The source address of an IP header, as a GID.
pub(crate) fn src_gid(ip: &IpHeader) -> Gid {
    match ip {
        IpHeader::V4(ip) => Gid::from_ipv4(ip.src),
        IpHeader::V6(ip) => Gid(ip.src),
    }
}
