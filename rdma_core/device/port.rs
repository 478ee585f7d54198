// SPDX-License-Identifier: GPL-2.0

//! Ports: attributes from the provider, GID and P_Key tables kept by the core.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/ib_cache.h`](srctree/include/rdma/ib_cache.h)
//!
//! As in the C core's GID cache, the tables live in the core: the provider
//! writes entries ([`Device::set_gid`], [`Device::set_pkey`]; a RoCE
//! provider adds the GIDs of its netdev's addresses), everyone reads them
//! from any context ([`Device::query_gid`], [`Device::find_gid`]), and each
//! change is announced with a `GidChange` or `PkeyChange` event.

use kernel::error::code::{EINVAL, ENOENT};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::event::{Element, Event, EventKind};
use crate::device::Device;
use crate::spec::attr::{Gid, GidType, Mtu, PhysState, PortState};

/// The largest GID or P_Key table a port may have.
pub const MAX_TABLE_LEN: u32 = 1024;

/// Port attributes (`struct ib_port_attr`), as the provider reports them.
///
/// `gid_tbl_len` and `pkey_tbl_len` are filled in by the core from the
/// device's registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Physical state.
    pub phys_state: PhysState,
    /// Largest MTU the port supports.
    pub max_mtu: Mtu,
    /// MTU in use.
    pub active_mtu: Mtu,
    /// Entries in the GID table.
    pub gid_tbl_len: u32,
    /// Entries in the P_Key table.
    pub pkey_tbl_len: u32,
    /// PortInfo CapabilityMask.
    pub port_cap_flags: u32,
    /// Largest message size.
    pub max_msg_sz: u32,
    /// LID (0 on RoCE).
    pub lid: u32,
    /// Subnet manager LID (0 on RoCE).
    pub sm_lid: u32,
    /// Active link width (`enum ib_port_width`).
    pub active_width: u8,
    /// Active link speed (`enum ib_port_speed`).
    pub active_speed: u16,
}

impl PortAttr {
    /// A port that is down, with the given MTUs.
    pub const fn down(max_mtu: Mtu) -> Self {
        PortAttr {
            state: PortState::Down,
            phys_state: PhysState::Disabled,
            max_mtu,
            active_mtu: max_mtu,
            gid_tbl_len: 0,
            pkey_tbl_len: 0,
            port_cap_flags: 0,
            max_msg_sz: 0,
            lid: 0,
            sm_lid: 0,
            active_width: 1,
            active_speed: 1,
        }
    }
}

/// One GID table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// The GID.
    pub gid: Gid,
    /// Its type.
    pub gid_type: GidType,
    /// The netdev it belongs to (RoCE), 0 if none.
    pub ifindex: i32,
}

/// The tables of one port.
pub(crate) struct PortTables {
    gids: KVec<Option<GidEntry>>,
    pkeys: KVec<u16>,
}

/// The tables of all ports of a device (guarded by `Device::tables`).
pub(crate) struct Tables {
    ports: KVec<PortTables>,
}

impl Tables {
    pub(crate) fn new(ports: u32, gid_len: u32, pkey_len: u32) -> Result<Tables> {
        let mut t = Tables {
            ports: KVec::with_capacity(ports as usize, GFP_KERNEL)?,
        };
        for _ in 0..ports {
            let mut p = PortTables {
                gids: KVec::with_capacity(gid_len as usize, GFP_KERNEL)?,
                pkeys: KVec::with_capacity(pkey_len as usize, GFP_KERNEL)?,
            };
            p.gids.extend_with(gid_len as usize, None, GFP_KERNEL)?;
            p.pkeys.extend_with(pkey_len as usize, 0, GFP_KERNEL)?;
            t.ports.push(p, GFP_KERNEL)?;
        }
        Ok(t)
    }

    fn port(&self, port: u32) -> Result<&PortTables> {
        port.checked_sub(1)
            .and_then(|i| self.ports.get(i as usize))
            .ok_or(EINVAL)
    }

    fn port_mut(&mut self, port: u32) -> Result<&mut PortTables> {
        port.checked_sub(1)
            .and_then(|i| self.ports.get_mut(i as usize))
            .ok_or(EINVAL)
    }
}

impl Device {
    /// Checks a port number (ports count from 1).
    pub fn check_port(&self, port: u32) -> Result {
        if port == 0 || port > self.port_count() {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Queries a port's attributes. May sleep.
    pub fn query_port(&self, port: u32) -> Result<PortAttr> {
        crate::kshim::verb::might_sleep();
        self.check_port(port)?;
        let mut attr = self.ops()?.query_port(port)?;
        attr.gid_tbl_len = self.gid_tbl_len();
        attr.pkey_tbl_len = self.pkey_tbl_len();
        Ok(attr)
    }

    /// The GID table entry at `index` of `port` (`rdma_query_gid`): `EINVAL`
    /// for a bad port or index or an empty entry. Any context.
    pub fn query_gid(&self, port: u32, index: u32) -> Result<GidEntry> {
        let tables = self.tables.lock();
        let p = tables.port(port)?;
        p.gids.get(index as usize).copied().flatten().ok_or(EINVAL)
    }

    /// Finds a GID of the given type (and netdev, if `ifindex` is not 0):
    /// `(port, index)` of the first match (`ib_find_gid`). Any context.
    pub fn find_gid(&self, gid: &Gid, gid_type: GidType, ifindex: i32) -> Result<(u32, u32)> {
        let tables = self.tables.lock();
        for (pi, p) in tables.ports.iter().enumerate() {
            for (i, e) in p.gids.iter().enumerate() {
                if let Some(e) = e {
                    if e.gid == *gid
                        && e.gid_type == gid_type
                        && (ifindex == 0 || e.ifindex == ifindex)
                    {
                        return Ok((pi as u32 + 1, i as u32));
                    }
                }
            }
        }
        Err(ENOENT)
    }

    /// Finds `gid` in the table of `port`, whatever its type: the entry and
    /// its index. Any context.
    pub fn find_gid_on_port(&self, port: u32, gid: &Gid) -> Option<(GidEntry, u32)> {
        let tables = self.tables.lock();
        let p = tables.port(port).ok()?;
        p.gids.iter().enumerate().find_map(|(i, e)| match e {
            Some(e) if e.gid == *gid => Some((*e, i as u32)),
            _ => None,
        })
    }

    /// The P_Key at `index` of `port`. Any context.
    pub fn query_pkey(&self, port: u32, index: u32) -> Result<u16> {
        let tables = self.tables.lock();
        tables
            .port(port)?
            .pkeys
            .get(index as usize)
            .copied()
            .ok_or(EINVAL)
    }

    /// Finds a P_Key on `port` (`ib_find_pkey`): the membership bit (0x8000)
    /// is ignored in the comparison, and a full-member entry is preferred.
    pub fn find_pkey(&self, port: u32, pkey: u16) -> Result<u32> {
        let tables = self.tables.lock();
        let p = tables.port(port)?;
        let mut partial = None;
        for (i, k) in p.pkeys.iter().enumerate() {
            if *k & 0x7fff == pkey & 0x7fff {
                if *k & 0x8000 != 0 {
                    return Ok(i as u32);
                }
                partial.get_or_insert(i as u32);
            }
        }
        partial.ok_or(ENOENT)
    }

    /// Writes (or with `None` clears) a GID table entry and announces it with
    /// a `GidChange` event. For the device's provider. Any context.
    pub(crate) fn set_gid(
        self: &Arc<Self>,
        port: u32,
        index: u32,
        entry: Option<GidEntry>,
    ) -> Result {
        {
            let mut tables = self.tables.lock();
            let slot = tables
                .port_mut(port)?
                .gids
                .get_mut(index as usize)
                .ok_or(EINVAL)?;
            if entry.is_some_and(|e| e.gid.is_zero()) {
                return Err(EINVAL);
            }
            if *slot == entry {
                return Ok(());
            }
            *slot = entry;
        }
        self.dispatch_event(Event {
            kind: EventKind::GidChange,
            element: Element::Port(port),
        });
        Ok(())
    }

    /// Writes a P_Key table entry and announces it with a `PkeyChange`
    /// event. For the device's provider. Any context.
    pub(crate) fn set_pkey(self: &Arc<Self>, port: u32, index: u32, pkey: u16) -> Result {
        {
            let mut tables = self.tables.lock();
            let slot = tables
                .port_mut(port)?
                .pkeys
                .get_mut(index as usize)
                .ok_or(EINVAL)?;
            if *slot == pkey {
                return Ok(());
            }
            *slot = pkey;
        }
        self.dispatch_event(Event {
            kind: EventKind::PkeyChange,
            element: Element::Port(port),
        });
        Ok(())
    }
}
