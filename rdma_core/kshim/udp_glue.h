/* SPDX-License-Identifier: GPL-2.0 */
/* UDP tunnel sockets and IP transmit of udp_glue.c, bound for udp.rs. */
#ifndef RDMA_RS_UDP_GLUE_H
#define RDMA_RS_UDP_GLUE_H

#include <linux/types.h>

struct dst_cache;
struct net_device;
struct sk_buff;
struct socket;

struct socket *rdma_rs_udp_open(struct net_device *dev, u16 port, void *ctx, bool ipv6);
void rdma_rs_udp_close(struct socket *sock);
const u8 *rdma_rs_skb_l3(struct sk_buff *skb, u32 *len);
int rdma_rs_skb_ifindex(const struct sk_buff *skb);
void rdma_rs_skb_free(struct sk_buff *skb);
struct dst_cache *rdma_rs_route_cache_new(void);
void rdma_rs_route_cache_free(struct dst_cache *cache);
void rdma_rs_route_cache_reset(struct dst_cache *cache);
int rdma_rs_ip4_xmit(struct net_device *dev, struct dst_cache *cache, const u8 *hdr, u32 hlen,
		     const u8 *data, u32 dlen, const u8 *tail, u32 tlen);
int rdma_rs_ip6_xmit(struct net_device *dev, struct dst_cache *cache, const u8 *hdr, u32 hlen,
		     const u8 *data, u32 dlen, const u8 *tail, u32 tlen);
u32 rdma_rs_crc32_le(u32 crc, const u8 *p, size_t len);
unsigned long rdma_rs_netdev_net(const struct net_device *dev);

#endif
