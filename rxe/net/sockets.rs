// SPDX-License-Identifier: GPL-2.0

//! The RoCE v2 UDP sockets (port 4791, IPv4 and IPv6) of every network
//! namespace that has an rxe device, shared by those devices and closed
//! with the last of them.
//!
//! The socket binds in the netdev's own namespace, which is what lets our
//! rxe run beside the kernel's `rdma_rxe`: that one binds port 4791 in the
//! initial namespace when it loads, so a device of ours on a netdev of the
//! initial namespace cannot be enabled while it is loaded (`EADDRINUSE`).

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::provider::{
    net::NetDevice,
    udp::{SkBuff, UdpHandler, UdpSocket},
    Gid,
};

use crate::registry::Rxe;
use crate::wire::packet::ROCE_V2_UDP_PORT;

struct NsSocket {
    net: usize,
    users: u32,
    _v4: UdpSocket,
    /// None where the namespace has no IPv6.
    _v6: Option<UdpSocket>,
}

/// The sockets of every namespace in use.
#[pin_data]
pub(crate) struct Sockets {
    #[pin]
    list: Mutex<KVec<NsSocket>>,
}

impl Sockets {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Sockets { list <- new_mutex!(KVec::new(), "Sockets::list") })
    }

    /// Takes a use of the socket of `dev`'s namespace, opening it if needed.
    pub(crate) fn get(&self, rxe: &Arc<Rxe>, dev: &NetDevice) -> Result {
        let net = dev.net_id();
        let mut list = self.list.lock();
        if let Some(s) = list.iter_mut().find(|s| s.net == net) {
            s.users += 1;
            return Ok(());
        }
        list.reserve(1, GFP_KERNEL)?;
        let handler = Arc::new(
            Receiver {
                rxe: rxe.clone(),
                net,
            },
            GFP_KERNEL,
        )?;
        let v4 = UdpSocket::open_v4(dev, ROCE_V2_UDP_PORT, handler.clone())?;
        let v6 = UdpSocket::open_v6(dev, ROCE_V2_UDP_PORT, handler).ok();
        list.push(
            NsSocket {
                net,
                users: 1,
                _v4: v4,
                _v6: v6,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Gives a use back; the last one closes the socket. Process context.
    pub(crate) fn put(&self, dev: &NetDevice) {
        let net = dev.net_id();
        let closing = {
            let mut list = self.list.lock();
            let Some(i) = list.iter().position(|s| s.net == net) else {
                return;
            };
            list[i].users -= 1;
            if list[i].users > 0 {
                return;
            }
            rdma::provider::vec::remove(&mut list, i)
        };
        // Closing waits for receives in progress, outside the lock.
        drop(closing);
    }

    /// Closes every socket (module exit).
    pub(crate) fn close_all(&self) {
        let all = core::mem::take(&mut *self.list.lock());
        drop(all);
    }
}

/// Receives the datagrams of one namespace's socket.
struct Receiver {
    rxe: Arc<Rxe>,
    net: usize,
}

impl UdpHandler for Receiver {
    fn recv(&self, skb: SkBuff) {
        let net = self.net;
        let ifindex = skb.ifindex();
        let find = |gid: &Gid| {
            if gid.is_multicast() {
                self.rxe.device_on(net, ifindex)
            } else {
                self.rxe.device_for(net, gid)
            }
        };
        if !crate::net::recv::receive(skb.l3(), find) {
            self.rxe.count_unclaimed();
        }
    }
}
