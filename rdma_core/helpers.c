// SPDX-License-Identifier: GPL-2.0
/*
 * C wrappers of static inline kernel functions (see helpers.h).
 *
 * Field reads of struct net_device go through here too: READ_ONCE() where
 * the kernel updates a field without the reader's lock.
 */
#include <linux/bottom_half.h>
#include <linux/delay.h>
#include <linux/irq_work.h>
#include <linux/netdevice.h>
#include <linux/preempt.h>
#include <linux/spinlock.h>

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

unsigned long rdma_rs_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rdma_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

bool rdma_rs_in_task(void)
{
	return in_task();
}

void rdma_rs_msleep(unsigned int msecs)
{
	msleep(msecs);
}

unsigned long rdma_rs_local_irq_save(void)
{
	unsigned long flags;

	local_irq_save(flags);
	return flags;
}

void rdma_rs_local_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}

void rdma_rs_local_bh_disable(void)
{
	local_bh_disable();
}

void rdma_rs_local_bh_enable(void)
{
	local_bh_enable();
}

void rdma_rs_init_irq_work(struct irq_work *work, void (*func)(struct irq_work *))
{
	init_irq_work(work, func);
}
