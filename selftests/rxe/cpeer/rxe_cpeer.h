/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rxe_cpeer: one RDMA endpoint on the kernel's own verbs (ib_core and a
 * provider such as rdma_rxe), driven through a handful of exported
 * functions. The interop test and the benchmark (Rust modules of
 * selftests/rxe/modules) call them to run the C stack beside ours; the
 * structures below are mirrored in cpeer_sys.rs there with #[repr(C)], so a
 * change here is a change there.
 *
 * An endpoint is a PD, a send CQ and a receive CQ (polled directly), one RC
 * or UD QP and one physically contiguous buffer. Local SGEs use the PD's
 * local DMA lkey; an RC endpoint also fast-registers the buffer (REG_MR) for
 * remote read, write, atomics and global flush (the QP grants the same). Offsets name places in the buffer.
 */
#ifndef RXE_CPEER_H
#define RXE_CPEER_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/types.h>

enum rxe_cpeer_qp_type {
	RXE_CPEER_RC = 0,
	RXE_CPEER_UD = 1,
};

/* Send operations (not ib_wr_opcode: a stable list of our own). */
enum rxe_cpeer_op {
	RXE_CPEER_SEND = 0,
	RXE_CPEER_SEND_IMM = 1,
	RXE_CPEER_WRITE = 2,
	RXE_CPEER_WRITE_IMM = 3,
	RXE_CPEER_READ = 4,
	RXE_CPEER_CMP_SWAP = 5,
	RXE_CPEER_FETCH_ADD = 6,
	/*
	 * Refused (-EOPNOTSUPP): the kernel's rxe in 6.12 takes no remote
	 * address or rkey from a kernel ULP's ATOMIC_WRITE (rxe_verbs.c,
	 * init_send_wr), so only the other stack sends it.
	 */
	RXE_CPEER_ATOMIC_WRITE = 7,
	/* SEND with invalidate of the peer's key `imm`. */
	RXE_CPEER_SEND_INV = 8,
	/*
	 * RDMA READ, then the local key `imm` invalidated. Refused
	 * (-EOPNOTSUPP): the kernel's rxe in 6.12 has no request opcode for
	 * IB_WR_RDMA_READ_WITH_INV (rxe_req.c, next_opcode_rc), so only the
	 * other stack sends it.
	 */
	RXE_CPEER_READ_INV = 9,
	/* LOCAL_INV of the local key `imm`; no data, no peer. */
	RXE_CPEER_LOCAL_INV = 10,
	/* Refused (-EOPNOTSUPP), as ATOMIC_WRITE and for the same reason. */
	RXE_CPEER_FLUSH = 11,
};

/* struct rxe_cpeer_wc flags. */
#define RXE_CPEER_WC_IMM 1	/* imm holds immediate data */
#define RXE_CPEER_WC_INV 2	/* imm holds the key the peer invalidated */

/* What the peer needs to know of this endpoint. */
struct rxe_cpeer_info {
	__u64 addr;	/* the buffer's address for remote access */
	__u32 rkey;	/* 0 on a UD endpoint */
	__u32 qpn;
};

struct rxe_cpeer_wr {
	__u64 wr_id;
	__u64 remote_addr;
	__u64 compare_add;
	__u64 swap;
	__u32 op;	/* enum rxe_cpeer_op */
	__u32 offset;	/* local buffer offset */
	__u32 length;
	__u32 imm;	/* host order; the key invalidated, for the _INV ops */
	__u32 rkey;
	__u32 signaled;
};

struct rxe_cpeer_wc {
	__u64 wr_id;
	__u32 status;	/* enum ib_wc_status */
	__u32 opcode;	/* enum ib_wc_opcode */
	__u32 byte_len;
	__u32 imm;	/* host order, valid with a flag */
	__u32 flags;	/* RXE_CPEER_WC_* */
	__u32 src_qp;
};

/*
 * The layouts the Rust mirror (selftests/rxe/modules/cpeer_sys.rs) asserts
 * too: a change on one side fails the build of both.
 */
static_assert(sizeof(struct rxe_cpeer_info) == 16);
static_assert(offsetof(struct rxe_cpeer_info, rkey) == 8);
static_assert(offsetof(struct rxe_cpeer_info, qpn) == 12);
static_assert(sizeof(struct rxe_cpeer_wr) == 56);
static_assert(offsetof(struct rxe_cpeer_wr, remote_addr) == 8);
static_assert(offsetof(struct rxe_cpeer_wr, compare_add) == 16);
static_assert(offsetof(struct rxe_cpeer_wr, swap) == 24);
static_assert(offsetof(struct rxe_cpeer_wr, op) == 32);
static_assert(offsetof(struct rxe_cpeer_wr, offset) == 36);
static_assert(offsetof(struct rxe_cpeer_wr, length) == 40);
static_assert(offsetof(struct rxe_cpeer_wr, imm) == 44);
static_assert(offsetof(struct rxe_cpeer_wr, rkey) == 48);
static_assert(offsetof(struct rxe_cpeer_wr, signaled) == 52);
static_assert(sizeof(struct rxe_cpeer_wc) == 32);
static_assert(offsetof(struct rxe_cpeer_wc, status) == 8);
static_assert(offsetof(struct rxe_cpeer_wc, opcode) == 12);
static_assert(offsetof(struct rxe_cpeer_wc, byte_len) == 16);
static_assert(offsetof(struct rxe_cpeer_wc, imm) == 20);
static_assert(offsetof(struct rxe_cpeer_wc, flags) == 24);
static_assert(offsetof(struct rxe_cpeer_wc, src_qp) == 28);

struct rxe_cpeer;

int rxe_cpeer_create(const char *ibdev, const u8 *gid, u32 qp_type, u32 buf_len, u32 depth,
		     struct rxe_cpeer **out, struct rxe_cpeer_info *info);
int rxe_cpeer_connect(struct rxe_cpeer *p, u32 remote_qpn, const u8 *remote_gid, u32 sq_psn,
		      u32 rq_psn, u32 mtu);
u8 *rxe_cpeer_buf(struct rxe_cpeer *p);
int rxe_cpeer_post_send(struct rxe_cpeer *p, const struct rxe_cpeer_wr *wr);
int rxe_cpeer_post_recv(struct rxe_cpeer *p, u64 wr_id, u32 offset, u32 length);
int rxe_cpeer_poll(struct rxe_cpeer *p, u32 recv, struct rxe_cpeer_wc *wc, u32 n);
/*
 * A UD endpoint joins (`attach` nonzero) or leaves the multicast group
 * `gid` (ib_attach_mcast). The kernel's rxe only opens its MAC filter: the
 * host must join the IP group itself (`ip addr add ... autojoin`).
 */
int rxe_cpeer_attach_mcast(struct rxe_cpeer *p, const u8 *gid, u32 attach);
void rxe_cpeer_destroy(struct rxe_cpeer *p);

#endif
