/* SPDX-License-Identifier: GPL-2.0 */
/* Network device plumbing of net_glue.c, bound for net.rs. */
#ifndef RDMA_RS_NET_GLUE_H
#define RDMA_RS_NET_GLUE_H

#include <linux/types.h>

struct net_device;
struct in6_addr;

/* Our own event number for "an address of the device changed". */
#define RDMA_RS_NET_ADDR_CHANGE 0x10000

struct net_device *rdma_rs_dev_get_by_name_current(const char *name);
struct net_device *rdma_rs_dev_get_by_index_near(struct net_device *dev, int ifindex);
bool rdma_rs_netdev_running(const struct net_device *dev);
bool rdma_rs_netdev_carrier(const struct net_device *dev);
int rdma_rs_netdev_eth_speed(struct net_device *dev, u32 *speed, u32 *lanes);
int rdma_rs_netdev_mc(struct net_device *dev, const u8 *gid, bool join);
bool rdma_rs_netdev_is_vlan(const struct net_device *dev);
bool rdma_rs_netdev_is_loopback(const struct net_device *dev);
bool rdma_rs_netdev_is_ether(const struct net_device *dev);
void rdma_rs_netdev_mac(const struct net_device *dev, u8 *out);
u32 rdma_rs_netdev_ipv4_addrs(struct net_device *dev, __be32 *out, u32 max);
u32 rdma_rs_netdev_ipv6_addrs(struct net_device *dev, struct in6_addr *out, u32 max);
struct net;
struct net *rdma_rs_net_get_current(void);
struct net *rdma_rs_net_get_of(struct net_device *dev);
struct net *rdma_rs_net_get(struct net *net);
void rdma_rs_net_put(struct net *net);
unsigned long rdma_rs_net_id(const struct net *net);
int rdma_rs_route4(struct net *net, const u8 *dst, u8 *src, int *ifindex, u32 *mtu);
int rdma_rs_route6(struct net *net, const u8 *dst, u8 *src, int *ifindex, u32 *mtu);
int rdma_rs_net_notifiers_register(void);
void rdma_rs_net_notifiers_unregister(void);

#endif
