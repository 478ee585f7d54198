// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of pages.rs: page references and byte copies through a
 * temporary kernel mapping, pinning of the current process's pages for a
 * memory region (with the RLIMIT_MEMLOCK accounting every user of pinned
 * memory does), and the reading of a scatter/gather table a peer memory
 * client filled.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "pages_glue.h"

struct page *rdma_rs_page_alloc(void)
{
	return alloc_page(GFP_KERNEL | __GFP_ZERO);
}

void rdma_rs_page_get(struct page *page)
{
	get_page(page);
}

void rdma_rs_page_put(struct page *page)
{
	put_page(page);
}

void rdma_rs_page_write(struct page *page, size_t off, const void *src, size_t len)
{
	void *va = kmap_local_page(page);

	memcpy(va + off, src, len);
	kunmap_local(va);
}

void rdma_rs_page_read(struct page *page, size_t off, void *dst, size_t len)
{
	void *va = kmap_local_page(page);

	memcpy(dst, va + off, len);
	kunmap_local(va);
}

void rdma_rs_page_fill(struct page *page, size_t off, int byte, size_t len)
{
	void *va = kmap_local_page(page);

	memset(va + off, byte, len);
	kunmap_local(va);
}

u64 rdma_rs_page_cmpxchg64(struct page *page, size_t off, u64 old, u64 new)
{
	u64 *va = kmap_local_page(page);
	u64 prev = cmpxchg64((u64 *)((char *)va + off), old, new);

	kunmap_local(va);
	return prev;
}

u64 rdma_rs_page_read64(struct page *page, size_t off)
{
	u64 *va = kmap_local_page(page);
	u64 v = READ_ONCE(*(u64 *)((char *)va + off));

	kunmap_local(va);
	return v;
}

u32 rdma_rs_page_load_acquire32(struct page *page, size_t off)
{
	u32 *va = kmap_local_page(page);
	u32 v = smp_load_acquire((u32 *)((char *)va + off));

	kunmap_local(va);
	return v;
}

void rdma_rs_page_store_release32(struct page *page, size_t off, u32 v)
{
	u32 *va = kmap_local_page(page);

	smp_store_release((u32 *)((char *)va + off), v);
	kunmap_local(va);
}

void *rdma_rs_current_mm(void)
{
	return current->mm;
}

/*
 * Whether npages pages of the current process could be pinned at all, before
 * anything is sized by that number: -ENOMEM beyond the machine's memory, or
 * beyond RLIMIT_MEMLOCK (with what is pinned already) unless CAP_IPC_LOCK;
 * -EFAULT without an mm. rdma_rs_pin_user accounts for real.
 */
long rdma_rs_pin_check(unsigned long npages)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit;

	if (!mm)
		return -EFAULT;
	if (npages > totalram_pages())
		return -ENOMEM;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (npages > limit || atomic64_read(&mm->pinned_vm) > limit - npages)
		if (!capable(CAP_IPC_LOCK))
			return -ENOMEM;
	return 0;
}

/*
 * Pins npages pages of the current process from addr (page aligned) into
 * pages, long term, writable if write. Accounts them in mm->pinned_vm
 * against RLIMIT_MEMLOCK (unless CAP_IPC_LOCK). On success returns npages
 * and a reference to the mm in *mm_out, for rdma_rs_unpin_user; on failure
 * a -errno with nothing pinned or accounted.
 */
long rdma_rs_pin_user(u64 addr, unsigned long npages, bool write, struct page **pages,
		      void **mm_out)
{
	struct mm_struct *mm = current->mm;
	unsigned int flags = FOLL_LONGTERM | (write ? FOLL_WRITE : 0);
	unsigned long limit, done = 0;
	long ret;

	if (!mm)
		return -EFAULT;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (atomic64_add_return(npages, &mm->pinned_vm) > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	while (done < npages) {
		unsigned long chunk = min_t(unsigned long, npages - done, 512);

		ret = pin_user_pages_fast(addr + done * PAGE_SIZE, chunk, flags, pages + done);
		if (ret <= 0) {
			if (ret == 0)
				ret = -EFAULT;
			goto fail;
		}
		done += ret;
		cond_resched();
	}
	mmgrab(mm);
	*mm_out = mm;
	return npages;
fail:
	unpin_user_pages(pages, done);
	atomic64_sub(npages, &mm->pinned_vm);
	return ret;
}

void rdma_rs_unpin_user(void *mmp, struct page **pages, unsigned long npages, bool dirty)
{
	struct mm_struct *mm = mmp;

	unpin_user_pages_dirty_lock(pages, npages, dirty);
	atomic64_sub(npages, &mm->pinned_vm);
	mmdrop(mm);
}

struct sg_table *rdma_rs_sgt_alloc(void)
{
	return kzalloc(sizeof(struct sg_table), GFP_KERNEL);
}

void rdma_rs_sgt_free(struct sg_table *sgt)
{
	kfree(sgt);
}

/*
 * Reads the first nmap entries of a table a peer memory client filled and
 * mapped: each must hold whole pages with a struct page (a software device
 * reaches memory through its pages). Writes up to max page pointers to
 * out, taking a reference on each; returns how many, or (with no
 * reference kept) -EOPNOTSUPP for an entry without a struct page (a client
 * that maps for DMA only: a software device cannot reach such memory),
 * -EINVAL for an entry of another shape, -E2BIG past max.
 */
long rdma_rs_sgt_collect(struct sg_table *sgt, unsigned int nmap, struct page **out,
			 unsigned long max)
{
	struct scatterlist *sg;
	unsigned long n = 0, i;
	unsigned int e;
	long ret;

	if (!sgt->sgl || nmap > sgt->nents)
		return -EINVAL;
	for_each_sg(sgt->sgl, sg, nmap, e) {
		struct page *page = sg_page(sg);
		unsigned long pages;

		if (!page) {
			ret = -EOPNOTSUPP;
			goto fail;
		}
		if (sg->offset % PAGE_SIZE || !sg->length || sg->length % PAGE_SIZE) {
			ret = -EINVAL;
			goto fail;
		}
		pages = sg->length / PAGE_SIZE;
		page = nth_page(page, sg->offset / PAGE_SIZE);
		for (i = 0; i < pages; i++) {
			if (n == max) {
				ret = -E2BIG;
				goto fail;
			}
			out[n] = nth_page(page, i);
			get_page(out[n]);
			n++;
		}
	}
	return n;
fail:
	while (n)
		put_page(out[--n]);
	return ret;
}
