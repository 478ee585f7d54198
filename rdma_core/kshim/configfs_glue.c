// SPDX-License-Identifier: GPL-2.0
/*
 * configfs plumbing for Rust providers (see configfs_glue.h).
 *
 * /sys/kernel/config/<name>/ is a group in which mkdir creates an item
 * (Rust's rdma_rs_cfs_make) with the subsystem's attribute files, rmdir
 * drops it (rdma_rs_cfs_drop) and the last reference releases it
 * (rdma_rs_cfs_release). configfs passes a show/store callback no pointer
 * to its attribute, so the glue has one pair of functions per attribute
 * index.
 */
#include <linux/configfs.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "configfs_glue.h"

/* Implemented in Rust (configfs.rs). */
const void *rdma_rs_cfs_make(const void *group_ctx, const char *name, int *err);
void rdma_rs_cfs_drop(const void *group_ctx, const void *item_ctx);
void rdma_rs_cfs_release(const void *item_ctx);
ssize_t rdma_rs_cfs_show(const void *item_ctx, u32 attr, char *page);
ssize_t rdma_rs_cfs_store(const void *item_ctx, u32 attr, const char *buf, size_t len);

struct rdma_rs_cfs {
	struct configfs_subsystem subsys;
	struct config_item_type group_type;
	struct config_item_type item_type;
	struct configfs_group_operations group_ops;
	struct configfs_item_operations item_ops;
	struct configfs_attribute attrs[RDMA_RS_CFS_MAX_ATTRS];
	struct configfs_attribute *attr_ptrs[RDMA_RS_CFS_MAX_ATTRS + 1];
	char attr_names[RDMA_RS_CFS_MAX_ATTRS][32];
	const void *group_ctx;
	char name[32];
};

struct rdma_rs_cfs_item {
	struct config_item item;
	struct rdma_rs_cfs *cfs;
	const void *ctx;
};

static struct rdma_rs_cfs_item *to_cfs_item(struct config_item *item)
{
	return container_of(item, struct rdma_rs_cfs_item, item);
}

#define RDMA_RS_CFS_ATTR_FNS(n)						\
static ssize_t rdma_rs_cfs_show_##n(struct config_item *item, char *page)	\
{									\
	return rdma_rs_cfs_show(to_cfs_item(item)->ctx, n, page);	\
}									\
static ssize_t rdma_rs_cfs_store_##n(struct config_item *item,		\
				     const char *buf, size_t len)	\
{									\
	return rdma_rs_cfs_store(to_cfs_item(item)->ctx, n, buf, len);	\
}

RDMA_RS_CFS_ATTR_FNS(0)
RDMA_RS_CFS_ATTR_FNS(1)
RDMA_RS_CFS_ATTR_FNS(2)
RDMA_RS_CFS_ATTR_FNS(3)
RDMA_RS_CFS_ATTR_FNS(4)
RDMA_RS_CFS_ATTR_FNS(5)
RDMA_RS_CFS_ATTR_FNS(6)
RDMA_RS_CFS_ATTR_FNS(7)

static ssize_t (*const show_fns[])(struct config_item *, char *) = {
	rdma_rs_cfs_show_0, rdma_rs_cfs_show_1, rdma_rs_cfs_show_2, rdma_rs_cfs_show_3,
	rdma_rs_cfs_show_4, rdma_rs_cfs_show_5, rdma_rs_cfs_show_6, rdma_rs_cfs_show_7,
};

static ssize_t (*const store_fns[])(struct config_item *, const char *, size_t) = {
	rdma_rs_cfs_store_0, rdma_rs_cfs_store_1, rdma_rs_cfs_store_2, rdma_rs_cfs_store_3,
	rdma_rs_cfs_store_4, rdma_rs_cfs_store_5, rdma_rs_cfs_store_6, rdma_rs_cfs_store_7,
};

static void rdma_rs_cfs_item_release(struct config_item *item)
{
	struct rdma_rs_cfs_item *i = to_cfs_item(item);

	rdma_rs_cfs_release(i->ctx);
	kfree(i);
}

static struct config_item *rdma_rs_cfs_make_item(struct config_group *group,
						 const char *name)
{
	struct rdma_rs_cfs *cfs = container_of(group, struct rdma_rs_cfs, subsys.su_group);
	struct rdma_rs_cfs_item *i;
	int err = 0;

	i = kzalloc(sizeof(*i), GFP_KERNEL);
	if (!i)
		return ERR_PTR(-ENOMEM);
	i->cfs = cfs;
	i->ctx = rdma_rs_cfs_make(cfs->group_ctx, name, &err);
	if (!i->ctx) {
		kfree(i);
		return ERR_PTR(err ? err : -EINVAL);
	}
	config_item_init_type_name(&i->item, name, &cfs->item_type);
	return &i->item;
}

static void rdma_rs_cfs_drop_item(struct config_group *group, struct config_item *item)
{
	struct rdma_rs_cfs_item *i = to_cfs_item(item);

	rdma_rs_cfs_drop(i->cfs->group_ctx, i->ctx);
	config_item_put(item);
}

struct rdma_rs_cfs *rdma_rs_cfs_register(struct module *owner, const char *name,
					 const void *group_ctx,
					 const char *const *attr_names,
					 const bool *attr_writable, u32 nattrs)
{
	struct rdma_rs_cfs *cfs;
	u32 n;
	int ret;

	if (nattrs > RDMA_RS_CFS_MAX_ATTRS)
		return ERR_PTR(-EINVAL);
	cfs = kzalloc(sizeof(*cfs), GFP_KERNEL);
	if (!cfs)
		return ERR_PTR(-ENOMEM);
	strscpy(cfs->name, name, sizeof(cfs->name));
	cfs->group_ctx = group_ctx;
	for (n = 0; n < nattrs; n++) {
		strscpy(cfs->attr_names[n], attr_names[n], sizeof(cfs->attr_names[n]));
		cfs->attrs[n].ca_name = cfs->attr_names[n];
		cfs->attrs[n].ca_owner = owner;
		cfs->attrs[n].ca_mode = S_IRUGO | (attr_writable[n] ? S_IWUSR : 0);
		cfs->attrs[n].show = show_fns[n];
		if (attr_writable[n])
			cfs->attrs[n].store = store_fns[n];
		cfs->attr_ptrs[n] = &cfs->attrs[n];
	}
	cfs->item_ops.release = rdma_rs_cfs_item_release;
	cfs->item_type.ct_owner = owner;
	cfs->item_type.ct_item_ops = &cfs->item_ops;
	cfs->item_type.ct_attrs = cfs->attr_ptrs;
	cfs->group_ops.make_item = rdma_rs_cfs_make_item;
	cfs->group_ops.drop_item = rdma_rs_cfs_drop_item;
	cfs->group_type.ct_owner = owner;
	cfs->group_type.ct_group_ops = &cfs->group_ops;

	config_group_init_type_name(&cfs->subsys.su_group, cfs->name, &cfs->group_type);
	mutex_init(&cfs->subsys.su_mutex);
	ret = configfs_register_subsystem(&cfs->subsys);
	if (ret) {
		kfree(cfs);
		return ERR_PTR(ret);
	}
	return cfs;
}

void rdma_rs_cfs_unregister(struct rdma_rs_cfs *cfs)
{
	configfs_unregister_subsystem(&cfs->subsys);
	kfree(cfs);
}
