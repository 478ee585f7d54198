// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel netlink sockets for netlink.rs (see netlink_glue.h).
 *
 * One endpoint is one kernel socket of a netlink unit (protocol number) in
 * every network namespace, made by netlink_kernel_create with our input
 * function: the sockets come and go with the namespaces through pernet
 * operations registered for the endpoint (register_pernet_subsys makes the
 * socket of each existing namespace and of every one created later, and
 * unregistering releases them all). The input runs in the sending
 * process's context, from its sendmsg, for every datagram sent to port 0
 * of the unit in any namespace: it hands Rust the bytes, the sender's port
 * ID and whether the sender may administer that namespace's network
 * (CAP_NET_ADMIN over its user namespace), together with the kernel socket
 * the request arrived on, through which Rust replies (netlink_unicast, not
 * waiting: the receiver is the process that is sending, so waiting for
 * room in its buffer could never end).
 *
 * Pernet operations carry no context of their own: an endpoint takes one
 * of RDMA_RS_NL_SLOTS static slots, each with its own init function, which
 * finds the endpoint's unit and module in its slot. A slot's per-namespace
 * storage (net_generic) holds that namespace's socket.
 *
 * Taken units. netlink_kernel_create returns NULL, without an errno, when
 * the unit already has a kernel socket in the namespace (its port 0 is
 * taken), and also when it runs out of memory; the slot's init then fails
 * with ENOMEM, which fails register_pernet_subsys in init_net (or the
 * creation of a namespace, later). On that failure we ask whether the unit
 * is registered at all, the way socket(2) does (creating a socket of it,
 * which asks modprobe for the unit's module only if nobody registered it):
 * registered means taken, EBUSY; otherwise ENOMEM. A unit this glue
 * already serves is EBUSY without trying. The first registrant of a unit
 * (in any namespace) also owns the unit's module reference: every user
 * socket of the unit pins that module, so the module that registered an
 * endpoint cannot be unloaded while a process holds a socket of its unit.
 *
 * Lifetimes. The endpoint table is read under SRCU by the input function,
 * which may sleep in Rust. Unregistering unregisters the pernet operations
 * (every socket released: no new datagram reaches them; a sender already
 * inside may still call our input), takes the endpoint out of the table,
 * waits for every input in progress, then frees the endpoint: after
 * rdma_rs_nl_unregister returns, Rust's context is not used. An input that
 * finds no endpoint drops the datagram. rdma_rs_nl_unregister must not be
 * called from an input.
 *
 * Lock order: rdma_rs_nl_lock (registration), then the kernel's pernet
 * lock (register_pernet_subsys); a slot's init and exit take neither of
 * ours. rdma_rs_nl_lock is never held across an input or a
 * synchronize_srcu.
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
#include <net/netns/generic.h>
#include <net/sock.h>

#include "netlink_glue.h"

/* Implemented in Rust (netlink.rs). */
void rdma_rs_nl_input(const void *ctx, const u8 *data, size_t len, u32 portid, bool net_admin,
		      struct sock *sk);

struct rdma_rs_nl {
	const void *ctx;
	int unit;
	int slot;
};

DEFINE_STATIC_SRCU(rdma_rs_nl_srcu);
static DEFINE_MUTEX(rdma_rs_nl_lock);
static struct rdma_rs_nl __rcu *rdma_rs_nl_eps[MAX_LINKS];

#define RDMA_RS_NL_SLOTS 4

/* What a slot's pernet init needs; written under rdma_rs_nl_lock before
 * the slot's operations are registered, read by its init and exit. */
struct rdma_rs_nl_slot {
	bool used;
	int unit;
	struct module *owner;
	unsigned int net_id;
};

static struct rdma_rs_nl_slot rdma_rs_nl_slots[RDMA_RS_NL_SLOTS];

static void rdma_rs_nl_rcv(struct sk_buff *skb);

static int rdma_rs_nl_net_init(int slot, struct net *net)
{
	struct rdma_rs_nl_slot *sl = &rdma_rs_nl_slots[slot];
	struct netlink_kernel_cfg cfg = { .input = rdma_rs_nl_rcv };
	struct sock **skp = net_generic(net, sl->net_id);

	*skp = __netlink_kernel_create(net, sl->unit, sl->owner, &cfg);
	return *skp ? 0 : -ENOMEM;
}

static void rdma_rs_nl_net_exit(int slot, struct net *net)
{
	struct sock **skp = net_generic(net, rdma_rs_nl_slots[slot].net_id);

	netlink_kernel_release(*skp);
	*skp = NULL;
}

#define RDMA_RS_NL_SLOT_OPS(n)                                                      \
	static int rdma_rs_nl_init##n(struct net *net)                              \
	{                                                                           \
		return rdma_rs_nl_net_init(n, net);                                 \
	}                                                                           \
	static void rdma_rs_nl_exit##n(struct net *net)                             \
	{                                                                           \
		rdma_rs_nl_net_exit(n, net);                                        \
	}

RDMA_RS_NL_SLOT_OPS(0)
RDMA_RS_NL_SLOT_OPS(1)
RDMA_RS_NL_SLOT_OPS(2)
RDMA_RS_NL_SLOT_OPS(3)

#define RDMA_RS_NL_OPS(n)                                                           \
	{                                                                           \
		.init = rdma_rs_nl_init##n, .exit = rdma_rs_nl_exit##n,              \
		.id = &rdma_rs_nl_slots[n].net_id, .size = sizeof(struct sock *),   \
	}

static struct pernet_operations rdma_rs_nl_ops[RDMA_RS_NL_SLOTS] = {
	RDMA_RS_NL_OPS(0), RDMA_RS_NL_OPS(1), RDMA_RS_NL_OPS(2), RDMA_RS_NL_OPS(3),
};

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
	struct rdma_rs_nl *ep;
	int ret = 0, slot;

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
	for (slot = 0; slot < RDMA_RS_NL_SLOTS && rdma_rs_nl_slots[slot].used; slot++)
		;
	if (slot == RDMA_RS_NL_SLOTS) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	rdma_rs_nl_slots[slot].used = true;
	rdma_rs_nl_slots[slot].unit = unit;
	rdma_rs_nl_slots[slot].owner = owner;
	ep->slot = slot;
	/* Published first: a datagram may arrive as soon as a socket exists. */
	rcu_assign_pointer(rdma_rs_nl_eps[unit], ep);
	ret = register_pernet_subsys(&rdma_rs_nl_ops[slot]);
	if (ret) {
		RCU_INIT_POINTER(rdma_rs_nl_eps[unit], NULL);
		rdma_rs_nl_slots[slot].used = false;
	}
out_unlock:
	mutex_unlock(&rdma_rs_nl_lock);
	if (ret) {
		/* Inputs that found ep (on a socket made in another namespace
		 * before one failed) are done when synchronize_srcu returns. */
		synchronize_srcu(&rdma_rs_nl_srcu);
		kfree(ep);
		if (ret == -ENOMEM && rdma_rs_nl_unit_registered(unit))
			ret = -EBUSY;
		return ERR_PTR(ret);
	}
	return ep;
}

void rdma_rs_nl_unregister(struct rdma_rs_nl *ep)
{
	mutex_lock(&rdma_rs_nl_lock);
	unregister_pernet_subsys(&rdma_rs_nl_ops[ep->slot]);
	RCU_INIT_POINTER(rdma_rs_nl_eps[ep->unit], NULL);
	rdma_rs_nl_slots[ep->slot].used = false;
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

/* The network device called name in the namespace of the kernel socket sk
 * (the sender's), held, or NULL. */
struct net_device *rdma_rs_nl_dev_get_by_name(struct sock *sk, const char *name)
{
	return dev_get_by_name(sock_net(sk), name);
}
