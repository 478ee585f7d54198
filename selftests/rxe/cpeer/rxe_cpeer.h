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

/*
 * Objects in numbers (rxe_cpeer_objs.c), for the benchmark's memory rows:
 * rxe_cpeer_objs_new makes a PD and a CQ of depth + 1 on device ibdev and
 * room for n objects of a kind; rxe_cpeer_objs_make then makes the n
 * objects, nothing else: RC QPs of depth sends and receives with one SGE
 * each on that CQ, CQs of depth entries (IB_POLL_DIRECT), or fast
 * registration MRs of depth pages. rxe_cpeer_objs_destroy lets all of it
 * go, whether the objects were all made or not. n and depth: 1 to 4096.
 */
#define RXE_CPEER_OBJ_QP 0
#define RXE_CPEER_OBJ_CQ 1
#define RXE_CPEER_OBJ_MR 2

struct rxe_cpeer_objs;

int rxe_cpeer_objs_new(const char *ibdev, u32 kind, u32 n, u32 depth,
		       struct rxe_cpeer_objs **out);
int rxe_cpeer_objs_make(struct rxe_cpeer_objs *o);
void rxe_cpeer_objs_destroy(struct rxe_cpeer_objs *o);

/*
 * rdma_cm endpoints (rxe_cpeer_cm.c), on the kernel's C rdma_cm in init_net,
 * RC in the TCP port space (RDMA_PS_TCP): a listener that echoes and a
 * client, so our rdma_cm can be tried against the kernel's both ways.
 *
 * Addresses are 16 bytes: an IPv6 address, or an IPv4 one mapped
 * (::ffff:a.b.c.d, used as AF_INET). A listener on the all-zero address
 * binds the IPv6 wildcard, which takes IPv4 requests too.
 *
 * Every endpoint owns one buffer of buf_len bytes (page aligned, at most
 * RXE_CPEER_CM_BUF_MAX), which each of its connections registers for local
 * write and remote read and write. A listener's connections share it, so
 * the buffer outlives them: read_buf shows what a peer wrote after it left.
 *
 * Listener, for each CONNECT_REQUEST:
 *  - private data that begins with RXE_CPEER_CM_REJECT_TAG: rejected with
 *    reason IB_CM_REJ_CONSUMER_DEFINED (28) and private data
 *    RXE_CPEER_CM_REJECT_PDATA (8 bytes); counted in `rejected`, as is a
 *    request beyond RXE_CPEER_CM_MAX_CONNS live connections (rejected the
 *    same way);
 *  - otherwise accepted with 16 bytes of private data, all big endian:
 *      0  __be64 the buffer's address (the iova the rkey covers)
 *      8  __be32 its rkey
 *     12  __be32 its length
 *    and responder resources / initiator depth of at most 1, bounded by
 *    the request's initiator depth / responder resources. The QP is RTS
 *    and the buffer registered before the REP leaves (the QP is our own,
 *    moved by rdma_init_qp_attr, not rdma_create_qp: rxe takes the REG_MR
 *    only on an RTS QP and rdma_accept would make it RTS and send the REP
 *    in one step, so the rkey could be used before it is valid).
 *  - Once established, every SEND received (at most RXE_CPEER_CM_MSG_MAX
 *    bytes) is sent back as one SEND of the same bytes; the receive is
 *    posted again when the echo has completed. A receive of RDMA WRITE
 *    with immediate is counted and posted again, not echoed.
 *  - On DISCONNECTED (or REJECTED, UNREACHABLE, CONNECT_ERROR,
 *    DEVICE_REMOVAL) the connection answers with rdma_disconnect and is
 *    torn down from a work item (never from the rdma_cm handler).
 *
 * Client (rxe_cpeer_cm_connect): resolves the address and the route,
 * creates its QP with rdma_create_qp and connects with the given private
 * data (at most RXE_CPEER_CM_REQ_PDATA_MAX bytes), responder resources and
 * initiator depth 1, retry and RNR retry counts 7; once established it
 * registers its buffer (info gives its address and rkey) and decodes the
 * REP's first 16 bytes as the layout above. It returns 0 when established,
 * -ECONNREFUSED when REJECTED (and then still hands back the endpoint in
 * *out, so its info shows the REJ's reason and private data), -ETIMEDOUT
 * when UNREACHABLE or when timeout_ms passed first, -EHOSTUNREACH on an
 * address or route error, -ECONNABORTED on CONNECT_ERROR, -ENODEV on
 * DEVICE_REMOVAL; on every error but -ECONNREFUSED *out is NULL.
 *
 * rxe_cpeer_cm_send and rxe_cpeer_cm_recv are the client's: send posts one
 * SEND (1 to RXE_CPEER_CM_MSG_MAX bytes) and waits up to 5 s for its
 * completion (-EIO on an error completion, -EBUSY when 16 sends are still
 * outstanding); recv takes the oldest SEND received (16 are kept, later
 * ones dropped), waiting up to timeout_ms for one, copies at most len
 * bytes and returns the message's length (-ENOTCONN once disconnected and
 * none is left). A listener answers -EOPNOTSUPP to both.
 *
 * rxe_cpeer_cm_disconnect: a client sends a DREQ, a listener one on each
 * of its established connections; both then wait up to timeout_ms for as
 * many DISCONNECTED events (-ETIMEDOUT otherwise; -ENOTCONN with nothing
 * established). rxe_cpeer_cm_destroy tears everything down in any state,
 * listener first, then its connections; it sleeps.
 *
 * An endpoint must be destroyed before its RDMA device is removed: the
 * kernel's rdma_cm waits for the ids on a removed device to be destroyed.
 */
#define RXE_CPEER_CM_MSG_MAX 256
#define RXE_CPEER_CM_REQ_PDATA_MAX 56	/* a REQ's 92 bytes less rdma_cm's header */
#define RXE_CPEER_CM_PDATA 64		/* how much private data info keeps */
#define RXE_CPEER_CM_MAX_CONNS 4
#define RXE_CPEER_CM_BUF_MAX (4 << 20)
#define RXE_CPEER_CM_REJECT_TAG "REJECT"	/* 6 bytes */
#define RXE_CPEER_CM_REJECT_PDATA "cpeer-no"	/* 8 bytes */
#define RXE_CPEER_CM_NO_EVENT 0xffffffffu	/* last_event before any */

struct rxe_cpeer_cm_info {
	__u32 connect_requests;	/* CONNECT_REQUESTs (listener) */
	__u32 established;	/* ESTABLISHED events */
	__u32 rejected;		/* requests this listener rejected */
	__u32 rej_received;	/* REJECTED events (REJs from the peer) */
	__u32 disconnected;	/* DISCONNECTED events */
	__u32 echoes;		/* echo SENDs completed (listener) */
	__u32 received;		/* receives completed (both) */
	__u32 conns;		/* connections not yet torn down */
	__u32 last_event;	/* enum rdma_cm_event_type, or _NO_EVENT */
	__s32 last_status;	/* that event's status */
	__u32 rej_reason;	/* status of the last REJECTED event (IB_CM_REJ_*) */
	__u32 rej_pdata_len;	/* its private data length as rdma_cm reports it */
	__u32 pdata_len;	/* the same, of the last REQ (listener) or REP (client) */
	__u32 local_qpn;	/* the last connection's QP */
	__u32 remote_qpn;	/* the peer's QP, from that REQ or REP */
	__u32 remote_rkey;	/* client: decoded from the REP */
	__u64 remote_addr;	/* client: decoded from the REP */
	__u32 remote_len;	/* client: decoded from the REP */
	__u32 local_rkey;	/* the last connection's rkey for the buffer */
	__u64 local_addr;	/* and the address it covers */
	__u32 local_len;	/* the buffer's length */
	__u32 local_port;	/* the port bound (host order) */
	__u8 pdata[RXE_CPEER_CM_PDATA];		/* first bytes of that REQ or REP */
	__u8 rej_pdata[RXE_CPEER_CM_PDATA];	/* first bytes of that REJ */
};

static_assert(sizeof(struct rxe_cpeer_cm_info) == 224);
static_assert(offsetof(struct rxe_cpeer_cm_info, last_event) == 32);
static_assert(offsetof(struct rxe_cpeer_cm_info, pdata_len) == 48);
static_assert(offsetof(struct rxe_cpeer_cm_info, remote_rkey) == 60);
static_assert(offsetof(struct rxe_cpeer_cm_info, remote_addr) == 64);
static_assert(offsetof(struct rxe_cpeer_cm_info, remote_len) == 72);
static_assert(offsetof(struct rxe_cpeer_cm_info, local_rkey) == 76);
static_assert(offsetof(struct rxe_cpeer_cm_info, local_addr) == 80);
static_assert(offsetof(struct rxe_cpeer_cm_info, local_len) == 88);
static_assert(offsetof(struct rxe_cpeer_cm_info, local_port) == 92);
static_assert(offsetof(struct rxe_cpeer_cm_info, pdata) == 96);
static_assert(offsetof(struct rxe_cpeer_cm_info, rej_pdata) == 160);

struct rxe_cpeer_cm;

int rxe_cpeer_cm_listen(const u8 addr[16], u16 port, u32 buf_len, struct rxe_cpeer_cm **out);
int rxe_cpeer_cm_connect(const u8 dst[16], u16 port, const u8 *pdata, u8 pdata_len,
			 u32 buf_len, u32 timeout_ms, struct rxe_cpeer_cm **out);
int rxe_cpeer_cm_info(struct rxe_cpeer_cm *cm, struct rxe_cpeer_cm_info *info);
int rxe_cpeer_cm_send(struct rxe_cpeer_cm *cm, const void *data, u32 len);
int rxe_cpeer_cm_recv(struct rxe_cpeer_cm *cm, void *out, u32 len, u32 timeout_ms);
int rxe_cpeer_cm_read_buf(struct rxe_cpeer_cm *cm, u32 off, void *out, u32 len);
int rxe_cpeer_cm_write_buf(struct rxe_cpeer_cm *cm, u32 off, const void *data, u32 len);
int rxe_cpeer_cm_disconnect(struct rxe_cpeer_cm *cm, u32 timeout_ms);
void rxe_cpeer_cm_destroy(struct rxe_cpeer_cm *cm);

#endif
