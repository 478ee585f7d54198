// SPDX-License-Identifier: GPL-2.0
/*
 * The uverbs write() ABI of rdma_rs_uverbs, driven by hand as a hostile
 * (or merely buggy) program would: uverbs.sh (selftests/rxe) runs one case per call,
 *
 *   uverbs_user CASE /dev/infiniband/uverbsN
 *
 * and checks what the kernel answers: errnos, handles, the event file.
 * Exit status 0 if every check of the case held; otherwise the failed
 * check is printed.
 *
 * The command layouts of the first cases are those of
 * include/uapi/rdma/ib_user_verbs.h, written out as plain words; the QP
 * cases (the rings of user QPs, driven as a hostile librxe would) use the
 * system's uapi headers, <rdma/ib_user_verbs.h> and <rdma/rdma_user_rxe.h>,
 * which is what real users build against.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "../lib/check.h"

enum {
	GET_CONTEXT = 0,
	QUERY_DEVICE = 1,
	QUERY_PORT = 2,
	ALLOC_PD = 3,
	DEALLOC_PD = 4,
	REG_MR = 9,
	DEREG_MR = 13,
	CREATE_COMP_CHANNEL = 17,
	CREATE_CQ = 18,
	RESIZE_CQ = 19,
	DESTROY_CQ = 20,
	REQ_NOTIFY_CQ = 23,
	ATTACH_MCAST = 30,
	EXTENDED = 0x80000000,
};

static const char *dev;

/* Writes one legacy command: header, then body (in 4-byte words). */
static ssize_t cmd(int fd, uint32_t command, const void *body, size_t len, uint16_t out_words)
{
	uint8_t buf[512];
	uint32_t hdr[2];

	hdr[0] = command;
	hdr[1] = (uint32_t)((8 + len) / 4) | ((uint32_t)out_words << 16);
	memcpy(buf, hdr, 8);
	memcpy(buf + 8, body, len);
	return write(fd, buf, 8 + len);
}

/*
 * Writes one extended command: header, extended header, body (8-byte
 * words), with out_words of core and drv_out words of driver response at
 * resp.
 */
static ssize_t ex_cmd(int fd, uint32_t command, const void *body, size_t len, void *resp,
		      uint16_t out_words, uint16_t drv_out)
{
	uint8_t buf[512];
	uint32_t hdr[2];
	uint64_t response = (uintptr_t)resp;
	uint16_t words[2] = { 0, drv_out };
	uint32_t reserved = 0;

	hdr[0] = command | EXTENDED;
	hdr[1] = (uint32_t)(len / 8) | ((uint32_t)out_words << 16);
	memcpy(buf, hdr, 8);
	memcpy(buf + 8, &response, 8);
	memcpy(buf + 16, words, 4);
	memcpy(buf + 20, &reserved, 4);
	memcpy(buf + 24, body, len);
	return write(fd, buf, 24 + len);
}

/* GET_CONTEXT; returns the async event fd. */
static int get_context(int fd)
{
	uint32_t resp[2] = { ~0u, ~0u };
	uint64_t req[1] = { (uintptr_t)resp };

	CHECK(cmd(fd, GET_CONTEXT, req, sizeof(req), 2) == 16, "GET_CONTEXT");
	CHECK(resp[1] == 1, "num_comp_vectors %u", resp[1]);
	return (int)resp[0];
}

static int alloc_pd(int fd, uint32_t *handle)
{
	uint64_t req[1];

	*handle = ~0u;
	req[0] = (uintptr_t)handle;
	return cmd(fd, ALLOC_PD, req, sizeof(req), 1) == 16 ? 0 : -1;
}

static int dealloc_pd(int fd, uint32_t handle)
{
	uint32_t req[2] = { handle, 0 };

	return cmd(fd, DEALLOC_PD, req, 4, 0) == 12 ? 0 : -1;
}

/* REG_MR of [addr, addr + len) in pd; fills handle, lkey, rkey. */
static int reg_mr(int fd, uint32_t pd, void *addr, uint64_t len, uint32_t access, uint32_t *out)
{
	uint64_t req[6];

	req[0] = (uintptr_t)out;
	req[1] = (uintptr_t)addr;
	req[2] = len;
	req[3] = (uintptr_t)addr;
	req[4] = pd | ((uint64_t)access << 32);
	return cmd(fd, REG_MR, req, 40, 3) == 48 ? 0 : -1;
}

/* REG_MR whose I/O address (hca_va) is iova, not addr (ibv_reg_mr_iova). */
static int reg_mr_iova(int fd, uint32_t pd, void *addr, uint64_t len, uint64_t iova,
		       uint32_t access, uint32_t *out)
{
	uint64_t req[6];

	req[0] = (uintptr_t)out;
	req[1] = (uintptr_t)addr;
	req[2] = len;
	req[3] = iova;
	req[4] = pd | ((uint64_t)access << 32);
	return cmd(fd, REG_MR, req, 40, 3) == 48 ? 0 : -1;
}

static int dereg_mr(int fd, uint32_t handle)
{
	uint32_t req[1] = { handle };

	return cmd(fd, DEREG_MR, req, 4, 0) == 12 ? 0 : -1;
}

static int open_dev(void)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	CHECK(fd >= 0, "open %s", dev);
	return fd;
}

/* The ioctl ABI answers exactly ENOTTY (libibverbs' probe needs it). */
static void case_ioctl(void)
{
	int fd = open_dev();
	uint64_t arg[4] = { 0 };

	CHECK(ioctl(fd, 0xc0181b01, arg) < 0 && errno == ENOTTY, "ioctl not ENOTTY");
	CHECK(ioctl(fd, 0, NULL) < 0 && errno == ENOTTY, "ioctl 0 not ENOTTY");
	close(fd);
}

/* Malformed framing: each refused with the C uverbs' errno, nothing made. */
static void case_framing(void)
{
	int fd = open_dev();
	uint32_t resp[2];
	uint64_t req[2] = { (uintptr_t)resp, 0 };
	uint8_t big[600];
	uint32_t hdr[2];

	/* Shorter than a header. */
	CHECK(write(fd, req, 4) < 0 && errno == EINVAL, "short write");
	/* in_words disagrees with the length written. */
	hdr[0] = GET_CONTEXT;
	hdr[1] = 9 | (2 << 16);
	memcpy(big, hdr, 8);
	memcpy(big + 8, req, 8);
	CHECK(write(fd, big, 16) < 0 && errno == EINVAL, "length mismatch");
	/* Unknown command, and stray bits in the command word. */
	CHECK(cmd(fd, 200, req, 8, 2) < 0 && errno == EOPNOTSUPP, "unknown command");
	CHECK(cmd(fd, 0x40000000, req, 8, 2) < 0 && errno == EINVAL, "stray bits");
	/* A response area too small for the response. */
	CHECK(cmd(fd, GET_CONTEXT, req, 8, 1) < 0 && errno == ENOSPC, "small response");
	/* Any command but GET_CONTEXT needs a context. */
	CHECK(cmd(fd, ALLOC_PD, req, 8, 1) < 0 && errno == EINVAL, "no context");
	/* A response address nothing is mapped at: EFAULT, no descriptor. */
	req[0] = 8;
	CHECK(cmd(fd, GET_CONTEXT, req, 8, 2) < 0 && errno == EFAULT, "bad response");
	/* The context was not made: a proper GET_CONTEXT still works. */
	int ev = get_context(fd);
	CHECK(ev >= 0, "async fd");
	/* Only once. */
	req[0] = (uintptr_t)resp;
	CHECK(cmd(fd, GET_CONTEXT, req, 8, 2) < 0 && errno == EINVAL, "second context");
	/* A non-zero tail past the known request: EOPNOTSUPP. */
	static uint8_t devattr[256];
	req[0] = (uintptr_t)devattr;
	req[1] = 1;
	CHECK(cmd(fd, QUERY_DEVICE, req, 16, 44) < 0 && errno == EOPNOTSUPP, "tail");
	req[1] = 0;
	CHECK(cmd(fd, QUERY_DEVICE, req, 16, 44) == 24, "query_device");
	req[0] = (uintptr_t)resp;
	/* A command of the table naming no object: EINVAL. */
	uint32_t mc[6] = { 0 };
	mc[4] = 77;	/* qp_handle */
	CHECK(cmd(fd, ATTACH_MCAST, mc, sizeof(mc), 0) < 0 && errno == EINVAL, "ATTACH_MCAST");
	close(ev);
	close(fd);
}

/* Handles: foreign, stale, of another kind; a PD in use; teardown. */
static void case_handles(void)
{
	int fd = open_dev(), fd2 = open_dev();
	uint32_t pd, pd2, mr[3], mr2[3];
	static char buf[8192] __attribute__((aligned(4096)));

	close(get_context(fd));
	close(get_context(fd2));
	CHECK(alloc_pd(fd, &pd) == 0 && pd == 0, "alloc_pd %u", pd);
	CHECK(alloc_pd(fd2, &pd2) == 0 && pd2 == 0, "alloc_pd 2 %u", pd2);
	/* A handle of no object, in this file. */
	CHECK(dealloc_pd(fd, 7) < 0 && errno == EINVAL, "dealloc 7");
	CHECK(reg_mr(fd, 7, buf, sizeof(buf), 1, mr) < 0 && errno == EINVAL, "reg_mr pd 7");
	CHECK(reg_mr(fd, pd, buf, sizeof(buf), 1, mr) == 0 && mr[0] == 1, "reg_mr %u", mr[0]);
	CHECK(mr[1] != 0 && mr[2] != 0, "keys %x %x", mr[1], mr[2]);
	/* Bad access flags (remote write without local write). */
	CHECK(reg_mr(fd, pd, buf, sizeof(buf), 2, mr2) < 0 && errno == EINVAL, "access");
	/* Memory that is not mapped. */
	CHECK(reg_mr(fd, pd, (void *)4096, 4096, 1, mr2) < 0 && errno == EFAULT, "unmapped");
	/* An MR handle given as a PD, a PD handle as an MR. */
	CHECK(dealloc_pd(fd, mr[0]) < 0 && errno == EINVAL, "mr as pd");
	CHECK(dereg_mr(fd, pd) < 0 && errno == EINVAL, "pd as mr");
	/* The PD has an MR: EBUSY, and the PD is still there. */
	CHECK(dealloc_pd(fd, pd) < 0 && errno == EBUSY, "busy pd");
	CHECK(dereg_mr(fd, mr[0]) == 0, "dereg");
	CHECK(dereg_mr(fd, mr[0]) < 0 && errno == EINVAL, "stale mr");
	CHECK(dealloc_pd(fd, pd) == 0, "dealloc");
	CHECK(dealloc_pd(fd, pd) < 0 && errno == EINVAL, "stale pd");
	/* The lowest free handle comes back. */
	CHECK(alloc_pd(fd, &pd) == 0 && pd == 0, "realloc %u", pd);
	/* fd2's PD 0 is not fd's: destroying fd's leaves fd2's. */
	CHECK(dealloc_pd(fd, 0) == 0, "dealloc fd 0");
	CHECK(reg_mr(fd2, pd2, buf, 4096, 1, mr2) == 0, "fd2 pd alive");
	/* Closed with an MR and a PD alive: uverbs.sh checks the counts. */
	CHECK(alloc_pd(fd, &pd) == 0, "alloc_pd");
	CHECK(reg_mr(fd, pd, buf, sizeof(buf), 7, mr) == 0, "reg_mr rw");
	close(fd);
	close(fd2);
}

/* The async event file: non-blocking read, poll, EIO once closed. */
static void case_events(void)
{
	int fd = open_dev();
	int ev = get_context(fd);
	uint8_t rec[16];
	struct pollfd p = { .fd = ev, .events = POLLIN };

	CHECK(fcntl(ev, F_SETFL, O_NONBLOCK) == 0, "nonblock");
	CHECK(read(ev, rec, sizeof(rec)) < 0 && errno == EAGAIN, "empty read");
	CHECK(read(ev, rec, 8) < 0 && errno == EINVAL, "short read");
	CHECK(poll(&p, 1, 0) == 0, "poll empty");
	CHECK(write(ev, rec, 16) < 0, "write to event file");
	/* The uverbs file goes: the event file says so. */
	close(fd);
	CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN), "poll closed %x", p.revents);
	CHECK(read(ev, rec, sizeof(rec)) < 0 && errno == EIO, "read closed");
	close(ev);
}

static int comp_channel(int fd)
{
	uint32_t resp = ~0u;
	uint64_t req[1] = { (uintptr_t)&resp };

	if (cmd(fd, CREATE_COMP_CHANNEL, req, sizeof(req), 1) != 16)
		return -1;
	return (int)resp;
}

/*
 * Completion channels: 8-byte records, non-blocking reads, poll, EIO once
 * the context is gone; many made and closed leave nothing behind.
 */
static void case_channel(void)
{
	int fd = open_dev();
	uint32_t resp;
	uint64_t req[1] = { (uintptr_t)&resp };
	uint8_t rec[8];
	int i, ch;

	CHECK(cmd(fd, CREATE_COMP_CHANNEL, req, 8, 1) < 0 && errno == EINVAL, "no context");
	close(get_context(fd));
	for (i = 0; i < 1000; i++) {
		ch = comp_channel(fd);
		CHECK(ch >= 0, "channel %d", i);
		close(ch);
	}
	ch = comp_channel(fd);
	CHECK(ch >= 0, "channel");
	struct pollfd p = { .fd = ch, .events = POLLIN };

	CHECK(fcntl(ch, F_SETFL, O_NONBLOCK) == 0, "nonblock");
	CHECK(read(ch, rec, sizeof(rec)) < 0 && errno == EAGAIN, "empty read");
	CHECK(read(ch, rec, 4) < 0 && errno == EINVAL, "short read");
	CHECK(poll(&p, 1, 0) == 0, "poll empty");
	/* A bad response address: no descriptor is left behind. */
	int probe = dup(0);
	req[0] = 8;
	CHECK(cmd(fd, CREATE_COMP_CHANNEL, req, 8, 1) < 0 && errno == EFAULT, "bad response");
	int next = dup(0);
	CHECK(next == probe + 1, "descriptor leaked: %d after %d", next, probe);
	close(next);
	close(probe);
	close(fd);
	CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN), "poll closed %x", p.revents);
	CHECK(read(ch, rec, sizeof(rec)) < 0 && errno == EIO, "read closed");
	close(ch);
}

/* CREATE_CQ (legacy): resp[0..1] core, resp[2..5] the ring's mminfo. */
static int create_cq(int fd, uint32_t cqe, uint32_t vector, int channel, uint32_t *resp,
		     uint16_t out_words)
{
	uint32_t req[8];
	uint64_t r = (uintptr_t)resp;

	memset(req, 0, sizeof(req));
	memcpy(req, &r, 8);
	req[2] = 0xc0ffee;	/* user_handle */
	req[3] = 0;
	req[4] = cqe;
	req[5] = vector;
	req[6] = (uint32_t)channel;
	return cmd(fd, CREATE_CQ, req, sizeof(req), out_words) == 40 ? 0 : -1;
}

/* DESTROY_CQ: counts[0] completion events read, counts[1] async ones. */
static int destroy_cq(int fd, uint32_t handle, uint32_t *counts)
{
	uint32_t req[4];
	uint64_t r = (uintptr_t)counts;

	memcpy(req, &r, 8);
	req[2] = handle;
	req[3] = 0;
	return cmd(fd, DESTROY_CQ, req, sizeof(req), 2) == 24 ? 0 : -1;
}

static int req_notify(int fd, uint32_t handle, uint32_t solicited)
{
	uint32_t req[2] = { handle, solicited };

	return cmd(fd, REQ_NOTIFY_CQ, req, sizeof(req), 0) == 16 ? 0 : -1;
}

/*
 * CQs: the checks of CREATE_CQ (driver response room, vector, channel,
 * sizes), the ring as librxe maps it (header, once only, at its offset
 * and size only), notify, destroy with its event counts, the extended
 * form; many made and destroyed leave nothing behind.
 */
static void case_cq(void)
{
	int fd = open_dev();
	uint32_t resp[6], counts[2], pd;
	uint64_t off;
	int i, ch, other;

	close(get_context(fd));
	ch = comp_channel(fd);
	CHECK(ch >= 0, "channel");
	CHECK(alloc_pd(fd, &pd) == 0, "alloc_pd");
	/* No room for the driver response. */
	CHECK(create_cq(fd, 10, 0, -1, resp, 2) < 0 && errno == EINVAL, "no driver out");
	CHECK(create_cq(fd, 10, 1, -1, resp, 6) < 0 && errno == EINVAL, "vector 1");
	CHECK(create_cq(fd, 10, 0, 999, resp, 6) < 0 && errno == EINVAL, "channel 999");
	other = dup(0);
	CHECK(create_cq(fd, 10, 0, other, resp, 6) < 0 && errno == EINVAL, "not a channel");
	close(other);
	CHECK(create_cq(fd, 0, 0, -1, resp, 6) < 0 && errno == EINVAL, "cqe 0");
	CHECK(create_cq(fd, 1u << 30, 0, -1, resp, 6) < 0 && errno == EINVAL, "cqe 2^30");
	CHECK(create_cq(fd, 10, 0, ch, resp, 6) == 0, "create_cq");
	CHECK(resp[0] == 1 && resp[1] == 10, "handle %u cqe %u", resp[0], resp[1]);
	memcpy(&off, &resp[2], 8);
	uint32_t size = resp[4];
	CHECK(off != 0 && off % 4096 == 0 && size == 4096, "mminfo %llx %u",
	      (unsigned long long)off, size);
	CHECK(mmap(NULL, size * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off) == MAP_FAILED &&
	      errno == EINVAL, "wrong size");
	CHECK(mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off + 4096) ==
	      MAP_FAILED && errno == EINVAL, "wrong offset");
	volatile uint32_t *ring = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);

	CHECK(ring != MAP_FAILED, "mmap ring");
	/* rxe_queue_buf: log2_elem_size, index_mask; producer, consumer. */
	CHECK(ring[0] == 6 && ring[1] == 15, "header %u %u", ring[0], ring[1]);
	CHECK(ring[32] == 0 && ring[64] == 0, "indices %u %u", ring[32], ring[64]);
	CHECK(mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off) == MAP_FAILED &&
	      errno == EINVAL, "mapped twice");
	/* User space scribbles on the ring: only its own CQ is affected. */
	ring[64] = 12345;
	ring[1] = 0;
	CHECK(req_notify(fd, resp[0], 0) == 0, "notify");
	CHECK(req_notify(fd, resp[0], 1) == 0, "notify solicited");
	CHECK(req_notify(fd, 7, 0) < 0 && errno == EINVAL, "notify handle 7");
	CHECK(req_notify(fd, pd, 0) < 0 && errno == EINVAL, "notify a pd");
	CHECK(destroy_cq(fd, pd, counts) < 0 && errno == EINVAL, "destroy a pd");
	counts[0] = counts[1] = ~0u;
	CHECK(destroy_cq(fd, resp[0], counts) == 0, "destroy_cq");
	CHECK(counts[0] == 0 && counts[1] == 0, "counts %u %u", counts[0], counts[1]);
	CHECK(destroy_cq(fd, resp[0], counts) < 0 && errno == EINVAL, "stale cq");
	/* The mapping outlives the CQ: still readable. */
	CHECK(ring[0] == 6, "ring after destroy");
	munmap((void *)ring, size);
	/* A CQ destroyed unmapped: its offset maps nothing. */
	CHECK(create_cq(fd, 100, 0, -1, resp, 6) == 0, "create unmapped");
	memcpy(&off, &resp[2], 8);
	size = resp[4];
	CHECK(size == 12288, "size %u for 100 entries", size);
	CHECK(destroy_cq(fd, resp[0], counts) == 0, "destroy unmapped");
	CHECK(mmap(NULL, size, PROT_READ, MAP_SHARED, fd, off) == MAP_FAILED && errno == EINVAL,
	      "offset withdrawn");
	/* The extended form: flags and comp_mask are checked. */
	uint32_t ex[8] = { 0xbeef, 0, 16, 0, (uint32_t)-1, 0, 0, 0 };
	uint32_t exr[4 + 4];

	ex[6] = 1;
	CHECK(ex_cmd(fd, CREATE_CQ, ex, 32, exr, 2, 2) < 0 && errno == EOPNOTSUPP, "ex flags");
	ex[6] = 0;
	ex[5] = 1;
	CHECK(ex_cmd(fd, CREATE_CQ, ex, 32, exr, 2, 2) < 0 && errno == EINVAL, "ex comp_mask");
	ex[5] = 0;
	memset(exr, 0xff, sizeof(exr));
	CHECK(ex_cmd(fd, CREATE_CQ, ex, 32, exr, 2, 2) == 56, "ex create");
	CHECK(exr[0] == 1 && exr[1] == 16 && exr[2] == 0 && exr[3] == 16, "ex resp %u %u %u %u",
	      exr[0], exr[1], exr[2], exr[3]);
	CHECK(exr[6] == 4096, "ex mminfo size %u", exr[6]);
	/* Many made and destroyed. */
	for (i = 0; i < 500; i++) {
		CHECK(create_cq(fd, 64, 0, ch, resp, 6) == 0, "create %d", i);
		CHECK(destroy_cq(fd, resp[0], counts) == 0, "destroy %d", i);
	}
	/* Closed with a CQ alive (and its channel): uverbs.sh checks. */
	CHECK(create_cq(fd, 64, 0, ch, resp, 6) == 0, "create kept");
	close(fd);
	close(ch);
}

/*
 * The rings of user QPs (the hostile user space of rdma_user_rxe.h).
 * Everything below drives QPs as librxe does, by hand: entries written
 * to the mapped send and receive rings, POST_SEND with no work request
 * as the doorbell, completions read from the mapped CQ ring.
 */

/* enum ib_wc_status, enum ib_qp_state, IB_QP_* (kernel-internal enums). */
enum { WC_RECV = 128 };	/* enum ib_wc_opcode */
enum { WC_SUCCESS = 0, WC_LOC_QP_OP_ERR = 2, WC_WR_FLUSH_ERR = 5, WC_REM_ACCESS_ERR = 10 };
enum { QPS_RESET, QPS_INIT, QPS_RTR, QPS_RTS, QPS_SQD, QPS_SQE, QPS_ERR };
enum {
	QP_STATE = 1 << 0, QP_ACCESS_FLAGS = 1 << 3, QP_PKEY_INDEX = 1 << 4,
	QP_PORT = 1 << 5, QP_QKEY = 1 << 6, QP_AV = 1 << 7, QP_PATH_MTU = 1 << 8,
	QP_TIMEOUT = 1 << 9, QP_RETRY_CNT = 1 << 10, QP_RNR_RETRY = 1 << 11,
	QP_RQ_PSN = 1 << 12, QP_MAX_QP_RD_ATOMIC = 1 << 13, QP_MIN_RNR_TIMER = 1 << 15,
	QP_SQ_PSN = 1 << 16, QP_MAX_DEST_RD_ATOMIC = 1 << 17, QP_DEST_QPN = 1 << 20,
};
/* enum ib_send_flags. */
enum { SEND_SIGNALED = 2, SEND_INLINE = 8 };
/* enum ib_qp_type. */
enum { QPT_RC = 2, QPT_UD = 4 };
enum { QKEY = 0x11111111 };

/* A mapped ring: struct rxe_queue_buf. */
struct ring {
	struct rxe_queue_buf *buf;
	size_t len;
	uint32_t prod;	/* the user's own index, for rings user space fills */
};

static void *ring_slot(struct ring *r, uint32_t i)
{
	return r->buf->data + ((size_t)(i & r->buf->index_mask) << r->buf->log2_elem_size);
}

static void ring_map(int fd, const struct mminfo *mi, struct ring *r)
{
	r->len = mi->size;
	r->buf = mmap(NULL, mi->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, mi->offset);
	CHECK(r->buf != MAP_FAILED, "mmap ring %llx %u", (unsigned long long)mi->offset, mi->size);
	r->prod = 0;
}

/* Publishes the user's producer index (release, as librxe). */
static void ring_publish(struct ring *r, uint32_t v)
{
	__atomic_store_n(&r->buf->producer_index, v, __ATOMIC_RELEASE);
}

struct ucq {
	uint32_t handle;
	struct ring r;
};

static void ucq_make(int fd, uint32_t cqe, struct ucq *c)
{
	uint32_t resp[6];
	struct mminfo mi;

	CHECK(create_cq(fd, cqe, 0, -1, resp, 6) == 0, "create_cq");
	c->handle = resp[0];
	memcpy(&mi, &resp[2], sizeof(mi));
	ring_map(fd, &mi, &c->r);
}

/* Takes up to max completions, waiting up to ms for want of them. */
static int ucq_poll(struct ucq *c, struct ib_uverbs_wc *wc, int max, int want, int ms)
{
	struct rxe_queue_buf *b = c->r.buf;
	int n = 0, waited = 0;

	for (;;) {
		uint32_t prod = __atomic_load_n(&b->producer_index, __ATOMIC_ACQUIRE);
		uint32_t cons = b->consumer_index;

		while (cons != prod && n < max) {
			memcpy(&wc[n++], ring_slot(&c->r, cons), sizeof(*wc));
			cons = (cons + 1) & b->index_mask;
			__atomic_store_n(&b->consumer_index, cons, __ATOMIC_RELEASE);
		}
		if (n >= want || waited >= ms)
			return n;
		usleep(1000);
		waited++;
	}
}

struct uqp {
	uint32_t handle, qpn, type;
	struct ib_uverbs_create_qp_resp caps;
	struct ring sq, rq;
};

/* CREATE_QP; with srq other than NO_SRQ, on that SRQ (no receive ring). */
enum { NO_SRQ = ~0u };

static int uqp_create_on(int fd, uint32_t pd, uint8_t type, uint32_t scq, uint32_t rcq,
			 uint32_t srq, struct uqp *q)
{
	struct ib_uverbs_create_qp c;
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct rxe_create_qp_resp drv;
	} resp;

	memset(&c, 0, sizeof(c));
	memset(&resp, 0xff, sizeof(resp));
	c.response = (uintptr_t)&resp;
	c.user_handle = 0x9999;
	c.pd_handle = pd;
	c.send_cq_handle = scq;
	c.recv_cq_handle = rcq;
	c.max_send_wr = 16;
	c.max_recv_wr = 4;
	c.max_send_sge = 2;
	c.max_recv_sge = 1;
	c.max_inline_data = 64;
	c.qp_type = type;
	if (srq != NO_SRQ) {
		c.srq_handle = srq;
		c.is_srq = 1;
	}
	if (cmd(fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), sizeof(resp) / 4) !=
	    8 + (ssize_t)sizeof(c))
		return -1;
	q->handle = resp.core.qp_handle;
	q->qpn = resp.core.qpn;
	q->type = type;
	q->caps = resp.core;
	ring_map(fd, &resp.drv.sq_mi, &q->sq);
	if (srq == NO_SRQ)
		ring_map(fd, &resp.drv.rq_mi, &q->rq);
	else
		q->rq.buf = NULL;
	return 0;
}

static int uqp_create(int fd, uint32_t pd, uint8_t type, uint32_t scq, uint32_t rcq,
		      struct uqp *q)
{
	return uqp_create_on(fd, pd, type, scq, rcq, NO_SRQ, q);
}

static int uqp_destroy(int fd, struct uqp *q)
{
	uint32_t events = ~0u;
	struct ib_uverbs_destroy_qp d = { .response = (uintptr_t)&events, .qp_handle = q->handle };

	return cmd(fd, IB_USER_VERBS_CMD_DESTROY_QP, &d, sizeof(d), 1) == 8 + sizeof(d) ? 0 : -1;
}

static void uqp_unmap(struct uqp *q)
{
	munmap(q->sq.buf, q->sq.len);
	if (q->rq.buf)
		munmap(q->rq.buf, q->rq.len);
}

struct modify_qp {
	struct ib_uverbs_qp_dest dest, alt_dest;
	uint32_t qp_handle, attr_mask, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags;
	uint16_t pkey_index, alt_pkey_index;
	uint8_t qp_state, cur_qp_state, path_mtu, path_mig_state, en_sqd_async_notify,
		max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt,
		rnr_retry, alt_port_num, alt_timeout, reserved[2];
};

static int modify(int fd, struct modify_qp *m)
{
	return cmd(fd, IB_USER_VERBS_CMD_MODIFY_QP, m, sizeof(*m), 0) == 8 + sizeof(*m) ? 0 : -1;
}

static int qp_state(int fd, struct uqp *q)
{
	struct ib_uverbs_query_qp_resp resp;
	struct ib_uverbs_query_qp c = { .response = (uintptr_t)&resp, .qp_handle = q->handle };

	memset(&resp, 0xff, sizeof(resp));
	if (cmd(fd, IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof(c), sizeof(resp) / 4) !=
	    8 + sizeof(c))
		return -1;
	return resp.qp_state;
}

/* The port's IPv4 GID (RoCE v2) and its index, from sysfs. */
static uint8_t gid[16];
static int gid_index = -1;

static void find_gid(void)
{
	char path[256], ibdev[64], line[128];
	const char *base = strrchr(dev, '/');
	FILE *f;
	int i;

	if (gid_index >= 0)
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/%s/ibdev", base + 1);
	f = fopen(path, "r");
	CHECK(f && fscanf(f, "%63s", ibdev) == 1, "%s", path);
	fclose(f);
	for (i = 0; i < 16 && gid_index < 0; i++) {
		unsigned int w[8];
		int k;

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/%d", ibdev, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) &&
		    sscanf(line, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3], &w[4],
			   &w[5], &w[6], &w[7]) == 8 &&
		    !w[0] && !w[1] && !w[2] && !w[3] && !w[4] && w[5] == 0xffff) {
			for (k = 0; k < 8; k++) {
				gid[2 * k] = w[k] >> 8;
				gid[2 * k + 1] = w[k] & 0xff;
			}
			gid_index = i;
		}
		fclose(f);
	}
	CHECK(gid_index >= 0, "no IPv4 GID on %s", ibdev);
}

/* RESET -> INIT -> RTR -> RTS; an RC QP is connected to itself. */
static void to_rts(int fd, struct uqp *q)
{
	struct modify_qp m;

	memset(&m, 0, sizeof(m));
	m.qp_handle = q->handle;
	m.qp_state = QPS_INIT;
	m.port_num = 1;
	m.attr_mask = QP_STATE | QP_PKEY_INDEX | QP_PORT;
	if (q->type == QPT_UD) {
		m.qkey = QKEY;
		m.attr_mask |= QP_QKEY;
	} else {
		m.qp_access_flags = 7;
		m.attr_mask |= QP_ACCESS_FLAGS;
	}
	CHECK(modify(fd, &m) == 0, "to INIT");
	memset(&m, 0, sizeof(m));
	m.qp_handle = q->handle;
	m.qp_state = QPS_RTR;
	m.attr_mask = QP_STATE;
	if (q->type == QPT_RC) {
		find_gid();
		memcpy(m.dest.dgid, gid, 16);
		m.dest.sgid_index = gid_index;
		m.dest.hop_limit = 64;
		m.dest.is_global = 1;
		m.dest.port_num = 1;
		m.path_mtu = 3;
		m.dest_qp_num = q->qpn;
		m.rq_psn = 100;
		m.max_dest_rd_atomic = 1;
		m.min_rnr_timer = 1;
		m.attr_mask |= QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN |
			       QP_MAX_DEST_RD_ATOMIC | QP_MIN_RNR_TIMER;
	}
	CHECK(modify(fd, &m) == 0, "to RTR");
	memset(&m, 0, sizeof(m));
	m.qp_handle = q->handle;
	m.qp_state = QPS_RTS;
	m.sq_psn = 100;
	m.attr_mask = QP_STATE | QP_SQ_PSN;
	if (q->type == QPT_RC) {
		m.timeout = 10;
		m.retry_cnt = 1;
		m.rnr_retry = 1;
		m.max_rd_atomic = 1;
		m.attr_mask |= QP_TIMEOUT | QP_RETRY_CNT | QP_RNR_RETRY | QP_MAX_QP_RD_ATOMIC;
	}
	CHECK(modify(fd, &m) == 0, "to RTS");
	CHECK(qp_state(fd, q) == QPS_RTS, "state %d after RTS", qp_state(fd, q));
}

/* CREATE_AH for the port's own IPv4 GID; returns the ah_num (handle out). */
static uint32_t make_ah(int fd, uint32_t pd, uint32_t *handle)
{
	struct {
		struct ib_uverbs_create_ah_resp core;
		struct rxe_create_ah_resp drv;
	} resp;
	struct ib_uverbs_create_ah c;

	find_gid();
	memset(&c, 0, sizeof(c));
	c.response = (uintptr_t)&resp;
	c.pd_handle = pd;
	memcpy(c.attr.grh.dgid, gid, 16);
	c.attr.grh.sgid_index = gid_index;
	c.attr.grh.hop_limit = 64;
	c.attr.is_global = 1;
	c.attr.port_num = 1;
	CHECK(cmd(fd, IB_USER_VERBS_CMD_CREATE_AH, &c, sizeof(c), sizeof(resp) / 4) ==
	      8 + sizeof(c), "create_ah");
	CHECK(resp.drv.ah_num != 0, "ah_num 0");
	*handle = resp.core.ah_handle;
	return resp.drv.ah_num;
}

static int destroy_ah(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_ah d = { .ah_handle = handle };

	return cmd(fd, IB_USER_VERBS_CMD_DESTROY_AH, &d, sizeof(d), 0) == 8 + sizeof(d) ? 0 : -1;
}

/* The doorbell: POST_SEND with no work request. */
static int doorbell(int fd, uint32_t qp)
{
	uint32_t bad = ~0u;
	struct ib_uverbs_post_send c = { .response = (uintptr_t)&bad, .qp_handle = qp };

	return cmd(fd, IB_USER_VERBS_CMD_POST_SEND, &c, sizeof(c), 1) == 8 + sizeof(c) ? 0 : -1;
}

/* The next send slot, zeroed (not published yet). */
static struct rxe_send_wqe *sq_next(struct uqp *q)
{
	struct rxe_send_wqe *w = ring_slot(&q->sq, q->sq.prod);

	memset(w, 0, 1u << q->sq.buf->log2_elem_size);
	return w;
}

static void sq_push(struct uqp *q)
{
	q->sq.prod = (q->sq.prod + 1) & q->sq.buf->index_mask;
	ring_publish(&q->sq, q->sq.prod);
}

/* A good signaled inline SEND of 8 bytes (a UD one to the QP itself). */
static struct rxe_send_wqe *good_send(struct uqp *q, uint64_t wr_id, uint32_t ah_num)
{
	struct rxe_send_wqe *w = sq_next(q);

	w->wr.wr_id = wr_id;
	w->wr.opcode = IB_UVERBS_WR_SEND;
	w->wr.send_flags = SEND_SIGNALED | SEND_INLINE;
	if (q->type == QPT_UD) {
		w->wr.wr.ud.remote_qpn = q->qpn;
		w->wr.wr.ud.remote_qkey = QKEY;
		w->wr.wr.ud.ah_num = ah_num;
	}
	w->dma.length = w->dma.resid = 8;
	memcpy(w->dma.inline_data, "hostile!", 8);
	return w;
}

static void expect_wc(const struct ib_uverbs_wc *wc, uint64_t wr_id, uint32_t status,
		      uint32_t opcode, uint32_t qpn, const char *what)
{
	CHECK(wc->wr_id == wr_id && wc->status == status && wc->opcode == opcode &&
	      wc->qp_num == qpn, "%s: wc wr_id %llx status %u opcode %u qp %u, want %llx %u %u %u",
	      what, (unsigned long long)wc->wr_id, wc->status, wc->opcode, wc->qp_num,
	      (unsigned long long)wr_id, status, opcode, qpn);
}

/* A good send on q completes with success, and nothing else comes. */
static void works(int fd, struct uqp *q, struct ucq *c, uint32_t ah_num, const char *what)
{
	struct ib_uverbs_wc wc[4];

	CHECK(qp_state(fd, q) == QPS_RTS, "%s: state %d", what, qp_state(fd, q));
	good_send(q, 0x600d, ah_num);
	sq_push(q);
	CHECK(doorbell(fd, q->handle) == 0, "%s: doorbell", what);
	CHECK(ucq_poll(c, wc, 4, 1, 2000) == 1, "%s: no completion", what);
	expect_wc(&wc[0], 0x600d, WC_SUCCESS, IB_UVERBS_WC_SEND, q->qpn, what);
	CHECK(ucq_poll(c, wc, 4, 1, 20) == 0, "%s: extra completion", what);
}

/* A context with a PD, a CQ, an AH to itself and a UD QP in RTS. */
struct uctx {
	int fd, ev;
	uint32_t pd, ah, ah_num;
	struct ucq cq;
	struct uqp qp;
};

static void uctx_make(struct uctx *u)
{
	u->fd = open_dev();
	u->ev = get_context(u->fd);
	CHECK(alloc_pd(u->fd, &u->pd) == 0, "alloc_pd");
	ucq_make(u->fd, 256, &u->cq);
	u->ah_num = make_ah(u->fd, u->pd, &u->ah);
	CHECK(uqp_create(u->fd, u->pd, QPT_UD, u->cq.handle, u->cq.handle, &u->qp) == 0,
	      "create_qp");
	to_rts(u->fd, &u->qp);
}

/* RESIZE_CQ: resp[0..1] core (cqe), resp[2..5] the new ring's mminfo. */
static int resize_cq(int fd, uint32_t handle, uint32_t cqe, uint32_t *resp, uint16_t out_words)
{
	uint32_t req[4];
	uint64_t r = (uintptr_t)resp;

	memcpy(req, &r, 8);
	req[2] = handle;
	req[3] = cqe;
	memset(resp, 0xff, 6 * 4);
	return cmd(fd, RESIZE_CQ, req, sizeof(req), out_words) == 24 ? 0 : -1;
}

/* A successful resize of c to cqe: checks the answer, maps the new ring
 * as librxe does (old one unmapped first); returns the new capacity. */
static uint32_t ucq_resize(int fd, struct ucq *c, uint32_t cqe, const char *what)
{
	uint32_t resp[6];
	struct mminfo mi;

	CHECK(resize_cq(fd, c->handle, cqe, resp, 6) == 0, "%s: resize to %u", what, cqe);
	memcpy(&mi, &resp[2], sizeof(mi));
	CHECK(resp[0] >= cqe && ((resp[0] + 1) & resp[0]) == 0 && mi.offset % 4096 == 0 &&
	      mi.size % 4096 == 0, "%s: cqe %u offset %llx size %u", what, resp[0],
	      (unsigned long long)mi.offset, mi.size);
	munmap(c->r.buf, c->r.len);
	ring_map(fd, &mi, &c->r);
	CHECK(c->r.buf->log2_elem_size == 6 && c->r.buf->index_mask == resp[0] &&
	      c->r.buf->consumer_index == 0, "%s: header %u %u %u", what,
	      c->r.buf->log2_elem_size, c->r.buf->index_mask, c->r.buf->consumer_index);
	return resp[0];
}

/* Posts n good UD sends to itself (wr_id from first) and waits until the
 * CQ ring's producer index says all n completed, consuming none. */
static void sends_pending(int fd, struct uqp *q, struct ucq *c, uint32_t ah_num, uint64_t first,
			  int n)
{
	uint32_t mask = c->r.buf->index_mask;
	uint32_t want = (__atomic_load_n(&c->r.buf->producer_index, __ATOMIC_ACQUIRE) + n) & mask;
	int i, waited = 0;

	for (i = 0; i < n; i++) {
		good_send(q, first + i, ah_num);
		sq_push(q);
	}
	CHECK(doorbell(fd, q->handle) == 0, "doorbell");
	while (__atomic_load_n(&c->r.buf->producer_index, __ATOMIC_ACQUIRE) != want) {
		CHECK(waited++ < 2000, "producer %u, want %u", c->r.buf->producer_index, want);
		usleep(1000);
	}
}

/* Takes exactly the completions first.. first + n - 1, in order. */
static void expect_sends(struct ucq *c, uint32_t qpn, uint64_t first, int n, const char *what)
{
	struct ib_uverbs_wc wc[32];
	int i;

	CHECK(ucq_poll(c, wc, n, n, 2000) == n, "%s: fewer than %d completions", what, n);
	for (i = 0; i < n; i++)
		expect_wc(&wc[i], first + i, WC_SUCCESS, IB_UVERBS_WC_SEND, qpn, what);
}

/*
 * RESIZE_CQ of a user CQ holding completions: up and down, the waiting
 * completions moved in order into the new ring (from a wrapped old one),
 * a resize below the waiting count refused with EINVAL and the ring left
 * usable, a wild consumer index refused, bad sizes and handles (foreign,
 * stale, of another kind) refused, the offers of unmapped rings withdrawn.
 */
static void case_resize(void)
{
	int fd = open_dev(), ev = get_context(fd), fd2 = open_dev(), ev2 = get_context(fd2);
	uint32_t pd, ah, ah_num, resp[6], counts[2], cqs2[6], cons;
	struct ib_uverbs_wc wc[4];
	struct mminfo mi, mi2;
	struct ucq c, d;
	struct uqp q;
	int i;

	CHECK(alloc_pd(fd, &pd) == 0, "alloc_pd");
	ucq_make(fd, 3, &c);
	CHECK(c.r.buf->index_mask == 3, "mask %u", c.r.buf->index_mask);
	ah_num = make_ah(fd, pd, &ah);
	CHECK(uqp_create(fd, pd, QPT_UD, c.handle, c.handle, &q) == 0, "create_qp");
	to_rts(fd, &q);

	/* Empty: down to 1, up to 7 (pyverbs' test_resize_cq). */
	CHECK(ucq_resize(fd, &c, 1, "down empty") == 1, "cqe for 1");
	CHECK(ucq_resize(fd, &c, 7, "up empty") == 7, "cqe for 7");
	works(fd, &q, &c, ah_num, "after resize");
	/* The old ring wraps: 6 sent, 5 consumed, 4 more: 6..10 wait in
	 * slots 6, 7, 0, 1, 2. */
	sends_pending(fd, &q, &c, ah_num, 1, 6);
	expect_sends(&c, q.qpn, 1, 5, "before wrap");
	sends_pending(fd, &q, &c, ah_num, 7, 4);
	CHECK(c.r.buf->producer_index == 3 && c.r.buf->consumer_index == 6, "wrapped %u %u",
	      c.r.buf->producer_index, c.r.buf->consumer_index);
	/* Below the 5 waiting: EINVAL, the ring stays as it is, and what the
	 * failed command offered for mapping is withdrawn. */
	CHECK(resize_cq(fd, c.handle, 4, resp, 6) < 0 && errno == EINVAL, "resize below waiting");
	memcpy(&mi, &resp[2], sizeof(mi));
	CHECK(mmap(NULL, mi.size, PROT_READ, MAP_SHARED, fd, mi.offset) == MAP_FAILED &&
	      errno == EINVAL, "failed resize's ring offered");
	CHECK(c.r.buf->producer_index == 3 && c.r.buf->consumer_index == 6, "after failure %u %u",
	      c.r.buf->producer_index, c.r.buf->consumer_index);
	/* A wild consumer index (one ahead of the producer: 7 waiting) makes
	 * nothing fit in 6; restored, the ring is as it was. */
	cons = c.r.buf->consumer_index;
	c.r.buf->consumer_index = 4;
	CHECK(resize_cq(fd, c.handle, 6, resp, 6) < 0 && errno == EINVAL, "wild consumer");
	c.r.buf->consumer_index = 0xfffffff6u;
	CHECK(resize_cq(fd, c.handle, 4, resp, 6) < 0 && errno == EINVAL, "wild consumer high");
	c.r.buf->consumer_index = cons;
	/* Bad sizes, no room for the driver response, bad handles. */
	CHECK(resize_cq(fd, c.handle, 0, resp, 6) < 0 && errno == EINVAL, "cqe 0");
	CHECK(resize_cq(fd, c.handle, 1u << 30, resp, 6) < 0 && errno == EINVAL, "cqe 2^30");
	CHECK(resize_cq(fd, c.handle, 16, resp, 2) < 0 && errno == EINVAL, "no driver out");
	CHECK(resize_cq(fd, pd, 16, resp, 6) < 0 && errno == EINVAL, "a pd");
	CHECK(resize_cq(fd, q.handle, 16, resp, 6) < 0 && errno == EINVAL, "a qp");
	CHECK(resize_cq(fd, 999, 16, resp, 6) < 0 && errno == EINVAL, "handle 999");
	/* Another file's CQ handles (above this file's) find nothing here. */
	for (i = 0; i < 8; i++)
		CHECK(create_cq(fd2, 4, 0, -1, cqs2, 6) == 0, "other file's cq %d", i);
	CHECK(cqs2[0] == 7, "other file's handle %u", cqs2[0]);
	CHECK(resize_cq(fd, 7, 16, resp, 6) < 0 && errno == EINVAL, "foreign handle");
	CHECK(resize_cq(fd2, 7, 16, resp, 6) == 0 && resp[0] == 31, "other file's own resize");
	/* A stale CQ handle. */
	ucq_make(fd, 4, &d);
	CHECK(destroy_cq(fd, d.handle, counts) == 0, "destroy d");
	munmap(d.r.buf, d.r.len);
	CHECK(resize_cq(fd, d.handle, 16, resp, 6) < 0 && errno == EINVAL, "stale handle");
	/* After all that, the ring still works: one more completion (11). */
	sends_pending(fd, &q, &c, ah_num, 11, 1);
	CHECK(c.r.buf->producer_index == 4, "producer %u", c.r.buf->producer_index);
	/* Up to 30 (32 slots): 6..11 move to slots 0..5, in order. */
	CHECK(ucq_resize(fd, &c, 30, "up with 6") == 31, "cqe for 30");
	CHECK(c.r.buf->producer_index == 6, "moved %u", c.r.buf->producer_index);
	expect_sends(&c, q.qpn, 6, 3, "moved up");
	/* Exactly the 3 waiting fit in 3. */
	CHECK(ucq_resize(fd, &c, 3, "down to 3") == 3, "cqe for 3");
	CHECK(c.r.buf->producer_index == 3, "moved %u", c.r.buf->producer_index);
	expect_sends(&c, q.qpn, 9, 3, "moved down");
	CHECK(ucq_poll(&c, wc, 4, 1, 20) == 0, "extra completion");
	/* Resized and never mapped, resized again: the first ring's offer
	 * goes, and a completion it received moves on to the second. */
	CHECK(resize_cq(fd, c.handle, 8, resp, 6) == 0 && resp[0] == 15, "resize unmapped");
	memcpy(&mi, &resp[2], sizeof(mi));
	munmap(c.r.buf, c.r.len);
	/* The completion is in the unmapped ring: wait for it by hand. */
	good_send(&q, 12, ah_num);
	sq_push(&q);
	CHECK(doorbell(fd, q.handle) == 0, "doorbell unmapped");
	usleep(200000);
	CHECK(resize_cq(fd, c.handle, 2, resp, 6) == 0 && resp[0] == 3, "resize again");
	memcpy(&mi2, &resp[2], sizeof(mi2));
	CHECK(mi2.offset != mi.offset, "offset reused");
	CHECK(mmap(NULL, mi.size, PROT_READ, MAP_SHARED, fd, mi.offset) == MAP_FAILED &&
	      errno == EINVAL, "replaced ring still offered");
	ring_map(fd, &mi2, &c.r);
	expect_sends(&c, q.qpn, 12, 1, "through an unmapped ring");
	works(fd, &q, &c, ah_num, "at the end");
	/* A CQ destroyed with its resized ring unmapped: the offer goes. */
	CHECK(uqp_destroy(fd, &q) == 0, "destroy qp");
	uqp_unmap(&q);
	CHECK(resize_cq(fd, c.handle, 100, resp, 6) == 0 && resp[0] == 127, "resize last");
	memcpy(&mi, &resp[2], sizeof(mi));
	CHECK(mi.size == 12288, "size %u for 127 entries", mi.size);
	CHECK(destroy_cq(fd, c.handle, counts) == 0, "destroy cq");
	CHECK(mmap(NULL, mi.size, PROT_READ, MAP_SHARED, fd, mi.offset) == MAP_FAILED &&
	      errno == EINVAL, "destroyed cq's ring offered");
	munmap(c.r.buf, c.r.len);
	CHECK(destroy_ah(fd, ah) == 0, "destroy ah");
	close(fd);
	close(ev);
	close(fd2);
	close(ev2);
}

/* Bad send entries of case_wild_send. */
enum { BAD_OPCODE, BAD_FLAG, BAD_NUM_SGE, BAD_INLINE, BAD_SGE_SUM, BAD_AH_0, BAD_AH_UNKNOWN,
       BAD_AH_OTHER_PD, NR_BAD };
static const char *const bad_name[NR_BAD] = { "opcode", "send flag", "num_sge", "inline length",
					      "sge lengths", "ah_num 0", "unknown ah",
					      "ah of another pd" };

/*
 * Wild send entries, each on a fresh UD QP in RTS, between good ones
 * ([good, bad, good, good], one doorbell): the doorbell answers 0, the QP
 * goes to ERR; the good entry before completes (or is flushed) first, the
 * bad one completes with LOC_QP_OP_ERR and its wr_id, the rest with
 * WR_FLUSH_ERR; then a doorbell on the QP in ERR flushes a new entry. A
 * second QP of the same context and the QP of another open file keep
 * working throughout.
 */
static void case_wild_send(void)
{
	struct uctx a, b;
	struct ib_uverbs_wc wc[8];
	uint32_t pd2, ah2, ah2_num;
	int k;

	uctx_make(&a);
	uctx_make(&b);
	CHECK(alloc_pd(a.fd, &pd2) == 0, "alloc_pd 2");
	ah2_num = make_ah(a.fd, pd2, &ah2);
	CHECK(ah2_num != a.ah_num, "ah_num %u twice", ah2_num);
	works(a.fd, &a.qp, &a.cq, a.ah_num, "other qp before");
	works(b.fd, &b.qp, &b.cq, b.ah_num, "other file before");
	for (k = 0; k < NR_BAD; k++) {
		struct uqp q;
		struct rxe_send_wqe *w;
		uint64_t base = (uint64_t)(k + 1) << 32;

		CHECK(uqp_create(a.fd, a.pd, QPT_UD, a.cq.handle, a.cq.handle, &q) == 0,
		      "create_qp %s", bad_name[k]);
		to_rts(a.fd, &q);
		CHECK(q.caps.max_send_sge >= 2 && q.caps.max_inline_data >= 8,
		      "caps sge %u inline %u", q.caps.max_send_sge, q.caps.max_inline_data);
		good_send(&q, base + 1, a.ah_num);
		sq_push(&q);
		w = good_send(&q, base + 2, a.ah_num);
		switch (k) {
		case BAD_OPCODE:
			w->wr.opcode = 99;
			break;
		case BAD_FLAG:
			w->wr.send_flags |= 1u << 30;
			break;
		case BAD_NUM_SGE:
			w->wr.send_flags = SEND_SIGNALED;
			w->dma.length = w->dma.resid = 0;
			w->dma.num_sge = q.caps.max_send_sge + 1;
			break;
		case BAD_INLINE:
			w->dma.length = w->dma.resid = q.caps.max_inline_data + 1;
			break;
		case BAD_SGE_SUM:
			w->wr.send_flags = SEND_SIGNALED;
			w->dma.num_sge = 2;
			w->dma.sge[0].length = 0x80000000u;
			w->dma.sge[1].length = 0x80000000u;
			w->dma.length = w->dma.resid = 0;
			break;
		case BAD_AH_0:
			w->wr.wr.ud.ah_num = 0;
			break;
		case BAD_AH_UNKNOWN:
			w->wr.wr.ud.ah_num = 12345;
			break;
		case BAD_AH_OTHER_PD:
			w->wr.wr.ud.ah_num = ah2_num;
			break;
		}
		sq_push(&q);
		good_send(&q, base + 3, a.ah_num);
		sq_push(&q);
		good_send(&q, base + 4, a.ah_num);
		sq_push(&q);
		CHECK(doorbell(a.fd, q.handle) == 0, "%s: doorbell", bad_name[k]);
		CHECK(ucq_poll(&a.cq, wc, 8, 4, 2000) == 4, "%s: completions", bad_name[k]);
		CHECK(wc[0].wr_id == base + 1 &&
		      (wc[0].status == WC_SUCCESS || wc[0].status == WC_WR_FLUSH_ERR),
		      "%s: first wc %llx status %u", bad_name[k], (unsigned long long)wc[0].wr_id,
		      wc[0].status);
		expect_wc(&wc[1], base + 2, WC_LOC_QP_OP_ERR, IB_UVERBS_WC_SEND, q.qpn, bad_name[k]);
		expect_wc(&wc[2], base + 3, WC_WR_FLUSH_ERR, IB_UVERBS_WC_SEND, q.qpn, bad_name[k]);
		expect_wc(&wc[3], base + 4, WC_WR_FLUSH_ERR, IB_UVERBS_WC_SEND, q.qpn, bad_name[k]);
		CHECK(ucq_poll(&a.cq, wc, 8, 1, 20) == 0, "%s: extra completion", bad_name[k]);
		CHECK(qp_state(a.fd, &q) == QPS_ERR, "%s: state %d", bad_name[k],
		      qp_state(a.fd, &q));
		/* In ERR, the doorbell flushes what comes next. */
		good_send(&q, base + 5, a.ah_num);
		sq_push(&q);
		CHECK(doorbell(a.fd, q.handle) == 0, "%s: doorbell in ERR", bad_name[k]);
		CHECK(ucq_poll(&a.cq, wc, 8, 1, 2000) == 1, "%s: flush in ERR", bad_name[k]);
		expect_wc(&wc[0], base + 5, WC_WR_FLUSH_ERR, IB_UVERBS_WC_SEND, q.qpn, bad_name[k]);
		/* The kernel's consumer index caught up with ours. */
		CHECK(q.sq.buf->consumer_index == q.sq.prod, "%s: consumer %u producer %u",
		      bad_name[k], q.sq.buf->consumer_index, q.sq.prod);
		works(a.fd, &a.qp, &a.cq, a.ah_num, bad_name[k]);
		works(b.fd, &b.qp, &b.cq, b.ah_num, bad_name[k]);
		CHECK(uqp_destroy(a.fd, &q) == 0, "%s: destroy", bad_name[k]);
		uqp_unmap(&q);
	}
	CHECK(destroy_ah(a.fd, ah2) == 0, "destroy ah 2");
	CHECK(dealloc_pd(a.fd, pd2) == 0, "dealloc pd 2");
	/* Torn down by close, rings still mapped. */
	close(a.fd);
	close(b.fd);
	close(a.ev);
	close(b.ev);
}

/*
 * Wild producer indexes: far ahead, behind the kernel's, 0xffffffff.
 * The pass is bounded by the ring: exactly the masked count of entries
 * is taken, the first zeroed (bad) slot ends the QP with LOC_QP_OP_ERR,
 * the rest is flushed; nothing on other QPs.
 */
static void case_wild_index(void)
{
	struct uctx a;
	struct ib_uverbs_wc wc[128];
	int k, i, n;

	uctx_make(&a);
	for (k = 0; k < 3; k++) {
		struct uqp q;
		uint32_t mask, before = 0, prod = 0, want;

		CHECK(uqp_create(a.fd, a.pd, QPT_UD, a.cq.handle, a.cq.handle, &q) == 0,
		      "create_qp");
		to_rts(a.fd, &q);
		mask = q.sq.buf->index_mask;
		CHECK(mask == 31, "send ring mask %u", mask);
		if (k == 0) {
			/* Two good entries, the index 1000 ahead of them. */
			good_send(&q, 1, a.ah_num);
			sq_push(&q);
			good_send(&q, 2, a.ah_num);
			sq_push(&q);
			prod = 2 + 1000;
			before = 2;
		} else if (k == 1) {
			/* Three completed, then the index goes back to 1. */
			for (i = 1; i <= 3; i++) {
				good_send(&q, i, a.ah_num);
				sq_push(&q);
			}
			CHECK(doorbell(a.fd, q.handle) == 0, "doorbell");
			CHECK(ucq_poll(&a.cq, wc, 128, 3, 2000) == 3, "three sends");
			for (i = 0; i < 3; i++)
				expect_wc(&wc[i], i + 1, WC_SUCCESS, IB_UVERBS_WC_SEND, q.qpn, "behind");
			prod = 1;
		} else {
			prod = 0xffffffffu;
		}
		/* The kernel takes (prod - its index) & mask entries. */
		want = k == 1 ? ((prod - 3) & mask) : (prod & mask);
		ring_publish(&q.sq, prod);
		CHECK(doorbell(a.fd, q.handle) == 0, "wild doorbell %d", k);
		n = ucq_poll(&a.cq, wc, 128, want, 3000);
		CHECK(n == (int)want, "index case %d: %d completions, want %u", k, n, want);
		for (i = 0; i < n; i++) {
			uint32_t slot = (k == 1 ? 3 : 0) + i;
			uint64_t id = 0;

			/* Zeroed slots have wr_id 0; slot 0 of case 1 still holds 1. */
			if (k == 1 && (slot & mask) == 0)
				id = 1;
			if (k == 0 && i < 2)
				id = i + 1;
			if (i < (int)before) {
				CHECK(wc[i].wr_id == id && (wc[i].status == WC_SUCCESS ||
							   wc[i].status == WC_WR_FLUSH_ERR),
				      "index case %d wc %d: %llx status %u", k, i,
				      (unsigned long long)wc[i].wr_id, wc[i].status);
				continue;
			}
			/* A zeroed slot is an RDMA WRITE (opcode 0), which UD may not use. */
			expect_wc(&wc[i], id, i == (int)before ? WC_LOC_QP_OP_ERR : WC_WR_FLUSH_ERR,
				  id ? IB_UVERBS_WC_SEND : IB_UVERBS_WC_RDMA_WRITE, q.qpn,
				  "wild index");
		}
		CHECK(ucq_poll(&a.cq, wc, 128, 1, 20) == 0, "index case %d: extra", k);
		CHECK(qp_state(a.fd, &q) == QPS_ERR, "index case %d: state", k);
		CHECK(q.sq.buf->consumer_index == (prod & mask), "index case %d: consumer %u", k,
		      q.sq.buf->consumer_index);
		/* Again: nothing new, nothing more. */
		CHECK(doorbell(a.fd, q.handle) == 0, "second doorbell");
		CHECK(ucq_poll(&a.cq, wc, 128, 1, 20) == 0, "index case %d: after", k);
		works(a.fd, &a.qp, &a.cq, a.ah_num, "other qp");
		CHECK(uqp_destroy(a.fd, &q) == 0, "destroy");
		uqp_unmap(&q);
	}
	CHECK(uqp_destroy(a.fd, &a.qp) == 0, "destroy qp");
	CHECK(destroy_ah(a.fd, a.ah) == 0, "destroy ah");
	close(a.fd);
	close(a.ev);
}

/*
 * A bad receive entry (num_sge above the QP's max) on an RC QP connected
 * to itself, found when its own SEND arrives: the QP ends in ERR, the
 * bad receive completes with LOC_QP_OP_ERR, the receive after it and
 * the send are flushed.
 */
static void case_bad_recv(void)
{
	struct uctx a;
	struct uqp q;
	struct ib_uverbs_wc wc[8], *send = NULL, *rcv[2] = { NULL, NULL };
	struct rxe_recv_wqe *r;
	int i, n, nr = 0;

	uctx_make(&a);
	CHECK(uqp_create(a.fd, a.pd, QPT_RC, a.cq.handle, a.cq.handle, &q) == 0,
	      "create rc");
	to_rts(a.fd, &q);
	r = ring_slot(&q.rq, 0);
	memset(r, 0, 1u << q.rq.buf->log2_elem_size);
	r->wr_id = 0xbad;
	r->dma.num_sge = q.caps.max_recv_sge + 1;
	r = ring_slot(&q.rq, 1);
	memset(r, 0, 1u << q.rq.buf->log2_elem_size);
	r->wr_id = 0x600d;
	ring_publish(&q.rq, 2);
	good_send(&q, 0x5e4d, 0);
	sq_push(&q);
	CHECK(doorbell(a.fd, q.handle) == 0, "doorbell");
	n = ucq_poll(&a.cq, wc, 8, 3, 3000);
	CHECK(n == 3, "%d completions", n);
	for (i = 0; i < n; i++) {
		if (wc[i].opcode == WC_RECV)
			rcv[nr++ & 1] = &wc[i];
		else
			send = &wc[i];
	}
	CHECK(nr == 2 && send, "%d receive completions", nr);
	expect_wc(rcv[0], 0xbad, WC_LOC_QP_OP_ERR, WC_RECV, q.qpn, "bad recv");
	expect_wc(rcv[1], 0x600d, WC_WR_FLUSH_ERR, WC_RECV, q.qpn, "recv after");
	expect_wc(send, 0x5e4d, WC_WR_FLUSH_ERR, IB_UVERBS_WC_SEND, q.qpn, "send");
	CHECK(ucq_poll(&a.cq, wc, 8, 1, 20) == 0, "extra completion");
	CHECK(qp_state(a.fd, &q) == QPS_ERR, "state %d", qp_state(a.fd, &q));
	CHECK(q.rq.buf->consumer_index == 2, "rq consumer %u", q.rq.buf->consumer_index);
	works(a.fd, &a.qp, &a.cq, a.ah_num, "other qp");
	CHECK(uqp_destroy(a.fd, &q) == 0, "destroy");
	uqp_unmap(&q);
	close(a.fd);
	close(a.ev);
}

/* enum ib_srq_attr_mask (kernel-internal). */
enum { SRQ_MAX_WR = 1 << 0, SRQ_LIMIT = 1 << 1 };

/* A user SRQ: struct ib_uverbs_create_srq and rxe's mminfo answer. */
struct usrq {
	uint32_t handle, max_wr;
	struct ring r;
};

static void usrq_make(int fd, uint32_t pd, uint32_t max_wr, struct usrq *q)
{
	struct ib_uverbs_create_srq c;
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct rxe_create_srq_resp drv;
	} resp;

	memset(&c, 0, sizeof(c));
	memset(&resp, 0xff, sizeof(resp));
	c.response = (uintptr_t)&resp;
	c.user_handle = 0x5e9;
	c.pd_handle = pd;
	c.max_wr = max_wr;
	c.max_sge = 1;
	CHECK(cmd(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), sizeof(resp) / 4) ==
	      8 + (ssize_t)sizeof(c), "create_srq");
	q->handle = resp.core.srq_handle;
	q->max_wr = resp.core.max_wr;
	ring_map(fd, &resp.drv.mi, &q->r);
}

/* MODIFY_SRQ with rxe's driver data (where the new ring's mminfo goes);
 * drv_len 0 sends none. */
static int modify_srq(int fd, uint32_t srq, uint32_t mask, uint32_t max_wr, uint32_t limit,
		      struct mminfo *mi, size_t drv_len)
{
	struct {
		struct ib_uverbs_modify_srq core;
		struct rxe_modify_srq_cmd drv;
	} c;

	memset(&c, 0, sizeof(c));
	c.core.srq_handle = srq;
	c.core.attr_mask = mask;
	c.core.max_wr = max_wr;
	c.core.srq_limit = limit;
	c.drv.mmap_info_addr = (uintptr_t)mi;
	return cmd(fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &c, sizeof(c.core) + drv_len, 0) ==
		       8 + (ssize_t)(sizeof(c.core) + drv_len) ? 0 : -1;
}

/* A receive of one 64-byte SGE at addr, in the SRQ ring's next slot. */
static void srq_post(struct usrq *q, uint64_t wr_id, void *addr, uint32_t lkey)
{
	struct rxe_recv_wqe *w = ring_slot(&q->r, q->r.prod);

	memset(w, 0, 1u << q->r.buf->log2_elem_size);
	w->wr_id = wr_id;
	w->dma.length = w->dma.resid = 64;
	w->dma.num_sge = 1;
	w->dma.sge[0].addr = (uintptr_t)addr;
	w->dma.sge[0].length = 64;
	w->dma.sge[0].lkey = lkey;
	q->r.prod = (q->r.prod + 1) & q->r.buf->index_mask;
	ring_publish(&q->r, q->r.prod);
}

/* n unsignaled UD sends of 8 bytes from q to the QP dst, then the
 * doorbell. */
static void send_to(int fd, struct uqp *q, uint32_t ah_num, uint32_t dst, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct rxe_send_wqe *w = good_send(q, 0x5e0d, ah_num);

		w->wr.send_flags = SEND_INLINE;
		w->wr.wr.ud.remote_qpn = dst;
		sq_push(q);
	}
	CHECK(doorbell(fd, q->handle) == 0, "doorbell");
}

/* Takes exactly the receives wr_id first.. first + n - 1 of qpn, in order. */
static void expect_recvs(struct ucq *c, uint32_t qpn, uint64_t first, int n, const char *what)
{
	struct ib_uverbs_wc wc[32];
	int i;

	CHECK(ucq_poll(c, wc, n, n, 3000) == n, "%s: fewer than %d receives", what, n);
	for (i = 0; i < n; i++) {
		expect_wc(&wc[i], first + i, WC_SUCCESS, WC_RECV, qpn, what);
		CHECK(wc[i].byte_len == 40 + 8, "%s: byte_len %u", what, wc[i].byte_len);
	}
	CHECK(ucq_poll(c, wc, 4, 1, 20) == 0, "%s: extra completion", what);
}

/*
 * MODIFY_SRQ of max_wr (ibv_modify_srq with IBV_SRQ_MAX_WR) on an SRQ
 * with receives posted, some already taken by the kernel and some still
 * in the ring: refused below them (EINVAL, the offered ring withdrawn,
 * the SRQ as it was), below an armed limit, without driver data, with a
 * bad size or handle; grown, the ring's waiting entries move into the
 * new ring and every receive completes in posting order.
 */
static void case_resize_srq(void)
{
	struct uctx a;
	struct usrq q;
	struct uqp r;
	struct ucq rc;
	struct mminfo mi;
	uint32_t mr[3];
	char *buf = calloc(16, 64);
	uint64_t id = 0x100;
	int i;

	uctx_make(&a);
	CHECK(buf && reg_mr(a.fd, a.pd, buf, 16 * 64, 1, mr) == 0, "reg_mr");
	usrq_make(a.fd, a.pd, 8, &q);
	CHECK(q.max_wr >= 8, "max_wr %u", q.max_wr);
	ucq_make(a.fd, 64, &rc);
	CHECK(uqp_create_on(a.fd, a.pd, QPT_UD, rc.handle, rc.handle, q.handle, &r) == 0,
	      "create srq qp");
	to_rts(a.fd, &r);

	/* Five posted, two taken by messages: the kernel took all five off
	 * the ring and holds three; three more wait in the ring. */
	for (i = 0; i < 5; i++)
		srq_post(&q, id + i, buf + i * 64, mr[1]);
	send_to(a.fd, &a.qp, a.ah_num, r.qpn, 2);
	expect_recvs(&rc, r.qpn, id, 2, "first two");
	CHECK(q.r.buf->consumer_index == 5, "srq consumer %u", q.r.buf->consumer_index);
	for (i = 5; i < 8; i++)
		srq_post(&q, id + i, buf + i * 64, mr[1]);

	/* Six waiting do not fit in 3: EINVAL, the mminfo written is of a
	 * ring no longer offered. */
	memset(&mi, 0, sizeof(mi));
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 2, 0, &mi, 8) < 0 && errno == EINVAL,
	      "resize below the posted");
	CHECK(mi.size != 0 && mmap(NULL, mi.size, PROT_READ, MAP_SHARED, a.fd, mi.offset) ==
	      MAP_FAILED && errno == EINVAL, "refused resize's ring offered");
	/* Below an armed limit; no driver data; bad sizes; not an SRQ. */
	CHECK(modify_srq(a.fd, q.handle, SRQ_LIMIT, 0, 7, NULL, 8) == 0, "arm limit 7");
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 6, 0, &mi, 8) < 0 && errno == EINVAL,
	      "resize below the limit");
	CHECK(modify_srq(a.fd, q.handle, SRQ_LIMIT, 0, 0, NULL, 8) == 0, "disarm");
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 32, 0, &mi, 0) < 0 && errno == EINVAL,
	      "no driver data");
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 0, 0, &mi, 8) < 0 && errno == EINVAL,
	      "max_wr 0");
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 1u << 30, 0, &mi, 8) < 0 &&
	      errno == EINVAL, "max_wr 2^30");
	CHECK(modify_srq(a.fd, a.pd, SRQ_MAX_WR, 32, 0, &mi, 8) < 0 && errno == EINVAL,
	      "a pd's handle");
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 32, 0, (void *)8, 8) < 0 &&
	      errno == EFAULT, "mminfo at a bad address");

	/* Grown: the three of the ring move to the new one, as written. */
	CHECK(modify_srq(a.fd, q.handle, SRQ_MAX_WR, 32, 0, &mi, 8) == 0, "resize to 32");
	munmap(q.r.buf, q.r.len);
	ring_map(a.fd, &mi, &q.r);
	CHECK(q.r.buf->index_mask >= 32 && q.r.buf->producer_index == 3 &&
	      q.r.buf->consumer_index == 0, "new ring: mask %u producer %u consumer %u",
	      q.r.buf->index_mask, q.r.buf->producer_index, q.r.buf->consumer_index);
	CHECK(((struct rxe_recv_wqe *)ring_slot(&q.r, 2))->wr_id == id + 7, "moved entry %llx",
	      (unsigned long long)((struct rxe_recv_wqe *)ring_slot(&q.r, 2))->wr_id);
	q.r.prod = 3;
	for (i = 8; i < 10; i++)
		srq_post(&q, id + i, buf + i * 64, mr[1]);
	/* Every receive, in posting order: three the kernel held, three
	 * moved, two posted in the new ring. */
	send_to(a.fd, &a.qp, a.ah_num, r.qpn, 8);
	expect_recvs(&rc, r.qpn, id + 2, 8, "after resize");
	for (i = 2; i < 10; i++)
		CHECK(!memcmp(buf + i * 64 + 40, "hostile!", 8), "payload of receive %d", i);
	works(a.fd, &a.qp, &a.cq, a.ah_num, "sender at the end");

	CHECK(uqp_destroy(a.fd, &r) == 0, "destroy srq qp");
	uqp_unmap(&r);
	munmap(q.r.buf, q.r.len);
	close(a.fd);
	close(a.ev);
	free(buf);
}

static int mcast(int fd, uint32_t command, uint32_t qp, const uint8_t *gid)
{
	struct ib_uverbs_attach_mcast c;

	memset(&c, 0, sizeof(c));
	memcpy(c.gid, gid, 16);
	c.qp_handle = qp;
	return cmd(fd, command, &c, sizeof(c), 0) == 8 + sizeof(c) ? 0 : -1;
}

/*
 * Multicast groups: a UD QP joins and leaves an IPv4-mapped multicast GID
 * (joining twice is fine, leaving a group not joined is EINVAL); an RC QP,
 * a unicast GID, a handle of no QP or of another file's QP are refused;
 * the file is closed with a QP still in a group (uverbs.sh checks that
 * nothing is left). The data path of groups is rxe/mcast.sh's.
 */
static void case_mcast(void)
{
	struct uctx a, b;
	struct uqp rc;
	static const uint8_t group[16] = { [10] = 0xff, [11] = 0xff, 239, 1, 2, 3 };
	static const uint8_t unicast[16] = { [10] = 0xff, [11] = 0xff, 10, 1, 2, 3 };
	static const uint8_t other[16] = { 0xff, 0x0e, [15] = 0x42 };
	const uint32_t at = IB_USER_VERBS_CMD_ATTACH_MCAST, de = IB_USER_VERBS_CMD_DETACH_MCAST;

	uctx_make(&a);
	uctx_make(&b);
	CHECK(mcast(a.fd, at, a.qp.handle, group) == 0, "attach");
	CHECK(mcast(a.fd, at, a.qp.handle, group) == 0, "attach again");
	CHECK(mcast(a.fd, at, a.qp.handle, other) == 0, "attach ff0e::42");
	CHECK(mcast(a.fd, at, a.qp.handle, unicast) < 0 && errno == EINVAL, "unicast gid");
	CHECK(mcast(a.fd, at, 999, group) < 0 && errno == EINVAL, "qp 999");
	CHECK(mcast(a.fd, at, a.pd, group) < 0 && errno == EINVAL, "pd as qp");
	/* b's QP, with the same handle number in b's file, is in no group. */
	CHECK(mcast(b.fd, de, b.qp.handle, group) < 0 && errno == EINVAL, "other file's group");
	CHECK(uqp_create(a.fd, a.pd, QPT_RC, a.cq.handle, a.cq.handle, &rc) == 0, "create rc");
	CHECK(mcast(a.fd, at, rc.handle, group) < 0 && errno == EINVAL, "rc qp");
	CHECK(uqp_destroy(a.fd, &rc) == 0, "destroy rc");
	uqp_unmap(&rc);
	CHECK(mcast(a.fd, de, a.qp.handle, other) == 0, "detach ff0e::42");
	CHECK(mcast(a.fd, de, a.qp.handle, other) < 0 && errno == EINVAL, "detach again");
	works(a.fd, &a.qp, &a.cq, a.ah_num, "qp in a group");
	/* Closed with the QP in a group. */
	close(a.fd);
	close(a.ev);
	close(b.fd);
	close(b.ev);
}

/* A signaled RDMA WRITE of the 8 inline bytes of good_send to addr under rkey. */
static void write_entry(struct uqp *q, uint64_t wr_id, uint64_t addr, uint32_t rkey)
{
	struct rxe_send_wqe *w = good_send(q, wr_id, 0);

	w->wr.opcode = IB_UVERBS_WR_RDMA_WRITE;
	w->wr.wr.rdma.remote_addr = addr;
	w->wr.wr.rdma.rkey = rkey;
	sq_push(q);
}

/* A WRITE to addr under rkey completes with success and lands at `at`. */
static void write_lands(int fd, struct uqp *q, struct ucq *c, uint64_t addr, uint32_t rkey,
			const char *at, const char *what)
{
	struct ib_uverbs_wc wc[4];

	write_entry(q, 0x3417e, addr, rkey);
	CHECK(doorbell(fd, q->handle) == 0, "%s: doorbell", what);
	CHECK(ucq_poll(c, wc, 4, 1, 3000) == 1, "%s: no completion", what);
	expect_wc(&wc[0], 0x3417e, WC_SUCCESS, IB_UVERBS_WC_RDMA_WRITE, q->qpn, what);
	CHECK(!memcmp(at, "hostile!", 8), "%s: bytes", what);
}

/* A WRITE to addr under rkey fails with REM_ACCESS_ERR; `at` stays zero. */
static void write_refused(int fd, struct uqp *q, struct ucq *c, uint64_t addr, uint32_t rkey,
			  char *at, const char *what)
{
	struct ib_uverbs_wc wc[4];
	int n;

	memset(at, 0, 8);
	write_entry(q, 0x3417f, addr, rkey);
	CHECK(doorbell(fd, q->handle) == 0, "%s: doorbell", what);
	n = ucq_poll(c, wc, 4, 1, 5000);
	CHECK(n == 1 && wc[0].wr_id == 0x3417f && wc[0].status == WC_REM_ACCESS_ERR,
	      "%s: %d completions, status %u", what, n, n ? wc[0].status : 0);
	CHECK(!memcmp(at, "\0\0\0\0\0\0\0\0", 8), "%s: bytes", what);
}

/*
 * An MR registered at an I/O address of its own (ibv_reg_mr_iova): a WRITE
 * to iova + 128 lands at byte 128 of the buffer; one to the buffer's own
 * address, outside [iova, iova + len), fails with REM_ACCESS_ERR and
 * changes nothing. An I/O range that wraps is EINVAL.
 */
static void case_iova(void)
{
	struct uctx a;
	struct uqp q;
	static char buf[8192] __attribute__((aligned(4096)));
	const uint64_t iova = 0x7e5700000000ull;
	uint32_t mr[3];

	uctx_make(&a);
	CHECK(reg_mr_iova(a.fd, a.pd, buf, sizeof(buf), ~0ull - 100, 7, mr) < 0 && errno == EINVAL,
	      "wrapping iova");
	CHECK(reg_mr_iova(a.fd, a.pd, buf, sizeof(buf), iova, 7, mr) == 0, "reg_mr_iova");
	CHECK(uqp_create(a.fd, a.pd, QPT_RC, a.cq.handle, a.cq.handle, &q) == 0, "create rc");
	to_rts(a.fd, &q);
	write_lands(a.fd, &q, &a.cq, iova + 128, mr[2], buf + 128, "write at iova + 128");
	write_refused(a.fd, &q, &a.cq, (uintptr_t)buf + 256, mr[2], buf + 256,
		      "write at the buffer's own address");
	CHECK(uqp_destroy(a.fd, &q) == 0, "destroy rc");
	uqp_unmap(&q);
	CHECK(dereg_mr(a.fd, mr[0]) == 0, "dereg");
	close(a.fd);
	close(a.ev);
}

static int alloc_mw(int fd, uint32_t pd, uint8_t type, struct ib_uverbs_alloc_mw_resp *out)
{
	struct ib_uverbs_alloc_mw c;

	memset(&c, 0, sizeof(c));
	memset(out, 0xff, sizeof(*out));
	c.response = (uintptr_t)out;
	c.pd_handle = pd;
	c.mw_type = type;
	return cmd(fd, IB_USER_VERBS_CMD_ALLOC_MW, &c, sizeof(c), sizeof(*out) / 4) ==
	       8 + (ssize_t)sizeof(c) ? 0 : -1;
}

static int dealloc_mw(int fd, uint32_t handle)
{
	struct ib_uverbs_dealloc_mw c = { .mw_handle = handle };

	return cmd(fd, IB_USER_VERBS_CMD_DEALLOC_MW, &c, sizeof(c), 0) == 8 + sizeof(c) ? 0 : -1;
}

/* A signaled BIND_MW entry: the window mw_rkey gets [addr, addr + len) of mr. */
static void bind_entry(struct uqp *q, uint64_t wr_id, uint32_t mw_rkey, uint32_t new_rkey,
		       uint32_t mr_lkey, uint64_t addr, uint64_t len)
{
	struct rxe_send_wqe *w = sq_next(q);

	w->wr.wr_id = wr_id;
	w->wr.opcode = IB_UVERBS_WR_BIND_MW;
	w->wr.send_flags = SEND_SIGNALED;
	w->wr.wr.mw.addr = addr;
	w->wr.wr.mw.length = len;
	w->wr.wr.mw.mr_lkey = mr_lkey;
	w->wr.wr.mw.mw_rkey = mw_rkey;
	w->wr.wr.mw.rkey = new_rkey;
	w->wr.wr.mw.access = 2;	/* remote write */
	sq_push(q);
}

/*
 * Memory windows: ALLOC_MW refuses types other than 1 and 2 and handles
 * that are not PDs; a type 2 window bound from the ring opens its MR to an
 * RDMA WRITE through its new rkey (the bytes land); LOCAL_INV closes it
 * (the next WRITE fails with REM_ACCESS_ERR). A BIND_MW entry naming a
 * window of another open file ends only the QP that carried it
 * (LOC_QP_OP_ERR); the other file's QP and a second QP go on working.
 */
static void case_mw(void)
{
	struct uctx a, b;
	struct uqp q;
	struct ib_uverbs_alloc_mw_resp mw1, mw2, mwb;
	struct ib_uverbs_wc wc[8];
	struct rxe_send_wqe *w;
	static char buf[4096] __attribute__((aligned(4096)));
	uint32_t mr[3], key;

	uctx_make(&a);
	uctx_make(&b);
	CHECK(alloc_mw(a.fd, a.pd, 3, &mw1) < 0 && errno == EINVAL, "type 3");
	CHECK(alloc_mw(a.fd, a.pd, 0, &mw1) < 0 && errno == EINVAL, "type 0");
	CHECK(alloc_mw(a.fd, 77, 1, &mw1) < 0 && errno == EINVAL, "pd 77");
	CHECK(alloc_mw(a.fd, a.cq.handle, 1, &mw1) < 0 && errno == EINVAL, "cq as pd");
	CHECK(alloc_mw(a.fd, a.pd, 1, &mw1) == 0, "type 1");
	CHECK(alloc_mw(a.fd, a.pd, 2, &mw2) == 0, "type 2");
	CHECK(alloc_mw(b.fd, b.pd, 2, &mwb) == 0, "type 2 of b");
	CHECK(mw1.rkey >> 8 != mw2.rkey >> 8 && mw1.rkey != 0 && mw2.rkey != 0,
	      "rkeys %x %x", mw1.rkey, mw2.rkey);
	CHECK(dealloc_mw(a.fd, a.pd) < 0 && errno == EINVAL, "pd as mw");
	CHECK(dealloc_mw(a.fd, 999) < 0 && errno == EINVAL, "mw 999");
	CHECK(dealloc_mw(a.fd, mw1.mw_handle) == 0, "dealloc type 1");
	CHECK(dealloc_mw(a.fd, mw1.mw_handle) < 0 && errno == EINVAL, "stale mw");

	/* local write, remote write, MW bind */
	CHECK(reg_mr(a.fd, a.pd, buf, sizeof(buf), 1 | 2 | 16, mr) == 0, "reg_mr");
	CHECK(uqp_create(a.fd, a.pd, QPT_RC, a.cq.handle, a.cq.handle, &q) == 0, "create rc");
	to_rts(a.fd, &q);
	key = (mw2.rkey & ~0xffu) | ((mw2.rkey + 1) & 0xff);
	bind_entry(&q, 0xb1d, mw2.rkey, key, mr[1], (uintptr_t)buf, sizeof(buf));
	CHECK(doorbell(a.fd, q.handle) == 0, "doorbell bind");
	CHECK(ucq_poll(&a.cq, wc, 8, 1, 3000) == 1, "no bind completion");
	expect_wc(&wc[0], 0xb1d, WC_SUCCESS, IB_UVERBS_WC_BIND_MW, q.qpn, "bind");

	/* RDMA WRITE of 8 inline bytes through the window, to the QP itself. */
	write_lands(a.fd, &q, &a.cq, (uintptr_t)buf + 64, key, buf + 64, "write through the window");

	/* LOCAL_INV of the window, then the same WRITE is refused. */
	w = sq_next(&q);
	w->wr.wr_id = 0x1a5;
	w->wr.opcode = IB_UVERBS_WR_LOCAL_INV;
	w->wr.send_flags = SEND_SIGNALED;
	w->wr.ex.invalidate_rkey = key;
	sq_push(&q);
	CHECK(doorbell(a.fd, q.handle) == 0, "doorbell inv");
	CHECK(ucq_poll(&a.cq, wc, 8, 1, 3000) == 1, "no inv completion");
	expect_wc(&wc[0], 0x1a5, WC_SUCCESS, IB_UVERBS_WC_LOCAL_INV, q.qpn, "local inv");
	write_refused(a.fd, &q, &a.cq, (uintptr_t)buf + 64, key, buf + 64, "write after inv");
	CHECK(uqp_destroy(a.fd, &q) == 0, "destroy rc");
	uqp_unmap(&q);

	/* A window of another file, named in a BIND_MW entry. */
	CHECK(uqp_create(a.fd, a.pd, QPT_RC, a.cq.handle, a.cq.handle, &q) == 0, "create rc 2");
	to_rts(a.fd, &q);
	bind_entry(&q, 0xf0e, mwb.rkey, mwb.rkey + 1, mr[1], (uintptr_t)buf, sizeof(buf));
	CHECK(doorbell(a.fd, q.handle) == 0, "doorbell foreign");
	CHECK(ucq_poll(&a.cq, wc, 8, 1, 3000) == 1, "no foreign completion");
	expect_wc(&wc[0], 0xf0e, WC_LOC_QP_OP_ERR, IB_UVERBS_WC_BIND_MW, q.qpn, "foreign mw");
	CHECK(qp_state(a.fd, &q) == QPS_ERR, "state %d", qp_state(a.fd, &q));
	works(a.fd, &a.qp, &a.cq, a.ah_num, "other qp");
	works(b.fd, &b.qp, &b.cq, b.ah_num, "other file");
	CHECK(uqp_destroy(a.fd, &q) == 0, "destroy rc 2");
	uqp_unmap(&q);
	/* Closed with a window and an MR alive: uverbs.sh checks the counts. */
	close(a.fd);
	close(a.ev);
	close(b.fd);
	close(b.ev);
}

static struct {
	int fd;
	struct uqp *q;
	atomic_int stop;
	int bad_errno;
	atomic_long calls;
} ring_race;

/* Rings the doorbell (a few good entries first) until told to stop. */
static void *ring_loop(void *arg)
{
	uint32_t ah_num = (uint32_t)(uintptr_t)arg;
	int i = 0;

	while (!atomic_load(&ring_race.stop)) {
		if (i++ < 8) {
			good_send(ring_race.q, i, ah_num);
			sq_push(ring_race.q);
		}
		if (doorbell(ring_race.fd, ring_race.q->handle) < 0 && errno != EINVAL)
			ring_race.bad_errno = errno;
		atomic_fetch_add(&ring_race.calls, 1);
	}
	return NULL;
}

/*
 * Races and teardown: one thread rings the doorbell in a loop while the
 * other destroys the QP and then its CQ (every call answers 0 or
 * EINVAL); a file closed with a PD, MR, CQs, QPs, AH, channel and event
 * file alive (and its rings still mapped); fork() with everything
 * mapped: the child has no ring mapping (VM_DONTCOPY, which MADV_DOFORK
 * cannot undo), its commands on its copy of the file work (a PD, the
 * parent QP's doorbell and QUERY_QP), and the parent's QP keeps working.
 */
static void case_threads(void)
{
	struct uctx a;
	struct ib_uverbs_wc wc[64];
	int it;
	long calls = 0, wcs = 0;

	uctx_make(&a);
	for (it = 0; it < 40; it++) {
		struct ucq c;
		struct uqp q;
		pthread_t t;
		uint32_t counts[2];

		ucq_make(a.fd, 64, &c);
		CHECK(uqp_create(a.fd, a.pd, QPT_UD, c.handle, c.handle, &q) == 0,
		      "create");
		to_rts(a.fd, &q);
		ring_race.fd = a.fd;
		ring_race.q = &q;
		atomic_store(&ring_race.calls, 0);
		atomic_store(&ring_race.stop, 0);
		CHECK(pthread_create(&t, NULL, ring_loop, (void *)(uintptr_t)a.ah_num) == 0,
		      "thread");
		/*
		 * The race starts once the thread rings: on a loaded guest it
		 * may not run for a while (bounded: 10 s).
		 */
		for (int w = 0; w < 10000 && atomic_load(&ring_race.calls) == 0; w++)
			usleep(1000);
		CHECK(atomic_load(&ring_race.calls) > 0, "the ringing thread never ran");
		usleep(200 + (it % 8) * 100);
		CHECK(uqp_destroy(a.fd, &q) == 0, "destroy qp %d", it);
		CHECK(destroy_cq(a.fd, c.handle, counts) == 0, "destroy cq %d", it);
		usleep(200);
		atomic_store(&ring_race.stop, 1);
		pthread_join(t, NULL);
		CHECK(ring_race.bad_errno == 0, "doorbell errno %d", ring_race.bad_errno);
		/* The completions that came are all the QP's, in order. */
		int n = ucq_poll(&c, wc, 64, 64, 0), i;

		for (i = 0; i < n; i++)
			CHECK(wc[i].qp_num == q.qpn && wc[i].wr_id == (uint64_t)i + 1,
			      "race wc %d: %llx qp %u", i, (unsigned long long)wc[i].wr_id,
			      wc[i].qp_num);
		calls += atomic_load(&ring_race.calls);
		wcs += n;
		uqp_unmap(&q);
		munmap(c.r.buf, c.r.len);
	}
	/* Printed with a failure (uverbs.sh shows the output then). */
	printf("races: %ld doorbells, %ld completions\n", calls, wcs);
	works(a.fd, &a.qp, &a.cq, a.ah_num, "after races");

	/* fork() with everything mapped. */
	CHECK(madvise(a.qp.sq.buf, a.qp.sq.len, MADV_DOFORK) < 0 && errno == EINVAL,
	      "MADV_DOFORK");
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		uint32_t pd;
		int r;

		/* No ring is mapped in the child. */
		CHECK(msync(a.qp.sq.buf, a.qp.sq.len, MS_ASYNC) < 0 && errno == ENOMEM,
		      "child has the send ring");
		CHECK(msync(a.cq.r.buf, a.cq.r.len, MS_ASYNC) < 0 && errno == ENOMEM,
		      "child has the CQ ring");
		r = alloc_pd(a.fd, &pd);
		printf("child: alloc_pd %d errno %d\n", r, r ? errno : 0);
		/* The file is shared with the parent: its commands work. */
		CHECK(r == 0, "child alloc_pd");
		CHECK(dealloc_pd(a.fd, pd) == 0, "child dealloc_pd");
		r = doorbell(a.fd, a.qp.handle);
		printf("child: doorbell %d errno %d\n", r, r ? errno : 0);
		CHECK(r == 0, "child doorbell");
		r = qp_state(a.fd, &a.qp);
		CHECK(r == QPS_RTS, "child query %d", r);
		_exit(0);
	}
	int st;

	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child status %x", st);
	works(a.fd, &a.qp, &a.cq, a.ah_num, "parent after fork");

	/* Closed with everything alive, the rings still mapped. */
	int ch = comp_channel(a.fd);
	uint32_t mr[3], resp[6], pd2, ah2;
	struct uqp rc;
	static char buf[8192] __attribute__((aligned(4096)));

	CHECK(ch >= 0, "channel");
	CHECK(reg_mr(a.fd, a.pd, buf, sizeof(buf), 7, mr) == 0, "reg_mr");
	CHECK(create_cq(a.fd, 32, 0, ch, resp, 6) == 0, "cq on channel");
	CHECK(alloc_pd(a.fd, &pd2) == 0, "pd 2");
	make_ah(a.fd, pd2, &ah2);
	CHECK(uqp_create(a.fd, a.pd, QPT_RC, resp[0], a.cq.handle, &rc) == 0, "rc");
	to_rts(a.fd, &rc);
	good_send(&a.qp, 0x1a57, a.ah_num);
	sq_push(&a.qp);
	close(a.fd);
	/* The mappings outlive the file. */
	CHECK(a.qp.sq.buf->index_mask == 31 && rc.sq.buf->index_mask == 31, "ring after close");
	uqp_unmap(&rc);
	uqp_unmap(&a.qp);
	munmap(a.cq.r.buf, a.cq.r.len);
	close(ch);
	close(a.ev);
}

/* A file whose device went: EIO for commands (uverbs.sh removes it). */
static void case_gone(void)
{
	int fd = open_dev();
	int ev = get_context(fd);
	uint32_t pd;
	char c;

	CHECK(alloc_pd(fd, &pd) == 0, "alloc_pd");
	printf("ready\n");
	fflush(stdout);
	/* uverbs.sh removes the device, then writes a line to stdin. */
	CHECK(read(0, &c, 1) == 1, "stdin");
	CHECK(alloc_pd(fd, &pd) < 0 && errno == EIO, "alloc after removal");
	CHECK(dealloc_pd(fd, pd) < 0 && errno == EIO, "dealloc after removal");
	CHECK(read(ev, &c, 1) < 0 && errno == EINVAL, "short event read");
	uint8_t rec[16];
	CHECK(read(ev, rec, 16) < 0 && errno == EIO, "event file closed");
	close(ev);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: uverbs_user CASE DEVICE\n");
		return 2;
	}
	dev = argv[2];
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(argv[1], "ioctl"))
		case_ioctl();
	else if (!strcmp(argv[1], "framing"))
		case_framing();
	else if (!strcmp(argv[1], "handles"))
		case_handles();
	else if (!strcmp(argv[1], "events"))
		case_events();
	else if (!strcmp(argv[1], "channel"))
		case_channel();
	else if (!strcmp(argv[1], "cq"))
		case_cq();
	else if (!strcmp(argv[1], "wild_send"))
		case_wild_send();
	else if (!strcmp(argv[1], "wild_index"))
		case_wild_index();
	else if (!strcmp(argv[1], "resize"))
		case_resize();
	else if (!strcmp(argv[1], "bad_recv"))
		case_bad_recv();
	else if (!strcmp(argv[1], "resize_srq"))
		case_resize_srq();
	else if (!strcmp(argv[1], "mw"))
		case_mw();
	else if (!strcmp(argv[1], "mcast"))
		case_mcast();
	else if (!strcmp(argv[1], "iova"))
		case_iova();
	else if (!strcmp(argv[1], "threads"))
		case_threads();
	else if (!strcmp(argv[1], "gone"))
		case_gone();
	else
		return 2;
	return 0;
}
