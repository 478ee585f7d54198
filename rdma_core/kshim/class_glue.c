// SPDX-License-Identifier: GPL-2.0
/*
 * Sysfs classes for class.rs (see class_glue.h): a class of a module's own,
 * /sys/class/<class>, holding trees of directories of read/write files.
 *
 * Layout. A class is a struct class of ours, with files of its own
 * (/sys/class/<class>/<file>, e.g. an ABI version) if Rust gives a table:
 * they are made once the class is registered and removed, waiting for show
 * and store calls in progress, before it is unregistered; a top-level
 * directory may not take a class file's name. A top-level directory is a
 * device of the class with no parent: it lives in
 * /sys/devices/virtual/<class>/<name>, and /sys/class/<class>/<name> links
 * to it. Every directory below is a bare kobject of ours. Each directory has
 * a table of files; a file's show and store go to rdma_rs_class_show() and
 * rdma_rs_class_store() in Rust, with the directory's context and the
 * file's id.
 *
 * Life cycle. A directory counts its users: its Rust handle and each child
 * directory. Closing the handle removes the directory's files at once;
 * removing a sysfs file waits until no show or store runs on it, so the
 * Rust context is unused once rdma_rs_sysdir_close() returns. The directory
 * itself stays until its last user is gone; it is then deleted from sysfs
 * and its parent loses a user in turn. The memory goes with the release of
 * the device or kobject (the driver core's and kobject core's references).
 *
 * Locking. Each class has a mutex under which a name is checked and added
 * in one step (so a duplicate is EEXIST, not a sysfs warning) and under
 * which directories are deleted (so a name is free again once its
 * directory is gone). It is never held while a directory's files are
 * removed: a store may add a child (taking the mutex) while that removal
 * waits for the store. The mutex has a lockdep class per class, and the
 * files of each directory share a lockdep class of that directory's own (a
 * dynamic key), so lockdep tells a store that drops another directory (no
 * deadlock) from one that drops its own (a deadlock: closing waits for the
 * store that is closing).
 */
#include <linux/device.h>
#include <linux/err.h>
#include <linux/kernfs.h>
#include <linux/kobject.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "class_glue.h"

/* Implemented in Rust (class.rs). */
ssize_t rdma_rs_class_show(const void *ctx, u32 id, char *buf);
ssize_t rdma_rs_class_store(const void *ctx, u32 id, const char *buf, size_t len);

struct rdma_rs_classattr {
	struct class_attribute cattr;
	struct rdma_rs_sysclass *cls;
	u32 id;
};

struct rdma_rs_sysclass {
	struct class cls;
	/* Adding a directory (name check and add) and deleting one. */
	struct mutex lock;
	struct lock_class_key lock_key;
	char *name;
	/* The class's own files; ctx is for Rust until they are removed. */
	const void *ctx;
	struct lock_class_key files_key;	/* their active references */
	u32 nnames;				/* attrs[] with a name */
	u32 nfiles;				/* attrs[] in sysfs */
	struct rdma_rs_classattr *attrs;
};

/* Serialises our class registrations (name check and register). */
static DEFINE_MUTEX(class_add_lock);

struct rdma_rs_sysattr {
	/* A device attribute, used as such in a device; in a kobject, through
	 * dattr.attr and our sysfs_ops. */
	struct device_attribute dattr;
	struct rdma_rs_sysdir *dir;
	u32 id;
};

struct rdma_rs_sysdir {
	struct kobject *kobj;		/* the directory */
	struct device *dev;		/* top level: the class device; else NULL */
	struct rdma_rs_sysclass *cls;
	struct rdma_rs_sysdir *parent;	/* holds one of its users; NULL on top */
	refcount_t users;		/* the handle and each child; under cls->lock */
	const void *ctx;		/* for Rust, until the files are removed */
	struct lock_class_key key;	/* the files' active references */
	u32 nnames;			/* attrs[] with a name */
	u32 nfiles;			/* attrs[] in sysfs */
	struct rdma_rs_sysattr *attrs;
};

struct sysdir_dev {
	struct device dev;
	struct rdma_rs_sysdir dir;
};

struct sysdir_kobj {
	struct kobject kobj;
	struct rdma_rs_sysdir dir;
};

/* --- classes ------------------------------------------------------------- */

static void classattrs_free(struct rdma_rs_sysclass *c)
{
	u32 i;

	if (c->attrs) {
		for (i = 0; i < c->nnames; i++)
			kfree(c->attrs[i].cattr.attr.name);
		kfree(c->attrs);
	}
}

static void sysclass_free(struct rdma_rs_sysclass *c)
{
	classattrs_free(c);
	kfree(c->name);
	kfree(c);
}

static void sysclass_release(const struct class *cls)
{
	sysclass_free(container_of(cls, struct rdma_rs_sysclass, cls));
}

/*
 * Whether /sys/class has an entry called name. The sysfs root is found as
 * the parent of /sys/kernel, which is made at boot and never moves.
 */
bool rdma_rs_class_name_taken(const char *name)
{
	struct kernfs_node *classes, *kn;

	classes = kernfs_find_and_get(kernel_kobj->sd->parent, "class");
	if (!classes)
		return false;
	kn = kernfs_find_and_get(classes, name);
	kernfs_put(classes);
	if (!kn)
		return false;
	kernfs_put(kn);
	return true;
}

static ssize_t classattr_show(const struct class *cls, const struct class_attribute *cattr,
			      char *buf)
{
	const struct rdma_rs_classattr *a = container_of(cattr, struct rdma_rs_classattr, cattr);

	return rdma_rs_class_show(a->cls->ctx, a->id, buf);
}

static ssize_t classattr_store(const struct class *cls, const struct class_attribute *cattr,
			       const char *buf, size_t len)
{
	const struct rdma_rs_classattr *a = container_of(cattr, struct rdma_rs_classattr, cattr);

	return rdma_rs_class_store(a->cls->ctx, a->id, buf, len);
}

/* Copies the table of the class's files (names too); not in sysfs yet. */
static int classattrs_init(struct rdma_rs_sysclass *c, const struct rdma_rs_sysfile *files, u32 n)
{
	u32 i;

	if (!n)
		return 0;
	c->attrs = kcalloc(n, sizeof(*c->attrs), GFP_KERNEL);
	if (!c->attrs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct rdma_rs_classattr *a = &c->attrs[i];
		char *name = kstrdup(files[i].name, GFP_KERNEL);

		if (!name)
			return -ENOMEM;
		c->nnames = i + 1;
		a->cls = c;
		a->id = files[i].id;
		a->cattr.attr.name = name;
		a->cattr.attr.mode = files[i].writable ? 0644 : 0444;
#ifdef CONFIG_DEBUG_LOCK_ALLOC
		a->cattr.attr.key = &c->files_key;
#endif
		a->cattr.show = classattr_show;
		a->cattr.store = files[i].writable ? classattr_store : NULL;
	}
	return 0;
}

/* Removes the class's files, waiting for show and store calls. Once only. */
static void classattrs_remove(struct rdma_rs_sysclass *c)
{
	u32 i;

	for (i = 0; i < c->nfiles; i++)
		class_remove_file(&c->cls, &c->attrs[i].cattr);
	c->nfiles = 0;
	c->ctx = NULL;
}

static int classattrs_add(struct rdma_rs_sysclass *c)
{
	u32 i;
	int ret;

	for (i = 0; i < c->nnames; i++) {
		ret = class_create_file(&c->cls, &c->attrs[i].cattr);
		if (ret)
			return ret;
		c->nfiles = i + 1;
	}
	return 0;
}

/* Whether name is one of the class's files. */
static bool is_class_file(struct rdma_rs_sysclass *c, const char *name)
{
	u32 i;

	for (i = 0; i < c->nnames; i++)
		if (!strcmp(c->attrs[i].cattr.attr.name, name))
			return true;
	return false;
}

struct rdma_rs_sysclass *rdma_rs_sysclass_add(const char *name,
					      const struct rdma_rs_sysfile *files, u32 nfiles,
					      const void *ctx)
{
	struct rdma_rs_sysclass *c;
	int ret;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return ERR_PTR(-ENOMEM);
	c->name = kstrdup(name, GFP_KERNEL);
	ret = c->name ? classattrs_init(c, files, nfiles) : -ENOMEM;
	if (ret) {
		sysclass_free(c);
		return ERR_PTR(ret);
	}
	c->ctx = ctx;
	lockdep_register_key(&c->lock_key);
	lockdep_register_key(&c->files_key);
	__mutex_init(&c->lock, "rdma_rs_sysclass", &c->lock_key);
	c->cls.name = c->name;
	c->cls.class_release = sysclass_release;

	/* class_register() would fail too, but with a warning and a backtrace. */
	mutex_lock(&class_add_lock);
	ret = rdma_rs_class_name_taken(name) ? -EEXIST : class_register(&c->cls);
	mutex_unlock(&class_add_lock);
	if (ret) {
		mutex_destroy(&c->lock);
		lockdep_unregister_key(&c->files_key);
		lockdep_unregister_key(&c->lock_key);
		sysclass_free(c);
		return ERR_PTR(ret);
	}
	ret = classattrs_add(c);
	if (ret) {
		rdma_rs_sysclass_del(c);
		return ERR_PTR(ret);
	}
	return c;
}

struct class *rdma_rs_sysclass_class(struct rdma_rs_sysclass *c)
{
	return &c->cls;
}

/*
 * Every directory of the class is gone: its files go (no show or store runs
 * once they are removed), then the class; the memory goes with the class.
 */
void rdma_rs_sysclass_del(struct rdma_rs_sysclass *c)
{
	classattrs_remove(c);
	lockdep_unregister_key(&c->files_key);
	mutex_destroy(&c->lock);
	lockdep_unregister_key(&c->lock_key);
	class_unregister(&c->cls);
}

/* --- files --------------------------------------------------------------- */

static struct rdma_rs_sysattr *to_sysattr(struct attribute *attr)
{
	return container_of(attr, struct rdma_rs_sysattr, dattr.attr);
}

static ssize_t sysattr_show(struct rdma_rs_sysattr *a, char *buf)
{
	return rdma_rs_class_show(a->dir->ctx, a->id, buf);
}

static ssize_t sysattr_store(struct rdma_rs_sysattr *a, const char *buf, size_t len)
{
	/* Not reached: sysfs opens a file without write permission read-only. */
	if (!a->dattr.store)
		return -EACCES;
	return rdma_rs_class_store(a->dir->ctx, a->id, buf, len);
}

static ssize_t dev_show(struct device *dev, struct device_attribute *dattr, char *buf)
{
	return sysattr_show(to_sysattr(&dattr->attr), buf);
}

static ssize_t dev_store(struct device *dev, struct device_attribute *dattr, const char *buf,
			 size_t len)
{
	return sysattr_store(to_sysattr(&dattr->attr), buf, len);
}

static ssize_t kobj_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	return sysattr_show(to_sysattr(attr), buf);
}

static ssize_t kobj_store(struct kobject *kobj, struct attribute *attr, const char *buf,
			  size_t len)
{
	return sysattr_store(to_sysattr(attr), buf, len);
}

/* Whether dir has an entry (file, directory or link) called name. */
static bool has_entry(struct kobject *dir, const char *name)
{
	struct kernfs_node *kn;

	if (!dir->sd)
		return false;
	kn = kernfs_find_and_get(dir->sd, name);
	if (!kn)
		return false;
	kernfs_put(kn);
	return true;
}

/*
 * Sets up a new directory's users, context, lockdep key and files (names
 * copied). The key is registered whatever the outcome: files_remove()
 * unregisters it.
 */
static int dir_init(struct rdma_rs_sysdir *d, struct rdma_rs_sysclass *c,
		    const struct rdma_rs_sysfile *files, u32 n, const void *ctx)
{
	u32 i;

	lockdep_register_key(&d->key);
	d->cls = c;
	d->ctx = ctx;
	refcount_set(&d->users, 1);
	d->attrs = kcalloc(n, sizeof(*d->attrs), GFP_KERNEL);
	if (!d->attrs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct rdma_rs_sysattr *a = &d->attrs[i];
		char *name = kstrdup(files[i].name, GFP_KERNEL);

		if (!name)
			return -ENOMEM;
		d->nnames = i + 1;
		a->dir = d;
		a->id = files[i].id;
		a->dattr.attr.name = name;
		a->dattr.attr.mode = files[i].writable ? 0644 : 0444;
#ifdef CONFIG_DEBUG_LOCK_ALLOC
		a->dattr.attr.key = &d->key;
#endif
		a->dattr.show = dev_show;
		a->dattr.store = files[i].writable ? dev_store : NULL;
	}
	return 0;
}

/* Adds the files to the directory, now in sysfs. */
static int files_add(struct rdma_rs_sysdir *d)
{
	u32 i;
	int ret;

	for (i = 0; i < d->nnames; i++) {
		struct attribute *attr = &d->attrs[i].dattr.attr;

		/* A device has entries of its own ("uevent", "power"). */
		if (has_entry(d->kobj, attr->name))
			return -EEXIST;
		ret = sysfs_create_file(d->kobj, attr);
		if (ret)
			return ret;
		d->nfiles = i + 1;
	}
	return 0;
}

/*
 * Removes the files, waiting for show and store calls in progress, and
 * retires their lockdep key. Once only.
 */
static void files_remove(struct rdma_rs_sysdir *d)
{
	u32 i;

	for (i = 0; i < d->nfiles; i++)
		sysfs_remove_file(d->kobj, &d->attrs[i].dattr.attr);
	d->nfiles = 0;
	d->ctx = NULL;
	lockdep_unregister_key(&d->key);
}

/* Frees the names and the table; from the release. */
static void dir_free(struct rdma_rs_sysdir *d)
{
	u32 i;

	if (d->attrs) {
		for (i = 0; i < d->nnames; i++)
			kfree(d->attrs[i].dattr.attr.name);
		kfree(d->attrs);
	}
}

/* --- directories ----------------------------------------------------------- */

static void sysdir_dev_release(struct device *dev)
{
	struct sysdir_dev *sd = container_of(dev, struct sysdir_dev, dev);

	dir_free(&sd->dir);
	kfree(sd);
}

static void sysdir_kobj_release(struct kobject *kobj)
{
	struct sysdir_kobj *sk = container_of(kobj, struct sysdir_kobj, kobj);

	dir_free(&sk->dir);
	kfree(sk);
}

static const struct sysfs_ops sysdir_sysfs_ops = {
	.show = kobj_show,
	.store = kobj_store,
};

static const struct kobj_type sysdir_ktype = {
	.release = sysdir_kobj_release,
	.sysfs_ops = &sysdir_sysfs_ops,
};

/* A device of the class, under c->lock; its "add" uevent is held back. */
static struct rdma_rs_sysdir *add_top(struct rdma_rs_sysclass *c, const char *name,
				      const struct rdma_rs_sysfile *files, u32 n, const void *ctx)
{
	struct sysdir_dev *sd;
	struct device *other;
	int ret;

	/* The link in /sys/class/<class> would clash with a class file. */
	if (is_class_file(c, name))
		return ERR_PTR(-EEXIST);
	/* device_add() would fail too, but with a warning and a backtrace. */
	other = class_find_device_by_name(&c->cls, name);
	if (other) {
		put_device(other);
		return ERR_PTR(-EEXIST);
	}
	sd = kzalloc(sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return ERR_PTR(-ENOMEM);
	sd->dir.dev = &sd->dev;
	sd->dir.kobj = &sd->dev.kobj;
	/* From here on put_device() frees sd and the names copied so far. */
	device_initialize(&sd->dev);
	sd->dev.class = &c->cls;
	sd->dev.release = sysdir_dev_release;
	ret = dir_init(&sd->dir, c, files, n, ctx);
	if (!ret)
		ret = dev_set_name(&sd->dev, "%s", name);
	if (ret)
		goto put;
	/* The files first, then the uevent: see rdma_rs_sysdir_add(). */
	dev_set_uevent_suppress(&sd->dev, 1);
	ret = device_add(&sd->dev);
	if (ret)
		goto put;
	ret = files_add(&sd->dir);
	if (ret)
		goto del;
	return &sd->dir;

del:
	files_remove(&sd->dir);
	device_del(&sd->dev);
	put_device(&sd->dev);
	return ERR_PTR(ret);
put:
	files_remove(&sd->dir);
	put_device(&sd->dev);
	return ERR_PTR(ret);
}

/* A kobject in parent's directory, under c->lock. */
static struct rdma_rs_sysdir *add_child(struct rdma_rs_sysclass *c, struct rdma_rs_sysdir *parent,
					const char *name, const struct rdma_rs_sysfile *files,
					u32 n, const void *ctx)
{
	struct sysdir_kobj *sk;
	int ret;

	/* kobject_add() would fail too, but with a warning and a backtrace. */
	if (has_entry(parent->kobj, name))
		return ERR_PTR(-EEXIST);
	sk = kzalloc(sizeof(*sk), GFP_KERNEL);
	if (!sk)
		return ERR_PTR(-ENOMEM);
	sk->dir.kobj = &sk->kobj;
	/* From here on kobject_put() frees sk and the names copied so far. */
	kobject_init(&sk->kobj, &sysdir_ktype);
	ret = dir_init(&sk->dir, c, files, n, ctx);
	if (ret)
		goto put;
	ret = kobject_add(&sk->kobj, parent->kobj, "%s", name);
	if (ret)
		goto put;
	ret = files_add(&sk->dir);
	if (ret)
		goto del;
	refcount_inc(&parent->users);
	sk->dir.parent = parent;
	return &sk->dir;

del:
	files_remove(&sk->dir);
	kobject_del(&sk->kobj);
	kobject_put(&sk->kobj);
	return ERR_PTR(ret);
put:
	files_remove(&sk->dir);
	kobject_put(&sk->kobj);
	return ERR_PTR(ret);
}

/*
 * Adds a directory: on top (parent NULL) or in parent, whose handle is open.
 * Returns it with one user, its handle's, or an error pointer.
 */
struct kobject *rdma_rs_sysdir_kobj(struct rdma_rs_sysdir *d)
{
	return d->kobj;
}

struct rdma_rs_sysdir *rdma_rs_sysdir_add(struct rdma_rs_sysclass *c, struct rdma_rs_sysdir *parent,
					  const char *name, const struct rdma_rs_sysfile *files,
					  u32 nfiles, const void *ctx)
{
	struct rdma_rs_sysdir *d;

	mutex_lock(&c->lock);
	if (parent)
		d = add_child(c, parent, name, files, nfiles, ctx);
	else
		d = add_top(c, name, files, nfiles, ctx);
	mutex_unlock(&c->lock);
	/* A device is announced once its files are there, for udev. */
	if (!IS_ERR(d) && d->dev) {
		dev_set_uevent_suppress(d->dev, 0);
		kobject_uevent(&d->dev->kobj, KOBJ_ADD);
	}
	return d;
}

/* Deletes a directory with no users left; under its class's lock. */
static void dir_delete(struct rdma_rs_sysdir *d)
{
	if (d->dev) {
		device_unregister(d->dev);
	} else {
		kobject_del(d->kobj);
		kobject_put(d->kobj);
	}
}

/*
 * Closes the handle: the files go now (no show or store runs once this
 * returns), the directory with its last child.
 */
void rdma_rs_sysdir_close(struct rdma_rs_sysdir *d)
{
	struct rdma_rs_sysclass *c = d->cls;
	struct rdma_rs_sysdir *parent;

	files_remove(d);
	mutex_lock(&c->lock);
	while (d && refcount_dec_and_test(&d->users)) {
		parent = d->parent;
		dir_delete(d);
		d = parent;
	}
	mutex_unlock(&c->lock);
}
