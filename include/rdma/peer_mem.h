/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Peer-Direct: the API through which a driver that owns memory of its own
 * (a GPU, an accelerator, a storage device) lets RDMA devices register
 * memory regions on it. The peer_mem module of rdma-rs provides it.
 *
 * The layout, names and calling conventions are those of the peer_mem.h
 * that today's peer memory clients carry a copy of (MLNX_OFED 5 and later;
 * the one NVIDIA ships with nvidia-peermem): seven callbacks after name and
 * version, and peer_memory_client_ex's ex_size and flags right after them.
 * On 64-bit machines: release at 128, sizeof(struct peer_memory_client)
 * 136, ex_size at 136, flags at 144 (asserted where this is built:
 * peer_mem/c_api.c, rdma_core/kshim/peer_abi.rs). A client built against
 * its own copy loads against peer_mem.ko unchanged; older nine-callback
 * copies (with get/put_context_private_data after release) are not
 * supported. Documentation/peer_mem.rst describes the callbacks, the
 * contexts, the locking rules and what the core guarantees when an
 * invalidation returns.
 */
#ifndef RDMA_PEER_MEM_H
#define RDMA_PEER_MEM_H

#include <linux/types.h>

#define IB_PEER_MEMORY_NAME_MAX 64
#define IB_PEER_MEMORY_VER_MAX 16

/*
 * core_context is a u64 (older copies of the header had a void *): the
 * core's values fit in 32 bits, so a client of either kind works.
 */
#define PEER_MEM_U64_CORE_CONTEXT

struct device;
struct sg_table;

/**
 * struct peer_memory_client - what a peer memory client gives the core
 * @name: the client's name, unique among registered clients; names its
 *        statistics directory in sysfs
 * @version: the client's version string; a non-zero last byte says the
 *           structure is the first member of a &struct peer_memory_client_ex
 * @acquire: is [@addr, @addr + @size) of the current process the client's
 *           memory? Returns 1 and sets *@client_context if so, 0 if not.
 *           Mandatory.
 * @get_pages: pins the pages of the range and describes them in @sg_head
 *             (allocated by the client with sg_alloc_table()); remembers
 *             @core_context for invalidation. Returns 0 or a -errno.
 *             Mandatory.
 * @dma_map: maps @sg_head for @dma_device; sets *@nmap to the number of
 *           mapped entries. Returns 0 or a -errno. Mandatory. rdma-rs has
 *           only software devices: @dma_device is NULL, and only clients
 *           that register with PEER_MEM_CPU_PAGES are called (their table
 *           must hold pages with a struct page, whole pages each entry).
 * @dma_unmap: undoes @dma_map. Mandatory.
 * @put_pages: undoes @get_pages (frees the table's entries; the table
 *             itself is the core's, valid until put_pages returns, or, for
 *             memory a PEER_MEM_INVALIDATE_UNMAPS client invalidated, until
 *             @release returns). Mandatory.
 * @get_page_size: the size of the pages @get_pages gave, a power of two of
 *                 at least PAGE_SIZE. Mandatory.
 * @release: the core is done with @client_context. Optional.
 *
 * Every value a client returns is checked before use: a page size that is
 * not a power of two between PAGE_SIZE and 1 GiB, an *@nmap beyond the
 * table, an entry that is not whole pages, or more pages than the range
 * holds fails the registration (EINVAL); no page left mapped or pinned.
 */
struct peer_memory_client {
	char name[IB_PEER_MEMORY_NAME_MAX];
	char version[IB_PEER_MEMORY_VER_MAX];
	int (*acquire)(unsigned long addr, size_t size,
		       void *peer_mem_private_data, char *peer_mem_name,
		       void **client_context);
	int (*get_pages)(unsigned long addr, size_t size, int write, int force,
			 struct sg_table *sg_head, void *client_context,
			 u64 core_context);
	int (*dma_map)(struct sg_table *sg_head, void *client_context,
		       struct device *dma_device, int dmasync, int *nmap);
	int (*dma_unmap)(struct sg_table *sg_head, void *client_context,
			 struct device *dma_device);
	void (*put_pages)(struct sg_table *sg_head, void *client_context);
	unsigned long (*get_page_size)(void *client_context);
	void (*release)(void *client_context);
};

enum {
	/*
	 * The client's own invalidation tears its mapping down: the core
	 * never calls dma_unmap or put_pages for memory it was told to
	 * invalidate (it still calls release).
	 */
	PEER_MEM_INVALIDATE_UNMAPS = 1 << 0,
	/*
	 * An rdma-rs extension (no other core defines this bit): the
	 * client's table holds pages with a struct page, and its dma_map
	 * takes a NULL dma_device. Only such a client's memory is used on a
	 * device without a DMA device (the software providers: rxe); any
	 * other client's is refused there with EOPNOTSUPP before get_pages
	 * is called.
	 */
	PEER_MEM_CPU_PAGES = 1 << 30,
};

/**
 * struct peer_memory_client_ex - the extended registration
 * @client: the base structure; its version's last byte must be non-zero
 * @ex_size: sizeof(struct peer_memory_client_ex) as the client knows it;
 *           the core reads @flags only if ex_size covers them (a client
 *           whose version marks the extended form but whose ex_size is
 *           smaller is taken as a plain one)
 * @flags: PEER_MEM_* flags
 */
struct peer_memory_client_ex {
	struct peer_memory_client client;
	size_t ex_size;
	u32 flags;
};

/*
 * The core's invalidation entry point, handed to a client that asks for it
 * at registration: the client calls it with the handle registration gave
 * and the core_context get_pages was given. When it returns, no RDMA
 * access reaches that memory any more, and (unless the client registered
 * with PEER_MEM_INVALIDATE_UNMAPS) dma_unmap and put_pages were called for
 * it from inside the call. Returns 0, or -EINVAL for an unknown handle or
 * context (a region already released). Process context; the client must
 * hold no lock its own callbacks take.
 */
typedef int (*invalidate_peer_memory)(void *reg_handle, u64 core_context);

/*
 * Registers a client. A client that passes @invalidate_callback gets the
 * core's invalidation function there, and requires invalidation: the core
 * uses it only for devices that support invalidation. Returns the handle to
 * unregister and invalidate with, or NULL (a mandatory callback missing, a
 * name already registered, no memory).
 */
void *ib_register_peer_memory_client(const struct peer_memory_client *peer_client,
				     invalidate_peer_memory *invalidate_callback);

/*
 * Unregisters a client: its memory regions still alive are invalidated
 * first; when this returns, the core makes no further call into the
 * client.
 */
void ib_unregister_peer_memory_client(void *reg_handle);

#endif /* RDMA_PEER_MEM_H */
