/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C wrappers of static inline kernel functions and macros, callable from
 * Rust. The kernel's rust/helpers/ is the pattern; these are the ones the
 * rdma crate needs that 6.12's kernel crate does not provide.
 */
#ifndef RDMA_RS_HELPERS_H
#define RDMA_RS_HELPERS_H

struct net_device;

void rdma_rs_dev_hold(struct net_device *dev);
void rdma_rs_dev_put(struct net_device *dev);
int rdma_rs_netdev_ifindex(const struct net_device *dev);
unsigned int rdma_rs_netdev_mtu(const struct net_device *dev);
const char *rdma_rs_netdev_name(const struct net_device *dev);
void rdma_rs_might_sleep(void);

#endif
