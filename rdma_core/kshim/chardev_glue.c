// SPDX-License-Identifier: GPL-2.0
/*
 * Misc character devices for chardev.rs (see chardev_glue.h).
 *
 * Lifetimes. A device is a struct rdma_rs_chardev: the miscdevice and a
 * file_operations of its own whose owner is the module that registered it,
 * so that misc_open() pins that module while it calls our open. The device
 * is freed as soon as it is unregistered, open files or not, so no file may
 * keep pointing into it: __fput() reads file->f_op->owner *after* the
 * release callback, and a failed open has do_dentry_open() read it after
 * misc_open() has dropped misc_mtx. Our open therefore moves every file,
 * whether its open succeeds or not, to one static file_operations owned by
 * this module (rdma_core), and pins the registering module itself until
 * release. misc_open() calls our open with misc_mtx held and
 * misc_deregister() takes it, so the device (and Rust's context pointer)
 * is valid during open. After open a file reaches Rust only through its
 * own object (file->private_data), which holds its own references.
 *
 * Reads, writes and poll. read() and write() hand Rust the caller's buffer
 * and whether the file is non-blocking; the file position is not used
 * (these devices are streams of records). poll() hands Rust the poll
 * table, whose wait queues must live as long as the file (poll.rs).
 *
 * Mappings. An mmap handler may map pages (VM_PFNMAP: the mapping holds no
 * page references; Rust's state does) and ask for a callback when the
 * mapping goes. Both live in one Rust object in vm_private_data, counted by
 * the VMAs that point at it (vm_ops open/close); splitting is refused so
 * that the mapping stays whole.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "chardev_glue.h"

/* Implemented in Rust (chardev.rs). */
int rdma_rs_chardev_open(const void *dev_ctx, void **file_ctx);
long rdma_rs_chardev_ioctl(void *file_ctx, unsigned int cmd, unsigned long arg);
int rdma_rs_chardev_mmap(void *file_ctx, struct vm_area_struct *vma);
ssize_t rdma_rs_chardev_read(void *file_ctx, char __user *buf, size_t count, bool nonblock);
ssize_t rdma_rs_chardev_write(void *file_ctx, const char __user *buf, size_t count,
			      bool nonblock);
unsigned int rdma_rs_chardev_poll(void *file_ctx, struct file *file, struct poll_table_struct *pt);
void rdma_rs_chardev_release(void *file_ctx);
void rdma_rs_chardev_vma_open(void *map_ctx);
void rdma_rs_chardev_vma_close(void *map_ctx);

struct rdma_rs_chardev {
	struct miscdevice misc;
	/* Only open is set: misc_open() installs it, our open replaces it. */
	struct file_operations fops;
	const void *ctx;
	char *name;
	char *nodename;
	/* Shown as the device's sysfs abi_version if not negative. */
	int abi_version;
};

/* What file->private_data points at once a file is open. */
struct rdma_rs_chardev_file {
	void *ctx;
	/* Pinned from open to release. */
	struct module *owner;
};

static long chardev_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct rdma_rs_chardev_file *f = file->private_data;

	return rdma_rs_chardev_ioctl(f->ctx, cmd, arg);
}

static int chardev_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct rdma_rs_chardev_file *f = file->private_data;

	return rdma_rs_chardev_mmap(f->ctx, vma);
}

static ssize_t chardev_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
{
	struct rdma_rs_chardev_file *f = file->private_data;

	return rdma_rs_chardev_read(f->ctx, buf, count, file->f_flags & O_NONBLOCK);
}

static ssize_t chardev_write(struct file *file, const char __user *buf, size_t count,
			     loff_t *pos)
{
	struct rdma_rs_chardev_file *f = file->private_data;

	return rdma_rs_chardev_write(f->ctx, buf, count, file->f_flags & O_NONBLOCK);
}

static __poll_t chardev_poll(struct file *file, struct poll_table_struct *pt)
{
	struct rdma_rs_chardev_file *f = file->private_data;

	return (__force __poll_t)rdma_rs_chardev_poll(f->ctx, file, pt);
}

static int chardev_release(struct inode *inode, struct file *file)
{
	struct rdma_rs_chardev_file *f = file->private_data;
	struct module *owner = f->owner;

	rdma_rs_chardev_release(f->ctx);
	kfree(f);
	/* The registering module's code has run for the last time. */
	module_put(owner);
	return 0;
}

/* The operations of every open file, whatever its device. */
static const struct file_operations chardev_file_fops = {
	.owner = THIS_MODULE,
	.llseek = noop_llseek,
	.read = chardev_read,
	.write = chardev_write,
	.poll = chardev_poll,
	.unlocked_ioctl = chardev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = chardev_mmap,
	.release = chardev_release,
};

/* Called by misc_open() with misc_mtx held and file->f_op == &d->fops. */
static int chardev_open(struct inode *inode, struct file *file)
{
	struct rdma_rs_chardev *d = container_of(file->private_data, struct rdma_rs_chardev,
						 misc);
	struct module *owner = d->fops.owner;
	struct rdma_rs_chardev_file *f;
	int ret;

	/*
	 * misc_open() holds a reference on owner (through d->fops), which
	 * replace_fops() drops: take the file's own first. The reference on
	 * this module is the one the VFS drops for chardev_file_fops, at
	 * release or right after a failed open.
	 */
	__module_get(owner);
	__module_get(THIS_MODULE);
	replace_fops(file, &chardev_file_fops);

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = rdma_rs_chardev_open(d->ctx, &f->ctx);
	if (ret)
		goto fail;
	f->owner = owner;
	file->private_data = f;
	return 0;

fail:
	kfree(f);
	module_put(owner);
	return ret;
}

static void chardev_free(struct rdma_rs_chardev *d)
{
	kfree(d->nodename);
	kfree(d->name);
	kfree(d);
}

static ssize_t abi_version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct miscdevice *misc = dev_get_drvdata(dev);
	struct rdma_rs_chardev *d = container_of(misc, struct rdma_rs_chardev, misc);

	return sysfs_emit(buf, "%d\n", d->abi_version);
}
static DEVICE_ATTR_RO(abi_version);

/* misc_register() makes the device with the miscdevice as its drvdata. */
static umode_t chardev_attr_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	struct miscdevice *misc = dev_get_drvdata(kobj_to_dev(kobj));
	struct rdma_rs_chardev *d = container_of(misc, struct rdma_rs_chardev, misc);

	return d->abi_version >= 0 ? attr->mode : 0;
}

static struct attribute *chardev_attrs[] = {
	&dev_attr_abi_version.attr,
	NULL,
};

static const struct attribute_group chardev_group = {
	.attrs = chardev_attrs,
	.is_visible = chardev_attr_visible,
};

static const struct attribute_group *chardev_groups[] = {
	&chardev_group,
	NULL,
};

/*
 * The node is /dev/<nodename> if nodename is given (it may hold a
 * directory, "infiniband/uverbs0"), else /dev/<name>; mode is its
 * permission bits; abi_version, unless negative, is shown in sysfs
 * (/sys/class/misc/<name>/abi_version).
 */
struct rdma_rs_chardev *rdma_rs_chardev_register(struct module *owner, const char *name,
						 const char *nodename, unsigned short mode,
						 int abi_version, const void *ctx)
{
	struct rdma_rs_chardev *d;
	int ret;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	d->name = kstrdup(name, GFP_KERNEL);
	if (nodename)
		d->nodename = kstrdup(nodename, GFP_KERNEL);
	if (!d->name || (nodename && !d->nodename)) {
		chardev_free(d);
		return ERR_PTR(-ENOMEM);
	}
	d->ctx = ctx;
	d->fops.owner = owner;
	d->fops.open = chardev_open;
	d->fops.llseek = noop_llseek;
	d->misc.minor = MISC_DYNAMIC_MINOR;
	d->misc.name = d->name;
	d->misc.nodename = d->nodename;
	d->misc.fops = &d->fops;
	d->misc.mode = mode & 0777;
	d->abi_version = abi_version;
	d->misc.groups = chardev_groups;
	ret = misc_register(&d->misc);
	if (ret) {
		chardev_free(d);
		return ERR_PTR(ret);
	}
	return d;
}

/* No open of the device is in progress once this returns (misc_mtx). */
void rdma_rs_chardev_unregister(struct rdma_rs_chardev *d)
{
	misc_deregister(&d->misc);
	chardev_free(d);
}

unsigned int rdma_rs_chardev_major(const struct rdma_rs_chardev *d)
{
	return MISC_MAJOR;
}

unsigned int rdma_rs_chardev_minor(const struct rdma_rs_chardev *d)
{
	return d->misc.minor;
}

/*
 * An anonymous file served by ctx (an open file object of chardev.rs) and
 * the descriptor reserved for it, not yet installed: *out gets the file
 * and the value is the descriptor, or an error, in which case ctx is still
 * the caller's. From then on the file owns ctx, as an opened device file
 * does, and pins owner until its release. The caller either installs the
 * descriptor (rdma_rs_anon_file_install) or gives both back
 * (rdma_rs_anon_file_abort), which releases the file.
 */
int rdma_rs_anon_file(struct module *owner, const char *name, void *ctx, bool writable,
		      struct file **out)
{
	struct rdma_rs_chardev_file *f;
	struct file *file;
	int fd;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		kfree(f);
		return fd;
	}
	f->ctx = ctx;
	f->owner = owner;
	/* anon_inode_getfile() pins this module, the owner of the fops. */
	file = anon_inode_getfile(name, &chardev_file_fops, f, writable ? O_RDWR : O_RDONLY);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		kfree(f);
		return PTR_ERR(file);
	}
	__module_get(owner);
	*out = file;
	return fd;
}

/*
 * The file behind descriptor fd of the calling task, with a reference, if
 * it is one of ours (a misc device's or an anonymous file of this glue):
 * then *file_ctx is its Rust object. ERR_PTR(-EBADF) if fd is not open,
 * ERR_PTR(-EINVAL) if its file is not ours. The caller drops the
 * reference with rdma_rs_chardev_fput.
 */
struct file *rdma_rs_chardev_fget(int fd, void **file_ctx)
{
	struct rdma_rs_chardev_file *f;
	struct file *file = fget(fd);

	if (!file)
		return ERR_PTR(-EBADF);
	if (file->f_op != &chardev_file_fops) {
		fput(file);
		return ERR_PTR(-EINVAL);
	}
	f = file->private_data;
	*file_ctx = f->ctx;
	return file;
}

void rdma_rs_chardev_fput(struct file *file)
{
	fput(file);
}

void rdma_rs_anon_file_install(int fd, struct file *file)
{
	fd_install(fd, file);
}

void rdma_rs_anon_file_abort(int fd, struct file *file)
{
	put_unused_fd(fd);
	fput(file);
}

unsigned long rdma_rs_vma_start(const struct vm_area_struct *vma)
{
	return vma->vm_start;
}

unsigned long rdma_rs_vma_end(const struct vm_area_struct *vma)
{
	return vma->vm_end;
}

unsigned long rdma_rs_vma_pgoff(const struct vm_area_struct *vma)
{
	return vma->vm_pgoff;
}

bool rdma_rs_vma_is_shared(const struct vm_area_struct *vma)
{
	return vma->vm_flags & VM_SHARED;
}

/*
 * Maps n pages over the whole of vma (in an mmap handler), page by page.
 * Refuses a private writable (copy-on-write) mapping, on which
 * remap_pfn_range() only takes a whole range. On failure nothing stays
 * mapped.
 */
int rdma_rs_vma_map_pages(struct vm_area_struct *vma, struct page **pages, unsigned long n)
{
	unsigned long i, addr = vma->vm_start;
	int ret;

	if (!n || (vma->vm_end - vma->vm_start) >> PAGE_SHIFT != n)
		return -EINVAL;
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY);
	for (i = 0; i < n; i++, addr += PAGE_SIZE) {
		ret = remap_pfn_range(vma, addr, page_to_pfn(pages[i]), PAGE_SIZE,
				      vma->vm_page_prot);
		if (ret) {
			if (addr > vma->vm_start)
				zap_vma_ptes(vma, vma->vm_start, addr - vma->vm_start);
			return ret;
		}
	}
	return 0;
}

/* Removes what rdma_rs_vma_map_pages() mapped (an mmap handler that fails). */
void rdma_rs_vma_zap(struct vm_area_struct *vma)
{
	zap_vma_ptes(vma, vma->vm_start, vma->vm_end - vma->vm_start);
}

static void chardev_vma_open(struct vm_area_struct *vma)
{
	rdma_rs_chardev_vma_open(vma->vm_private_data);
}

static void chardev_vma_close(struct vm_area_struct *vma)
{
	rdma_rs_chardev_vma_close(vma->vm_private_data);
}

static int chardev_vma_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static const struct vm_operations_struct chardev_vm_ops = {
	.open = chardev_vma_open,
	.close = chardev_vma_close,
	.may_split = chardev_vma_may_split,
};

/*
 * Hands state (counted once, for vma) to the mapping, at the end of a
 * successful mmap handler. VM_DONTEXPAND also keeps the VMA from being
 * merged with a neighbour; VM_DONTCOPY keeps it out of children.
 */
void rdma_rs_vma_install(struct vm_area_struct *vma, void *state)
{
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY);
	vma->vm_private_data = state;
	vma->vm_ops = &chardev_vm_ops;
}

/* Poll queues (poll.rs): one lock class for all of them. */
void rdma_rs_pollq_init(struct wait_queue_head *wq)
{
	init_waitqueue_head(wq);
}

void rdma_rs_pollq_wake(struct wait_queue_head *wq, unsigned int mask)
{
	wake_up_interruptible_poll(wq, (__force __poll_t)mask);
}

void rdma_rs_poll_wait(struct file *file, struct wait_queue_head *wq,
		       struct poll_table_struct *pt)
{
	poll_wait(file, wq, pt);
}
