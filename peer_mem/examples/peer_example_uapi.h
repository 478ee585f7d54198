/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The user-space interface of the example peer memory clients
 * (peer_mem/examples): the C one (/dev/peer_example_c) and the Rust one
 * (/dev/peer_example_rust) implement it alike.
 *
 * Each mmap() of the device allocates "device memory" (zeroed host pages
 * the client owns) and maps it into the caller, as a GPU driver maps its
 * memory: the mapping is VM_IO | VM_PFNMAP, so pinning it as ordinary
 * memory fails and only the client can give its pages to the RDMA core.
 * The memory lives until it is unmapped and no memory region uses it.
 */
#ifndef PEER_EXAMPLE_UAPI_H
#define PEER_EXAMPLE_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* The largest mmap() the clients take. */
#define PEER_EX_MAX_MAP (64u << 20)

/* What a client does when the core asks it (PEER_EX_IOC_SET_MODE). */
enum {
	PEER_EX_MODE_DECLINE = 1 << 0,	     /* acquire answers "not mine" */
	PEER_EX_MODE_FAIL_GET_PAGES = 1 << 1, /* get_pages fails, -ENOMEM */
	PEER_EX_MODE_FAIL_DMA_MAP = 1 << 2,   /* dma_map fails, -EIO */
	/*
	 * Misbehaviours of the C client only (the core must refuse them with
	 * an errno and leave nothing of the client's mapped or pinned):
	 */
	PEER_EX_MODE_DMA_ONLY = 1 << 3,	      /* dma_map leaves DMA addresses, no pages */
	PEER_EX_MODE_BAD_PAGE_SIZE = 1 << 4,  /* get_page_size returns 1 << 62 */
	PEER_EX_MODE_BAD_NMAP = 1 << 5,	      /* dma_map sets *nmap = INT_MAX */
	PEER_EX_MODE_BAD_SG = 1 << 6,	      /* dma_map leaves a half-page entry */
};

struct peer_ex_mode {
	__u32 flags; /* PEER_EX_MODE_* */
	__u32 reserved;
};

/*
 * Invalidates every region the core built on the client's memory in
 * [addr, addr + len) of the caller's mappings (len 0: all of the caller's
 * mappings): the core's invalidate callback is called once per region and
 * has returned when the ioctl does. Then, if poison is non-zero, every byte
 * of that memory is set to (poison & 0xff), so that a test sees any RDMA
 * write that lands afterwards.
 */
struct peer_ex_invalidate {
	__u64 addr;
	__u64 len;
	__u32 poison;
	__u32 invalidated; /* out: regions invalidated */
};

/*
 * Copies len bytes of the client's memory at user address addr (inside
 * one of the caller's mappings) to buf: the client's own view of its
 * memory, through its kernel address, not through the user mapping.
 */
struct peer_ex_read {
	__u64 addr;
	__u64 len;
	__u64 buf;
};

/* The client's own counts of the core's calls, since it was loaded. */
struct peer_ex_stats {
	__u64 acquire_yes;	/* acquire answered 1 */
	__u64 acquire_no;	/* acquire answered 0 */
	__u64 get_pages;	/* get_pages succeeded */
	__u64 put_pages;
	__u64 dma_map;		/* dma_map succeeded */
	__u64 dma_unmap;
	__u64 release;
	__u64 invalidations;	/* invalidate callbacks made */
	__u64 unmap_after_inval;/* dma_unmap/put_pages of an invalidated region
				 * by an UNMAPS client's core: must stay 0 */
	__u64 live_contexts;	/* acquired, not released */
	__u32 unmaps;		/* registered with PEER_MEM_INVALIDATE_UNMAPS */
	__u32 reserved;
};

#define PEER_EX_IOC_SET_MODE	_IOW('P', 1, struct peer_ex_mode)
#define PEER_EX_IOC_INVALIDATE	_IOWR('P', 2, struct peer_ex_invalidate)
#define PEER_EX_IOC_READ	_IOW('P', 3, struct peer_ex_read)
#define PEER_EX_IOC_STATS	_IOR('P', 4, struct peer_ex_stats)

#endif /* PEER_EXAMPLE_UAPI_H */
