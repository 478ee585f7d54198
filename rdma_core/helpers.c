// SPDX-License-Identifier: GPL-2.0
/*
 * C wrappers of static inline kernel functions (see helpers.h).
 *
 * Field reads of struct net_device go through here too: READ_ONCE() where
 * the kernel updates a field without the reader's lock.
 */
#include <linux/netdevice.h>

#include "helpers.h"

void rdma_rs_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rdma_rs_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

int rdma_rs_netdev_ifindex(const struct net_device *dev)
{
	return READ_ONCE(dev->ifindex);
}

unsigned int rdma_rs_netdev_mtu(const struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

const char *rdma_rs_netdev_name(const struct net_device *dev)
{
	return dev->name;
}

void rdma_rs_might_sleep(void)
{
	might_sleep();
}
