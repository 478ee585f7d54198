// SPDX-License-Identifier: GPL-2.0
/*
 * peer_user: the user-space side of the peer_mem selftests.
 *
 * It maps "device memory" of an example peer memory client
 * (/dev/peer_example_c or /dev/peer_example_rust, peer_example_uapi.h),
 * registers it as a memory region through the test module
 * (/dev/peer_mem_test, peer_mem_test_uapi.h), has RDMA operations run on
 * it, and checks what lands where: through the user mapping, and through
 * the client's own view of its memory (PEER_EX_IOC_READ).
 *
 *   peer_user rw CLIENT SIZE              writes, reads, sends on peer memory
 *   peer_user pinned SIZE                 the same on anonymous memory
 *   peer_user invalidate CLIENT SIZE ROUNDS
 *   peer_user invalidate_mt CLIENT SIZE ROUNDS THREADS
 *   peer_user race_dereg CLIENT SIZE ROUNDS
 *   peer_user decline CLIENT
 *   peer_user peer_first CLIENT
 *   peer_user fail CLIENT get_pages|dma_map|dma_only|page_size|nmap|sg|no_dma_device
 *   peer_user bounds CLIENT
 *   peer_user noinval CLIENT DEV
 *   peer_user hold CLIENT SIZE            (driven through stdin/stdout)
 *
 * CLIENT is the client's device path. SIZE takes a K or M suffix.
 * Diagnostics go to stderr; "ok" or "FAIL: reason" (and what a case is
 * asked to print) to stdout. Exit status: 0 passed, 1 failed, 4 skipped (a
 * device is missing). Built static (the guest has no compiler):
 *   gcc -static -O2 -Wall -Werror -o peer_user peer_user.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <time.h>
#include <unistd.h>

#include "../../peer_mem/examples/peer_example_uapi.h"
#include "peer_mem_test_uapi.h"

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

#define TEST_DEV "/dev/peer_mem_test"
#define MAX_OP (1u << 20)		/* the test module's largest operation */
#define ACC_ALL (PMT_ACCESS_LOCAL_WRITE | PMT_ACCESS_REMOTE_WRITE | \
		 PMT_ACCESS_REMOTE_READ)
#define WC_REM_ACCESS_ERR 10		/* IB_WC_REM_ACCESS_ERR */
#define POISON 0x5a
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static size_t page_size;

/* Names the thread in messages ("" in single-threaded cases). */
static __thread char tag[32];

/* ---- messages ----------------------------------------------------------- */

static void diag(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "peer_user: %s", tag);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Prints "FAIL: reason" on stdout (one line, whole); returns KSFT_FAIL. */
static int fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("FAIL: %s%s\n", tag, msg);
	fprintf(stderr, "peer_user: %sFAIL: %s\n", tag, msg);
	return KSFT_FAIL;
}

static const char *errname(int e)
{
	static __thread char other[16];

	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENOTTY: return "ENOTTY";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOTSUP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECANCELED: return "ECANCELED";
	}
	snprintf(other, sizeof(other), "errno %d", e);
	return other;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- devices ------------------------------------------------------------ */

static bool dev_missing(int e)
{
	return e == ENOENT || e == ENODEV || e == ENXIO;
}

/*
 * Opens a device; a missing one skips the whole program (exit 4), any
 * other error fails it.
 */
static int open_dev(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (dev_missing(errno)) {
		printf("SKIP: %s: %s\n", path, strerror(errno));
		exit(KSFT_SKIP);
	}
	fail("open %s: %s", path, strerror(errno));
	exit(KSFT_FAIL);
}

/* ---- /dev/peer_mem_test ------------------------------------------------- */

/* Registers [addr, addr + len); 0 or the errno. */
static int pmt_reg(int tfd, uint64_t addr, uint64_t len, uint32_t access,
		   uint32_t flags, const char *dev, struct pmt_reg *out)
{
	struct pmt_reg r;

	memset(&r, 0, sizeof(r));
	r.addr = addr;
	r.len = len;
	r.access = access;
	r.flags = flags;
	if (dev)
		snprintf(r.dev, sizeof(r.dev), "%s", dev);
	if (ioctl(tfd, PMT_IOC_REG, &r))
		return errno;
	r.peer[sizeof(r.peer) - 1] = '\0';
	*out = r;
	return 0;
}

static int pmt_dereg(int tfd, uint32_t handle)
{
	__u32 h = handle;

	return ioctl(tfd, PMT_IOC_DEREG, &h) ? errno : 0;
}

/* One operation; 0 or the errno, the completion statuses in *st. */
static int pmt_op(int tfd, uint32_t handle, uint32_t op, uint64_t off,
		  uint64_t len, void *buf, struct pmt_rdma *st)
{
	memset(st, 0, sizeof(*st));
	st->handle = handle;
	st->op = op;
	st->offset = off;
	st->len = len;
	st->buf = (uintptr_t)buf;
	return ioctl(tfd, PMT_IOC_RDMA, st) ? errno : 0;
}

static const char *op_name(uint32_t op)
{
	return op == PMT_OP_WRITE ? "WRITE" : op == PMT_OP_READ ? "READ" : "SEND";
}

static int pmt_stream_start(int tfd, uint32_t handle, uint32_t depth,
			    uint64_t off, uint64_t len)
{
	struct pmt_stream s;

	memset(&s, 0, sizeof(s));
	s.handle = handle;
	s.depth = depth;
	s.offset = off;
	s.len = len;
	return ioctl(tfd, PMT_IOC_STREAM_START, &s) ? errno : 0;
}

static int pmt_stream_stop(int tfd, uint32_t handle, struct pmt_stream *s)
{
	memset(s, 0, sizeof(*s));
	s->handle = handle;
	return ioctl(tfd, PMT_IOC_STREAM_STOP, s) ? errno : 0;
}

/* ---- the client device -------------------------------------------------- */

static int client_stats(int cfd, struct peer_ex_stats *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(cfd, PEER_EX_IOC_STATS, st) ? errno : 0;
}

static int client_mode(int cfd, uint32_t flags)
{
	struct peer_ex_mode m = { .flags = flags };

	return ioctl(cfd, PEER_EX_IOC_SET_MODE, &m) ? errno : 0;
}

static int client_invalidate(int cfd, const void *addr, uint64_t len,
			     uint32_t poison, uint32_t *invalidated)
{
	struct peer_ex_invalidate inv;

	memset(&inv, 0, sizeof(inv));
	inv.addr = (uintptr_t)addr;
	inv.len = len;
	inv.poison = poison;
	if (ioctl(cfd, PEER_EX_IOC_INVALIDATE, &inv))
		return errno;
	*invalidated = inv.invalidated;
	return 0;
}

/* The client's own view of [addr, addr + len) of its mapping. */
static int client_read(int cfd, const void *addr, uint64_t len, void *buf)
{
	struct peer_ex_read rd = {
		.addr = (uintptr_t)addr,
		.len = len,
		.buf = (uintptr_t)buf,
	};

	return ioctl(cfd, PEER_EX_IOC_READ, &rd) ? errno : 0;
}

static void *client_map(int cfd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Anonymous memory, every page touched (so that pinning finds it). */
static void *anon_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, len);
	return p;
}

static size_t round_page(size_t n)
{
	return (n + page_size - 1) & ~(page_size - 1);
}

/* ---- patterns and comparisons ------------------------------------------- */

/* A byte pattern that depends on the position in the MR and on @seed. */
static void pattern(uint8_t *p, size_t len, uint64_t off, uint32_t seed)
{
	uint64_t s = (uint64_t)seed * 0xd6e8feb86659fd93ull;
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t x = (off + i + 1) * 0x9e3779b97f4a7c15ull + s;

		p[i] = (uint8_t)(x >> 56);
	}
}

/* 0 if equal; else reports the first difference and returns KSFT_FAIL. */
static int compare(const uint8_t *got, const uint8_t *want, size_t len,
		   uint64_t off, const char *what)
{
	size_t i;

	if (!memcmp(got, want, len))
		return 0;
	for (i = 0; got[i] == want[i]; i++)
		;
	return fail("%s: byte %" PRIu64 " is 0x%02x, expected 0x%02x (range %" PRIu64 "+%zu)",
		    what, off + i, got[i], want[i], off, len);
}

/* 0 if every byte is @val; else reports the first other one. */
static int check_fill(const uint8_t *p, size_t len, uint8_t val,
		      const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != val)
			return fail("%s: byte %zu is 0x%02x, expected 0x%02x",
				    what, i, p[i], val);
	return 0;
}

/* ---- verified operations on one MR -------------------------------------- */

/* One registered region and what the test knows it holds. */
struct mr {
	int tfd;
	int cfd;		/* the client's fd, or -1 (anonymous memory) */
	uint8_t *mem;		/* the user mapping */
	size_t size;		/* the MR's length */
	uint32_t handle;
	uint8_t *shadow;	/* what mem must hold */
	uint8_t *buf;		/* MAX_OP bytes: operation buffer */
	uint8_t *chk;		/* MAX_OP bytes: read back */
	uint32_t seed;
};

static int mr_setup(struct mr *mr, int tfd, int cfd, uint8_t *mem,
		    size_t size, uint32_t handle)
{
	memset(mr, 0, sizeof(*mr));
	mr->tfd = tfd;
	mr->cfd = cfd;
	mr->mem = mem;
	mr->size = size;
	mr->handle = handle;
	mr->shadow = malloc(size);
	mr->buf = malloc(MAX_OP);
	mr->chk = malloc(MAX_OP);
	if (!mr->shadow || !mr->buf || !mr->chk)
		return fail("out of memory");
	memcpy(mr->shadow, mem, size);
	return 0;
}

static void mr_free(struct mr *mr)
{
	free(mr->shadow);
	free(mr->buf);
	free(mr->chk);
	mr->shadow = mr->buf = mr->chk = NULL;
}

/* The client's view of [off, off + len) equals the shadow (chunked). */
static int mr_check_client(struct mr *mr, uint64_t off, size_t len,
			   const char *what)
{
	while (len) {
		size_t n = len < MAX_OP ? len : MAX_OP;
		int e = client_read(mr->cfd, mr->mem + off, n, mr->chk);

		if (e)
			return fail("%s: PEER_EX_IOC_READ %" PRIu64 "+%zu: %s",
				    what, off, n, errname(e));
		if (compare(mr->chk, mr->shadow + off, n, off, what))
			return KSFT_FAIL;
		off += n;
		len -= n;
	}
	return 0;
}

/* The whole MR, through the mapping and the client, equals the shadow. */
static int mr_check_all(struct mr *mr, const char *what)
{
	if (compare(mr->mem, mr->shadow, mr->size, 0, what))
		return KSFT_FAIL;
	if (mr->cfd >= 0)
		return mr_check_client(mr, 0, mr->size, what);
	return 0;
}

/* Runs @op and requires it to complete successfully. */
static int mr_op_ok(struct mr *mr, uint32_t op, uint64_t off, size_t len)
{
	struct pmt_rdma st;
	int e = pmt_op(mr->tfd, mr->handle, op, off, len, mr->buf, &st);

	if (e)
		return fail("%s %" PRIu64 "+%zu: ioctl: %s", op_name(op), off,
			    len, errname(e));
	if (st.status || (op == PMT_OP_SEND && st.peer_status))
		return fail("%s %" PRIu64 "+%zu: status %d, peer status %d",
			    op_name(op), off, len, st.status, st.peer_status);
	return 0;
}

/* B writes a new pattern at off; it must be there and nowhere else. */
static int mr_write(struct mr *mr, uint64_t off, size_t len)
{
	size_t lo = off > 64 ? off - 64 : 0;
	size_t hi = off + len + 64 < mr->size ? off + len + 64 : mr->size;

	pattern(mr->buf, len, off, ++mr->seed);
	if (mr_op_ok(mr, PMT_OP_WRITE, off, len))
		return KSFT_FAIL;
	memcpy(mr->shadow + off, mr->buf, len);
	if (compare(mr->mem + lo, mr->shadow + lo, hi - lo, lo,
		    "WRITE, seen through the mapping"))
		return KSFT_FAIL;
	if (mr->cfd >= 0)
		return mr_check_client(mr, lo, hi - lo,
				       "WRITE, seen by the client");
	return 0;
}

/* The process writes a new pattern at off; B must read it. */
static int mr_read(struct mr *mr, uint64_t off, size_t len)
{
	pattern(mr->mem + off, len, off, ++mr->seed);
	memcpy(mr->shadow + off, mr->mem + off, len);
	memset(mr->buf, 0, len);
	if (mr_op_ok(mr, PMT_OP_READ, off, len))
		return KSFT_FAIL;
	return compare(mr->buf, mr->shadow + off, len, off, "READ");
}

/* A sends [off, off + len) of the MR; B must receive what it holds. */
static int mr_send(struct mr *mr, uint64_t off, size_t len)
{
	memset(mr->buf, 0, len);
	if (mr_op_ok(mr, PMT_OP_SEND, off, len))
		return KSFT_FAIL;
	return compare(mr->buf, mr->shadow + off, len, off, "SEND");
}

static int mr_write_read_send(struct mr *mr, uint64_t off, size_t len)
{
	if (!len || len > MAX_OP || off > mr->size || len > mr->size - off)
		return 0;	/* does not fit this MR: not a case here */
	if (mr_write(mr, off, len) || mr_read(mr, off, len) ||
	    mr_send(mr, off, len))
		return KSFT_FAIL;
	return 0;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Writes, reads and sends at offsets and lengths that cross pages, start
 * and end mid-page, reach the last byte; then @nrandom more at random
 * (a fixed seed, so a failure repeats).
 */
static int mr_exercise(struct mr *mr, unsigned int nrandom)
{
	const size_t size = mr->size, ps = page_size;
	const size_t big = size < MAX_OP ? size : MAX_OP;
	const struct { uint64_t off; size_t len; } fixed[] = {
		{ 0, 1 }, { 0, 7 }, { 1, 7 }, { ps - 1, 2 }, { ps - 5, 12 },
		{ 0, ps }, { ps, ps }, { 1, ps }, { 100, ps + 1 },
		{ ps - 1, ps + 1 }, { 2 * ps - 3, 2 * ps + 6 },
		{ 3 * ps + 17, 5 * ps + 1 }, { size / 2 - 3, 7 },
		{ size - 1, 1 }, { size - 7, 7 }, { 0, big },
		{ size - big, big }, { size > ps ? size - ps - 1 : 0, ps },
	};
	uint64_t rs = 0x2545f4914f6cdd1dull;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		if (mr_write_read_send(mr, fixed[i].off, fixed[i].len))
			return KSFT_FAIL;
	for (i = 0; i < nrandom; i++) {
		uint64_t off = rng_next(&rs) % size;
		size_t room = size - off;
		size_t max = i % 8 == 7 ? MAX_OP : 65536;
		size_t len;

		if (room < max)
			max = room;
		len = 1 + rng_next(&rs) % max;
		if (mr_write_read_send(mr, off, len))
			return KSFT_FAIL;
	}
	return mr_check_all(mr, "the whole MR after the operations");
}

/*
 * An operation outside the MR must fail, with an errno EINVAL or with a
 * completion error, and write nothing.
 */
static int mr_outside(struct mr *mr, uint32_t op, uint64_t off, size_t len)
{
	struct pmt_rdma st;
	int e;

	pattern(mr->buf, len, off, ++mr->seed);
	e = pmt_op(mr->tfd, mr->handle, op, off, len, mr->buf, &st);
	if (e == EINVAL) {
		diag("%s %" PRIu64 "+%zu outside the MR: errno EINVAL",
		     op_name(op), off, len);
	} else if (e) {
		return fail("%s %" PRIu64 "+%zu outside the MR: %s, expected EINVAL or a completion error",
			    op_name(op), off, len, errname(e));
	} else if (st.status) {
		diag("%s %" PRIu64 "+%zu outside the MR: status %d",
		     op_name(op), off, len, st.status);
	} else {
		return fail("%s %" PRIu64 "+%zu outside the MR completed successfully",
			    op_name(op), off, len);
	}
	return mr_check_all(mr, "the MR after an operation outside it");
}

/* ---- rw, pinned --------------------------------------------------------- */

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v <<= 20;
		end++;
	}
	if (*end || !v || v > PEER_EX_MAX_MAP)
		return -1;
	*out = v;
	return 0;
}

static int parse_count(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || !v || v > 1000000)
		return -1;
	*out = v;
	return 0;
}

/* Registers @mem and checks the kind (and the peer name for PEER). */
static int reg_expect(int tfd, void *mem, size_t len, uint32_t flags,
		      uint32_t kind, struct pmt_reg *r)
{
	int e = pmt_reg(tfd, (uintptr_t)mem, len, ACC_ALL, flags, NULL, r);

	if (e)
		return fail("registration of %zu bytes (flags %#x): %s", len,
			    flags, errname(e));
	if (r->kind != kind) {
		pmt_dereg(tfd, r->handle);
		return fail("registration gave kind %u, expected %u", r->kind,
			    kind);
	}
	if (kind == PMT_KIND_PEER && !r->peer[0]) {
		pmt_dereg(tfd, r->handle);
		return fail("a peer registration names no client");
	}
	if (kind == PMT_KIND_PINNED && r->peer[0]) {
		pmt_dereg(tfd, r->handle);
		return fail("a pinned registration names client \"%s\"", r->peer);
	}
	return 0;
}

/* A registration must fail with @want. */
static int reg_refused(int tfd, uint64_t addr, uint64_t len, const char *dev,
		       int want, const char *what)
{
	struct pmt_reg r;
	int e = pmt_reg(tfd, addr, len, ACC_ALL, PMT_F_ALLOW_PEER, dev, &r);

	if (!e) {
		pmt_dereg(tfd, r.handle);
		return fail("%s: registered (kind %u, peer \"%s\"), expected %s",
			    what, r.kind, r.peer, errname(want));
	}
	if (e != want)
		return fail("%s: %s, expected %s", what, errname(e),
			    errname(want));
	diag("%s: %s, as expected", what, errname(e));
	return 0;
}

static int dereg_ok(int tfd, uint32_t handle)
{
	int e = pmt_dereg(tfd, handle);

	return e ? fail("deregistration: %s", errname(e)) : 0;
}

static int case_rw(const char *client, size_t size)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	size_t maplen = round_page(size);
	struct pmt_reg r;
	struct mr mr = { 0 };
	uint8_t *mem;
	int ret = KSFT_FAIL;

	mem = client_map(cfd, maplen);
	if (!mem) {
		fail("mmap of %zu bytes of %s: %s", maplen, client,
		     strerror(errno));
		goto out_close;
	}
	if (check_fill(mem, maplen, 0, "fresh client memory"))
		goto out_unmap;
	if (reg_expect(tfd, mem, size, PMT_F_ALLOW_PEER, PMT_KIND_PEER, &r))
		goto out_unmap;
	diag("registered %zu bytes: handle %u lkey %#x rkey %#x peer %s", size,
	     r.handle, r.lkey, r.rkey, r.peer);

	if (mr_setup(&mr, tfd, cfd, mem, size, r.handle) ||
	    mr_exercise(&mr, 32) ||
	    mr_outside(&mr, PMT_OP_WRITE, size - 1, 2) ||
	    mr_outside(&mr, PMT_OP_WRITE, size, 1) ||
	    mr_outside(&mr, PMT_OP_READ, size - 1, 2) ||
	    mr_outside(&mr, PMT_OP_WRITE, UINT64_MAX - 3, 8) ||
	    /* The QP pair is rebuilt after the errors. */
	    mr_write_read_send(&mr, 0, 16)) {
		pmt_dereg(tfd, r.handle);
		goto out_unmap;
	}
	if (dereg_ok(tfd, r.handle))
		goto out_unmap;
	printf("peer=%s\n", r.peer);
	ret = KSFT_PASS;
out_unmap:
	mr_free(&mr);
	munmap(mem, maplen);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/* Anonymous memory registered with @flags: pinned, whatever is asked. */
static int pinned_once(int tfd, size_t size, uint32_t flags)
{
	size_t maplen = round_page(size);
	struct mr mr = { 0 };
	struct pmt_reg r;
	uint8_t *mem;
	int ret = KSFT_FAIL;

	mem = anon_map(maplen);
	if (!mem)
		return fail("anonymous mmap of %zu bytes: %s", maplen,
			    strerror(errno));
	if (reg_expect(tfd, mem, size, flags, PMT_KIND_PINNED, &r))
		goto out;
	if (mr_setup(&mr, tfd, -1, mem, size, r.handle) ||
	    mr_exercise(&mr, flags ? 8 : 0)) {
		pmt_dereg(tfd, r.handle);
		goto out;
	}
	if (!dereg_ok(tfd, r.handle))
		ret = KSFT_PASS;
out:
	mr_free(&mr);
	munmap(mem, maplen);
	return ret;
}

static int case_pinned(size_t size)
{
	int tfd = open_dev(TEST_DEV);
	int ret = pinned_once(tfd, size, PMT_F_ALLOW_PEER);

	if (!ret)
		ret = pinned_once(tfd, size, 0);
	close(tfd);
	return ret;
}

/*
 * Pinned registrations larger than memory (64 GiB, 4 TiB): refused with
 * ENOMEM before the kernel sizes anything by them, even for root, which
 * RLIMIT_MEMLOCK does not bind (a page array sized by the request would
 * WARN in the allocator, and the run fails on any splat). Then, without
 * CAP_IPC_LOCK and under a 64 KiB RLIMIT_MEMLOCK, 1 MiB is refused with
 * ENOMEM and 32 KiB works.
 */
static int case_huge(void)
{
	static const uint64_t lens[] = { 1ULL << 36, 1ULL << 42 };
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	struct rlimit rl = { 64 << 10, 64 << 10 };
	int tfd = open_dev(TEST_DEV);
	size_t len = 1 << 20;
	void *mem = anon_map(len);
	struct pmt_reg r;
	unsigned int i;
	int e, ret = KSFT_FAIL;

	if (!mem) {
		fail("mmap: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		e = pmt_reg(tfd, (uintptr_t)mem, lens[i], ACC_ALL, 0, NULL, &r);
		if (!e) {
			pmt_dereg(tfd, r.handle);
			fail("%" PRIu64 " bytes registered", lens[i]);
			goto out;
		}
		if (e != ENOMEM) {
			fail("%" PRIu64 " bytes: %s, expected ENOMEM", lens[i],
			     errname(e));
			goto out;
		}
	}
	if (syscall(SYS_capget, &hdr, data)) {
		fail("capget: %s", strerror(errno));
		goto out;
	}
	data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	data[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &hdr, data) || setrlimit(RLIMIT_MEMLOCK, &rl)) {
		fail("capset/setrlimit: %s", strerror(errno));
		goto out;
	}
	e = pmt_reg(tfd, (uintptr_t)mem, len, ACC_ALL, 0, NULL, &r);
	if (!e) {
		pmt_dereg(tfd, r.handle);
		fail("1 MiB registered under a 64 KiB RLIMIT_MEMLOCK");
		goto out;
	}
	if (e != ENOMEM) {
		fail("1 MiB under a 64 KiB limit: %s, expected ENOMEM",
		     errname(e));
		goto out;
	}
	e = pmt_reg(tfd, (uintptr_t)mem, 32 << 10, ACC_ALL, 0, NULL, &r);
	if (e) {
		fail("32 KiB under a 64 KiB limit: %s", errname(e));
		goto out;
	}
	ret = dereg_ok(tfd, r.handle);
out:
	if (mem)
		munmap(mem, len);
	close(tfd);
	return ret;
}

/* ---- invalidation ------------------------------------------------------- */

/* What one thread of the invalidate cases works with. */
struct worker {
	pthread_t thread;
	unsigned int id;
	const char *client;
	int cfd;
	int tfd;
	size_t size;
	unsigned int rounds;
	int result;
};

/*
 * The memory of an invalidated MR, through the client and the mapping:
 * all POISON (the client poisoned it after the core's callback returned,
 * so a byte that is not was written by RDMA afterwards).
 */
static int check_poisoned(int cfd, uint8_t *mem, size_t maplen, uint8_t *tmp,
			  const char *when)
{
	char what[96];
	int e = client_read(cfd, mem, maplen, tmp);

	if (e)
		return fail("PEER_EX_IOC_READ %s: %s", when, errname(e));
	snprintf(what, sizeof(what), "client's view %s", when);
	if (check_fill(tmp, maplen, POISON, what))
		return KSFT_FAIL;
	snprintf(what, sizeof(what), "mapping %s", when);
	return check_fill(mem, maplen, POISON, what);
}

/*
 * One round: a stream of RDMA WRITEs into fresh peer memory is cut by the
 * client's invalidation; afterwards nothing reaches the memory and every
 * use of the MR fails, and it deregisters.
 */
static int invalidate_round(struct worker *w, unsigned int round)
{
	size_t maplen = round_page(w->size);
	size_t slen = round % 2 ? 65536 : 4096;
	size_t olen = w->size < 4096 ? w->size : 4096;
	bool registered = false, streaming = false;
	struct pmt_stream s;
	struct pmt_rdma st;
	struct pmt_reg r;
	uint32_t n = 0;
	uint8_t *mem, *tmp;
	int ret = KSFT_FAIL;
	int e;

	if (slen > w->size)
		slen = w->size;
	tmp = malloc(maplen > MAX_OP ? maplen : MAX_OP);
	if (!tmp)
		return fail("out of memory");
	mem = client_map(w->cfd, maplen);
	if (!mem) {
		fail("round %u: mmap: %s", round, strerror(errno));
		goto out_free;
	}
	if (reg_expect(w->tfd, mem, w->size, PMT_F_ALLOW_PEER, PMT_KIND_PEER,
		       &r))
		goto out_unmap;
	registered = true;

	/* The MR works before the invalidation. */
	pattern(tmp, olen, 0, round + 1);
	e = pmt_op(w->tfd, r.handle, PMT_OP_WRITE, 0, olen, tmp, &st);
	if (e || st.status) {
		fail("round %u: WRITE before the invalidation: %s, status %d",
		     round, errname(e), st.status);
		goto out;
	}
	if (compare(mem, tmp, olen, 0, "WRITE before the invalidation"))
		goto out;

	e = pmt_stream_start(w->tfd, r.handle, 8, 0, slen);
	if (e) {
		fail("round %u: STREAM_START: %s", round, errname(e));
		goto out;
	}
	streaming = true;
	sleep_ms(20);

	e = client_invalidate(w->cfd, mem, maplen, POISON, &n);
	if (e) {
		fail("round %u: PEER_EX_IOC_INVALIDATE: %s", round, errname(e));
		goto out;
	}
	if (n != 1) {
		fail("round %u: %u regions invalidated, expected 1", round, n);
		goto out;
	}
	sleep_ms(50);

	streaming = false;
	e = pmt_stream_stop(w->tfd, r.handle, &s);
	if (e) {
		fail("round %u: STREAM_STOP: %s", round, errname(e));
		goto out;
	}
	diag("round %u: stream of %zu-byte writes: %" PRIu64 " ok, %" PRIu64 " failed, first error %d",
	     round, slen, (uint64_t)s.ok, (uint64_t)s.errors, s.first_error);
	if (!s.ok && !s.errors) {
		fail("round %u: the stream completed no write at all", round);
		goto out;
	}
	if (!s.errors || s.first_error != WC_REM_ACCESS_ERR) {
		fail("round %u: stream: %" PRIu64 " errors, first %d; expected errors, the first %d (REM_ACCESS_ERR)",
		     round, (uint64_t)s.errors, s.first_error,
		     WC_REM_ACCESS_ERR);
		goto out;
	}
	if (check_poisoned(w->cfd, mem, maplen, tmp, "after the stream"))
		goto out;

	/* B's WRITE by the rkey: refused by the responder. */
	memset(tmp, 0xa5, olen);
	e = pmt_op(w->tfd, r.handle, PMT_OP_WRITE, 0, olen, tmp, &st);
	if (e || st.status != WC_REM_ACCESS_ERR) {
		fail("round %u: WRITE after the invalidation: %s, status %d, expected status %d",
		     round, errname(e), st.status, WC_REM_ACCESS_ERR);
		goto out;
	}
	if (check_poisoned(w->cfd, mem, maplen, tmp, "after a WRITE"))
		goto out;

	/* A's SEND from the MR by the lkey: a local error. */
	e = pmt_op(w->tfd, r.handle, PMT_OP_SEND, 0, olen, tmp, &st);
	if (e || !st.status) {
		fail("round %u: SEND after the invalidation: %s, status %d, expected an error status",
		     round, errname(e), st.status);
		goto out;
	}
	diag("round %u: SEND after the invalidation: status %d, peer status %d",
	     round, st.status, st.peer_status);

	/* B's READ by the rkey. */
	e = pmt_op(w->tfd, r.handle, PMT_OP_READ, 0, olen, tmp, &st);
	if (e || !st.status) {
		fail("round %u: READ after the invalidation: %s, status %d, expected an error status",
		     round, errname(e), st.status);
		goto out;
	}
	diag("round %u: READ after the invalidation: status %d", round,
	     st.status);

	registered = false;
	if (dereg_ok(w->tfd, r.handle))
		goto out;
	ret = KSFT_PASS;
out:
	if (streaming)
		pmt_stream_stop(w->tfd, r.handle, &s);
	if (registered)
		pmt_dereg(w->tfd, r.handle);
out_unmap:
	munmap(mem, maplen);
out_free:
	free(tmp);
	return ret;
}

static void *invalidate_worker(void *arg)
{
	struct worker *w = arg;
	unsigned int i;

	if (w->id)
		snprintf(tag, sizeof(tag), "[thread %u] ", w->id);
	w->result = KSFT_PASS;
	for (i = 0; i < w->rounds && !w->result; i++)
		w->result = invalidate_round(w, i);
	return NULL;
}

/*
 * The client's counts over @n invalidated registrations (one each: one
 * acquire, get_pages, dma_map).
 */
static int check_inval_stats(const struct peer_ex_stats *a,
			     const struct peer_ex_stats *b, uint64_t n)
{
	uint64_t acq = b->acquire_yes - a->acquire_yes;
	int ret = 0;

	diag("client counts: acquire %" PRIu64 ", invalidations %" PRIu64 ", dma_unmap %" PRIu64 ", put_pages %" PRIu64 ", release %" PRIu64 ", unmap_after_inval %" PRIu64 ", live %" PRIu64 " -> %" PRIu64 ", unmaps %u",
	     (uint64_t)acq, (uint64_t)(b->invalidations - a->invalidations),
	     (uint64_t)(b->dma_unmap - a->dma_unmap),
	     (uint64_t)(b->put_pages - a->put_pages),
	     (uint64_t)(b->release - a->release),
	     (uint64_t)(b->unmap_after_inval - a->unmap_after_inval),
	     (uint64_t)a->live_contexts, (uint64_t)b->live_contexts,
	     b->unmaps);
	if (b->invalidations - a->invalidations != n)
		ret = fail("%" PRIu64 " invalidations, expected %" PRIu64,
			   (uint64_t)(b->invalidations - a->invalidations), n);
	if (b->live_contexts != a->live_contexts)
		ret = fail("live contexts %" PRIu64 " -> %" PRIu64,
			   (uint64_t)a->live_contexts,
			   (uint64_t)b->live_contexts);
	if (b->release - a->release != acq)
		ret = fail("%" PRIu64 " releases for %" PRIu64 " acquires",
			   (uint64_t)(b->release - a->release), acq);
	if (b->unmaps) {
		if (b->unmap_after_inval != a->unmap_after_inval ||
		    b->unmap_after_inval)
			ret = fail("the core unmapped invalidated regions of an UNMAPS client: unmap_after_inval %" PRIu64 " -> %" PRIu64,
				   (uint64_t)a->unmap_after_inval,
				   (uint64_t)b->unmap_after_inval);
	} else {
		if (b->dma_unmap - a->dma_unmap != n)
			ret = fail("%" PRIu64 " dma_unmap calls, expected %" PRIu64,
				   (uint64_t)(b->dma_unmap - a->dma_unmap), n);
		if (b->put_pages - a->put_pages != n)
			ret = fail("%" PRIu64 " put_pages calls, expected %" PRIu64,
				   (uint64_t)(b->put_pages - a->put_pages), n);
	}
	return ret;
}

static int case_invalidate(const char *client, size_t size,
			   unsigned int rounds, unsigned int threads)
{
	int cfd = open_dev(client);
	struct peer_ex_stats a, b;
	struct worker *w;
	unsigned int i, started = 0;
	int ret = KSFT_PASS, e;

	w = calloc(threads, sizeof(*w));
	if (!w)
		return fail("out of memory");
	e = client_stats(cfd, &a);
	if (e) {
		ret = fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out;
	}
	/* Each thread has its own test fd (its own QP pair) and client fd. */
	for (i = 0; i < threads; i++) {
		w[i].id = threads > 1 ? i + 1 : 0;
		w[i].client = client;
		w[i].cfd = open_dev(client);
		w[i].tfd = open_dev(TEST_DEV);
		w[i].size = size;
		w[i].rounds = rounds;
	}
	if (threads == 1) {
		invalidate_worker(&w[0]);
		started = 1;
	} else {
		for (i = 0; i < threads; i++) {
			e = pthread_create(&w[i].thread, NULL,
					   invalidate_worker, &w[i]);
			if (e) {
				ret = fail("pthread_create: %s", strerror(e));
				break;
			}
			started++;
		}
		for (i = 0; i < started; i++)
			pthread_join(w[i].thread, NULL);
	}
	for (i = 0; i < started; i++)
		if (w[i].result)
			ret = KSFT_FAIL;
	for (i = 0; i < threads; i++) {
		close(w[i].tfd);
		close(w[i].cfd);
	}
	if (ret)
		goto out;

	e = client_stats(cfd, &b);
	if (e) {
		ret = fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out;
	}
	ret = check_inval_stats(&a, &b, (uint64_t)rounds * threads);
out:
	free(w);
	close(cfd);
	return ret;
}

/* ---- race_dereg --------------------------------------------------------- */

struct race {
	pthread_barrier_t go;
	int cfd;
	void *mem;
	size_t maplen;
	int err;		/* the invalidation's errno */
	uint32_t invalidated;
};

static void *race_invalidate(void *arg)
{
	struct race *rc = arg;

	pthread_barrier_wait(&rc->go);
	rc->err = client_invalidate(rc->cfd, rc->mem, rc->maplen, 0,
				    &rc->invalidated);
	return NULL;
}

/*
 * Per round: the client's invalidation and the deregistration of the
 * same MR, released at once; both succeed, and the memory serves the next
 * round.
 */
static int case_race_dereg(const char *client, size_t size,
			   unsigned int rounds)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	size_t maplen = round_page(size);
	size_t olen = size < 4096 ? size : 4096;
	unsigned int i, won = 0;
	struct peer_ex_stats a, b;
	struct pmt_rdma st;
	struct pmt_reg r;
	struct race rc;
	uint8_t *mem, *tmp = NULL;
	int ret = KSFT_FAIL, e;

	memset(&rc, 0, sizeof(rc));
	mem = client_map(cfd, maplen);
	if (!mem) {
		fail("mmap: %s", strerror(errno));
		goto out_close;
	}
	tmp = malloc(olen);
	if (!tmp) {
		fail("out of memory");
		goto out_unmap;
	}
	e = client_stats(cfd, &a);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_unmap;
	}
	rc.cfd = cfd;
	rc.mem = mem;
	rc.maplen = maplen;

	/* One round more than asked: the last one checks the memory only. */
	for (i = 0; i <= rounds; i++) {
		pthread_t t;
		int derr;

		if (reg_expect(tfd, mem, size, PMT_F_ALLOW_PEER,
			       PMT_KIND_PEER, &r))
			goto out_unmap;
		pattern(tmp, olen, 0, i + 1);
		e = pmt_op(tfd, r.handle, PMT_OP_WRITE, 0, olen, tmp, &st);
		if (e || st.status || memcmp(mem, tmp, olen)) {
			fail("round %u: WRITE: %s, status %d%s", i, errname(e),
			     st.status,
			     !e && !st.status ? ", memory differs" : "");
			pmt_dereg(tfd, r.handle);
			goto out_unmap;
		}
		if (i == rounds) {
			if (dereg_ok(tfd, r.handle))
				goto out_unmap;
			break;
		}

		e = pthread_barrier_init(&rc.go, NULL, 2);
		if (e) {
			fail("pthread_barrier_init: %s", strerror(e));
			pmt_dereg(tfd, r.handle);
			goto out_unmap;
		}
		rc.err = 0;
		rc.invalidated = 0;
		e = pthread_create(&t, NULL, race_invalidate, &rc);
		if (e) {
			fail("pthread_create: %s", strerror(e));
			pthread_barrier_destroy(&rc.go);
			pmt_dereg(tfd, r.handle);
			goto out_unmap;
		}
		pthread_barrier_wait(&rc.go);
		derr = pmt_dereg(tfd, r.handle);
		pthread_join(t, NULL);
		pthread_barrier_destroy(&rc.go);
		if (derr) {
			fail("round %u: deregistration racing the invalidation: %s",
			     i, errname(derr));
			goto out_unmap;
		}
		if (rc.err) {
			fail("round %u: invalidation racing the deregistration: %s",
			     i, errname(rc.err));
			goto out_unmap;
		}
		if (rc.invalidated > 1) {
			fail("round %u: %u regions invalidated", i,
			     rc.invalidated);
			goto out_unmap;
		}
		won += rc.invalidated;
	}
	diag("the invalidation found the MR in %u of %u rounds", won, rounds);

	e = client_stats(cfd, &b);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_unmap;
	}
	if (b.live_contexts != a.live_contexts) {
		fail("live contexts %" PRIu64 " -> %" PRIu64,
		     (uint64_t)a.live_contexts, (uint64_t)b.live_contexts);
		goto out_unmap;
	}
	if (b.release - a.release != b.acquire_yes - a.acquire_yes) {
		fail("%" PRIu64 " releases for %" PRIu64 " acquires",
		     (uint64_t)(b.release - a.release),
		     (uint64_t)(b.acquire_yes - a.acquire_yes));
		goto out_unmap;
	}
	if (b.unmaps && b.unmap_after_inval != a.unmap_after_inval) {
		fail("unmap_after_inval %" PRIu64 " -> %" PRIu64,
		     (uint64_t)a.unmap_after_inval,
		     (uint64_t)b.unmap_after_inval);
		goto out_unmap;
	}
	ret = KSFT_PASS;
out_unmap:
	free(tmp);
	if (mem)
		munmap(mem, maplen);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/* ---- decline, fail ------------------------------------------------------ */

/* Registers client memory, checks one WRITE and deregisters. */
static int peer_roundtrip(int tfd, uint8_t *mem, size_t size)
{
	size_t olen = size < 4096 ? size : 4096;
	struct pmt_rdma st;
	struct pmt_reg r;
	uint8_t buf[4096];
	int e;

	if (reg_expect(tfd, mem, size, PMT_F_ALLOW_PEER, PMT_KIND_PEER, &r))
		return KSFT_FAIL;
	pattern(buf, olen, 0, 77);
	e = pmt_op(tfd, r.handle, PMT_OP_WRITE, 0, olen, buf, &st);
	if (e || st.status) {
		pmt_dereg(tfd, r.handle);
		return fail("WRITE: %s, status %d", errname(e), st.status);
	}
	if (compare(mem, buf, olen, 0, "WRITE")) {
		pmt_dereg(tfd, r.handle);
		return KSFT_FAIL;
	}
	return dereg_ok(tfd, r.handle);
}

static int case_decline(const char *client)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	const size_t size = 65536;
	struct peer_ex_stats a, b;
	struct pmt_reg r;
	uint8_t *mem, *anon = NULL;
	int ret = KSFT_FAIL, e;

	mem = client_map(cfd, size);
	if (!mem) {
		fail("mmap: %s", strerror(errno));
		goto out_close;
	}
	e = client_stats(cfd, &a);
	if (!e)
		e = client_mode(cfd, PEER_EX_MODE_DECLINE);
	if (e) {
		fail("STATS/SET_MODE: %s", errname(e));
		goto out_unmap;
	}
	if (reg_refused(tfd, (uintptr_t)mem, size, NULL, EFAULT,
			"client memory while the client declines"))
		goto out_mode;

	anon = anon_map(size);
	if (!anon) {
		fail("anonymous mmap: %s", strerror(errno));
		goto out_mode;
	}
	if (reg_expect(tfd, anon, size, PMT_F_ALLOW_PEER, PMT_KIND_PINNED, &r))
		goto out_mode;
	if (dereg_ok(tfd, r.handle))
		goto out_mode;

	e = client_mode(cfd, 0);
	if (e) {
		fail("SET_MODE 0: %s", errname(e));
		goto out_mode;
	}
	if (peer_roundtrip(tfd, mem, size))
		goto out_mode;
	e = client_stats(cfd, &b);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_mode;
	}
	diag("acquire answered no %" PRIu64 " times, yes %" PRIu64,
	     (uint64_t)(b.acquire_no - a.acquire_no),
	     (uint64_t)(b.acquire_yes - a.acquire_yes));
	if (b.acquire_no == a.acquire_no) {
		fail("the client's acquire was not asked while it declined");
		goto out_mode;
	}
	if (b.live_contexts != a.live_contexts) {
		fail("live contexts %" PRIu64 " -> %" PRIu64,
		     (uint64_t)a.live_contexts, (uint64_t)b.live_contexts);
		goto out_mode;
	}
	ret = KSFT_PASS;
out_mode:
	client_mode(cfd, 0);
	if (anon)
		munmap(anon, size);
out_unmap:
	munmap(mem, size);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/*
 * PMT_F_PEER_FIRST: the clients are asked before pinning. The client's
 * memory is its (peer); anonymous memory is asked about first (the client
 * answers no, its count shows it) and then pinned.
 */
static int case_peer_first(const char *client)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	const uint32_t flags = PMT_F_ALLOW_PEER | PMT_F_PEER_FIRST;
	const size_t size = 65536;
	struct peer_ex_stats a, b;
	struct pmt_reg r;
	uint8_t *mem, *anon = NULL;
	int ret = KSFT_FAIL, e;

	mem = client_map(cfd, size);
	if (!mem) {
		fail("mmap: %s", strerror(errno));
		goto out_close;
	}
	if (reg_expect(tfd, mem, size, flags, PMT_KIND_PEER, &r) || dereg_ok(tfd, r.handle))
		goto out_unmap;
	anon = anon_map(size);
	if (!anon) {
		fail("anonymous mmap: %s", strerror(errno));
		goto out_unmap;
	}
	e = client_stats(cfd, &a);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_unmap;
	}
	if (reg_expect(tfd, anon, size, flags, PMT_KIND_PINNED, &r) || dereg_ok(tfd, r.handle))
		goto out_unmap;
	e = client_stats(cfd, &b);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_unmap;
	}
	if (b.acquire_no == a.acquire_no) {
		fail("anonymous memory was pinned without asking the client first");
		goto out_unmap;
	}
	ret = KSFT_PASS;
out_unmap:
	if (anon)
		munmap(anon, size);
	munmap(mem, size);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/*
 * With get_pages or dma_map failing, the registration fails with the
 * client's errno and the core undoes exactly what succeeded.
 */
static int case_fail(const char *client, const char *which)
{
	int cfd, tfd;
	const size_t size = 65536;
	struct peer_ex_stats a, b;
	uint32_t mode;
	int want, ret = KSFT_FAIL, e;
	uint8_t *mem;

	if (!strcmp(which, "get_pages")) {
		mode = PEER_EX_MODE_FAIL_GET_PAGES;
		want = ENOMEM;
	} else if (!strcmp(which, "dma_map")) {
		mode = PEER_EX_MODE_FAIL_DMA_MAP;
		want = EIO;
	} else if (!strcmp(which, "dma_only")) {
		mode = PEER_EX_MODE_DMA_ONLY;
		want = EOPNOTSUPP;
	} else if (!strcmp(which, "page_size")) {
		mode = PEER_EX_MODE_BAD_PAGE_SIZE;
		want = EINVAL;
	} else if (!strcmp(which, "nmap")) {
		mode = PEER_EX_MODE_BAD_NMAP;
		want = EINVAL;
	} else if (!strcmp(which, "sg")) {
		mode = PEER_EX_MODE_BAD_SG;
		want = EINVAL;
	} else if (!strcmp(which, "no_dma_device")) {
		/* The client (dma_device=1) needs a DMA device; ours have none. */
		mode = 0;
		want = EOPNOTSUPP;
	} else {
		return fail("fail: unknown callback \"%s\"", which);
	}
	cfd = open_dev(client);
	tfd = open_dev(TEST_DEV);

	mem = client_map(cfd, size);
	if (!mem) {
		fail("mmap: %s", strerror(errno));
		goto out_close;
	}
	e = client_stats(cfd, &a);
	if (!e)
		e = client_mode(cfd, mode);
	if (e) {
		fail("STATS/SET_MODE: %s", errname(e));
		goto out_unmap;
	}
	if (reg_refused(tfd, (uintptr_t)mem, size, NULL, want,
			which))
		goto out_mode;
	e = client_stats(cfd, &b);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_mode;
	}
	diag("acquire %" PRIu64 ", get_pages %" PRIu64 ", put_pages %" PRIu64 ", dma_map %" PRIu64 ", dma_unmap %" PRIu64 ", release %" PRIu64,
	     (uint64_t)(b.acquire_yes - a.acquire_yes),
	     (uint64_t)(b.get_pages - a.get_pages),
	     (uint64_t)(b.put_pages - a.put_pages),
	     (uint64_t)(b.dma_map - a.dma_map),
	     (uint64_t)(b.dma_unmap - a.dma_unmap),
	     (uint64_t)(b.release - a.release));
	if (b.acquire_yes == a.acquire_yes) {
		fail("the client's acquire did not claim its memory");
		goto out_mode;
	}
	if (b.get_pages - a.get_pages != b.put_pages - a.put_pages) {
		fail("get_pages and put_pages unbalanced");
		goto out_mode;
	}
	if (b.dma_map - a.dma_map != b.dma_unmap - a.dma_unmap) {
		fail("dma_map and dma_unmap unbalanced");
		goto out_mode;
	}
	if (b.release - a.release != b.acquire_yes - a.acquire_yes) {
		fail("acquire and release unbalanced");
		goto out_mode;
	}
	if (mode && mode != PEER_EX_MODE_FAIL_GET_PAGES && b.get_pages == a.get_pages) {
		fail("get_pages was not called before the failing dma_map");
		goto out_mode;
	}
	if (!mode && (b.get_pages != a.get_pages || b.dma_map != a.dma_map)) {
		fail("the client was called past acquire on a device without DMA");
		goto out_mode;
	}
	if (b.live_contexts != a.live_contexts) {
		fail("live contexts %" PRIu64 " -> %" PRIu64,
		     (uint64_t)a.live_contexts, (uint64_t)b.live_contexts);
		goto out_mode;
	}
	e = client_mode(cfd, 0);
	if (e) {
		fail("SET_MODE 0: %s", errname(e));
		goto out_mode;
	}
	/* The client's memory works again (not for a client that needs DMA). */
	if (mode && peer_roundtrip(tfd, mem, size))
		goto out_mode;
	ret = KSFT_PASS;
out_mode:
	client_mode(cfd, 0);
out_unmap:
	munmap(mem, size);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/* ---- bounds, noinval ---------------------------------------------------- */

/*
 * Ranges that leave the client's mapping, empty and wrapping ones. The
 * mapping sits between inaccessible guards (one page before, 64 KiB
 * after), so the ranges that leave it cannot be pinned either.
 */
static int case_bounds(const char *client)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	const size_t size = 65536, guard = 65536;
	size_t total = page_size + size + guard;
	struct pmt_rdma st;
	struct pmt_reg r;
	uint8_t *area, *mem, buf[8192];
	uint64_t addr;
	int ret = KSFT_FAIL, e;

	area = mmap(NULL, total, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED) {
		fail("mmap of the guards: %s", strerror(errno));
		goto out_close;
	}
	mem = mmap(area + page_size, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_FIXED, cfd, 0);
	if (mem == MAP_FAILED) {
		fail("mmap of the client memory: %s", strerror(errno));
		goto out_unmap;
	}
	addr = (uintptr_t)mem;

	if (reg_refused(tfd, addr, 2 * size, NULL, EFAULT,
			"a range running past the mapping") ||
	    reg_refused(tfd, addr - page_size, 2 * page_size, NULL, EFAULT,
			"a range starting before the mapping") ||
	    reg_refused(tfd, addr, 0, NULL, EINVAL, "an empty range") ||
	    reg_refused(tfd, 0xfffffffffffff000ull, 0x2000, NULL, EINVAL,
			"a wrapping range"))
		goto out_unmap;

	/* Inside: page-aligned, then starting and ending mid-page. */
	if (reg_expect(tfd, mem + page_size, 2 * page_size, PMT_F_ALLOW_PEER,
		       PMT_KIND_PEER, &r))
		goto out_unmap;
	pattern(buf, 2 * page_size, 1, 3);
	e = pmt_op(tfd, r.handle, PMT_OP_WRITE, 0, 2 * page_size, buf, &st);
	if (e || st.status) {
		fail("WRITE inside: %s, status %d", errname(e), st.status);
		pmt_dereg(tfd, r.handle);
		goto out_unmap;
	}
	if (dereg_ok(tfd, r.handle) ||
	    compare(mem + page_size, buf, 2 * page_size, page_size,
		    "WRITE inside the mapping") ||
	    check_fill(mem, page_size, 0, "the page before the MR"))
		goto out_unmap;

	if (reg_expect(tfd, mem + 100, 5000, PMT_F_ALLOW_PEER, PMT_KIND_PEER,
		       &r))
		goto out_unmap;
	pattern(buf, 5000, 2, 4);
	e = pmt_op(tfd, r.handle, PMT_OP_WRITE, 0, 5000, buf, &st);
	if (e || st.status) {
		fail("WRITE at offset 100: %s, status %d", errname(e),
		     st.status);
		pmt_dereg(tfd, r.handle);
		goto out_unmap;
	}
	if (dereg_ok(tfd, r.handle) ||
	    compare(mem + 100, buf, 5000, 100, "WRITE at offset 100") ||
	    check_fill(mem, 100, 0, "the bytes before the MR"))
		goto out_unmap;
	ret = KSFT_PASS;
out_unmap:
	munmap(area, total);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/*
 * On a device that cannot invalidate, a client that requires invalidation
 * is not asked: the memory cannot be registered, and acquire is not
 * called.
 */
static int case_noinval(const char *client, const char *dev)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	const size_t size = 65536;
	struct peer_ex_stats a, b;
	struct pmt_reg r;
	uint8_t *mem;
	int ret = KSFT_FAIL, e;

	mem = client_map(cfd, size);
	if (!mem) {
		fail("mmap: %s", strerror(errno));
		goto out_close;
	}
	e = client_stats(cfd, &a);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_unmap;
	}
	e = pmt_reg(tfd, (uintptr_t)mem, size, ACC_ALL, PMT_F_ALLOW_PEER, dev,
		    &r);
	if (e == ENODEV) {
		printf("SKIP: no device %s\n", dev);
		ret = KSFT_SKIP;
		goto out_unmap;
	}
	if (!e) {
		fail("registered on %s (kind %u, peer \"%s\"), expected EFAULT",
		     dev, r.kind, r.peer);
		pmt_dereg(tfd, r.handle);
		goto out_unmap;
	}
	if (e != EFAULT) {
		fail("registration on %s: %s, expected EFAULT", dev,
		     errname(e));
		goto out_unmap;
	}
	e = client_stats(cfd, &b);
	if (e) {
		fail("PEER_EX_IOC_STATS: %s", errname(e));
		goto out_unmap;
	}
	if (b.acquire_yes != a.acquire_yes || b.acquire_no != a.acquire_no) {
		fail("the client was asked (acquire yes +%" PRIu64 ", no +%" PRIu64 ") on a device that cannot invalidate",
		     (uint64_t)(b.acquire_yes - a.acquire_yes),
		     (uint64_t)(b.acquire_no - a.acquire_no));
		goto out_unmap;
	}
	ret = KSFT_PASS;
out_unmap:
	munmap(mem, size);
out_close:
	close(tfd);
	close(cfd);
	return ret;
}

/* ---- hold --------------------------------------------------------------- */

/*
 * Leaves an MR holding the client's pages with neither the mapping nor
 * the client's file left, for the suite to unload the client or remove
 * the device meanwhile; then reports what a WRITE and the deregistration
 * give.
 */
static int case_hold(const char *client, size_t size)
{
	int cfd = open_dev(client), tfd = open_dev(TEST_DEV);
	size_t maplen = round_page(size);
	size_t olen = size < 4096 ? size : 4096;
	struct pmt_rdma st;
	struct pmt_reg r;
	uint8_t buf[4096];
	char line[64];
	uint8_t *mem;
	int e;

	mem = client_map(cfd, maplen);
	if (!mem) {
		fail("mmap: %s", strerror(errno));
		return KSFT_FAIL;
	}
	if (reg_expect(tfd, mem, size, PMT_F_ALLOW_PEER, PMT_KIND_PEER, &r))
		return KSFT_FAIL;
	pattern(buf, olen, 0, 5);
	e = pmt_op(tfd, r.handle, PMT_OP_WRITE, 0, olen, buf, &st);
	if (e || st.status || memcmp(mem, buf, olen)) {
		fail("WRITE: %s, status %d", errname(e), st.status);
		pmt_dereg(tfd, r.handle);
		return KSFT_FAIL;
	}
	if (munmap(mem, maplen) || close(cfd)) {
		fail("munmap/close of the client: %s", strerror(errno));
		pmt_dereg(tfd, r.handle);
		return KSFT_FAIL;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		diag("stdin closed; going on");

	memset(buf, 0xa5, olen);
	e = pmt_op(tfd, r.handle, PMT_OP_WRITE, 0, olen, buf, &st);
	if (e)
		printf("errno=%s\n", errname(e));
	else
		printf("status=%d\n", st.status);
	e = pmt_dereg(tfd, r.handle);
	if (e)
		printf("dereg=errno %s\n", errname(e));
	else
		printf("dereg=0\n");
	fflush(stdout);
	close(tfd);
	return KSFT_PASS;
}

/* ---- main --------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr,
		"usage: peer_user rw CLIENT SIZE\n"
		"       peer_user pinned SIZE\n"
		"       peer_user huge\n"
		"       peer_user invalidate CLIENT SIZE ROUNDS\n"
		"       peer_user invalidate_mt CLIENT SIZE ROUNDS THREADS\n"
		"       peer_user race_dereg CLIENT SIZE ROUNDS\n"
		"       peer_user decline CLIENT\n"
		"       peer_user fail CLIENT get_pages|dma_map|dma_only|page_size|nmap|sg|no_dma_device\n"
		"       peer_user bounds CLIENT\n"
		"       peer_user noinval CLIENT DEV\n"
		"       peer_user hold CLIENT SIZE\n");
	printf("FAIL: bad arguments\n");
	return KSFT_FAIL;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	unsigned int rounds = 0, threads = 0;
	size_t size = 0;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = sysconf(_SC_PAGESIZE);

#define ARGS(n) (argc == (n) + 2)
	if (!strcmp(c, "rw") && ARGS(2) && !parse_size(argv[3], &size)) {
		ret = case_rw(argv[2], size);
	} else if (!strcmp(c, "pinned") && ARGS(1) &&
		   !parse_size(argv[2], &size)) {
		ret = case_pinned(size);
	} else if (!strcmp(c, "invalidate") && ARGS(3) &&
		   !parse_size(argv[3], &size) &&
		   !parse_count(argv[4], &rounds)) {
		ret = case_invalidate(argv[2], size, rounds, 1);
	} else if (!strcmp(c, "invalidate_mt") && ARGS(4) &&
		   !parse_size(argv[3], &size) &&
		   !parse_count(argv[4], &rounds) &&
		   !parse_count(argv[5], &threads) && threads <= 64) {
		ret = case_invalidate(argv[2], size, rounds, threads);
	} else if (!strcmp(c, "race_dereg") && ARGS(3) &&
		   !parse_size(argv[3], &size) &&
		   !parse_count(argv[4], &rounds)) {
		ret = case_race_dereg(argv[2], size, rounds);
	} else if (!strcmp(c, "huge") && ARGS(0)) {
		ret = case_huge();
	} else if (!strcmp(c, "peer_first") && ARGS(1)) {
		ret = case_peer_first(argv[2]);
	} else if (!strcmp(c, "decline") && ARGS(1)) {
		ret = case_decline(argv[2]);
	} else if (!strcmp(c, "fail") && ARGS(2)) {
		ret = case_fail(argv[2], argv[3]);
	} else if (!strcmp(c, "bounds") && ARGS(1)) {
		ret = case_bounds(argv[2]);
	} else if (!strcmp(c, "noinval") && ARGS(2)) {
		ret = case_noinval(argv[2], argv[3]);
	} else if (!strcmp(c, "hold") && ARGS(2) &&
		   !parse_size(argv[3], &size)) {
		return case_hold(argv[2], size);
	} else {
		return usage();
	}
#undef ARGS
	if (ret == KSFT_PASS)
		printf("ok\n");
	return ret;
}
