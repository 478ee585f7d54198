// SPDX-License-Identifier: GPL-2.0
/*
 * The C API of Peer-Direct (include/rdma/peer_mem.h), exported under the
 * names existing peer memory clients link against. The work is done by the
 * core's C ABI layer (rdma_core/kshim/peer_abi.rs) and this module's
 * broker (registry.rs).
 */
#include <linux/build_bug.h>
#include <linux/export.h>
#include <linux/module.h>
#include <linux/stddef.h>
#include <rdma/peer_mem.h>

/*
 * The layout today's clients are built with (include/rdma/peer_mem.h says
 * which): the core reads a client's structure at these offsets, so a
 * header that drifts from them must not build.
 */
#ifdef CONFIG_64BIT
static_assert(offsetof(struct peer_memory_client, version) == 64);
static_assert(offsetof(struct peer_memory_client, acquire) == 80);
static_assert(offsetof(struct peer_memory_client, release) == 128);
static_assert(sizeof(struct peer_memory_client) == 136);
static_assert(offsetof(struct peer_memory_client_ex, ex_size) == 136);
static_assert(offsetof(struct peer_memory_client_ex, flags) == 144);
static_assert(sizeof(struct peer_memory_client_ex) == 152);
#endif
static_assert(offsetof(struct peer_memory_client_ex, client) == 0);
static_assert(offsetof(struct peer_memory_client_ex, ex_size) ==
	      sizeof(struct peer_memory_client));

void *rdma_rs_peer_register(const struct peer_memory_client *client,
			    invalidate_peer_memory *invalidate_callback);
void rdma_rs_peer_unregister(void *reg_handle);

void *ib_register_peer_memory_client(const struct peer_memory_client *peer_client,
				     invalidate_peer_memory *invalidate_callback)
{
	return rdma_rs_peer_register(peer_client, invalidate_callback);
}
EXPORT_SYMBOL(ib_register_peer_memory_client);

void ib_unregister_peer_memory_client(void *reg_handle)
{
	rdma_rs_peer_unregister(reg_handle);
}
EXPORT_SYMBOL(ib_unregister_peer_memory_client);
