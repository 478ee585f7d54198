// SPDX-License-Identifier: GPL-2.0
/*
 * Network device plumbing for net.rs: lookups in the caller's namespace,
 * link state, addresses, and one set of notifiers (netdevice, IPv4 and
 * IPv6 address) whose events go to rdma_rs_net_event() in Rust.
 */
#include <linux/ethtool.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/rcupdate.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <net/addrconf.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <net/if_inet6.h>
#include <net/net_namespace.h>

#include "net_glue.h"

/* Implemented in Rust (net.rs). May be called in atomic context. */
void rdma_rs_net_event(u32 event, struct net_device *dev);

struct net_device *rdma_rs_dev_get_by_name_current(const char *name)
{
	return dev_get_by_name(current->nsproxy->net_ns, name);
}

/* The device of index ifindex in dev's namespace, held, or NULL. */
struct net_device *rdma_rs_dev_get_by_index_near(struct net_device *dev, int ifindex)
{
	return dev_get_by_index(dev_net(dev), ifindex);
}

bool rdma_rs_netdev_running(const struct net_device *dev)
{
	return netif_running(dev);
}

/*
 * The link's ethtool speed (Mb/s) and lane count (0 if not reported), under
 * RTNL, which __ethtool_get_link_ksettings() requires: -ENODEV if the
 * device is being unregistered, the driver's error, or -ENODATA for an
 * unknown speed.
 */
int rdma_rs_netdev_eth_speed(struct net_device *dev, u32 *speed, u32 *lanes)
{
	struct ethtool_link_ksettings ks = {};
	int rc;

	rtnl_lock();
	if (READ_ONCE(dev->reg_state) != NETREG_REGISTERED)
		rc = -ENODEV;
	else
		rc = __ethtool_get_link_ksettings(dev, &ks);
	rtnl_unlock();
	if (rc)
		return rc;
	if (ks.base.speed == (u32)SPEED_UNKNOWN)
		return -ENODATA;
	*speed = ks.base.speed;
	*lanes = ks.lanes;
	return 0;
}

bool rdma_rs_netdev_carrier(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

/*
 * Joins (or leaves) the IP multicast group of a 16-byte GID on the device:
 * an IPv4-mapped GID is an IPv4 group (IGMP, under RTNL), any other an
 * IPv6 one (MLD). Process context.
 */
int rdma_rs_netdev_mc(struct net_device *dev, const u8 *gid, bool join)
{
	struct in6_addr a;
	struct in_device *in_dev;
	int err = 0;

	memcpy(&a, gid, sizeof(a));
	if (!ipv6_addr_v4mapped(&a))
		return join ? ipv6_dev_mc_inc(dev, &a) : ipv6_dev_mc_dec(dev, &a);
	rtnl_lock();
	in_dev = __in_dev_get_rtnl(dev);
	if (!in_dev)
		err = -ENODEV;
	else if (join)
		ip_mc_inc_group(in_dev, a.s6_addr32[3]);
	else
		ip_mc_dec_group(in_dev, a.s6_addr32[3]);
	rtnl_unlock();
	return err;
}

bool rdma_rs_netdev_is_vlan(const struct net_device *dev)
{
	return is_vlan_dev(dev);
}

bool rdma_rs_netdev_is_loopback(const struct net_device *dev)
{
	return dev->flags & IFF_LOOPBACK;
}

bool rdma_rs_netdev_is_ether(const struct net_device *dev)
{
	return dev->type == ARPHRD_ETHER && dev->addr_len == ETH_ALEN;
}

void rdma_rs_netdev_mac(const struct net_device *dev, u8 *out)
{
	memcpy(out, dev->dev_addr, ETH_ALEN);
}

u32 rdma_rs_netdev_ipv4_addrs(struct net_device *dev, __be32 *out, u32 max)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	u32 n = 0;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(dev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n == max)
				break;
			out[n++] = ifa->ifa_address;
		}
	}
	rcu_read_unlock();
	return n;
}

u32 rdma_rs_netdev_ipv6_addrs(struct net_device *dev, struct in6_addr *out, u32 max)
{
	struct inet6_ifaddr *ifa;
	struct inet6_dev *idev;
	u32 n = 0;

	idev = in6_dev_get(dev);
	if (!idev)
		return 0;
	read_lock_bh(&idev->lock);
	list_for_each_entry(ifa, &idev->addr_list, if_list) {
		if (n == max)
			break;
		if (ifa->flags & IFA_F_TENTATIVE)
			continue;
		out[n++] = ifa->addr;
	}
	read_unlock_bh(&idev->lock);
	in6_dev_put(idev);
	return n;
}

static int rdma_rs_netdev_cb(struct notifier_block *nb, unsigned long event, void *ptr)
{
	rdma_rs_net_event(event, netdev_notifier_info_to_dev(ptr));
	return NOTIFY_DONE;
}

static int rdma_rs_inetaddr_cb(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct in_ifaddr *ifa = ptr;

	rdma_rs_net_event(RDMA_RS_NET_ADDR_CHANGE, ifa->ifa_dev->dev);
	return NOTIFY_DONE;
}

static int rdma_rs_inet6addr_cb(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct inet6_ifaddr *ifa = ptr;

	rdma_rs_net_event(RDMA_RS_NET_ADDR_CHANGE, ifa->idev->dev);
	return NOTIFY_DONE;
}

static struct notifier_block rdma_rs_netdev_nb = { .notifier_call = rdma_rs_netdev_cb };
static struct notifier_block rdma_rs_inetaddr_nb = { .notifier_call = rdma_rs_inetaddr_cb };
static struct notifier_block rdma_rs_inet6addr_nb = { .notifier_call = rdma_rs_inet6addr_cb };

int rdma_rs_net_notifiers_register(void)
{
	int ret;

	ret = register_netdevice_notifier(&rdma_rs_netdev_nb);
	if (ret)
		return ret;
	ret = register_inetaddr_notifier(&rdma_rs_inetaddr_nb);
	if (ret)
		goto err_inet;
	ret = register_inet6addr_notifier(&rdma_rs_inet6addr_nb);
	if (ret)
		goto err_inet6;
	return 0;
err_inet6:
	unregister_inetaddr_notifier(&rdma_rs_inetaddr_nb);
err_inet:
	unregister_netdevice_notifier(&rdma_rs_netdev_nb);
	return ret;
}

void rdma_rs_net_notifiers_unregister(void)
{
	unregister_inet6addr_notifier(&rdma_rs_inet6addr_nb);
	unregister_inetaddr_notifier(&rdma_rs_inetaddr_nb);
	unregister_netdevice_notifier(&rdma_rs_netdev_nb);
}

/*
 * Network namespaces and routes, for the address resolution of the CM: a
 * counted reference on a namespace, and the egress device and source
 * address the routing table gives for a destination.
 */
struct net *rdma_rs_net_get_current(void)
{
	return get_net(current->nsproxy->net_ns);
}

struct net *rdma_rs_net_get_of(struct net_device *dev)
{
	return get_net(dev_net(dev));
}

struct net *rdma_rs_net_get(struct net *net)
{
	return get_net(net);
}

void rdma_rs_net_put(struct net *net)
{
	put_net(net);
}

unsigned long rdma_rs_net_id(const struct net *net)
{
	return (unsigned long)net;
}

int rdma_rs_route4(struct net *net, const u8 *dst, u8 *src, int *ifindex, u32 *mtu)
{
	struct flowi4 fl4 = {};
	struct rtable *rt;

	memcpy(&fl4.daddr, dst, 4);
	memcpy(&fl4.saddr, src, 4);
	rt = ip_route_output_key(net, &fl4);
	if (IS_ERR(rt))
		return PTR_ERR(rt);
	*ifindex = rt->dst.dev->ifindex;
	*mtu = dst_mtu(&rt->dst);
	memcpy(src, &fl4.saddr, 4);
	ip_rt_put(rt);
	return 0;
}

int rdma_rs_route6(struct net *net, const u8 *dst, u8 *src, int *ifindex, u32 *mtu)
{
	struct flowi6 fl6 = {};
	struct dst_entry *d;
	int ret;

	memcpy(&fl6.daddr, dst, 16);
	memcpy(&fl6.saddr, src, 16);
	d = ip6_route_output(net, NULL, &fl6);
	ret = d->error;
	if (!ret) {
		*ifindex = d->dev->ifindex;
		*mtu = dst_mtu(d);
		if (ipv6_addr_any(&fl6.saddr))
			ret = ipv6_dev_get_saddr(net, d->dev, &fl6.daddr, 0, &fl6.saddr);
		memcpy(src, &fl6.saddr, 16);
	}
	dst_release(d);
	return ret;
}
