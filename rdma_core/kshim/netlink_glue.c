// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel netlink sockets for netlink.rs (see netlink_glue.h).
 *
 * One endpoint is one kernel socket of a netlink unit (protocol number) in
 * init_net, made by netlink_kernel_create with our input function. That
 * function runs in the sending process's context, from its sendmsg, for
 * every datagram sent to port 0 of the unit: it hands Rust the bytes, the
 * sender's port ID and whether the sender may administer the network
 * (CAP_NET_ADMIN over init_net's user namespace, the only namespace served),
 * together with the kernel socket the request arrived on, through which
 * Rust replies (netlink_unicast, not waiting: the receiver is the process
 * that is sending, so waiting for room in its buffer could never end).
 *
 * Taken units. netlink_kernel_create returns NULL, without an errno, when
 * the unit already has a kernel socket in the namespace (its port 0 is
 * taken), and also when it runs out of memory. On NULL we ask whether the
 * unit is registered at all, the way socket(2) does (creating a socket of
 * it, which asks modprobe for the unit's module only if nobody registered
 * it): registered means taken, EBUSY; otherwise ENOMEM. A unit this glue
 * already serves is EBUSY without trying. The first registrant of a unit
 * (in any namespace) also owns the unit's module reference: every user
 * socket of the unit pins that module, so the module that registered an
 * endpoint cannot be unloaded while a process holds a socket of its unit.
 *
 * Lifetimes. The endpoint table is read under SRCU by the input function,
 * which may sleep in Rust. Unregistering releases the socket (no new
 * datagram reaches it; a sender already inside may still call our input),
 * takes the endpoint out of the table, waits for every input in progress,
 * then frees the endpoint: after rdma_rs_nl_unregister returns, Rust's
 * context is not used. An input that finds no endpoint drops the datagram.
 * rdma_rs_nl_unregister must not be called from an input.
 *
 * Lock order: rdma_rs_nl_lock (registration) is never held across an input
 * or a synchronize_srcu.
 */
#include <linux/capability.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "netlink_glue.h"

/* Implemented in Rust (netlink.rs). */
void rdma_rs_nl_input(const void *ctx, const u8 *data, size_t len, u32 portid, bool net_admin,
		      struct sock *sk);

struct rdma_rs_nl {
	struct sock *sk;
	const void *ctx;
	int unit;
};

DEFINE_STATIC_SRCU(rdma_rs_nl_srcu);
static DEFINE_MUTEX(rdma_rs_nl_lock);
static struct rdma_rs_nl __rcu *rdma_rs_nl_eps[MAX_LINKS];

/* Only the kernel sockets this glue creates have this input. */
static void rdma_rs_nl_rcv(struct sk_buff *skb)
{
	int unit = skb->sk->sk_protocol;
	struct rdma_rs_nl *ep;
	int idx;

	if (unit < 0 || unit >= MAX_LINKS || skb_is_nonlinear(skb))
		return;
	idx = srcu_read_lock(&rdma_rs_nl_srcu);
	ep = srcu_dereference(rdma_rs_nl_eps[unit], &rdma_rs_nl_srcu);
	if (ep)
		rdma_rs_nl_input(ep->ctx, skb->data, skb->len, NETLINK_CB(skb).portid,
				 netlink_net_capable(skb, CAP_NET_ADMIN), skb->sk);
	srcu_read_unlock(&rdma_rs_nl_srcu, idx);
}

/* Whether some module serves the unit (see "Taken units" above). */
static bool rdma_rs_nl_unit_registered(int unit)
{
	struct socket *probe;

	if (sock_create_kern(&init_net, PF_NETLINK, SOCK_RAW, unit, &probe))
		return false;
	sock_release(probe);
	return true;
}

struct rdma_rs_nl *rdma_rs_nl_register(struct module *owner, int unit, const void *ctx)
{
	struct netlink_kernel_cfg cfg = { .input = rdma_rs_nl_rcv };
	struct rdma_rs_nl *ep;
	struct sock *sk;
	int ret = 0;

	if (unit < 0 || unit >= MAX_LINKS)
		return ERR_PTR(-EINVAL);
	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return ERR_PTR(-ENOMEM);
	ep->ctx = ctx;
	ep->unit = unit;

	mutex_lock(&rdma_rs_nl_lock);
	if (rcu_access_pointer(rdma_rs_nl_eps[unit])) {
		ret = -EBUSY;
		goto out_unlock;
	}
	/* Published first: a datagram may arrive as soon as the socket exists. */
	rcu_assign_pointer(rdma_rs_nl_eps[unit], ep);
	sk = __netlink_kernel_create(&init_net, unit, owner, &cfg);
	if (!sk) {
		RCU_INIT_POINTER(rdma_rs_nl_eps[unit], NULL);
		ret = -ENOMEM;
	} else {
		ep->sk = sk;
	}
out_unlock:
	mutex_unlock(&rdma_rs_nl_lock);
	if (ret) {
		/* No socket had our input, so no input can hold ep. */
		kfree(ep);
		if (ret == -ENOMEM && rdma_rs_nl_unit_registered(unit))
			ret = -EBUSY;
		return ERR_PTR(ret);
	}
	return ep;
}

void rdma_rs_nl_unregister(struct rdma_rs_nl *ep)
{
	netlink_kernel_release(ep->sk);
	mutex_lock(&rdma_rs_nl_lock);
	RCU_INIT_POINTER(rdma_rs_nl_eps[ep->unit], NULL);
	mutex_unlock(&rdma_rs_nl_lock);
	synchronize_srcu(&rdma_rs_nl_srcu);
	kfree(ep);
}

/* Returns 0 or a negative errno (ECONNREFUSED: no such port; EAGAIN: its
 * receive buffer is full). */
int rdma_rs_nl_unicast(struct sock *sk, u32 portid, const void *data, size_t len)
{
	struct sk_buff *skb;
	int ret;

	skb = alloc_skb(len, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	skb_put_data(skb, data, len);
	ret = netlink_unicast(sk, skb, portid, MSG_DONTWAIT);
	return ret < 0 ? ret : 0;
}
