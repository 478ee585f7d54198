// SPDX-License-Identifier: GPL-2.0

//! One rxe device: its attributes, its port, and how it follows its netdev.
//!
//! The port is active while the netdev is up with carrier; the active MTU
//! is the largest IB MTU that fits the netdev's MTU after the largest
//! RoCE v2 headers, as rxe computes it; the GID table holds the link-local
//! GID of the netdev's MAC, then a RoCE v2 GID per IPv4 and IPv6 address.
//! Netdev events arrive in atomic context (the listener of `registry.rs`)
//! and only set a flag and queue this device's work item, which does the
//! rest in process context: port events, GID table, or unregistration when
//! the netdev goes away.

use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::ARef;
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use rdma::provider::{
    net::NetDevice, sync::SpinLockIrq, DeviceAttr, DeviceCaps, DeviceOps, Element, Event,
    EventKind, Gid, GidEntry, GidType, Mtu, PhysState, PortAttr, PortRate, PortState,
    ProviderDevice, QpInfo, QpOps, QpType,
};

use crate::counters::{Counter, Counters};
use crate::mcast::Groups;
use crate::net::fault::FaultInjector;
use crate::registry::Rxe;

/// GID table entries of the port.
pub(crate) const GID_TBL_LEN: u32 = 64;

/// The largest RoCE v2 headers in front of the payload (IPv6, UDP, BTH and
/// the largest extension headers), as rxe's `RXE_MAX_HDR_LENGTH`.
const MAX_HDR_LENGTH: u32 = 80;

/// The IB MTU a netdev MTU allows.
pub(crate) fn ib_mtu(netdev_mtu: u32) -> Mtu {
    Mtu::largest_within(netdev_mtu.saturating_sub(MAX_HDR_LENGTH)).unwrap_or(Mtu::Mtu256)
}

/// A device bound to a netdev.
#[pin_data]
pub(crate) struct RxeDev {
    pub(crate) counters: Counters,
    /// Fault injection (tests).
    #[pin]
    pub(crate) faults: FaultInjector,
    /// Multicast groups and their QPs.
    #[pin]
    pub(crate) mcast: Groups,
    /// The identification of the next IPv4 packet.
    ip_id: AtomicU16,
    pub(crate) netdev: ARef<NetDevice>,
    rxe: Arc<Rxe>,
    /// The registered device; taken when it is unregistered. Read from
    /// the receive path (softirq).
    #[pin]
    dev: SpinLockIrq<Option<ProviderDevice>>,
    /// The port state last announced.
    active: AtomicBool,
    /// The port's rate from the netdev's ethtool speed, as the C rxe
    /// reports it (`ib_get_eth_speed`): width << 16 | speed. Read when the
    /// port is synced, since reading it takes RTNL, which the port query
    /// (on the send path) cannot.
    rate: AtomicU32,
    /// Netdev state or addresses changed.
    refresh: AtomicBool,
    /// The netdev is being unregistered.
    gone: AtomicBool,
    #[pin]
    work: Work<RxeDev>,
}

impl_has_work! {
    impl HasWork<Self> for RxeDev { self.work }
}

impl WorkItem for RxeDev {
    type Pointer = Arc<RxeDev>;

    fn run(this: Arc<RxeDev>) {
        if this.gone.load(Ordering::Acquire) {
            this.rxe.netdev_gone(&this);
            return;
        }
        if this.refresh.swap(false, Ordering::AcqRel) {
            this.sync_port();
        }
    }
}

impl RxeDev {
    pub(crate) fn new(rxe: Arc<Rxe>, netdev: ARef<NetDevice>) -> Result<Arc<RxeDev>> {
        Arc::pin_init(
            pin_init!(RxeDev {
                counters: Counters::default(),
                faults <- FaultInjector::new(),
                mcast <- Groups::new(),
                ip_id: AtomicU16::new(0),
                netdev,
                rxe,
                dev <- rdma::provider::new_spinlock_irq!(None, "RxeDev::dev"),
                active: AtomicBool::new(false),
                rate: AtomicU32::new(1 << 16 | 1),
                refresh: AtomicBool::new(false),
                gone: AtomicBool::new(false),
                work <- new_work!("RxeDev::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// The module state.
    pub(crate) fn rxe(&self) -> &Arc<Rxe> {
        &self.rxe
    }

    /// The identification field of the next IPv4 packet sent.
    pub(crate) fn next_ip_id(&self) -> u16 {
        self.ip_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The counters as text (the item's `counters` file).
    pub(crate) fn write_counters(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        self.counters.write(out)
    }

    pub(crate) fn set_device(&self, dev: ProviderDevice) {
        *self.dev.lock() = Some(dev);
    }

    pub(crate) fn take_device(&self) -> Option<ProviderDevice> {
        self.dev.lock().take()
    }

    pub(crate) fn device(&self) -> Option<ProviderDevice> {
        self.dev.lock().clone()
    }

    /// From the netdev listener (atomic context): something changed.
    pub(crate) fn changed(self: &Arc<Self>) {
        self.refresh.store(true, Ordering::Release);
        let _ = self.rxe.wq.enqueue(self.clone());
    }

    /// From the netdev listener (atomic context): the netdev goes away.
    pub(crate) fn netdev_unregistering(self: &Arc<Self>) {
        self.gone.store(true, Ordering::Release);
        let _ = self.rxe.wq.enqueue(self.clone());
    }

    /// Waits until the device's work is neither queued nor running.
    /// Process context, not from the work itself.
    pub(crate) fn flush_work(&self) {
        rdma::provider::work::flush(&self.work);
    }

    /// Whether the port is active now.
    fn link_up(&self) -> bool {
        self.netdev.is_running() && self.netdev.has_carrier()
    }

    /// Brings the port state and the GID table in line with the netdev,
    /// announcing a port state change. Process context.
    pub(crate) fn sync_port(self: &Arc<Self>) {
        let Some(dev) = self.device() else {
            return;
        };
        self.sync_gids(&dev);
        // An unknown speed counts as 1 Gb/s, as in the C stack.
        let (mbps, lanes) = self.netdev.eth_speed().unwrap_or((1000, 0));
        let rate = PortRate::of_ethernet(mbps, lanes);
        self.rate.store(
            u32::from(rate.width) << 16 | u32::from(rate.speed),
            Ordering::Relaxed,
        );
        let up = self.link_up();
        if self.active.swap(up, Ordering::AcqRel) != up {
            if !up {
                self.counters.inc(Counter::LinkDowned);
            }
            dev.dispatch_event(Event {
                kind: if up {
                    EventKind::PortActive
                } else {
                    EventKind::PortErr
                },
                element: Element::Port(1),
            });
        }
    }

    /// Rewrites the GID table: the link-local GID of the MAC, then one per
    /// IPv4 and IPv6 address (an IPv6 link-local address equal to the first
    /// entry is not repeated). Entries that did not change raise no event.
    fn sync_gids(self: &Arc<Self>, dev: &ProviderDevice) {
        let mut gids: KVec<Gid> = KVec::new();
        let ll = Gid::link_local(Gid::eui64_of_mac(self.netdev.mac()));
        let _ = gids.push(ll, GFP_KERNEL);
        let mut v4 = [[0u8; 4]; 16];
        let n4 = self.netdev.ipv4_addrs(&mut v4);
        for a in v4.iter().take(n4) {
            let _ = gids.push(Gid::from_ipv4(*a), GFP_KERNEL);
        }
        let mut v6 = [[0u8; 16]; 16];
        let n6 = self.netdev.ipv6_addrs(&mut v6);
        for a in v6.iter().take(n6) {
            let g = Gid(*a);
            if !gids.contains(&g) {
                let _ = gids.push(g, GFP_KERNEL);
            }
        }
        let ifindex = self.netdev.ifindex();
        for i in 0..GID_TBL_LEN {
            let entry = gids.get(i as usize).map(|g| GidEntry {
                gid: *g,
                gid_type: GidType::RoceV2,
                ifindex,
            });
            let _ = dev.set_gid(1, i, entry);
        }
        let n = gids.len().min(GID_TBL_LEN as usize);
        self.rxe.set_addrs(self, &gids[..n]);
    }
}

/// The provider operations of one device.
pub(crate) struct RxeOps {
    pub(crate) rd: Arc<RxeDev>,
}

impl DeviceOps for RxeOps {
    fn query_device(&self) -> Result<DeviceAttr> {
        let guid = node_guid(&self.rd.netdev.mac());
        Ok(DeviceAttr {
            cap_flags: DeviceCaps::MEM_MGT_EXTENSIONS
                | DeviceCaps::MEM_WINDOW
                | DeviceCaps::SRQ_RESIZE
                | DeviceCaps::RC_RNR_NAK_GEN
                | DeviceCaps::PORT_ACTIVE_EVENT
                | DeviceCaps::SYS_IMAGE_GUID,
            node_guid: guid,
            sys_image_guid: guid,
            fw_ver: 0,
            max_mr_size: u64::MAX,
            page_size_cap: 0xffff_f000,
            vendor_id: 0xffffff,
            max_qp: 0x1_0000,
            max_qp_wr: 0x4000,
            max_send_sge: 8,
            max_recv_sge: 8,
            max_cq: 0x1_0000,
            max_cqe: (1 << 15) - 1,
            max_mr: 0x1_0000,
            max_pd: 0x1_0000,
            max_qp_rd_atom: 128,
            max_qp_init_rd_atom: 128,
            // Responder resources are a bound per QP (max_qp_rd_atom),
            // so this is what all QPs can hold at once.
            max_res_rd_atom: 0x1_0000 * 128,
            max_sge_rd: 8,
            // Atomics are executed by this device alone, under its lock.
            atomic_cap: 1,
            local_ca_ack_delay: 15,
            max_srq: 0x1_0000,
            max_srq_wr: 0x4000,
            max_srq_sge: 8,
            max_ah: (1 << 15) - 1,
            max_mw: 0x1_0000,
            max_fast_reg_page_list_len: 512,
            max_mcast_grp: crate::mcast::MAX_GROUPS as u32,
            max_mcast_qp_attach: crate::mcast::MAX_QPS_PER_GROUP as u32,
            max_total_mcast_qp_attach: crate::mcast::MAX_ATTACHED as u32,
            // Tag matching in software (transport/resp/tm.rs): a rendezvous
            // request is one packet of the smallest MTU; lists of up to
            // 256 Ki tagged buffers, of eight SGEs each.
            tm_caps: rdma::provider::TmCaps {
                max_rndv_hdr_size: 128,
                max_num_tags: 1 << 18,
                flags: rdma::provider::TM_CAP_RC,
                max_ops: 4096,
                max_sge: 8,
            },
            ..DeviceAttr::default()
        })
    }

    fn create_qp(&self, qp: &QpInfo) -> Result<Arc<dyn QpOps>> {
        match qp.qp_type {
            // GSI (QP1) is a UD QP with the GSI Q_Key forced on send and
            // required on receive (`transport/ud.rs`).
            QpType::Ud | QpType::Gsi => Ok(crate::transport::ud::UdQp::new(self.rd.clone())?),
            QpType::Rc | QpType::Uc => Ok(crate::transport::rc::RcQp::new(
                self.rd.clone(),
                qp.qp_type == QpType::Uc,
                qp.cap.max_send_wr,
            )?),
            _ => Err(rdma::provider::errno::eopnotsupp()),
        }
    }

    fn has_mad(&self, _port: u32) -> bool {
        true
    }

    /// Peer memory invalidation: every access rxe makes to a region goes
    /// through the core's checked copies (`ProviderQp::gather` and the
    /// like), which the invalidation stops, and a refused access already
    /// completes as a remote access error NAK (responder) or a local
    /// protection error (requester); rxe keeps no pages of its own.
    fn peer_invalidate(&self) -> bool {
        true
    }

    fn netdev(&self, _port: u32) -> Option<ARef<NetDevice>> {
        Some(self.rd.netdev.clone())
    }

    /// As the C rxe's.
    fn node_desc(&self) -> &'static CStr {
        kernel::c_str!("rxe")
    }

    fn hw_counter_names(&self) -> &'static [&'static CStr] {
        crate::counters::NAMES
    }

    fn hw_counter(&self, _port: u32, index: usize) -> u64 {
        self.rd.counters.get(index)
    }

    fn query_port(&self, _port: u32) -> Result<PortAttr> {
        let up = self.rd.link_up();
        let rate = self.rd.rate.load(Ordering::Relaxed);
        Ok(PortAttr {
            state: if up {
                PortState::Active
            } else {
                PortState::Down
            },
            phys_state: if up {
                PhysState::LinkUp
            } else {
                PhysState::Disabled
            },
            max_mtu: Mtu::Mtu4096,
            active_mtu: ib_mtu(self.rd.netdev.mtu()),
            // IB_PORT_CM_SUP, as rxe.
            port_cap_flags: 1 << 16,
            max_msg_sz: 1 << 31,
            active_width: (rate >> 16) as u8,
            active_speed: rate as u16,
            ..PortAttr::down(Mtu::Mtu4096)
        })
    }
}

/// The node GUID of a device on a netdev: the EUI-64 of its MAC, as rxe.
pub(crate) fn node_guid(mac: &[u8; 6]) -> u64 {
    u64::from_be_bytes(Gid::eui64_of_mac(*mac))
}
