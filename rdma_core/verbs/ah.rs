// SPDX-License-Identifier: GPL-2.0

//! Address handles (`rdma_create_ah`, `rdma_modify_ah`, `rdma_query_ah`,
//! `rdma_destroy_ah`, `ib_create_ah_from_wc`).
//!
//! An AH names a remote port for UD sends; on RoCE that is a GRH (the
//! destination GID, the index of the source GID and the IP-level fields)
//! plus the destination MAC. Like the C core, every AH verb here works from
//! any context and never sleeps: the table slot is taken under an IRQ-safe
//! spinlock and the object is allocated with `GFP_ATOMIC`.

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::kshim::errno::eopnotsupp;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::attr::Gid;
use crate::verbs::object::{Handle, Life, Object, Use};
use crate::verbs::pd::PdCore;
use crate::verbs::restrack::{Resources, Table};
use crate::verbs::wc::Wc;

/// Global routing header fields of an address (`struct ib_global_route`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: Gid,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Index of the source GID in the port's table.
    pub sgid_index: u8,
    /// Hop limit (IPv6) or TTL (IPv4).
    pub hop_limit: u8,
    /// Traffic class (IPv6) or TOS (IPv4).
    pub traffic_class: u8,
}

/// An address (`struct rdma_ah_attr` for RoCE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Local port, from 1.
    pub port_num: u32,
    /// Service level.
    pub sl: u8,
    /// Static rate (`enum ib_rate`), 0 for the port's rate.
    pub static_rate: u8,
    /// Routing header.
    pub grh: GlobalRoute,
    /// Destination MAC address.
    pub dmac: [u8; 6],
}

impl AhAttr {
    /// Checks the address against `dev`: the port exists, the source GID
    /// index is in the table and holds a GID, the flow label fits.
    pub(crate) fn check(&self, dev: &Device) -> Result {
        dev.check_port(self.port_num)?;
        if self.grh.flow_label >= 1 << 20 {
            return Err(EINVAL);
        }
        dev.query_gid(self.port_num, u32::from(self.grh.sgid_index))?;
        Ok(())
    }

    /// The address that answers the sender of a received UD message
    /// (`ib_init_ah_attr_from_wc`): `grh` is the 40-byte header the device
    /// placed in front of the data, `wc` its completion. The sender's GID
    /// becomes the destination and the local GID it was sent to selects the
    /// source index. RoCE v2 over IPv4 puts the IPv4 header in the last 20
    /// bytes of the 40.
    pub fn from_wc(dev: &Device, port_num: u32, wc: &Wc, grh: &[u8; 40]) -> Result<AhAttr> {
        dev.check_port(port_num)?;
        if !wc.wc_flags.contains(crate::spec::opcodes::WcFlags::GRH) {
            return Err(EINVAL);
        }
        let (sgid, dgid, flow_label, hop_limit, traffic_class) = if wc.network_hdr_type == 2 {
            // IPv4: version/IHL, TOS, ..., TTL at 8, addresses at 12 and 16.
            let ip = &grh[20..];
            let src = Gid::from_ipv4([ip[12], ip[13], ip[14], ip[15]]);
            let dst = Gid::from_ipv4([ip[16], ip[17], ip[18], ip[19]]);
            (src, dst, 0, ip[8], ip[1])
        } else {
            let mut src = [0u8; 16];
            let mut dst = [0u8; 16];
            src.copy_from_slice(&grh[8..24]);
            dst.copy_from_slice(&grh[24..40]);
            let word = u32::from_be_bytes([grh[0], grh[1], grh[2], grh[3]]);
            (
                Gid(src),
                Gid(dst),
                word & 0xf_ffff,
                grh[7],
                ((word >> 20) & 0xff) as u8,
            )
        };
        let (_, index) = dev.find_gid_on_port(port_num, &dgid).ok_or(EINVAL)?;
        Ok(AhAttr {
            port_num,
            sl: wc.sl,
            static_rate: 0,
            grh: GlobalRoute {
                dgid: sgid,
                flow_label,
                sgid_index: index as u8,
                hop_limit,
                traffic_class,
            },
            dmac: wc.smac,
        })
    }
}

/// The core's address handle.
#[pin_data]
pub struct AhCore {
    pd: Arc<PdCore>,
    /// The AH's number; the PD's use, given back at release.
    life: Life<Use<PdCore>>,
    #[pin]
    attr: SpinLockIrq<AhAttr>,
}

impl AhCore {
    /// The address (`rdma_query_ah`). Any context.
    pub fn query(&self) -> AhAttr {
        *self.attr.lock()
    }

    /// Replaces the address (`rdma_modify_ah`). Any context.
    pub fn modify(&self, attr: &AhAttr) -> Result {
        if self.life.is_released() {
            return Err(ENODEV);
        }
        attr.check(self.pd.device())?;
        *self.attr.lock() = *attr;
        Ok(())
    }

    /// The AH's number on its device.
    pub fn num(&self) -> u32 {
        self.life.num()
    }

    /// The PD of the AH.
    pub fn pd(&self) -> &Arc<PdCore> {
        &self.pd
    }
}

impl Object for AhCore {
    type Deps = Use<PdCore>;

    /// The AH verbs are callable from any context.
    const SLEEPS: bool = false;

    fn device(&self) -> &Arc<Device> {
        self.pd.device()
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        &res.ah
    }

    fn life(&self) -> &Life<Use<PdCore>> {
        &self.life
    }
}

/// An address handle, owned by a ULP. Dropping it destroys it.
pub type Ah = Handle<AhCore>;

impl Handle<AhCore> {
    /// Creates an AH on `pd` (`rdma_create_ah`). Any context.
    pub fn create(pd: &Arc<PdCore>, attr: &AhAttr) -> Result<Ah> {
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        if dev.attr().max_ah == 0 {
            return Err(eopnotsupp());
        }
        attr.check(dev)?;
        let pd_use = Use::take(pd)?;
        let num = dev.res.ah.reserve()?;
        let number = num.num();
        let core = Arc::pin_init(
            pin_init!(AhCore {
                pd: pd.clone(),
                life: Life::new(number, pd_use),
                attr <- crate::new_spinlock_irq!(*attr, "AhCore::attr"),
            }),
            GFP_ATOMIC,
        )?;
        num.publish(core.clone());
        Ok(Handle::new(core))
    }
}
