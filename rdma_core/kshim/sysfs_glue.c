// SPDX-License-Identifier: GPL-2.0
/*
 * The sysfs tree of our devices, in the layout of /sys/class/infiniband:
 *
 *   /sys/class/rdma_rs/<dev>/{node_guid,sys_image_guid,node_type,node_desc,
 *                             fw_ver,resources}
 *   /sys/class/rdma_rs/<dev>/ports/<N>/{state,phys_state,link_layer,rate,lid,
 *                                       sm_lid,cap_mask}
 *   /sys/class/rdma_rs/<dev>/ports/<N>/gids/<I>
 *   /sys/class/rdma_rs/<dev>/ports/<N>/gid_attrs/{types,ndevs}/<I>
 *   /sys/class/rdma_rs/<dev>/ports/<N>/pkeys/<I>
 *   /sys/class/rdma_rs/<dev>/ports/<N>/hw_counters/<name>   (the provider's)
 *   /sys/class/rdma_rs/<dev>/ports/<N>/<group>/<file>       (other layers')
 *
 * Only the kobject plumbing is here. Every file's text comes from
 * rdma_rs_sysfs_show() in sysfs.rs, given the device, the file's id, its
 * port and its table index. The groups of other layers (the CM's counters)
 * are not made here: rdma_rs_sysfs_port_dir() hands out a port's directory,
 * in which they add directories of their own (kobj_glue.c), removed before
 * the tree.
 *
 * The same tree can be made in another class, a class of class_glue.c (the
 * "infiniband" view of device/sysfs.rs): without "resources", which the C
 * stack does not have, and without the other layers' groups.
 *
 * A tree given a netdev whose device has a parent (the PCI function or
 * virtio device whose net/ lists it; a veth has none) links to that parent:
 *
 *   /sys/class/rdma_rs/<dev>/device -> the parent's directory
 *
 * as the C stack's tree of a hardware device links to its parent, so that
 * <dev>/device/net/<netdev> exists. See link_parent() for its lifetime.
 */
#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/kobject.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "class_glue.h"
#include "sysfs_glue.h"

/* Implemented in Rust (sysfs.rs). */
ssize_t rdma_rs_sysfs_show(const void *dev, u32 id, u32 port, u32 index, char *buf);

static struct class *rdma_rs_class;

struct rdma_rs_dev_attr {
	struct device_attribute dattr;
	struct rdma_rs_sysfs *owner;
	u32 id;
};

struct rdma_rs_kobj_attr {
	struct kobj_attribute kattr;
	struct rdma_rs_sysfs *owner;
	u32 id, port, index;
	char name[32];
};

struct rdma_rs_port {
	struct kobject *dir, *gids, *gid_attrs, *types, *ndevs, *pkeys, *counters;
	struct rdma_rs_kobj_attr *attrs; /* port files, then the tables */
	u32 nattrs;
};

struct rdma_rs_sysfs {
	struct device *device;
	const void *dev;
	struct kobject *ports_dir;
	struct rdma_rs_dev_attr dev_attrs[6];
	struct rdma_rs_port *ports;
	u32 nports;
	bool linked; /* has the "device" link */
};

static const char *const dev_files[] = {
	[RDMA_RS_ATTR_NODE_GUID] = "node_guid",
	[RDMA_RS_ATTR_NODE_TYPE] = "node_type",
	[RDMA_RS_ATTR_FW_VER] = "fw_ver",
	[RDMA_RS_ATTR_SYS_IMAGE_GUID] = "sys_image_guid",
	[RDMA_RS_ATTR_RESOURCES] = "resources",
	[RDMA_RS_ATTR_NODE_DESC] = "node_desc",
};

static const struct {
	const char *name;
	u32 id;
} port_files[] = {
	{ "state", RDMA_RS_ATTR_PORT_STATE },
	{ "phys_state", RDMA_RS_ATTR_PORT_PHYS_STATE },
	{ "link_layer", RDMA_RS_ATTR_PORT_LINK_LAYER },
	{ "rate", RDMA_RS_ATTR_PORT_RATE },
	{ "lid", RDMA_RS_ATTR_PORT_LID },
	{ "sm_lid", RDMA_RS_ATTR_PORT_SM_LID },
	{ "cap_mask", RDMA_RS_ATTR_PORT_CAP_MASK },
};

static ssize_t dev_attr_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct rdma_rs_dev_attr *a = container_of(attr, struct rdma_rs_dev_attr, dattr);

	return rdma_rs_sysfs_show(a->owner->dev, a->id, 0, 0, buf);
}

static ssize_t kobj_attr_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rdma_rs_kobj_attr *a = container_of(attr, struct rdma_rs_kobj_attr, kattr);

	return rdma_rs_sysfs_show(a->owner->dev, a->id, a->port, a->index, buf);
}

int rdma_rs_sysfs_init(void)
{
	rdma_rs_class = class_create("rdma_rs");
	return PTR_ERR_OR_ZERO(rdma_rs_class);
}

void rdma_rs_sysfs_exit(void)
{
	class_destroy(rdma_rs_class);
}

static int add_kobj_attr(struct rdma_rs_sysfs *s, struct rdma_rs_port *p, struct kobject *dir,
			 const char *name, u32 id, u32 port, u32 index)
{
	struct rdma_rs_kobj_attr *a = &p->attrs[p->nattrs++];

	a->owner = s;
	a->id = id;
	a->port = port;
	a->index = index;
	strscpy(a->name, name, sizeof(a->name));
	sysfs_attr_init(&a->kattr.attr);
	a->kattr.attr.name = a->name;
	a->kattr.attr.mode = 0444;
	a->kattr.show = kobj_attr_show;
	return sysfs_create_file(dir, &a->kattr.attr);
}

/*
 * Takes a directory out of sysfs (waiting for show() calls under way) and
 * drops our reference. kobject_put() alone would leave the files in place
 * while another reference lives (a layer's group directory inside the
 * port's, a reference from rdma_rs_sysfs_port_dir()), and their attributes
 * are freed right after.
 */
static void del_dir(struct kobject *kobj)
{
	if (!kobj)
		return;
	kobject_del(kobj);
	kobject_put(kobj);
}

static void del_port(struct rdma_rs_port *p)
{
	/* Children before parents; every file is gone before p->attrs. */
	del_dir(p->counters);
	del_dir(p->pkeys);
	del_dir(p->ndevs);
	del_dir(p->types);
	del_dir(p->gid_attrs);
	del_dir(p->gids);
	del_dir(p->dir);
	kfree(p->attrs);
}

static int add_port(struct rdma_rs_sysfs *s, struct rdma_rs_port *p, u32 port, u32 gid_len,
		    u32 pkey_len, const char *const *counter_names, u32 ncounters)
{
	char name[12];
	u32 i;
	int ret = -ENOMEM;

	p->attrs = kcalloc(ARRAY_SIZE(port_files) + 3 * gid_len + pkey_len + ncounters,
			   sizeof(*p->attrs), GFP_KERNEL);
	if (!p->attrs)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%u", port);
	p->dir = kobject_create_and_add(name, s->ports_dir);
	if (!p->dir)
		return -ENOMEM;
	p->gids = kobject_create_and_add("gids", p->dir);
	p->gid_attrs = kobject_create_and_add("gid_attrs", p->dir);
	p->types = p->gid_attrs ? kobject_create_and_add("types", p->gid_attrs) : NULL;
	p->ndevs = p->gid_attrs ? kobject_create_and_add("ndevs", p->gid_attrs) : NULL;
	p->pkeys = kobject_create_and_add("pkeys", p->dir);
	if (!p->gids || !p->types || !p->ndevs || !p->pkeys)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(port_files); i++) {
		ret = add_kobj_attr(s, p, p->dir, port_files[i].name, port_files[i].id, port, 0);
		if (ret)
			return ret;
	}
	for (i = 0; i < gid_len; i++) {
		snprintf(name, sizeof(name), "%u", i);
		ret = add_kobj_attr(s, p, p->gids, name, RDMA_RS_ATTR_GID, port, i);
		if (!ret)
			ret = add_kobj_attr(s, p, p->types, name, RDMA_RS_ATTR_GID_TYPE, port, i);
		if (!ret)
			ret = add_kobj_attr(s, p, p->ndevs, name, RDMA_RS_ATTR_GID_NDEV, port, i);
		if (ret)
			return ret;
	}
	for (i = 0; i < pkey_len; i++) {
		snprintf(name, sizeof(name), "%u", i);
		ret = add_kobj_attr(s, p, p->pkeys, name, RDMA_RS_ATTR_PKEY, port, i);
		if (ret)
			return ret;
	}
	if (!ncounters)
		return 0;
	p->counters = kobject_create_and_add("hw_counters", p->dir);
	if (!p->counters)
		return -ENOMEM;
	for (i = 0; i < ncounters; i++) {
		ret = add_kobj_attr(s, p, p->counters, counter_names[i], RDMA_RS_ATTR_HW_COUNTER,
				    port, i);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The "device" link to the parent of nd's device, if it has one; nd is held
 * by the caller. The parent is read, and held, under RTNL while nd is
 * registered: netdev_unregister_kobject() (which drops nd's reference on
 * its parent) runs under RTNL after reg_state has left NETREG_REGISTERED,
 * so the parent cannot be freed between the check and get_device(). The
 * link itself holds the parent's sysfs node, not the device: if the parent
 * goes first (it cannot without nd going, and the provider unregisters its
 * device when nd does), the link dangles in sysfs until the tree goes, but
 * points at nothing freed. sysfs_create_link() copes with a parent whose
 * directory is being removed (-ENOENT: no link, as for a netdev being
 * unregistered). The link goes with the tree (rdma_rs_sysfs_del()). A
 * device's netdevs do not change while it is registered.
 */
static int link_parent(struct rdma_rs_sysfs *s, struct net_device *nd)
{
	struct device *parent = NULL;
	int ret;

	rtnl_lock();
	if (nd->reg_state == NETREG_REGISTERED)
		parent = get_device(nd->dev.parent);
	rtnl_unlock();
	if (!parent)
		return 0;
	ret = sysfs_create_link(&s->device->kobj, &parent->kobj, "device");
	put_device(parent);
	if (ret == -ENOENT)
		return 0;
	if (!ret)
		s->linked = true;
	return ret;
}

struct rdma_rs_sysfs *rdma_rs_sysfs_add(struct rdma_rs_sysclass *cls, const char *name,
					const void *dev, u32 nports, u32 gid_len, u32 pkey_len,
					const char *const *counter_names, u32 ncounters,
					struct net_device *link_nd)
{
	struct rdma_rs_sysfs *s;
	u32 i;
	int ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	s->dev = dev;
	s->device = device_create(cls ? rdma_rs_sysclass_class(cls) : rdma_rs_class, NULL,
				  MKDEV(0, 0), NULL, "%s", name);
	if (IS_ERR(s->device)) {
		ret = PTR_ERR(s->device);
		kfree(s);
		return ERR_PTR(ret);
	}
	for (i = 0; i < ARRAY_SIZE(s->dev_attrs); i++) {
		struct rdma_rs_dev_attr *a = &s->dev_attrs[i];

		/* The C stack's tree has no "resources". */
		if (cls && i == RDMA_RS_ATTR_RESOURCES)
			continue;
		a->owner = s;
		a->id = i;
		sysfs_attr_init(&a->dattr.attr);
		a->dattr.attr.name = dev_files[i];
		a->dattr.attr.mode = 0444;
		a->dattr.show = dev_attr_show;
		ret = device_create_file(s->device, &a->dattr);
		if (ret)
			goto err;
	}
	ret = -ENOMEM;
	s->ports_dir = kobject_create_and_add("ports", &s->device->kobj);
	s->ports = kcalloc(nports, sizeof(*s->ports), GFP_KERNEL);
	if (!s->ports_dir || !s->ports)
		goto err;
	s->nports = nports;
	for (i = 0; i < nports; i++) {
		ret = add_port(s, &s->ports[i], i + 1, gid_len, pkey_len, counter_names,
			       ncounters);
		if (ret)
			goto err;
	}
	if (link_nd) {
		ret = link_parent(s, link_nd);
		if (ret)
			goto err;
	}
	return s;
err:
	rdma_rs_sysfs_del(s);
	return ERR_PTR(ret);
}

struct kobject *rdma_rs_sysfs_port_dir(struct rdma_rs_sysfs *s, u32 port)
{
	if (port < 1 || port > s->nports)
		return ERR_PTR(-EINVAL);
	return kobject_get(s->ports[port - 1].dir);
}

void rdma_rs_sysfs_del(struct rdma_rs_sysfs *s)
{
	u32 i;

	if (s->ports) {
		for (i = 0; i < s->nports; i++)
			del_port(&s->ports[i]);
		kfree(s->ports);
	}
	kobject_put(s->ports_dir);
	if (s->linked)
		sysfs_remove_link(&s->device->kobj, "device");
	/* Removes the device's files; waits for running show() calls. */
	device_unregister(s->device);
	kfree(s);
}
