// SPDX-License-Identifier: GPL-2.0
/*
 * Plain sysfs directories for kobj.rs (see kobj_glue.h).
 *
 * A directory is a bare kobject (kobject_create_and_add(), so its release
 * is the core's); a statistics directory is a kobject of ours with one
 * read-only file per name, each shown by rdma_rs_kobj_show() in Rust with
 * the directory's context and the file's index. Every directory holds a
 * reference on its parent (kobject_add takes it), so a parent outlives its
 * children whatever order the Rust handles go in.
 *
 * rdma_rs_stats_del() removes the files first (kobject_del() waits for any
 * show in progress), so Rust's context is no longer used when it returns;
 * the kobject's release only frees our memory.
 */
#include <linux/err.h>
#include <linux/kernfs.h>
#include <linux/kobject.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "kobj_glue.h"

/* Implemented in Rust (kobj.rs). */
ssize_t rdma_rs_kobj_show(const void *ctx, u32 attr, char *buf);

struct rdma_rs_stats_attr {
	struct kobj_attribute kattr;
	char *name;
	u32 index;
};

struct rdma_rs_stats {
	struct kobject kobj;
	const void *ctx;
	u32 nattrs;
	struct rdma_rs_stats_attr attrs[];
};

/* Whether parent has an entry (file or directory) called name. */
static bool has_entry(struct kobject *parent, const char *name)
{
	struct kernfs_node *kn;

	if (!parent->sd)
		return false;
	kn = kernfs_find_and_get(parent->sd, name);
	if (!kn)
		return false;
	kernfs_put(kn);
	return true;
}

/*
 * /sys/kernel/mm, with a reference. mm_kobj is not exported to modules: find
 * it as the directory "mm" of kernel_kobj. It is made at boot and never
 * removed, so the kobject behind the directory stays valid.
 */
static struct kobject *mm_dir_get(void)
{
	struct kobject *kobj = NULL, *k;
	struct kernfs_node *kn;

	kn = kernfs_find_and_get(kernel_kobj->sd, "mm");
	if (!kn)
		return NULL;
	if (kernfs_type(kn) == KERNFS_DIR) {
		k = kn->priv;
		if (k && k->parent == kernel_kobj && !strcmp(kobject_name(k), "mm"))
			kobj = kobject_get(k);
	}
	kernfs_put(kn);
	return kobj;
}

struct kobject *rdma_rs_kobj_dir_add(struct kobject *parent, const char *name)
{
	struct kobject *dir;

	/* kobject_add() would fail too, but with a warning and a backtrace. */
	if (has_entry(parent, name))
		return ERR_PTR(-EEXIST);
	dir = kobject_create_and_add(name, parent);
	return dir ? dir : ERR_PTR(-ENOMEM);
}

struct kobject *rdma_rs_kobj_dir_add_root(u32 root, const char *name)
{
	struct kobject *parent, *dir;

	switch (root) {
	case RDMA_RS_KOBJ_ROOT_KERNEL:
		parent = kobject_get(kernel_kobj);
		break;
	case RDMA_RS_KOBJ_ROOT_MM:
		parent = mm_dir_get();
		break;
	default:
		return ERR_PTR(-EINVAL);
	}
	if (!parent)
		return ERR_PTR(-ENOENT);
	dir = rdma_rs_kobj_dir_add(parent, name);
	kobject_put(parent);
	return dir;
}

/* Drops the handle's reference; the directory goes with its last child. */
void rdma_rs_kobj_dir_put(struct kobject *dir)
{
	kobject_put(dir);
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *kattr, char *buf)
{
	struct rdma_rs_stats *s = container_of(kobj, struct rdma_rs_stats, kobj);
	struct rdma_rs_stats_attr *a = container_of(kattr, struct rdma_rs_stats_attr, kattr);

	return rdma_rs_kobj_show(s->ctx, a->index, buf);
}

static void stats_release(struct kobject *kobj)
{
	struct rdma_rs_stats *s = container_of(kobj, struct rdma_rs_stats, kobj);
	u32 i;

	for (i = 0; i < s->nattrs; i++)
		kfree(s->attrs[i].name);
	kfree(s);
}

static const struct kobj_type stats_ktype = {
	.release = stats_release,
	.sysfs_ops = &kobj_sysfs_ops,
};

struct rdma_rs_stats *rdma_rs_stats_add(struct kobject *parent, const char *name,
					const char *const *names, u32 n, const void *ctx)
{
	struct rdma_rs_stats *s;
	u32 i;
	int ret;

	if (has_entry(parent, name))
		return ERR_PTR(-EEXIST);
	s = kzalloc(struct_size(s, attrs, n), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	s->ctx = ctx;
	s->nattrs = n;
	/* From here on kobject_put() frees s and the names copied so far. */
	kobject_init(&s->kobj, &stats_ktype);
	for (i = 0; i < n; i++) {
		struct rdma_rs_stats_attr *a = &s->attrs[i];

		a->name = kstrdup(names[i], GFP_KERNEL);
		if (!a->name) {
			ret = -ENOMEM;
			goto put;
		}
		a->index = i;
		sysfs_attr_init(&a->kattr.attr);
		a->kattr.attr.name = a->name;
		a->kattr.attr.mode = 0444;
		a->kattr.show = stats_show;
	}
	ret = kobject_add(&s->kobj, parent, "%s", name);
	if (ret)
		goto put;
	for (i = 0; i < n; i++) {
		ret = sysfs_create_file(&s->kobj, &s->attrs[i].kattr.attr);
		if (ret)
			goto del;
	}
	return s;

del:
	kobject_del(&s->kobj);
put:
	kobject_put(&s->kobj);
	return ERR_PTR(ret);
}

/* Removes the directory; no show runs once this returns. */
void rdma_rs_stats_del(struct rdma_rs_stats *s)
{
	kobject_del(&s->kobj);
	kobject_put(&s->kobj);
}
