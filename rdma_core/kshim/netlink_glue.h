/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel netlink socket glue of netlink_glue.c, bound for netlink.rs:
 * a kernel socket of a netlink protocol (unit) in every network namespace
 * per rdma_rs_nl_register (at most four endpoints at once: ENOSPC past
 * them), whose input calls rdma_rs_nl_input of netlink.rs,
 * and a unicast send of one datagram to a port.
 */
#ifndef RDMA_RS_NETLINK_GLUE_H
#define RDMA_RS_NETLINK_GLUE_H

#include <linux/types.h>

struct module;
struct sock;
struct rdma_rs_nl;

struct rdma_rs_nl *rdma_rs_nl_register(struct module *owner, int unit, const void *ctx);
void rdma_rs_nl_unregister(struct rdma_rs_nl *ep);
int rdma_rs_nl_unicast(struct sock *sk, u32 portid, const void *data, size_t len);
struct net_device *rdma_rs_nl_dev_get_by_name(struct sock *sk, const char *name);

#endif
