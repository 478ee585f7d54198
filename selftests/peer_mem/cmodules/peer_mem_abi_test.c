// SPDX-License-Identifier: GPL-2.0
/*
 * peer_mem_abi_test: the registration ABI of peer_mem.ko
 * (include/rdma/peer_mem.h), seen from a client written in C.
 *
 * At load it registers and unregisters test clients (what the core must
 * accept, what it must refuse, what it must survive) and reports each
 * case as a KTAP line in the kernel log (ktap_module lifts them); a failed
 * case fails the load. The clients' callbacks are never
 * meant to be called: no memory region is registered while this runs, and
 * acquire answers "not mine" anyway.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": ktap: " fmt

#include <linux/bits.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/string.h>

#include <rdma/peer_mem.h>

/*
 * The layout clients ship: MLNX_OFED 5 and later, and the copy NVIDIA's
 * open kernel modules carry (kernel-open/nvidia-peermem/peer_mem.h). Seven
 * callbacks follow name and version; peer_memory_client_ex's ex_size and
 * flags follow the seventh. Written out here on its own (not through
 * rdma/peer_mem.h), so that these cases register exactly the bytes such a
 * client's object code holds; the shipped header must agree with it
 * member for member.
 */
struct shipped_client {
	char name[IB_PEER_MEMORY_NAME_MAX];
	char version[IB_PEER_MEMORY_VER_MAX];
	int (*acquire)(unsigned long addr, size_t size, void *private_data,
		       char *peer_name, void **client_context);
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

struct shipped_client_ex {
	struct shipped_client client;
	size_t ex_size;
	u32 flags;
};

#ifdef CONFIG_64BIT
static_assert(offsetof(struct shipped_client, release) == 128);
static_assert(sizeof(struct shipped_client) == 136);
static_assert(offsetof(struct shipped_client_ex, ex_size) == 136);
static_assert(offsetof(struct shipped_client_ex, flags) == 144);
static_assert(sizeof(struct shipped_client_ex) == 152);

static_assert(offsetof(struct peer_memory_client, name) == 0);
static_assert(offsetof(struct peer_memory_client, version) == 64);
static_assert(offsetof(struct peer_memory_client, acquire) == 80);
static_assert(offsetof(struct peer_memory_client, get_pages) == 88);
static_assert(offsetof(struct peer_memory_client, dma_map) == 96);
static_assert(offsetof(struct peer_memory_client, dma_unmap) == 104);
static_assert(offsetof(struct peer_memory_client, put_pages) == 112);
static_assert(offsetof(struct peer_memory_client, get_page_size) == 120);
static_assert(offsetof(struct peer_memory_client, release) == 128);
static_assert(sizeof(struct peer_memory_client) == 136);
static_assert(offsetof(struct peer_memory_client_ex, ex_size) == 136);
static_assert(offsetof(struct peer_memory_client_ex, flags) == 144);
static_assert(sizeof(struct peer_memory_client_ex) == 152);
#endif
static_assert(sizeof(struct shipped_client) == sizeof(struct peer_memory_client));
static_assert(sizeof(struct shipped_client_ex) == sizeof(struct peer_memory_client_ex));

/* ---- the test clients' callbacks ---------------------------------------- */

static int abi_acquire(unsigned long addr, size_t size,
		       void *peer_mem_private_data, char *peer_mem_name,
		       void **client_context)
{
	return 0;
}

static int abi_get_pages(unsigned long addr, size_t size, int write,
			 int force, struct sg_table *sg_head,
			 void *client_context, u64 core_context)
{
	return -EINVAL;
}

static int abi_dma_map(struct sg_table *sg_head, void *client_context,
		       struct device *dma_device, int dmasync, int *nmap)
{
	return -EINVAL;
}

static int abi_dma_unmap(struct sg_table *sg_head, void *client_context,
			 struct device *dma_device)
{
	return 0;
}

static void abi_put_pages(struct sg_table *sg_head, void *client_context)
{
}

static unsigned long abi_get_page_size(void *client_context)
{
	return PAGE_SIZE;
}

static void abi_release(void *client_context)
{
}

/* A complete client; each case copies it and changes what it tests. */
static const struct peer_memory_client abi_template = {
	.version = "1.0",
	.acquire = abi_acquire,
	.get_pages = abi_get_pages,
	.dma_map = abi_dma_map,
	.dma_unmap = abi_dma_unmap,
	.put_pages = abi_put_pages,
	.get_page_size = abi_get_page_size,
	.release = abi_release,
};

/*
 * The clients registered. Static: the core may keep a pointer to a client
 * until it is unregistered.
 */
static struct peer_memory_client abi_a;
static struct peer_memory_client abi_b;
static struct peer_memory_client_ex abi_ex;

/*
 * Clients of the shipped layout, each a global of exactly its size: a read
 * past it is a KASAN global-out-of-bounds report, which fails the run.
 */
static struct shipped_client abi_shipped;
static struct shipped_client_ex abi_shipped_ex;

/* Not a handle: the core must not take it for one. */
static int abi_not_a_handle;

/* A value no core_context has (the core's fit in 32 bits). */
#define ABI_UNKNOWN_CORE_CONTEXT BIT_ULL(40)

static void abi_make(struct peer_memory_client *c, const char *name)
{
	*c = abi_template;
	strscpy(c->name, name, sizeof(c->name));
}

/* ---- cases -------------------------------------------------------------- */

/*
 * A case returns NULL if it passed, or why it failed. It leaves no client
 * registered either way.
 */
typedef const char *(*abi_case_fn)(void);

static const char *abi_register_unregister(void)
{
	void *h;

	abi_make(&abi_a, "abi_test_complete");
	h = ib_register_peer_memory_client(&abi_a, NULL);
	if (!h)
		return "a complete client was refused";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

/* Registration of @c, which lacks a mandatory callback, must be refused. */
static const char *abi_expect_refused(struct peer_memory_client *c)
{
	void *h = ib_register_peer_memory_client(c, NULL);

	if (h) {
		ib_unregister_peer_memory_client(h);
		return "a client without a mandatory callback was accepted";
	}
	return NULL;
}

/* One case per mandatory callback: the complete client without it. */
#define ABI_NULL_CASE(cb)						\
static const char *abi_null_##cb(void)					\
{									\
	abi_make(&abi_a, "abi_test_null_" #cb);				\
	abi_a.cb = NULL;						\
	return abi_expect_refused(&abi_a);				\
}

ABI_NULL_CASE(acquire)
ABI_NULL_CASE(get_pages)
ABI_NULL_CASE(dma_map)
ABI_NULL_CASE(dma_unmap)
ABI_NULL_CASE(put_pages)
ABI_NULL_CASE(get_page_size)

static const char *abi_null_release(void)
{
	void *h;

	abi_make(&abi_a, "abi_test_null_release");
	abi_a.release = NULL;
	h = ib_register_peer_memory_client(&abi_a, NULL);
	if (!h)
		return "a client without release (optional) was refused";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

static const char *abi_duplicate_name(void)
{
	const char *why = NULL;
	void *h1, *h2;

	abi_make(&abi_a, "abi_test_dup");
	abi_make(&abi_b, "abi_test_dup");
	h1 = ib_register_peer_memory_client(&abi_a, NULL);
	if (!h1)
		return "the first client was refused";
	h2 = ib_register_peer_memory_client(&abi_b, NULL);
	if (h2) {
		ib_unregister_peer_memory_client(h2);
		why = "a second client of the same name was accepted";
	}
	ib_unregister_peer_memory_client(h1);
	return why;
}

static const char *abi_name_reusable(void)
{
	void *h;

	abi_make(&abi_a, "abi_test_reuse");
	abi_make(&abi_b, "abi_test_reuse");
	h = ib_register_peer_memory_client(&abi_a, NULL);
	if (!h)
		return "the first client was refused";
	ib_unregister_peer_memory_client(h);
	h = ib_register_peer_memory_client(&abi_b, NULL);
	if (!h)
		return "the name was refused after its client was unregistered";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

static const char *abi_empty_name(void)
{
	void *h;

	abi_make(&abi_a, "");
	h = ib_register_peer_memory_client(&abi_a, NULL);
	if (h) {
		ib_unregister_peer_memory_client(h);
		return "a client with an empty name was accepted";
	}
	return NULL;
}

/*
 * Unregisters @bogus while a real client is registered; then the real
 * client must still be there (its name still taken) and unregister
 * normally (its name free again).
 */
static const char *abi_bogus_unregister(void *bogus)
{
	const char *why = NULL;
	void *h, *h2;

	abi_make(&abi_a, "abi_test_bogus");
	abi_make(&abi_b, "abi_test_bogus");
	h = ib_register_peer_memory_client(&abi_a, NULL);
	if (!h)
		return "the client was refused";

	ib_unregister_peer_memory_client(bogus);

	h2 = ib_register_peer_memory_client(&abi_b, NULL);
	if (h2) {
		ib_unregister_peer_memory_client(h2);
		why = "the real client was gone after a bogus unregistration";
	}
	ib_unregister_peer_memory_client(h);
	if (why)
		return why;

	h2 = ib_register_peer_memory_client(&abi_b, NULL);
	if (!h2)
		return "the real client's unregistration did not free its name";
	ib_unregister_peer_memory_client(h2);
	return NULL;
}

static const char *abi_unregister_null(void)
{
	return abi_bogus_unregister(NULL);
}

static const char *abi_unregister_unknown(void)
{
	return abi_bogus_unregister(&abi_not_a_handle);
}

static const char *abi_without_invalidation(void)
{
	void *h;

	abi_make(&abi_a, "abi_test_noinval");
	h = ib_register_peer_memory_client(&abi_a, NULL);
	if (!h)
		return "a client that does not ask for invalidation was refused";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

static const char *abi_with_invalidation(void)
{
	invalidate_peer_memory inval = NULL;
	void *h;

	abi_make(&abi_a, "abi_test_inval");
	h = ib_register_peer_memory_client(&abi_a, &inval);
	if (!h)
		return "a client that asks for invalidation was refused";
	ib_unregister_peer_memory_client(h);
	if (!inval)
		return "no invalidate callback was given";
	return NULL;
}

/*
 * The callback with a core_context the core never gave: harmless, 0 or
 * -EINVAL (a client may report a region the core has just released).
 */
static const char *abi_invalidate_unknown_context(void)
{
	invalidate_peer_memory inval = NULL;
	const char *why = NULL;
	void *h;
	int ret;

	abi_make(&abi_a, "abi_test_inval_ctx");
	h = ib_register_peer_memory_client(&abi_a, &inval);
	if (!h)
		return "the client was refused";
	if (inval) {
		ret = inval(h, ABI_UNKNOWN_CORE_CONTEXT);
		if (ret && ret != -EINVAL)
			why = "an unknown core_context returned neither 0 nor -EINVAL";
	} else {
		why = "no invalidate callback was given";
	}
	ib_unregister_peer_memory_client(h);
	return why;
}

/* The callback with a handle that is not one: -EINVAL. */
static const char *abi_invalidate_unknown_handle(void)
{
	invalidate_peer_memory inval = NULL;
	const char *why = NULL;
	void *h;

	abi_make(&abi_a, "abi_test_inval_handle");
	h = ib_register_peer_memory_client(&abi_a, &inval);
	if (!h)
		return "the client was refused";
	if (!inval)
		why = "no invalidate callback was given";
	else if (inval(&abi_not_a_handle, 0) != -EINVAL)
		why = "an unknown handle did not return -EINVAL";
	ib_unregister_peer_memory_client(h);
	return why;
}

/* A correct _ex registration, asking for PEER_MEM_INVALIDATE_UNMAPS. */
static const char *abi_ex_unmaps(void)
{
	invalidate_peer_memory inval = NULL;
	void *h;

	memset(&abi_ex, 0, sizeof(abi_ex));
	abi_make(&abi_ex.client, "abi_test_ex");
	abi_ex.client.version[IB_PEER_MEMORY_VER_MAX - 1] = 1;
	abi_ex.ex_size = sizeof(abi_ex);
	abi_ex.flags = PEER_MEM_INVALIDATE_UNMAPS;
	h = ib_register_peer_memory_client(&abi_ex.client, &inval);
	if (!h)
		return "an _ex client was refused";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

/*
 * The _ex marker with an ex_size that does not reach the extension: the
 * core must read no further than ex_size says and take a plain client.
 */
static const char *abi_ex_short(void)
{
	invalidate_peer_memory inval = NULL;
	void *h;

	memset(&abi_ex, 0, sizeof(abi_ex));
	abi_make(&abi_ex.client, "abi_test_ex_short");
	abi_ex.client.version[IB_PEER_MEMORY_VER_MAX - 1] = 1;
	abi_ex.ex_size = sizeof(struct peer_memory_client);
	abi_ex.flags = PEER_MEM_INVALIDATE_UNMAPS;
	h = ib_register_peer_memory_client(&abi_ex.client, &inval);
	if (!h)
		return "an _ex client with a short ex_size was refused";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

/* A client of the shipped layout, plain: registers and unregisters. */
static const char *abi_shipped_plain(void)
{
	void *h;

	memset(&abi_shipped, 0, sizeof(abi_shipped));
	strscpy(abi_shipped.name, "abi_test_shipped", sizeof(abi_shipped.name));
	strscpy(abi_shipped.version, "1.0", sizeof(abi_shipped.version));
	abi_shipped.acquire = abi_acquire;
	abi_shipped.get_pages = abi_get_pages;
	abi_shipped.dma_map = abi_dma_map;
	abi_shipped.dma_unmap = abi_dma_unmap;
	abi_shipped.put_pages = abi_put_pages;
	abi_shipped.get_page_size = abi_get_page_size;
	abi_shipped.release = abi_release;
	h = ib_register_peer_memory_client((const void *)&abi_shipped, NULL);
	if (!h)
		return "a client of the shipped layout was refused";
	ib_unregister_peer_memory_client(h);
	return NULL;
}

/*
 * A client of the shipped layout, extended, as nvidia-peermem registers
 * itself: ex_size = sizeof its structure, PEER_MEM_INVALIDATE_UNMAPS.
 */
static const char *abi_shipped_extended(void)
{
	invalidate_peer_memory inval = NULL;
	struct shipped_client *c = &abi_shipped_ex.client;
	void *h;

	memset(&abi_shipped_ex, 0, sizeof(abi_shipped_ex));
	strscpy(c->name, "abi_test_shipped_ex", sizeof(c->name));
	strscpy(c->version, "1.0", sizeof(c->version));
	c->version[IB_PEER_MEMORY_VER_MAX - 1] = 1;
	c->acquire = abi_acquire;
	c->get_pages = abi_get_pages;
	c->dma_map = abi_dma_map;
	c->dma_unmap = abi_dma_unmap;
	c->put_pages = abi_put_pages;
	c->get_page_size = abi_get_page_size;
	c->release = abi_release;
	abi_shipped_ex.ex_size = sizeof(abi_shipped_ex);
	abi_shipped_ex.flags = PEER_MEM_INVALIDATE_UNMAPS;
	h = ib_register_peer_memory_client((const void *)c, &inval);
	if (!h)
		return "an extended client of the shipped layout was refused";
	ib_unregister_peer_memory_client(h);
	if (!inval)
		return "no invalidate callback was given";
	return NULL;
}

struct abi_case {
	const char *name;
	abi_case_fn fn;
};

static const struct abi_case abi_cases[] = {
	{ "register_unregister", abi_register_unregister },
	{ "null_acquire_refused", abi_null_acquire },
	{ "null_get_pages_refused", abi_null_get_pages },
	{ "null_dma_map_refused", abi_null_dma_map },
	{ "null_dma_unmap_refused", abi_null_dma_unmap },
	{ "null_put_pages_refused", abi_null_put_pages },
	{ "null_get_page_size_refused", abi_null_get_page_size },
	{ "null_release_accepted", abi_null_release },
	{ "duplicate_name_refused", abi_duplicate_name },
	{ "name_reusable_after_unregister", abi_name_reusable },
	{ "empty_name_refused", abi_empty_name },
	{ "unregister_null_ignored", abi_unregister_null },
	{ "unregister_unknown_ignored", abi_unregister_unknown },
	{ "no_invalidation_accepted", abi_without_invalidation },
	{ "invalidation_callback_given", abi_with_invalidation },
	{ "invalidate_unknown_context_harmless", abi_invalidate_unknown_context },
	{ "invalidate_unknown_handle_einval", abi_invalidate_unknown_handle },
	{ "ex_unmaps_accepted", abi_ex_unmaps },
	{ "ex_short_size_accepted", abi_ex_short },
	{ "shipped_layout_accepted", abi_shipped_plain },
	{ "shipped_layout_ex_accepted", abi_shipped_extended },
};

static int __init abi_test_init(void)
{
	unsigned int i, failed = 0;

	pr_info("KTAP version 1\n");
	pr_info("1..%zu\n", ARRAY_SIZE(abi_cases));
	for (i = 0; i < ARRAY_SIZE(abi_cases); i++) {
		const char *why = abi_cases[i].fn();

		if (why) {
			pr_info("not ok %u %s # %s\n", i + 1, abi_cases[i].name, why);
			failed++;
		} else {
			pr_info("ok %u %s\n", i + 1, abi_cases[i].name);
		}
	}
	/* A failed case fails the load, which the suite reports. */
	return failed ? -EINVAL : 0;
}

static void __exit abi_test_exit(void)
{
}

module_init(abi_test_init);
module_exit(abi_test_exit);
MODULE_DESCRIPTION("KTAP test of the peer_mem registration ABI from a C client");
MODULE_LICENSE("GPL");
