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
 * The command layouts are those of include/uapi/rdma/ib_user_verbs.h,
 * written out here as plain words so that the program needs no header
 * beyond libc's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

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
	/* A command this module does not build yet. */
	uint32_t rz[4] = { (uint32_t)(uintptr_t)resp, (uint32_t)((uintptr_t)resp >> 32), 0, 16 };
	CHECK(cmd(fd, RESIZE_CQ, rz, 16, 2) < 0 && errno == EOPNOTSUPP, "RESIZE_CQ");
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
	else if (!strcmp(argv[1], "gone"))
		case_gone();
	else
		return 2;
	return 0;
}
