// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_cpeer: an RDMA endpoint on the kernel's own verbs, for the interop
 * test and the benchmark. See rxe_cpeer.h for what it is and how it is used;
 * the rdma_cm endpoints are in rxe_cpeer_cm.c.
 */
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

#include "rxe_cpeer.h"

#define QKEY 0x11111111
/* Local ACK timeout code: 4.3 s (peer.rs says why). */
#define ACK_TIMEOUT 20
#define PORT 1

struct rxe_cpeer {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *scq;
	struct ib_cq *rcq;
	struct ib_qp *qp;
	struct ib_mr *mr;	/* RC: the buffer, for remote access */
	struct ib_ah *ah;	/* UD: the peer */
	u32 remote_qpn;
	u32 qp_type;
	u8 sgid_index;
	u8 gid[16];
	u8 mac[ETH_ALEN];
	void *buf;
	size_t len;
	struct scatterlist sg;
	bool mapped;
};

static enum ib_mtu mtu_enum(u32 bytes)
{
	switch (bytes) {
	case 256: return IB_MTU_256;
	case 512: return IB_MTU_512;
	case 2048: return IB_MTU_2048;
	case 4096: return IB_MTU_4096;
	default: return IB_MTU_1024;
	}
}

void rxe_cpeer_destroy(struct rxe_cpeer *p)
{
	if (!p)
		return;
	if (p->mr)
		ib_dereg_mr(p->mr);
	if (p->qp)
		ib_destroy_qp(p->qp);
	if (p->ah)
		rdma_destroy_ah(p->ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (p->scq)
		ib_free_cq(p->scq);
	if (p->rcq)
		ib_free_cq(p->rcq);
	if (p->mapped)
		ib_dma_unmap_sg(p->dev, &p->sg, 1, DMA_BIDIRECTIONAL);
	if (p->pd)
		ib_dealloc_pd(p->pd);
	if (p->buf)
		free_pages_exact(p->buf, p->len);
	if (p->dev)
		ib_device_put(p->dev);
	kfree(p);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_destroy);

int rxe_cpeer_create(const char *ibdev, const u8 *gid, u32 qp_type, u32 buf_len, u32 depth,
		     struct rxe_cpeer **out, struct rxe_cpeer_info *info)
{
	struct ib_qp_init_attr init = {};
	const struct ib_gid_attr *gattr;
	struct net_device *ndev;
	struct rxe_cpeer *p;
	int err;

	if (qp_type > RXE_CPEER_UD || !buf_len || !depth)
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->qp_type = qp_type;
	p->dev = ib_device_get_by_name(ibdev, RDMA_DRIVER_UNKNOWN);
	if (!p->dev) {
		err = -ENODEV;
		goto fail;
	}
	gattr = rdma_find_gid(p->dev, (const union ib_gid *)gid, IB_GID_TYPE_ROCE_UDP_ENCAP, NULL);
	if (IS_ERR(gattr)) {
		err = PTR_ERR(gattr);
		goto fail;
	}
	p->sgid_index = gattr->index;
	memcpy(p->gid, gid, sizeof(p->gid));
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(gattr);
	if (!IS_ERR(ndev))
		ether_addr_copy(p->mac, ndev->dev_addr);
	rcu_read_unlock();
	rdma_put_gid_attr(gattr);

	p->len = PAGE_ALIGN(buf_len);
	p->buf = alloc_pages_exact(p->len, GFP_KERNEL | __GFP_ZERO);
	if (!p->buf) {
		err = -ENOMEM;
		goto fail;
	}
	p->pd = ib_alloc_pd(p->dev, 0);
	if (IS_ERR(p->pd)) {
		err = PTR_ERR(p->pd);
		p->pd = NULL;
		goto fail;
	}
	sg_init_one(&p->sg, p->buf, p->len);
	if (ib_dma_map_sg(p->dev, &p->sg, 1, DMA_BIDIRECTIONAL) != 1) {
		err = -ENOMEM;
		goto fail;
	}
	p->mapped = true;
	p->scq = ib_alloc_cq(p->dev, NULL, depth + 1, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->scq)) {
		err = PTR_ERR(p->scq);
		p->scq = NULL;
		goto fail;
	}
	p->rcq = ib_alloc_cq(p->dev, NULL, depth, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->rcq)) {
		err = PTR_ERR(p->rcq);
		p->rcq = NULL;
		goto fail;
	}
	init.send_cq = p->scq;
	init.recv_cq = p->rcq;
	/* One more send for the REG_MR of connect. */
	init.cap.max_send_wr = depth + 1;
	init.cap.max_recv_wr = depth;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.qp_type = qp_type == RXE_CPEER_RC ? IB_QPT_RC : IB_QPT_UD;
	p->qp = ib_create_qp(p->pd, &init);
	if (IS_ERR(p->qp)) {
		err = PTR_ERR(p->qp);
		p->qp = NULL;
		goto fail;
	}
	if (qp_type == RXE_CPEER_RC) {
		p->mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, p->len >> PAGE_SHIFT);
		if (IS_ERR(p->mr)) {
			err = PTR_ERR(p->mr);
			p->mr = NULL;
			goto fail;
		}
		if (ib_map_mr_sg(p->mr, &p->sg, 1, NULL, PAGE_SIZE) != 1) {
			err = -EINVAL;
			goto fail;
		}
	}
	info->addr = sg_dma_address(&p->sg);
	info->rkey = p->mr ? p->mr->rkey : 0;
	info->qpn = p->qp->qp_num;
	*out = p;
	return 0;
fail:
	rxe_cpeer_destroy(p);
	return err;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_create);

u8 *rxe_cpeer_buf(struct rxe_cpeer *p)
{
	return p->buf;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_buf);

/* Waits up to a second for one completion on the send CQ. */
static int wait_send(struct rxe_cpeer *p, struct ib_wc *wc)
{
	unsigned long end = jiffies + HZ;

	while (!ib_poll_cq(p->scq, 1, wc)) {
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(100, 200);
	}
	return wc->status == IB_WC_SUCCESS ? 0 : -EIO;
}

/* Makes the buffer reachable through the MR's rkey. */
static int register_buffer(struct rxe_cpeer *p)
{
	struct ib_reg_wr reg = {
		.wr.opcode = IB_WR_REG_MR,
		.wr.send_flags = IB_SEND_SIGNALED,
		.mr = p->mr,
		.key = p->mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			  IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_FLUSH_GLOBAL,
	};
	struct ib_wc wc;
	int err;

	err = ib_post_send(p->qp, &reg.wr, NULL);
	return err ? err : wait_send(p, &wc);
}

/*
 * Kernel ULPs hand the verbs a resolved destination MAC (rdma_cm does it);
 * rdma_rxe sends through the IP stack and only compares it with its own
 * to tell loopback, so only a peer on the same device needs it.
 */
static void set_av(struct rxe_cpeer *p, struct rdma_ah_attr *ah, const u8 *remote_gid)
{
	union ib_gid dgid;

	memcpy(dgid.raw, remote_gid, sizeof(dgid.raw));
	memset(ah, 0, sizeof(*ah));
	ah->type = rdma_ah_find_type(p->dev, PORT);
	rdma_ah_set_port_num(ah, PORT);
	rdma_ah_set_grh(ah, &dgid, 0, p->sgid_index, 64, 0);
	if (!memcmp(remote_gid, p->gid, sizeof(p->gid)))
		ether_addr_copy(ah->roce.dmac, p->mac);
}

int rxe_cpeer_connect(struct rxe_cpeer *p, u32 remote_qpn, const u8 *remote_gid, u32 sq_psn,
		      u32 rq_psn, u32 mtu)
{
	struct ib_qp_attr attr = {};
	int err;

	p->remote_qpn = remote_qpn;
	attr.qp_state = IB_QPS_INIT;
	attr.port_num = PORT;
	attr.pkey_index = 0;
	if (p->qp_type == RXE_CPEER_UD) {
		attr.qkey = QKEY;
		err = ib_modify_qp(p->qp, &attr,
				   IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);
		if (err)
			return err;
		attr.qp_state = IB_QPS_RTR;
		err = ib_modify_qp(p->qp, &attr, IB_QP_STATE);
		if (err)
			return err;
		attr.qp_state = IB_QPS_RTS;
		attr.sq_psn = sq_psn;
		err = ib_modify_qp(p->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
		if (err)
			return err;
		set_av(p, &attr.ah_attr, remote_gid);
		p->ah = rdma_create_ah(p->pd, &attr.ah_attr, RDMA_CREATE_AH_SLEEPABLE);
		if (IS_ERR(p->ah)) {
			err = PTR_ERR(p->ah);
			p->ah = NULL;
		}
		return err;
	}
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			       IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_FLUSH_GLOBAL;
	err = ib_modify_qp(p->qp, &attr,
			   IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	set_av(p, &attr.ah_attr, remote_gid);
	attr.path_mtu = mtu_enum(mtu);
	attr.dest_qp_num = remote_qpn;
	attr.rq_psn = rq_psn;
	attr.max_dest_rd_atomic = 16;
	attr.min_rnr_timer = 1;
	err = ib_modify_qp(p->qp, &attr,
			   IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = sq_psn;
	attr.timeout = ACK_TIMEOUT;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 16;
	err = ib_modify_qp(p->qp, &attr,
			   IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			   IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
	if (err)
		return err;
	return register_buffer(p);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_connect);

int rxe_cpeer_attach_mcast(struct rxe_cpeer *p, const u8 *gid, u32 attach)
{
	union ib_gid g;

	memcpy(g.raw, gid, sizeof(g.raw));
	return attach ? ib_attach_mcast(p->qp, &g, 0) : ib_detach_mcast(p->qp, &g, 0);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_attach_mcast);

int rxe_cpeer_post_send(struct rxe_cpeer *p, const struct rxe_cpeer_wr *w)
{
	struct ib_sge sge = {
		.addr = sg_dma_address(&p->sg) + w->offset,
		.length = w->length,
		.lkey = p->pd->local_dma_lkey,
	};
	union {
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
		struct ib_ud_wr ud;
	} u = {};
	struct ib_send_wr *wr;

	if ((u64)w->offset + w->length > p->len)
		return -EINVAL;
	switch (w->op) {
	case RXE_CPEER_SEND:
	case RXE_CPEER_SEND_IMM:
		wr = &u.ud.wr;
		wr->opcode = w->op == RXE_CPEER_SEND ? IB_WR_SEND : IB_WR_SEND_WITH_IMM;
		if (p->qp_type == RXE_CPEER_UD) {
			u.ud.ah = p->ah;
			u.ud.remote_qpn = p->remote_qpn;
			u.ud.remote_qkey = QKEY;
		}
		break;
	case RXE_CPEER_WRITE:
	case RXE_CPEER_WRITE_IMM:
	case RXE_CPEER_READ:
		wr = &u.rdma.wr;
		wr->opcode = w->op == RXE_CPEER_WRITE ? IB_WR_RDMA_WRITE :
			     w->op == RXE_CPEER_WRITE_IMM ? IB_WR_RDMA_WRITE_WITH_IMM :
			     IB_WR_RDMA_READ;
		u.rdma.remote_addr = w->remote_addr;
		u.rdma.rkey = w->rkey;
		break;
	case RXE_CPEER_CMP_SWAP:
	case RXE_CPEER_FETCH_ADD:
		wr = &u.atomic.wr;
		wr->opcode = w->op == RXE_CPEER_CMP_SWAP ? IB_WR_ATOMIC_CMP_AND_SWP :
			     IB_WR_ATOMIC_FETCH_AND_ADD;
		u.atomic.remote_addr = w->remote_addr;
		u.atomic.rkey = w->rkey;
		u.atomic.compare_add = w->compare_add;
		u.atomic.swap = w->swap;
		break;
	case RXE_CPEER_SEND_INV:
		wr = &u.rdma.wr;
		wr->opcode = IB_WR_SEND_WITH_INV;
		wr->ex.invalidate_rkey = w->imm;
		break;
	case RXE_CPEER_LOCAL_INV:
		wr = &u.rdma.wr;
		wr->opcode = IB_WR_LOCAL_INV;
		wr->ex.invalidate_rkey = w->imm;
		wr->wr_id = w->wr_id;
		wr->num_sge = 0;
		wr->send_flags = w->signaled ? IB_SEND_SIGNALED : 0;
		return ib_post_send(p->qp, wr, NULL);
	case RXE_CPEER_ATOMIC_WRITE:
	case RXE_CPEER_FLUSH:
	case RXE_CPEER_READ_INV:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	wr->wr_id = w->wr_id;
	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = w->signaled ? IB_SEND_SIGNALED : 0;
	if (w->op == RXE_CPEER_SEND_IMM || w->op == RXE_CPEER_WRITE_IMM)
		wr->ex.imm_data = cpu_to_be32(w->imm);
	return ib_post_send(p->qp, wr, NULL);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_post_send);

int rxe_cpeer_post_recv(struct rxe_cpeer *p, u64 wr_id, u32 offset, u32 length)
{
	struct ib_sge sge = {
		.addr = sg_dma_address(&p->sg) + offset,
		.length = length,
		.lkey = p->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
	};

	if ((u64)offset + length > p->len)
		return -EINVAL;
	return ib_post_recv(p->qp, &wr, NULL);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_post_recv);

int rxe_cpeer_poll(struct rxe_cpeer *p, u32 recv, struct rxe_cpeer_wc *out, u32 n)
{
	struct ib_wc wc[8];
	int got, i;

	got = ib_poll_cq(recv ? p->rcq : p->scq, min_t(u32, n, ARRAY_SIZE(wc)), wc);
	for (i = 0; i < got; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].byte_len = wc[i].byte_len;
		out[i].flags = 0;
		out[i].imm = 0;
		if (wc[i].wc_flags & IB_WC_WITH_IMM) {
			out[i].flags |= RXE_CPEER_WC_IMM;
			out[i].imm = be32_to_cpu(wc[i].ex.imm_data);
		} else if (wc[i].wc_flags & IB_WC_WITH_INVALIDATE) {
			out[i].flags |= RXE_CPEER_WC_INV;
			out[i].imm = wc[i].ex.invalidate_rkey;
		}
		out[i].src_qp = wc[i].src_qp;
	}
	return got;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_poll);

static int __init rxe_cpeer_init(void)
{
	return 0;
}

static void __exit rxe_cpeer_exit(void)
{
}

module_init(rxe_cpeer_init);
module_exit(rxe_cpeer_exit);
MODULE_DESCRIPTION("Test endpoint on the kernel's own verbs, for rdma-rs interop and benchmarks");
MODULE_LICENSE("GPL");
