/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The user-space interface of the peer_mem test module (/dev/peer_mem_test,
 * selftests/peer_mem/modules/peer_mem_test.rs): a user program registers a
 * range of its address space as a memory region on one of our rxe devices,
 * as a user-space verbs consumer would with a GPU buffer, and has RDMA
 * operations run on it.
 *
 * Each open file has its own RC QP pair: one QP on the device of the MR
 * (the local side, "A") and one on the other device (the remote side, "B",
 * which reads and writes the MR by its rkey). The devices are named
 * PMT_DEV_A and PMT_DEV_B; peer_mem.sh creates them before loading the
 * module. A QP pair left in the error state by a failed operation is
 * rebuilt at the next operation.
 */
#ifndef PEER_MEM_TEST_UAPI_H
#define PEER_MEM_TEST_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PMT_DEV_A "pma"
#define PMT_DEV_B "pmb"

/* Access rights of a registration (the IB_ACCESS_* values). */
enum {
	PMT_ACCESS_LOCAL_WRITE = 1,
	PMT_ACCESS_REMOTE_WRITE = 2,
	PMT_ACCESS_REMOTE_READ = 4,
	PMT_ACCESS_REMOTE_ATOMIC = 8,
};

enum {
	PMT_F_ALLOW_PEER = 1 << 0, /* ask the peer clients if pinning fails */
	PMT_F_PEER_FIRST = 1 << 1, /* ask the peer clients before pinning */
};

enum {
	PMT_KIND_PINNED = 1, /* pinned user pages */
	PMT_KIND_PEER = 2,   /* a peer memory client's pages */
};

/*
 * Registers [addr, addr + len) of the caller. dev: "" for PMT_DEV_A, or a
 * device name (e.g. the core's rdma_swdev, which cannot invalidate).
 * Errors are the core's: EINVAL (empty or wrapping range, bad access),
 * EFAULT (not mapped, or not pinnable and no client claims it), a client's
 * errno, ENODEV.
 */
struct pmt_reg {
	__u64 addr;
	__u64 len;
	__u32 access;		/* PMT_ACCESS_* */
	__u32 flags;		/* PMT_F_* */
	char dev[32];
	/* out */
	__u32 handle;
	__u32 lkey;
	__u32 rkey;
	__u32 kind;		/* PMT_KIND_* */
	char peer[64];		/* the client that gave the pages, or "" */
};

enum {
	PMT_OP_WRITE = 1,	/* B writes buf's bytes into the MR (rkey) */
	PMT_OP_READ = 2,	/* B reads the MR's bytes (rkey) into buf */
	PMT_OP_SEND = 3,	/* A sends from the MR (lkey) to B, which
				 * copies what it received into buf */
};

/*
 * One operation of len bytes at offset in the MR (len at most 1 MiB).
 * Returns 0 when the operation ran, whatever its completion status, which
 * is in status (an ib_wc_status: 0 success, 4 LOC_PROT_ERR, 10
 * REM_ACCESS_ERR, ...) and, for the other side of a SEND, in peer_status.
 */
struct pmt_rdma {
	__u32 handle;
	__u32 op;		/* PMT_OP_* */
	__u64 offset;
	__u64 len;
	__u64 buf;		/* user pointer, len bytes */
	/* out */
	__s32 status;
	__s32 peer_status;
};

/*
 * A stream of RDMA WRITEs by B into the MR, depth in flight (at most 16),
 * each of len bytes (at most 64 KiB) at offset, with a counter pattern,
 * until it fails or is stopped. STOP waits for it and reports.
 */
struct pmt_stream {
	__u32 handle;
	__u32 depth;
	__u64 offset;
	__u64 len;
	/* out, of STOP */
	__u64 ok;		/* writes completed successfully */
	__u64 errors;		/* writes completed with an error status */
	__s32 first_error;	/* status of the first failed write, or 0 */
	__u32 reserved;
};

#define PMT_IOC_REG		_IOWR('t', 1, struct pmt_reg)
#define PMT_IOC_DEREG		_IOW('t', 2, __u32)
#define PMT_IOC_RDMA		_IOWR('t', 3, struct pmt_rdma)
#define PMT_IOC_STREAM_START	_IOW('t', 4, struct pmt_stream)
#define PMT_IOC_STREAM_STOP	_IOWR('t', 5, struct pmt_stream)

#endif /* PEER_MEM_TEST_UAPI_H */
