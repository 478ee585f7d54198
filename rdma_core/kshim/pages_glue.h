/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pages for memory regions on user memory and on peer memory (pages.rs):
 * single pages, pinned user pages, and the scatter/gather tables peer
 * memory clients fill.
 */
#ifndef RDMA_RS_PAGES_GLUE_H
#define RDMA_RS_PAGES_GLUE_H

#include <linux/types.h>

struct page;
struct sg_table;

struct page *rdma_rs_page_alloc(void);
void rdma_rs_page_get(struct page *page);
void rdma_rs_page_put(struct page *page);
void rdma_rs_page_write(struct page *page, size_t off, const void *src, size_t len);
void rdma_rs_page_read(struct page *page, size_t off, void *dst, size_t len);
void rdma_rs_page_fill(struct page *page, size_t off, int byte, size_t len);
u64 rdma_rs_page_cmpxchg64(struct page *page, size_t off, u64 old, u64 new);
u64 rdma_rs_page_read64(struct page *page, size_t off);
u32 rdma_rs_page_load_acquire32(struct page *page, size_t off);
void rdma_rs_page_store_release32(struct page *page, size_t off, u32 v);

long rdma_rs_pin_check(unsigned long npages);
long rdma_rs_pin_user(u64 addr, unsigned long npages, bool write, struct page **pages,
		      void **mm_out);
void rdma_rs_unpin_user(void *mm, struct page **pages, unsigned long npages, bool dirty);
void *rdma_rs_current_mm(void);

struct sg_table *rdma_rs_sgt_alloc(void);
void rdma_rs_sgt_free(struct sg_table *sgt);
long rdma_rs_sgt_collect(struct sg_table *sgt, unsigned int nmap, struct page **out,
			 unsigned long max);

#endif
