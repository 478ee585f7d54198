// SPDX-License-Identifier: GPL-2.0

//! Device and port attribute types: node type, link layer, port states, MTU
//! and GIDs.
//!
//! The numeric values are those of include/rdma/ib_verbs.h (`enum
//! rdma_node_type`, `enum rdma_link_layer`, `enum ib_port_state`, `enum
//! ib_port_phys_state`, `enum ib_mtu`, `enum ib_gid_type`), so they cross
//! the C boundary and the sysfs text of the C stack unchanged.
//!
//! This module uses only `core`, so it can be compiled as a module of
//! another crate.

/// The kind of node a device is (`enum rdma_node_type`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    /// A channel adapter (InfiniBand or RoCE HCA; rxe reports this).
    Ca = 1,
    /// An InfiniBand switch.
    Switch = 2,
    /// An InfiniBand router.
    Router = 3,
    /// An iWARP RNIC.
    Rnic = 4,
    /// A usNIC.
    Usnic = 5,
    /// A usNIC over UDP.
    UsnicUdp = 6,
    /// Not specified.
    Unspecified = 7,
}

impl NodeType {
    /// The text of sysfs `node_type` (`1: CA`).
    pub const fn sysfs_name(self) -> &'static str {
        match self {
            NodeType::Ca => "1: CA",
            NodeType::Switch => "2: switch",
            NodeType::Router => "3: router",
            NodeType::Rnic => "4: RNIC",
            NodeType::Usnic => "5: usNIC",
            NodeType::UsnicUdp => "6: usNIC UDP",
            NodeType::Unspecified => "7: unspecified",
        }
    }
}

/// A port's link layer (`enum rdma_link_layer`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// Not specified.
    Unspecified = 0,
    /// InfiniBand.
    Infiniband = 1,
    /// Ethernet (RoCE).
    Ethernet = 2,
}

impl LinkLayer {
    /// The text of sysfs `link_layer`.
    pub const fn sysfs_name(self) -> &'static str {
        match self {
            LinkLayer::Unspecified | LinkLayer::Infiniband => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
        }
    }
}

/// A port's logical state (`enum ib_port_state`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// No state change.
    Nop = 0,
    /// Down.
    Down = 1,
    /// Initialising.
    Init = 2,
    /// Armed.
    Armed = 3,
    /// Active: usable.
    Active = 4,
    /// Active, deferred.
    ActiveDefer = 5,
}

impl PortState {
    /// The text of sysfs `state` (`4: ACTIVE`).
    pub const fn sysfs_name(self) -> &'static str {
        match self {
            PortState::Nop => "0: NOP",
            PortState::Down => "1: DOWN",
            PortState::Init => "2: INIT",
            PortState::Armed => "3: ARMED",
            PortState::Active => "4: ACTIVE",
            PortState::ActiveDefer => "5: ACTIVE_DEFER",
        }
    }
}

/// A port's physical state (`enum ib_port_phys_state`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysState {
    /// Sleeping.
    Sleep = 1,
    /// Polling for a peer.
    Polling = 2,
    /// Disabled.
    Disabled = 3,
    /// Training.
    PortConfigurationTraining = 4,
    /// Link up.
    LinkUp = 5,
    /// Recovering from a link error.
    LinkErrorRecovery = 6,
    /// PHY test.
    PhyTest = 7,
}

impl PhysState {
    /// The text of sysfs `phys_state` (`5: LinkUp`).
    pub const fn sysfs_name(self) -> &'static str {
        match self {
            PhysState::Sleep => "1: Sleep",
            PhysState::Polling => "2: Polling",
            PhysState::Disabled => "3: Disabled",
            PhysState::PortConfigurationTraining => "4: PortConfigurationTraining",
            PhysState::LinkUp => "5: LinkUp",
            PhysState::LinkErrorRecovery => "6: LinkErrorRecovery",
            PhysState::PhyTest => "7: Phy Test",
        }
    }
}

/// An InfiniBand path MTU (`enum ib_mtu`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mtu {
    /// 256 bytes.
    Mtu256 = 1,
    /// 512 bytes.
    Mtu512 = 2,
    /// 1024 bytes.
    Mtu1024 = 3,
    /// 2048 bytes.
    Mtu2048 = 4,
    /// 4096 bytes.
    Mtu4096 = 5,
}

impl Mtu {
    /// The MTU in bytes.
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// The MTU of exactly `bytes` bytes, if it is one.
    pub const fn from_bytes(bytes: u32) -> Option<Mtu> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }

    /// The largest MTU that fits in `bytes` (`None` below 256).
    pub const fn largest_within(bytes: u32) -> Option<Mtu> {
        match bytes {
            4096.. => Some(Mtu::Mtu4096),
            2048.. => Some(Mtu::Mtu2048),
            1024.. => Some(Mtu::Mtu1024),
            512.. => Some(Mtu::Mtu512),
            256.. => Some(Mtu::Mtu256),
            _ => None,
        }
    }

    /// The MTU of the raw `enum ib_mtu` value.
    pub const fn from_raw(raw: u32) -> Option<Mtu> {
        match raw {
            1 => Some(Mtu::Mtu256),
            2 => Some(Mtu::Mtu512),
            3 => Some(Mtu::Mtu1024),
            4 => Some(Mtu::Mtu2048),
            5 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }
}

/// The type of a GID table entry (`enum ib_gid_type`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// InfiniBand.
    Ib = 0,
    /// RoCE v1.
    RoceV1 = 1,
    /// RoCE v2 (UDP encapsulation).
    RoceV2 = 2,
}

impl GidType {
    /// The text of sysfs `gid_attrs/types/N`.
    pub const fn sysfs_name(self) -> &'static str {
        match self {
            GidType::Ib => "IB/RoCE v1",
            GidType::RoceV1 => "IB/RoCE v1",
            GidType::RoceV2 => "RoCE v2",
        }
    }
}

/// A 128-bit GID, in network byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The all-zero GID, which marks an empty table entry.
    pub const ZERO: Gid = Gid([0; 16]);

    /// The RoCE GID of an IPv4 address: the IPv4-mapped IPv6 address.
    pub const fn from_ipv4(addr: [u8; 4]) -> Gid {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12] = addr[0];
        g[13] = addr[1];
        g[14] = addr[2];
        g[15] = addr[3];
        Gid(g)
    }

    /// The IPv4 address of an IPv4-mapped GID.
    pub fn to_ipv4(&self) -> Option<[u8; 4]> {
        let g = &self.0;
        if g[..10].iter().all(|b| *b == 0) && g[10] == 0xff && g[11] == 0xff {
            Some([g[12], g[13], g[14], g[15]])
        } else {
            None
        }
    }

    /// The link-local GID of an EUI-64 interface identifier (`fe80::/64`).
    pub const fn link_local(eui64: [u8; 8]) -> Gid {
        let mut g = [0u8; 16];
        g[0] = 0xfe;
        g[1] = 0x80;
        let mut i = 0;
        while i < 8 {
            g[8 + i] = eui64[i];
            i += 1;
        }
        Gid(g)
    }

    /// The modified EUI-64 of a 48-bit MAC address (universal/local bit
    /// flipped, `ff:fe` in the middle), as RoCE derives GUIDs and GIDs.
    pub const fn eui64_of_mac(mac: [u8; 6]) -> [u8; 8] {
        [
            mac[0] ^ 2,
            mac[1],
            mac[2],
            0xff,
            0xfe,
            mac[3],
            mac[4],
            mac[5],
        ]
    }

    /// Whether the GID is a multicast address: an IPv6 multicast address
    /// (first byte 0xff), or an IPv4-mapped one whose IPv4 address is
    /// multicast (224.0.0.0/4), as `rdma_is_multicast_addr` decides.
    pub fn is_multicast(&self) -> bool {
        match self.to_ipv4() {
            Some(v4) => v4[0] & 0xf0 == 0xe0,
            None => self.0[0] == 0xff,
        }
    }

    /// Whether this is the empty (all-zero) GID.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|b| *b == 0)
    }

    /// Writes the GID as sysfs does: eight groups of four hex digits.
    pub fn write_sysfs(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        for i in 0..8 {
            if i > 0 {
                out.write_char(':')?;
            }
            write!(out, "{:02x}{:02x}", self.0[2 * i], self.0[2 * i + 1])?;
        }
        Ok(())
    }
}

/// A port's active speed and width (`enum ib_port_speed`, `enum
/// ib_port_width` values), as its sysfs `rate` file shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRate {
    /// `PortAttr::active_speed`: 1 SDR, 2 DDR, 4 QDR, 8 FDR10, 16 FDR,
    /// 32 EDR, 64 HDR, 128 NDR, 256 XDR; anything else counts as SDR.
    pub speed: u16,
    /// `PortAttr::active_width`: 1 1X, 16 2X, 2 4X, 4 8X, 8 12X.
    pub width: u8,
}

impl PortRate {
    /// The rate a RoCE port reports for its netdev's ethtool speed
    /// (`mbps`, Mb/s; 0 or unknown: the caller passes 1000, as the C
    /// stack assumes) and lane count (0: not reported), as the C stack's
    /// `ib_get_eth_speed` maps it: without lanes, by speed bands; with
    /// lanes, the width from their number and the speed from a lane's
    /// rate (SDR for a rate with no name).
    pub const fn of_ethernet(mbps: u32, lanes: u32) -> PortRate {
        const SDR: u16 = 1;
        const DDR: u16 = 2;
        const FDR10: u16 = 8;
        const FDR: u16 = 16;
        const EDR: u16 = 32;
        const HDR: u16 = 64;
        const NDR: u16 = 128;
        const X1: u8 = 1;
        const X2: u8 = 16;
        const X4: u8 = 2;
        const X8: u8 = 4;
        const X12: u8 = 8;
        if lanes == 0 {
            let (width, speed) = match mbps {
                0..=1_000 => (X1, SDR),
                1_001..=10_000 => (X1, FDR10),
                10_001..=20_000 => (X4, DDR),
                20_001..=25_000 => (X1, EDR),
                25_001..=40_000 => (X4, FDR10),
                40_001..=50_000 => (X2, EDR),
                50_001..=100_000 => (X4, EDR),
                100_001..=200_000 => (X4, HDR),
                _ => (X4, NDR),
            };
            return PortRate { speed, width };
        }
        let width = match lanes {
            2 => X2,
            4 => X4,
            8 => X8,
            12 => X12,
            _ => X1,
        };
        let speed = match mbps / lanes {
            5_000 => DDR,
            10_000 => FDR10,
            14_000 => FDR,
            25_000 => EDR,
            50_000 => HDR,
            100_000 => NDR,
            _ => SDR,
        };
        PortRate { speed, width }
    }

    /// The number of lanes, `None` for a width that has no number.
    pub const fn lanes(self) -> Option<u32> {
        match self.width {
            1 => Some(1),
            16 => Some(2),
            2 => Some(4),
            4 => Some(8),
            8 => Some(12),
            _ => None,
        }
    }

    /// The speed's name and a lane's rate in tenths of Gb/s.
    pub const fn lane(self) -> (&'static str, u32) {
        match self.speed {
            2 => ("DDR", 50),
            4 => ("QDR", 100),
            8 => ("FDR10", 100),
            16 => ("FDR", 140),
            32 => ("EDR", 250),
            64 => ("HDR", 500),
            128 => ("NDR", 1000),
            256 => ("XDR", 2000),
            _ => ("SDR", 25),
        }
    }

    /// Writes the `rate` text without its newline (`10 Gb/sec (4X QDR)`,
    /// `2.5 Gb/sec (1X SDR)`), as the C stack does; `Err` for a width
    /// without a number of lanes (the C stack's read fails then), as for
    /// a full `out`.
    pub fn write_sysfs(self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        let lanes = self.lanes().ok_or(core::fmt::Error)?;
        let (name, lane) = self.lane();
        let rate = lane * lanes;
        let half = if rate % 10 != 0 { ".5" } else { "" };
        write!(out, "{}{} Gb/sec ({}X {})", rate / 10, half, lanes, name)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    #[test]
    fn multicast_gids() {
        assert!(Gid::from_ipv4([239, 1, 2, 3]).is_multicast());
        assert!(Gid::from_ipv4([224, 0, 0, 1]).is_multicast());
        assert!(!Gid::from_ipv4([10, 0, 0, 1]).is_multicast());
        let mut v6 = [0u8; 16];
        v6[0] = 0xff;
        v6[1] = 0x0e;
        assert!(Gid(v6).is_multicast());
        v6[0] = 0xfe;
        assert!(!Gid(v6).is_multicast());
    }

    #[test]
    fn mtu_bytes_and_back() {
        for m in [
            Mtu::Mtu256,
            Mtu::Mtu512,
            Mtu::Mtu1024,
            Mtu::Mtu2048,
            Mtu::Mtu4096,
        ] {
            assert_eq!(Mtu::from_bytes(m.bytes()), Some(m));
            assert_eq!(Mtu::from_raw(m as u32), Some(m));
        }
        assert_eq!(Mtu::Mtu1024.bytes(), 1024);
        assert_eq!(Mtu::from_bytes(1500), None);
        assert_eq!(Mtu::from_raw(0), None);
        assert_eq!(Mtu::from_raw(6), None);
    }

    #[test]
    fn mtu_largest_within() {
        assert_eq!(Mtu::largest_within(255), None);
        assert_eq!(Mtu::largest_within(256), Some(Mtu::Mtu256));
        assert_eq!(Mtu::largest_within(1500), Some(Mtu::Mtu1024));
        assert_eq!(Mtu::largest_within(9000), Some(Mtu::Mtu4096));
        assert_eq!(Mtu::largest_within(4095), Some(Mtu::Mtu2048));
    }

    #[test]
    fn header_values() {
        assert_eq!(NodeType::Ca as u32, 1);
        assert_eq!(NodeType::Unspecified as u32, 7);
        assert_eq!(LinkLayer::Ethernet as u32, 2);
        assert_eq!(PortState::Active as u32, 4);
        assert_eq!(PhysState::LinkUp as u32, 5);
        assert_eq!(Mtu::Mtu4096 as u32, 5);
        assert_eq!(GidType::RoceV2 as u32, 2);
    }

    #[test]
    fn ipv4_gid() {
        let g = Gid::from_ipv4([10, 77, 2, 1]);
        let mut s = String::new();
        g.write_sysfs(&mut s).unwrap();
        assert_eq!(s, "0000:0000:0000:0000:0000:ffff:0a4d:0201");
        assert_eq!(g.to_ipv4(), Some([10, 77, 2, 1]));
        assert_eq!(Gid::link_local([0; 8]).to_ipv4(), None);
        assert!(!g.is_zero());
        assert!(Gid::ZERO.is_zero());
    }

    #[test]
    fn link_local_from_mac() {
        let eui = Gid::eui64_of_mac([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
        assert_eq!(eui, [0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56]);
        let mut s = String::new();
        Gid::link_local(eui).write_sysfs(&mut s).unwrap();
        assert_eq!(s, "fe80:0000:0000:0000:5054:00ff:fe12:3456");
    }

    #[test]
    fn sysfs_names_match_the_c_stack() {
        assert_eq!(NodeType::Ca.sysfs_name(), "1: CA");
        assert_eq!(PortState::Active.sysfs_name(), "4: ACTIVE");
        assert_eq!(PortState::Down.sysfs_name(), "1: DOWN");
        assert_eq!(PhysState::LinkUp.sysfs_name(), "5: LinkUp");
        assert_eq!(PhysState::Disabled.sysfs_name(), "3: Disabled");
        assert_eq!(LinkLayer::Ethernet.sysfs_name(), "Ethernet");
        assert_eq!(GidType::RoceV2.sysfs_name(), "RoCE v2");
    }

    fn rate(speed: u16, width: u8) -> Option<String> {
        let mut s = String::new();
        PortRate { speed, width }.write_sysfs(&mut s).ok()?;
        Some(s)
    }

    #[test]
    fn ethernet_speeds_map_as_the_c_stack() {
        let r = |mbps, lanes| {
            let p = PortRate::of_ethernet(mbps, lanes);
            (p.width, p.speed)
        };
        // Bands, without lanes: a veth (10000) is 1X FDR10.
        assert_eq!(r(100, 0), (1, 1));
        assert_eq!(r(1_000, 0), (1, 1));
        assert_eq!(r(10_000, 0), (1, 8));
        assert_eq!(r(20_000, 0), (2, 2));
        assert_eq!(r(25_000, 0), (1, 32));
        assert_eq!(r(40_000, 0), (2, 8));
        assert_eq!(r(50_000, 0), (16, 32));
        assert_eq!(r(100_000, 0), (2, 32));
        assert_eq!(r(200_000, 0), (2, 64));
        assert_eq!(r(400_000, 0), (2, 128));
        // With lanes: width from the count, speed from a lane's rate.
        assert_eq!(r(100_000, 4), (2, 32));
        assert_eq!(r(200_000, 4), (2, 64));
        assert_eq!(r(56_000, 4), (2, 16));
        assert_eq!(r(10_000, 1), (1, 8));
        assert_eq!(r(7_000, 3), (1, 1));
    }

    #[test]
    fn rate_text_matches_the_c_stack() {
        assert_eq!(rate(1, 1).as_deref(), Some("2.5 Gb/sec (1X SDR)"));
        assert_eq!(rate(4, 2).as_deref(), Some("40 Gb/sec (4X QDR)"));
        assert_eq!(rate(2, 16).as_deref(), Some("10 Gb/sec (2X DDR)"));
        assert_eq!(rate(16, 4).as_deref(), Some("112 Gb/sec (8X FDR)"));
        assert_eq!(rate(32, 8).as_deref(), Some("300 Gb/sec (12X EDR)"));
        assert_eq!(rate(256, 1).as_deref(), Some("200 Gb/sec (1X XDR)"));
        // An unknown speed counts as SDR; an unknown width fails the read.
        assert_eq!(rate(3, 1).as_deref(), Some("2.5 Gb/sec (1X SDR)"));
        assert_eq!(rate(1, 3), None);
        assert_eq!(rate(1, 0), None);
    }
}
