// SPDX-License-Identifier: GPL-2.0
/*
 * UDP tunnel sockets for RoCE v2 and the IPv4 transmit path, for udp.rs.
 *
 * A socket lives in the network namespace of a given netdev (the kernel's
 * rdma_rxe only uses the initial namespace). Its encap_rcv hands every
 * datagram, linearised, to rdma_rs_udp_recv() in Rust with the context
 * given at open. Transmit takes a complete IPv4 packet (IP and UDP headers
 * included, ICRC computed by the caller), routes it out of the netdev and
 * sends it with ip_local_out(); a sender with one destination (a connected
 * QP) keeps its route in a dst_cache, as UDP tunnels and rdma_rxe do, so
 * that only the first packet and those after a route change look it up.
 */
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <linux/ipv6.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/udp_tunnel.h>

#include "udp_glue.h"

/* Implemented in Rust (udp.rs); takes ownership of the skb. */
void rdma_rs_udp_recv(void *ctx, struct sk_buff *skb);

static int rdma_rs_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	void *ctx = rcu_dereference_sk_user_data(sk);

	if (!ctx || skb_linearize(skb)) {
		kfree_skb(skb);
		return 0;
	}
	rdma_rs_udp_recv(ctx, skb);
	return 0;
}

struct socket *rdma_rs_udp_open(struct net_device *dev, u16 port, void *ctx, bool ipv6)
{
	struct udp_port_cfg udp_cfg = { };
	struct udp_tunnel_sock_cfg tnl_cfg = { };
	struct socket *sock;
	int err;

	/* IPv6: v6 only, and zero UDP checksums accepted (RoCE v2 sends 0,
	 * with the ICRC), the default of udp_port_cfg. */
	udp_cfg.family = ipv6 ? AF_INET6 : AF_INET;
	udp_cfg.ipv6_v6only = ipv6;
	udp_cfg.local_udp_port = htons(port);
	err = udp_sock_create(dev_net(dev), &udp_cfg, &sock);
	if (err < 0)
		return ERR_PTR(err);
	tnl_cfg.sk_user_data = ctx;
	tnl_cfg.encap_type = 1;
	tnl_cfg.encap_rcv = rdma_rs_encap_recv;
	setup_udp_tunnel_sock(dev_net(dev), sock, &tnl_cfg);
	return sock;
}

void rdma_rs_udp_close(struct socket *sock)
{
	udp_tunnel_sock_release(sock);
	/* encap_rcv runs under RCU: wait for the last one. */
	synchronize_rcu();
}

const u8 *rdma_rs_skb_l3(struct sk_buff *skb, u32 *len)
{
	*len = skb_tail_pointer(skb) - skb_network_header(skb);
	return skb_network_header(skb);
}

int rdma_rs_skb_ifindex(const struct sk_buff *skb)
{
	return skb->dev ? skb->dev->ifindex : 0;
}

void rdma_rs_skb_free(struct sk_buff *skb)
{
	consume_skb(skb);
}

struct dst_cache *rdma_rs_route_cache_new(void)
{
	struct dst_cache *cache = kzalloc(sizeof(*cache), GFP_KERNEL);

	if (cache && dst_cache_init(cache, GFP_KERNEL)) {
		kfree(cache);
		cache = NULL;
	}
	return cache;
}

void rdma_rs_route_cache_free(struct dst_cache *cache)
{
	dst_cache_destroy(cache);
	kfree(cache);
}

/* The destination changed: the next packet looks its route up again. */
void rdma_rs_route_cache_reset(struct dst_cache *cache)
{
	dst_cache_reset(cache);
}

/* Whether a packet of these three runs is no longer than an IP datagram. */
static bool packet_fits(u32 hlen, u32 dlen, u32 tlen)
{
	return hlen <= U16_MAX && dlen <= U16_MAX && tlen <= U16_MAX &&
	       hlen + dlen + tlen <= U16_MAX;
}

/*
 * An skb holding a packet given in up to three runs, copied in a row: the
 * headers (@hdr, IP header first), then @data and @tail (either may be
 * empty). The sender hands its payload where it gathered it, a copy fewer
 * than building the whole packet first.
 */
static struct sk_buff *packet_skb(struct net_device *dev, const u8 *hdr, u32 hlen,
				  const u8 *data, u32 dlen, const u8 *tail, u32 tlen)
{
	int room = LL_RESERVED_SPACE(dev);
	struct sk_buff *skb;

	skb = alloc_skb(room + hlen + dlen + tlen + dev->needed_tailroom, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, room);
	skb_put_data(skb, hdr, hlen);
	if (dlen)
		skb_put_data(skb, data, dlen);
	if (tlen)
		skb_put_data(skb, tail, tlen);
	return skb;
}

/* The cached IPv4 route from @saddr, referenced, or NULL. */
static struct rtable *cached_route4(struct dst_cache *cache, __be32 saddr)
{
	struct rtable *rt;
	__be32 from;

	if (!cache)
		return NULL;
	/* The cache is per CPU: no migration and no softirq in between. */
	local_bh_disable();
	rt = dst_cache_get_ip4(cache, &from);
	local_bh_enable();
	if (rt && from != saddr) {
		ip_rt_put(rt);
		rt = NULL;
	}
	return rt;
}

int rdma_rs_ip4_xmit(struct net_device *dev, struct dst_cache *cache, const u8 *hdr, u32 hlen,
		     const u8 *data, u32 dlen, const u8 *tail, u32 tlen)
{
	const struct iphdr *iph = (const struct iphdr *)hdr;
	struct flowi4 fl = { };
	struct sk_buff *skb;
	struct rtable *rt;

	if (hlen < sizeof(*iph) || !packet_fits(hlen, dlen, tlen))
		return -EINVAL;
	rt = cached_route4(cache, iph->saddr);
	if (!rt) {
		fl.flowi4_oif = dev->ifindex;
		fl.saddr = iph->saddr;
		fl.daddr = iph->daddr;
		fl.flowi4_proto = IPPROTO_UDP;
		rt = ip_route_output_key(dev_net(dev), &fl);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		if (cache) {
			local_bh_disable();
			dst_cache_set_ip4(cache, &rt->dst, fl.saddr);
			local_bh_enable();
		}
	}
	skb = packet_skb(dev, hdr, hlen, data, dlen, tail, tlen);
	if (!skb) {
		ip_rt_put(rt);
		return -ENOMEM;
	}
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, sizeof(*iph));
	skb->protocol = htons(ETH_P_IP);
	skb->dev = rt->dst.dev;
	skb_dst_set(skb, &rt->dst);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	return ip_local_out(dev_net(dev), NULL, skb);
}

int rdma_rs_ip6_xmit(struct net_device *dev, struct dst_cache *cache, const u8 *hdr, u32 hlen,
		     const u8 *data, u32 dlen, const u8 *tail, u32 tlen)
{
	const struct ipv6hdr *ip6h = (const struct ipv6hdr *)hdr;
	struct flowi6 fl6 = { };
	struct dst_entry *dst = NULL;
	struct in6_addr from;
	struct sk_buff *skb;
	int err;

	if (hlen < sizeof(*ip6h) || !packet_fits(hlen, dlen, tlen))
		return -EINVAL;
	if (cache) {
		local_bh_disable();
		dst = dst_cache_get_ip6(cache, &from);
		local_bh_enable();
		if (dst && !ipv6_addr_equal(&from, &ip6h->saddr)) {
			dst_release(dst);
			dst = NULL;
		}
	}
	if (!dst) {
		fl6.flowi6_oif = dev->ifindex;
		fl6.saddr = ip6h->saddr;
		fl6.daddr = ip6h->daddr;
		fl6.flowi6_proto = IPPROTO_UDP;
		dst = ip6_route_output(dev_net(dev), NULL, &fl6);
		if (dst->error) {
			err = dst->error;
			dst_release(dst);
			return err;
		}
		if (cache) {
			local_bh_disable();
			dst_cache_set_ip6(cache, dst, &fl6.saddr);
			local_bh_enable();
		}
	}
	skb = packet_skb(dev, hdr, hlen, data, dlen, tail, tlen);
	if (!skb) {
		dst_release(dst);
		return -ENOMEM;
	}
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, sizeof(*ip6h));
	skb->protocol = htons(ETH_P_IPV6);
	skb->dev = dst->dev;
	skb_dst_set(skb, dst);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	return ip6_local_out(dev_net(dev), NULL, skb);
}

u32 rdma_rs_crc32_le(u32 crc, const u8 *p, size_t len)
{
	return crc32_le(crc, p, len);
}

unsigned long rdma_rs_netdev_net(const struct net_device *dev)
{
	return (unsigned long)dev_net(dev);
}
