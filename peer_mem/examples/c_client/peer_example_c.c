// SPDX-License-Identifier: GPL-2.0
/*
 * peer_example_c: an example peer memory client, in C.
 *
 * It plays the part of a GPU driver: mmap() of /dev/peer_example_c hands
 * out "device memory" (zeroed host pages this module owns) mapped with
 * remap_pfn_range(), so the mapping is VM_IO | VM_PFNMAP and the RDMA core
 * cannot pin it as ordinary user memory. The module registers itself with
 * peer_mem (include/rdma/peer_mem.h) and gives those pages to the core when
 * a memory region is registered on such a mapping. Its ioctls
 * (../peer_example_uapi.h) let a test invalidate regions, read the memory
 * through the module's own view, make the callbacks fail, and read the
 * counts of the core's calls.
 *
 * Objects:
 *  - a buffer: the pages of one mmap(), refcounted; freed when its mapping
 *    is gone and no context holds it;
 *  - a map record: one per mapping (one VMA: splitting, moving and copying
 *    the VMA are refused), found by acquire() and the ioctls;
 *  - a context: one per acquire() answered 1, refcounted: the core holds a
 *    reference from acquire to release, an invalidation in progress holds
 *    one while it calls the core.
 *
 * Locking: pex_lock (a spinlock) protects the lists, the state of every
 * context and map record, and the counters. It is never held while the
 * core's invalidate callback runs (the core calls dma_unmap and put_pages
 * of the same context from inside it, and a deregistration on another
 * thread may release the context meanwhile), nor while user memory
 * is touched, nor while anything is allocated. Buffers and contexts are
 * freed outside it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include <rdma/peer_mem.h>

#include "peer_example_uapi.h"

#define PEX_DEFAULT_NAME "peer_example_c"

#define PEX_MODES (PEER_EX_MODE_DECLINE | PEER_EX_MODE_FAIL_GET_PAGES | \
		   PEER_EX_MODE_FAIL_DMA_MAP | PEER_EX_MODE_DMA_ONLY | \
		   PEER_EX_MODE_BAD_PAGE_SIZE | PEER_EX_MODE_BAD_NMAP | \
		   PEER_EX_MODE_BAD_SG)

static bool unmaps;
module_param(unmaps, bool, 0444);
MODULE_PARM_DESC(unmaps,
		 "Register with PEER_MEM_INVALIDATE_UNMAPS: the client tears its mappings down itself on invalidation");

static bool dma_device;
module_param(dma_device, bool, 0444);
MODULE_PARM_DESC(dma_device,
		 "Register as GPU clients do: without PEER_MEM_CPU_PAGES, so that dma_map needs a DMA device (the core must not use this client's memory on a device without one)");

static char *pex_name_param;
module_param_named(name, pex_name_param, charp, 0444);
MODULE_PARM_DESC(name, "The client name to register (default " PEX_DEFAULT_NAME ")");

/* The pages of one mmap(). */
struct pex_buffer {
	struct kref ref;
	unsigned long npages;
	struct page **pages;
};

/* One mapping of a buffer into a process. */
struct pex_map {
	struct list_head node;		/* in pex_maps */
	struct pex_buffer *buf;		/* the mapping's reference */
	struct mm_struct *mm;		/* compared, never dereferenced */
	unsigned long start;		/* the VMA's range */
	unsigned long end;
	unsigned int vmas;		/* VMAs that point here (see pex_vm_open) */
};

/* One range the core acquired. */
struct pex_ctx {
	struct list_head node;		/* in pex_ctxs, from acquire to release */
	struct list_head inval_node;	/* on one INVALIDATE's list */
	struct kref ref;
	struct pex_buffer *buf;		/* the context's reference */
	unsigned long addr;		/* the range acquired */
	size_t size;
	unsigned long off;		/* offset of addr in buf */
	u64 core_context;		/* given by get_pages */
	/* The core's table, filled by get_pages; used only in the core's calls. */
	struct sg_table *sgt;
	struct sg_table table;		/* a copy of *sgt: what we free */
	bool pages;			/* table holds entries we allocated */
	bool mapped;			/* dma_map done, dma_unmap not yet */
	bool invalidated;		/* an INVALIDATE took it */
	bool released;			/* release was called */
};

static DEFINE_SPINLOCK(pex_lock);
static LIST_HEAD(pex_maps);
static LIST_HEAD(pex_ctxs);
static struct peer_ex_stats pex_stats;	/* under pex_lock */
static u32 pex_mode;			/* PEER_EX_MODE_*, READ_ONCE */

static void *pex_handle;
static invalidate_peer_memory pex_invalidate;

/* ---- buffers ------------------------------------------------------------ */

static void pex_buffer_free(struct kref *ref)
{
	struct pex_buffer *buf = container_of(ref, struct pex_buffer, ref);
	unsigned long i;

	for (i = 0; i < buf->npages; i++)
		__free_page(buf->pages[i]);
	kvfree(buf->pages);
	kfree(buf);
}

static void pex_buffer_put(struct pex_buffer *buf)
{
	kref_put(&buf->ref, pex_buffer_free);
}

static struct pex_buffer *pex_buffer_alloc(unsigned long npages)
{
	struct pex_buffer *buf;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return NULL;
	buf->pages = kvcalloc(npages, sizeof(*buf->pages), GFP_KERNEL);
	if (!buf->pages) {
		kfree(buf);
		return NULL;
	}
	kref_init(&buf->ref);
	/* npages counts the pages allocated, so a failure frees just those. */
	for (buf->npages = 0; buf->npages < npages; buf->npages++) {
		struct page *page = alloc_page(GFP_HIGHUSER | __GFP_ZERO);

		if (!page) {
			pex_buffer_put(buf);
			return NULL;
		}
		buf->pages[buf->npages] = page;
	}
	return buf;
}

/* Sets bytes [from, to) of @buf to @val. */
static void pex_buffer_fill(struct pex_buffer *buf, unsigned long from,
			    unsigned long to, u8 val)
{
	while (from < to) {
		unsigned long in_page = from & ~PAGE_MASK;
		unsigned long n = min(to - from, PAGE_SIZE - in_page);
		void *kaddr = kmap_local_page(buf->pages[from >> PAGE_SHIFT]);

		memset(kaddr + in_page, val, n);
		kunmap_local(kaddr);
		from += n;
		cond_resched();
	}
}

/* Copies bytes [from, from + len) of @buf to user memory. */
static int pex_buffer_read(struct pex_buffer *buf, unsigned long from,
			   unsigned long len, void __user *dst)
{
	while (len) {
		unsigned long in_page = from & ~PAGE_MASK;
		unsigned long n = min(len, PAGE_SIZE - in_page);
		void *kaddr = kmap_local_page(buf->pages[from >> PAGE_SHIFT]);
		unsigned long left = copy_to_user(dst, kaddr + in_page, n);

		kunmap_local(kaddr);
		if (left)
			return -EFAULT;
		from += n;
		dst += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

/* ---- map records -------------------------------------------------------- */

/* The mapping of @mm that holds all of [start, end). Under pex_lock. */
static struct pex_map *pex_find_map(struct mm_struct *mm, unsigned long start,
				    unsigned long end)
{
	struct pex_map *m;

	lockdep_assert_held(&pex_lock);
	list_for_each_entry(m, &pex_maps, node)
		if (m->mm == mm && start >= m->start && end <= m->end)
			return m;
	return NULL;
}

/* The mapping of @buf in @mm, if it is still mapped there. Under pex_lock. */
static struct pex_map *pex_find_buf_map(struct mm_struct *mm,
					struct pex_buffer *buf)
{
	struct pex_map *m;

	lockdep_assert_held(&pex_lock);
	list_for_each_entry(m, &pex_maps, node)
		if (m->mm == mm && m->buf == buf)
			return m;
	return NULL;
}

/*
 * The VMA is never split, moved nor copied (see the operations below), so
 * a map record belongs to one VMA. open() is still called on the
 * temporary copy mremap() makes before pex_vm_mremap() refuses the move,
 * and close() when that copy goes: the count keeps the record until the
 * original VMA is closed.
 */
static void pex_vm_open(struct vm_area_struct *vma)
{
	struct pex_map *m = vma->vm_private_data;

	spin_lock(&pex_lock);
	m->vmas++;
	spin_unlock(&pex_lock);
}

static void pex_vm_close(struct vm_area_struct *vma)
{
	struct pex_map *m = vma->vm_private_data;
	bool last;

	spin_lock(&pex_lock);
	last = --m->vmas == 0;
	if (last)
		list_del(&m->node);
	spin_unlock(&pex_lock);
	if (last) {
		/* The page tables no longer point at the pages. */
		pex_buffer_put(m->buf);
		kfree(m);
	}
}

/* Partial munmap(), mprotect() and the like would split the VMA. */
static int pex_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

/* A moved mapping would no longer be where the record says. */
static int pex_vm_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

static const struct vm_operations_struct pex_vm_ops = {
	.open = pex_vm_open,
	.close = pex_vm_close,
	.may_split = pex_vm_may_split,
	.mremap = pex_vm_mremap,
};

static int pex_mmap(struct file *file, struct vm_area_struct *vma)
{
	unsigned long size = vma->vm_end - vma->vm_start;
	struct pex_buffer *buf;
	struct pex_map *m;
	unsigned long i;
	int ret;

	/* VM_MAYSHARE: MAP_SHARED, even on a file opened read-only. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	/*
	 * Offset 0 only: besides having no meaning here, it keeps the VMA
	 * from being merged with a neighbour of ours (their page offsets
	 * never line up).
	 */
	if (vma->vm_pgoff)
		return -EINVAL;
	if (size > PEER_EX_MAX_MAP)
		return -EINVAL;

	buf = pex_buffer_alloc(size >> PAGE_SHIFT);
	if (!buf)
		return -ENOMEM;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		pex_buffer_put(buf);
		return -ENOMEM;
	}

	/* remap_pfn_range() adds VM_IO | VM_PFNMAP | VM_DONTEXPAND. */
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	for (i = 0; i < buf->npages; i++) {
		ret = remap_pfn_range(vma, vma->vm_start + (i << PAGE_SHIFT),
				      page_to_pfn(buf->pages[i]), PAGE_SIZE,
				      vma->vm_page_prot);
		if (ret) {
			/*
			 * Unmap what was mapped before the pages go back to
			 * the allocator (another thread could reach them).
			 */
			if (i)
				zap_vma_ptes(vma, vma->vm_start, i << PAGE_SHIFT);
			kfree(m);
			pex_buffer_put(buf);
			return ret;
		}
	}

	m->buf = buf;
	m->mm = vma->vm_mm;
	m->start = vma->vm_start;
	m->end = vma->vm_end;
	m->vmas = 1;
	vma->vm_private_data = m;
	vma->vm_ops = &pex_vm_ops;

	spin_lock(&pex_lock);
	list_add_tail(&m->node, &pex_maps);
	spin_unlock(&pex_lock);
	return 0;
}

/* ---- contexts ----------------------------------------------------------- */

static void pex_ctx_free(struct kref *ref)
{
	struct pex_ctx *ctx = container_of(ref, struct pex_ctx, ref);

	pex_buffer_put(ctx->buf);
	kfree(ctx);
}

static void pex_ctx_put(struct pex_ctx *ctx)
{
	kref_put(&ctx->ref, pex_ctx_free);
}

/*
 * Frees the entries get_pages put in the core's table, through our copy
 * of it: outside its own callbacks (an UNMAPS client's invalidation,
 * release) the core's table may already be gone. sg_free_table() only
 * kfree()s or free_page()s, so this is done under pex_lock, which makes
 * the one that frees (put_pages, release, or an UNMAPS client's
 * invalidation) the only one.
 */
static void pex_ctx_free_table(struct pex_ctx *ctx)
{
	lockdep_assert_held(&pex_lock);
	if (!ctx->pages)
		return;
	sg_free_table(&ctx->table);
	ctx->pages = false;
	ctx->mapped = false;
}

/* Whether @ctx was invalidated by us, for a client whose invalidation unmaps. */
static bool pex_ctx_unmapped_by_inval(struct pex_ctx *ctx)
{
	lockdep_assert_held(&pex_lock);
	return unmaps && ctx->invalidated;
}

/* ---- the peer memory client --------------------------------------------- */

static int pex_acquire(unsigned long addr, size_t size,
		       void *peer_mem_private_data, char *peer_mem_name,
		       void **client_context)
{
	struct mm_struct *mm = current->mm;
	unsigned long end;
	struct pex_ctx *ctx;
	struct pex_map *m;
	int ret = 0;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	spin_lock(&pex_lock);
	if (ctx && mm && size && !check_add_overflow(addr, size, &end) &&
	    !(READ_ONCE(pex_mode) & PEER_EX_MODE_DECLINE)) {
		m = pex_find_map(mm, addr, end);
		if (m) {
			kref_init(&ctx->ref);
			INIT_LIST_HEAD(&ctx->inval_node);
			kref_get(&m->buf->ref);
			ctx->buf = m->buf;
			ctx->addr = addr;
			ctx->size = size;
			ctx->off = addr - m->start;
			list_add_tail(&ctx->node, &pex_ctxs);
			ret = 1;
		}
	}
	if (ret) {
		pex_stats.acquire_yes++;
		pex_stats.live_contexts++;
	} else {
		pex_stats.acquire_no++;
	}
	spin_unlock(&pex_lock);

	if (!ret) {
		kfree(ctx);
		return 0;
	}
	*client_context = ctx;
	return 1;
}

static int pex_get_pages(unsigned long addr, size_t size, int write, int force,
			 struct sg_table *sg_head, void *client_context,
			 u64 core_context)
{
	struct pex_ctx *ctx = client_context;
	unsigned long first, last, off, end;
	struct scatterlist *sg;
	unsigned int i;
	bool busy;
	int ret;

	if (READ_ONCE(pex_mode) & PEER_EX_MODE_FAIL_GET_PAGES)
		return -ENOMEM;
	/* The range must be within the one acquired. */
	if (!size || check_add_overflow(addr, size, &end) ||
	    addr < ctx->addr || end > ctx->addr + ctx->size)
		return -EINVAL;

	spin_lock(&pex_lock);
	busy = ctx->pages || ctx->released;
	spin_unlock(&pex_lock);
	if (busy)
		return -EBUSY;

	/* One entry per page of [addr & PAGE_MASK, PAGE_ALIGN(end)). */
	off = ctx->off + (addr - ctx->addr);
	first = off >> PAGE_SHIFT;
	last = (off + size - 1) >> PAGE_SHIFT;
	ret = sg_alloc_table(sg_head, last - first + 1, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sg(sg_head->sgl, sg, sg_head->orig_nents, i)
		sg_set_page(sg, ctx->buf->pages[first + i], PAGE_SIZE, 0);

	spin_lock(&pex_lock);
	ctx->sgt = sg_head;
	ctx->table = *sg_head;
	ctx->core_context = core_context;
	ctx->pages = true;
	pex_stats.get_pages++;
	spin_unlock(&pex_lock);
	return 0;
}

/*
 * The "DMA addresses" are the pages' physical addresses: the core's devices
 * are software devices that reach the memory through sg_page(), and the
 * device given may have no DMA operations, so the DMA API is not used.
 */
static int pex_dma_map(struct sg_table *sg_head, void *client_context,
		       struct device *dma_device_arg, int dmasync, int *nmap)
{
	struct pex_ctx *ctx = client_context;
	bool pages, mapped, invalidated;
	struct scatterlist *sg;
	unsigned int i;
	u32 mode = READ_ONCE(pex_mode);
	int ret = 0;

	if (mode & PEER_EX_MODE_FAIL_DMA_MAP)
		return -EIO;
	/* Registered as needing a DMA device: a NULL one is the core's bug. */
	if (dma_device && !dma_device_arg) {
		pr_warn_ratelimited("dma_map without a DMA device\n");
		return -EFAULT;
	}

	/* Under the lock: an UNMAPS invalidation may free the table. */
	spin_lock(&pex_lock);
	pages = ctx->pages;
	mapped = ctx->mapped;
	invalidated = ctx->invalidated;
	if (!pages || ctx->sgt != sg_head || sg_head->sgl != ctx->table.sgl ||
	    mapped || invalidated) {
		ret = -EINVAL;
	} else {
		for_each_sg(sg_head->sgl, sg, sg_head->nents, i) {
			sg_dma_address(sg) = page_to_phys(sg_page(sg));
			sg_dma_len(sg) = sg->length;
			/* As GPU clients do: DMA addresses, no pages. */
			if (mode & PEER_EX_MODE_DMA_ONLY)
				sg_assign_page(sg, NULL);
		}
		*nmap = sg_head->nents;
		if (mode & PEER_EX_MODE_BAD_NMAP)
			*nmap = INT_MAX;
		if (mode & PEER_EX_MODE_BAD_SG)
			sg_head->sgl->length = PAGE_SIZE / 2;
		ctx->mapped = true;
		pex_stats.dma_map++;
	}
	spin_unlock(&pex_lock);
	if (ret)
		pr_warn_ratelimited("dma_map of a context that cannot be mapped (pages %d mapped %d invalidated %d)\n",
				    pages, mapped, invalidated);
	return ret;
}

static int pex_dma_unmap(struct sg_table *sg_head, void *client_context,
			 struct device *dma_device)
{
	struct pex_ctx *ctx = client_context;

	spin_lock(&pex_lock);
	pex_stats.dma_unmap++;
	if (pex_ctx_unmapped_by_inval(ctx))
		pex_stats.unmap_after_inval++;
	else
		ctx->mapped = false;
	spin_unlock(&pex_lock);
	return 0;
}

static void pex_put_pages(struct sg_table *sg_head, void *client_context)
{
	struct pex_ctx *ctx = client_context;
	bool mismatch = false;

	spin_lock(&pex_lock);
	pex_stats.put_pages++;
	if (pex_ctx_unmapped_by_inval(ctx)) {
		/* Our invalidation frees the table, not the core. */
		pex_stats.unmap_after_inval++;
	} else if (ctx->pages) {
		mismatch = ctx->sgt != sg_head;
		/* The core's table, valid in this call, is left empty. */
		if (!mismatch)
			memset(sg_head, 0, sizeof(*sg_head));
		pex_ctx_free_table(ctx);
	}
	spin_unlock(&pex_lock);
	if (mismatch)
		pr_warn_ratelimited("put_pages with another table than get_pages filled\n");
}

static unsigned long pex_get_page_size(void *client_context)
{
	if (READ_ONCE(pex_mode) & PEER_EX_MODE_BAD_PAGE_SIZE)
		return 1UL << 62;
	return PAGE_SIZE;
}

static void pex_release(void *client_context)
{
	struct pex_ctx *ctx = client_context;
	bool missed_put = false;

	spin_lock(&pex_lock);
	pex_stats.release++;
	pex_stats.live_contexts--;
	list_del_init(&ctx->node);
	ctx->released = true;
	/*
	 * The table may still be ours to free: an UNMAPS client's
	 * invalidation that has not got to it yet (the core released the
	 * context from inside the callback), or a core that skipped
	 * put_pages (a bug: reported).
	 */
	if (ctx->pages) {
		missed_put = !pex_ctx_unmapped_by_inval(ctx);
		pex_ctx_free_table(ctx);
	}
	spin_unlock(&pex_lock);
	if (missed_put)
		pr_warn_ratelimited("release of a context whose pages were not put\n");
	pex_ctx_put(ctx);
}

/* Name and version are filled at init (module parameters). */
static struct peer_memory_client_ex pex_client = {
	.client = {
		.acquire = pex_acquire,
		.get_pages = pex_get_pages,
		.dma_map = pex_dma_map,
		.dma_unmap = pex_dma_unmap,
		.put_pages = pex_put_pages,
		.get_page_size = pex_get_page_size,
		.release = pex_release,
	},
};

/* ---- ioctls ------------------------------------------------------------- */

/*
 * The range [addr, addr + len) as [*start, *end); len 0 is the whole
 * address space. -EINVAL if it wraps.
 */
static int pex_user_range(u64 addr, u64 len, unsigned long *start,
			  unsigned long *end)
{
	if (!len) {
		*start = 0;
		*end = ULONG_MAX;
		return 0;
	}
	/* The first two tests matter where unsigned long is 32 bits. */
	if (addr != (unsigned long)addr || len != (unsigned long)len ||
	    check_add_overflow((unsigned long)addr, (unsigned long)len, end))
		return -EINVAL;
	*start = addr;
	return 0;
}

/*
 * Whether @ctx's memory, where @mm maps its buffer, overlaps
 * [start, end). Under pex_lock.
 */
static bool pex_ctx_in_range(struct mm_struct *mm, struct pex_ctx *ctx,
			     unsigned long start, unsigned long end)
{
	struct pex_map *m = pex_find_buf_map(mm, ctx->buf);
	unsigned long cstart, cend;

	if (!m)
		return false;
	cstart = m->start + ctx->off;
	cend = cstart + ctx->size;
	return cstart < end && start < cend;
}

/*
 * Sets the bytes of @mm's mappings in [start, end) to @val, one mapping at
 * a time in address order (the buffer is held, the lock is not, while it
 * is written).
 */
static void pex_poison(struct mm_struct *mm, unsigned long start,
		       unsigned long end, u8 val)
{
	unsigned long cursor = start;

	for (;;) {
		struct pex_buffer *buf = NULL;
		unsigned long from = 0, to = 0;
		struct pex_map *m, *next = NULL;

		spin_lock(&pex_lock);
		list_for_each_entry(m, &pex_maps, node) {
			if (m->mm != mm || m->end <= cursor || m->start >= end)
				continue;
			if (!next || m->start < next->start)
				next = m;
		}
		if (next) {
			buf = next->buf;
			kref_get(&buf->ref);
			from = max(cursor, next->start) - next->start;
			to = min(end, next->end) - next->start;
			cursor = next->end;
		}
		spin_unlock(&pex_lock);
		if (!buf)
			return;
		pex_buffer_fill(buf, from, to, val);
		pex_buffer_put(buf);
	}
}

static long pex_ioc_invalidate(void __user *uarg)
{
	struct mm_struct *mm = current->mm;
	struct peer_ex_invalidate inv;
	struct pex_ctx *ctx, *tmp;
	unsigned long start, end;
	LIST_HEAD(todo);
	u32 done = 0;
	int err = 0;

	if (copy_from_user(&inv, uarg, sizeof(inv)))
		return -EFAULT;
	if (pex_user_range(inv.addr, inv.len, &start, &end))
		return -EINVAL;

	/* Take the contexts, marked so that no other invalidation does. */
	spin_lock(&pex_lock);
	list_for_each_entry(ctx, &pex_ctxs, node) {
		if (!ctx->pages || ctx->invalidated ||
		    !pex_ctx_in_range(mm, ctx, start, end))
			continue;
		ctx->invalidated = true;
		kref_get(&ctx->ref);
		list_add_tail(&ctx->inval_node, &todo);
	}
	spin_unlock(&pex_lock);

	/*
	 * Tell the core, without the lock: it may put the pages and release
	 * the context from inside the callback. A context released by a
	 * deregistration since it was taken is still reported: the core
	 * must take a core_context it no longer knows (0 or -EINVAL).
	 */
	list_for_each_entry_safe(ctx, tmp, &todo, inval_node) {
		int ret = pex_invalidate(pex_handle, ctx->core_context);

		spin_lock(&pex_lock);
		pex_stats.invalidations++;
		/* An UNMAPS client's invalidation tears the mapping down. */
		if (unmaps)
			pex_ctx_free_table(ctx);
		spin_unlock(&pex_lock);

		if (!ret) {
			done++;
		} else if (ret != -EINVAL) {
			pr_warn("the core's invalidate callback failed: %d\n", ret);
			err = -EIO;
		}
		/*
		 * -EINVAL: the core no longer knows the region (deregistered
		 * since it was taken): nothing was left to invalidate.
		 */
		list_del_init(&ctx->inval_node);
		pex_ctx_put(ctx);
	}

	if (inv.poison)
		pex_poison(mm, start, end, inv.poison & 0xff);

	inv.invalidated = done;
	if (copy_to_user(uarg, &inv, sizeof(inv)))
		return -EFAULT;
	return err;
}

static long pex_ioc_read(void __user *uarg)
{
	struct pex_buffer *buf = NULL;
	unsigned long start, end, off = 0;
	struct peer_ex_read rd;
	struct pex_map *m;
	int ret;

	if (copy_from_user(&rd, uarg, sizeof(rd)))
		return -EFAULT;
	if (!rd.len || pex_user_range(rd.addr, rd.len, &start, &end))
		return -EINVAL;

	spin_lock(&pex_lock);
	m = pex_find_map(current->mm, start, end);
	if (m) {
		buf = m->buf;
		kref_get(&buf->ref);
		off = start - m->start;
	}
	spin_unlock(&pex_lock);
	if (!buf)
		return -EINVAL;

	/* Without the lock: the copy may fault. */
	ret = pex_buffer_read(buf, off, rd.len, u64_to_user_ptr(rd.buf));
	pex_buffer_put(buf);
	return ret;
}

static long pex_ioc_stats(void __user *uarg)
{
	struct peer_ex_stats st;

	spin_lock(&pex_lock);
	st = pex_stats;
	spin_unlock(&pex_lock);
	st.unmaps = unmaps;
	st.reserved = 0;
	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long pex_ioc_set_mode(void __user *uarg)
{
	struct peer_ex_mode mode;

	if (copy_from_user(&mode, uarg, sizeof(mode)))
		return -EFAULT;
	if (mode.flags & ~PEX_MODES)
		return -EINVAL;
	WRITE_ONCE(pex_mode, mode.flags);
	return 0;
}

static long pex_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case PEER_EX_IOC_SET_MODE:
		return pex_ioc_set_mode(uarg);
	case PEER_EX_IOC_INVALIDATE:
		return pex_ioc_invalidate(uarg);
	case PEER_EX_IOC_READ:
		return pex_ioc_read(uarg);
	case PEER_EX_IOC_STATS:
		return pex_ioc_stats(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations pex_fops = {
	.owner = THIS_MODULE,
	.mmap = pex_mmap,
	.unlocked_ioctl = pex_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice pex_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = PEX_DEFAULT_NAME,
	.fops = &pex_fops,
};

/* ---- module ------------------------------------------------------------- */

static int __init pex_init(void)
{
	struct peer_memory_client *c = &pex_client.client;
	const char *name = pex_name_param ? pex_name_param : PEX_DEFAULT_NAME;
	int ret;

	if (strscpy(c->name, name, sizeof(c->name)) < 0) {
		pr_err("client name too long\n");
		return -EINVAL;
	}
	strscpy(c->version, "1.0", sizeof(c->version));
	/*
	 * The extended form (the last byte of version says so) for its
	 * flags: PEER_MEM_CPU_PAGES (our pages have a struct page and
	 * dma_map needs no DMA device, so software devices can use them)
	 * unless dma_device=1; PEER_MEM_INVALIDATE_UNMAPS with unmaps=1.
	 */
	c->version[IB_PEER_MEMORY_VER_MAX - 1] = 1;
	pex_client.ex_size = sizeof(pex_client);
	pex_client.flags = (dma_device ? 0 : PEER_MEM_CPU_PAGES) |
			   (unmaps ? PEER_MEM_INVALIDATE_UNMAPS : 0);

	pex_handle = ib_register_peer_memory_client(c, &pex_invalidate);
	if (!pex_handle) {
		pr_err("registration of client \"%s\" refused\n", c->name);
		return -EINVAL;
	}
	if (!pex_invalidate) {
		/* This client cannot work without invalidation. */
		pr_err("the core gave no invalidate callback\n");
		ib_unregister_peer_memory_client(pex_handle);
		return -EINVAL;
	}

	/* Last: the device appears only when everything behind it is ready. */
	ret = misc_register(&pex_misc);
	if (ret) {
		ib_unregister_peer_memory_client(pex_handle);
		return ret;
	}
	pr_info("registered client \"%s\"%s\n", c->name,
		unmaps ? " (invalidation unmaps)" : "");
	return 0;
}

static void __exit pex_exit(void)
{
	bool left;

	/*
	 * No file is open (each holds the module), so no mapping exists.
	 * The core invalidates and releases the contexts it still holds:
	 * their release frees them, and with them the last buffers.
	 */
	ib_unregister_peer_memory_client(pex_handle);
	misc_deregister(&pex_misc);

	spin_lock(&pex_lock);
	left = !list_empty(&pex_ctxs) || !list_empty(&pex_maps);
	spin_unlock(&pex_lock);
	if (left)
		pr_err("contexts or mappings left after unregistration\n");
}

module_init(pex_init);
module_exit(pex_exit);
MODULE_DESCRIPTION("Example peer memory client (C): mmap-able device memory for Peer-Direct tests");
MODULE_LICENSE("GPL");
