// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_cpeer's rdma_cm endpoints: a listener that echoes and a client, on the
 * kernel's C rdma_cm in init_net. See rxe_cpeer.h for what they do.
 *
 * An endpoint (struct rxe_cpeer_cm) owns the buffer and a list of
 * connections (struct cm_conn): one for a client, up to
 * RXE_CPEER_CM_MAX_CONNS for a listener. A connection owns its rdma_cm id,
 * PD, CQ, QP, MR and message slots.
 *
 * Locking: cm->mutex guards the list. A listener's handler takes it to add
 * a connection and disconnect takes it around rdma_disconnect, so a listed
 * connection's id is alive; it is never held around rdma_destroy_id, which
 * waits for the handlers. cm->lock, a spinlock taken by handlers and
 * completions, guards info, the connections' flags and the client's queue
 * of received messages.
 *
 * Teardown: a connection is released by a work item on cm->wq, queued
 * once (conn->dying) by its handler on a terminal event (listener only) or
 * by destroy; destroy then drains cm->wq. rdma_cm forbids destroying an id
 * from its own handler, hence the work item.
 */
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rxe_cpeer.h"

#define SLOTS 16		/* receives (and client sends) per connection */
#define MSG RXE_CPEER_CM_MSG_MAX
#define MSG_AREA (2 * SLOTS * MSG)	/* receive slots, then send slots */
#define BACKLOG 8
#define WAIT_MS 5000		/* for a REG_MR or a send to complete */
#define TAG_LEN 6
#define REJ_LEN 8

static_assert(sizeof(RXE_CPEER_CM_REJECT_TAG) == TAG_LEN + 1);
static_assert(sizeof(RXE_CPEER_CM_REJECT_PDATA) == REJ_LEN + 1);

/* A listener's accept private data (rxe_cpeer.h). */
struct cm_accept_pdata {
	__be64 addr;
	__be32 rkey;
	__be32 len;
} __packed;
static_assert(sizeof(struct cm_accept_pdata) == 16);

/* The first member of both contexts an id may carry: which one it is. */
struct cm_ctx {
	bool conn;
};

struct cm_conn;

struct cm_slot {
	struct ib_cqe rcqe;	/* the receive into receive slot idx */
	struct ib_cqe scqe;	/* listener: its echo; client: send slot idx */
	struct cm_conn *conn;
	u32 idx;
	struct completion done;	/* client send */
	int status;		/* client send */
	bool busy;		/* client send, under cm->lock */
};

struct cm_rx {
	u32 len;
	u8 data[MSG];
};

struct cm_conn {
	struct cm_ctx ctx;
	struct rxe_cpeer_cm *cm;
	struct rdma_cm_id *id;	/* NULL while rdma_cm owns it (a request's) */
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_mr *mr;
	bool own_qp;		/* listener: ours; client: rdma_create_qp's */
	bool qp_init;		/* left RESET, so it can be drained */
	bool echo;		/* a listener's connection */
	bool buf_mapped;
	bool msg_mapped;
	bool stopping;		/* no more posts (READ_ONCE) */
	struct scatterlist sg;	/* the endpoint's buffer on this device */
	void *msg;
	u64 msg_dma;
	struct ib_cqe reg_cqe;
	struct completion reg_done;
	int reg_status;
	struct cm_slot slots[SLOTS];
	struct list_head node;
	struct work_struct work;
	/* Under cm->lock. */
	bool dying;		/* teardown queued */
	bool connected;		/* ESTABLISHED, not yet DISCONNECTED */
	struct cm_rx rx[SLOTS];
	u32 rx_head;
	u32 rx_count;
};

struct rxe_cpeer_cm {
	struct cm_ctx ctx;
	struct rdma_cm_id *listen_id;
	struct cm_conn *client;
	void *buf;
	size_t len;		/* allocated */
	u32 buf_len;		/* asked for, advertised */
	struct workqueue_struct *wq;
	struct mutex mutex;
	struct list_head conns;
	spinlock_t lock;
	struct rxe_cpeer_cm_info info;
	wait_queue_head_t wait;
	/* Client: the event that ended the current connect step. */
	struct completion step;
	int step_event;
};

static void cm_sockaddr(const u8 addr[16], u16 port, struct sockaddr_storage *ss)
{
	struct in6_addr a;

	memcpy(&a, addr, sizeof(a));
	memset(ss, 0, sizeof(*ss));
	if (ipv6_addr_v4mapped(&a)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = a.s6_addr32[3];
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = a;
	}
}

static u16 cm_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static void cm_copy_pdata(u8 *dst, u32 *dst_len, const void *src, u8 len)
{
	memset(dst, 0, RXE_CPEER_CM_PDATA);
	*dst_len = src ? len : 0;
	if (src)
		memcpy(dst, src, min_t(u32, len, RXE_CPEER_CM_PDATA));
}

/* Completions. They run on ib_comp_wq (IB_POLL_WORKQUEUE), one at a time. */

static int cm_post_recv(struct cm_conn *c, struct cm_slot *s)
{
	struct ib_sge sge = {
		.addr = c->msg_dma + s->idx * MSG,
		.length = MSG,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &s->rcqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(c->dev, sge.addr, MSG, DMA_BIDIRECTIONAL);
	return ib_post_recv(c->qp, &wr, NULL);
}

static int cm_post_send(struct cm_conn *c, struct cm_slot *s, u64 addr, u32 len)
{
	struct ib_sge sge = {
		.addr = addr,
		.length = len,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &s->scqe,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	ib_dma_sync_single_for_device(c->dev, addr, MSG, DMA_BIDIRECTIONAL);
	return ib_post_send(c->qp, &wr, NULL);
}

static void cm_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cm_slot *s = container_of(wc->wr_cqe, struct cm_slot, rcqe);
	struct cm_conn *c = s->conn;
	struct rxe_cpeer_cm *cm = c->cm;
	u64 addr = c->msg_dma + s->idx * MSG;
	unsigned long flags;
	struct cm_rx *r;

	/* Flushed, or the connection broke: the slot is not posted again. */
	if (wc->status != IB_WC_SUCCESS)
		return;
	ib_dma_sync_single_for_cpu(c->dev, addr, MSG, DMA_BIDIRECTIONAL);
	spin_lock_irqsave(&cm->lock, flags);
	cm->info.received++;
	/* The client keeps SENDs for recv; when its queue is full they go. */
	if (!c->echo && wc->opcode == IB_WC_RECV && c->rx_count < SLOTS) {
		r = &c->rx[(c->rx_head + c->rx_count) % SLOTS];
		r->len = wc->byte_len;
		memcpy(r->data, c->msg + s->idx * MSG, min_t(u32, wc->byte_len, MSG));
		c->rx_count++;
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	if (!c->echo)
		wake_up(&cm->wait);
	if (READ_ONCE(c->stopping))
		return;
	/* The echo goes from the slot itself, posted again once it is sent. */
	if (c->echo && wc->opcode == IB_WC_RECV && !cm_post_send(c, s, addr, wc->byte_len))
		return;
	cm_post_recv(c, s);
}

static void cm_echo_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cm_slot *s = container_of(wc->wr_cqe, struct cm_slot, scqe);
	struct cm_conn *c = s->conn;
	unsigned long flags;

	if (wc->status != IB_WC_SUCCESS)
		return;
	spin_lock_irqsave(&c->cm->lock, flags);
	c->cm->info.echoes++;
	spin_unlock_irqrestore(&c->cm->lock, flags);
	if (!READ_ONCE(c->stopping))
		cm_post_recv(c, s);
}

static void cm_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cm_slot *s = container_of(wc->wr_cqe, struct cm_slot, scqe);
	unsigned long flags;

	s->status = wc->status == IB_WC_SUCCESS ? 0 : -EIO;
	complete(&s->done);
	/* Free only now, so the next user's reinit follows this complete. */
	spin_lock_irqsave(&s->conn->cm->lock, flags);
	s->busy = false;
	spin_unlock_irqrestore(&s->conn->cm->lock, flags);
}

static void cm_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct cm_conn *c = container_of(wc->wr_cqe, struct cm_conn, reg_cqe);

	c->reg_status = wc->status == IB_WC_SUCCESS ? 0 : -EIO;
	complete(&c->reg_done);
}

/* Connections. */

static void conn_work(struct work_struct *work);

static struct cm_conn *conn_alloc(struct rxe_cpeer_cm *cm, bool echo)
{
	struct cm_conn *c;
	int i;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	c->ctx.conn = true;
	c->cm = cm;
	c->echo = echo;
	c->own_qp = echo;
	c->reg_cqe.done = cm_reg_done;
	init_completion(&c->reg_done);
	INIT_LIST_HEAD(&c->node);
	INIT_WORK(&c->work, conn_work);
	for (i = 0; i < SLOTS; i++) {
		c->slots[i].conn = c;
		c->slots[i].idx = i;
		c->slots[i].rcqe.done = cm_recv_done;
		c->slots[i].scqe.done = echo ? cm_echo_done : cm_send_done;
		init_completion(&c->slots[i].done);
	}
	return c;
}

/* PD, CQ, message slots and the buffer's MR, on the id's device. */
static int conn_setup(struct cm_conn *c, struct ib_device *dev)
{
	struct rxe_cpeer_cm *cm = c->cm;
	int err;

	c->dev = dev;
	c->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		c->pd = NULL;
		return err;
	}
	/* Every receive and send, the REG_MR and the two drain WRs. */
	c->cq = ib_alloc_cq(dev, c, 2 * SLOTS + 4, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(c->cq)) {
		err = PTR_ERR(c->cq);
		c->cq = NULL;
		return err;
	}
	c->msg = kzalloc(MSG_AREA, GFP_KERNEL);
	if (!c->msg)
		return -ENOMEM;
	c->msg_dma = ib_dma_map_single(dev, c->msg, MSG_AREA, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, c->msg_dma))
		return -ENOMEM;
	c->msg_mapped = true;
	sg_init_one(&c->sg, cm->buf, cm->len);
	if (ib_dma_map_sg(dev, &c->sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -ENOMEM;
	c->buf_mapped = true;
	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, cm->len >> PAGE_SHIFT);
	if (IS_ERR(c->mr)) {
		err = PTR_ERR(c->mr);
		c->mr = NULL;
		return err;
	}
	if (ib_map_mr_sg(c->mr, &c->sg, 1, NULL, PAGE_SIZE) != 1)
		return -EINVAL;
	return 0;
}

static void conn_qp_attr(struct cm_conn *c, struct ib_qp_init_attr *init)
{
	memset(init, 0, sizeof(*init));
	init->qp_context = c;
	init->send_cq = c->cq;
	init->recv_cq = c->cq;
	/* One more send for the REG_MR, and one each for ib_drain_qp. */
	init->cap.max_send_wr = SLOTS + 2;
	init->cap.max_recv_wr = SLOTS + 1;
	init->cap.max_send_sge = 1;
	init->cap.max_recv_sge = 1;
	init->sq_sig_type = IB_SIGNAL_REQ_WR;
	init->qp_type = IB_QPT_RC;
}

static int conn_post_recvs(struct cm_conn *c)
{
	int i, err;

	for (i = 0; i < SLOTS; i++) {
		err = cm_post_recv(c, &c->slots[i]);
		if (err)
			return err;
	}
	return 0;
}

/* Fast-registers the buffer; the QP must be RTS (rxe refuses it before). */
static int conn_register(struct cm_conn *c)
{
	struct ib_reg_wr reg = {
		.wr.opcode = IB_WR_REG_MR,
		.wr.send_flags = IB_SEND_SIGNALED,
		.wr.wr_cqe = &c->reg_cqe,
		.mr = c->mr,
		.key = c->mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE,
	};
	int err;

	reinit_completion(&c->reg_done);
	err = ib_post_send(c->qp, &reg.wr, NULL);
	if (err)
		return err;
	if (!wait_for_completion_timeout(&c->reg_done, msecs_to_jiffies(WAIT_MS)))
		return -ETIMEDOUT;
	return c->reg_status;
}

/* Releases what the connection holds, in any state; sleeps. */
static void conn_release(struct cm_conn *c)
{
	WRITE_ONCE(c->stopping, true);
	if (c->id)
		rdma_disconnect(c->id);
	if (c->qp_init)
		ib_drain_qp(c->qp);
	if (c->qp) {
		if (c->own_qp)
			ib_destroy_qp(c->qp);
		else
			rdma_destroy_qp(c->id);
	}
	/* No handler runs for the id once this returns. */
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->mr)
		ib_dereg_mr(c->mr);
	if (c->cq)
		ib_free_cq(c->cq);
	if (c->buf_mapped)
		ib_dma_unmap_sg(c->dev, &c->sg, 1, DMA_BIDIRECTIONAL);
	if (c->msg_mapped)
		ib_dma_unmap_single(c->dev, c->msg_dma, MSG_AREA, DMA_BIDIRECTIONAL);
	kfree(c->msg);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	kfree(c);
}

static void conn_work(struct work_struct *work)
{
	struct cm_conn *c = container_of(work, struct cm_conn, work);
	struct rxe_cpeer_cm *cm = c->cm;
	unsigned long flags;

	/* Unlisted first: disconnect only uses ids of listed connections. */
	mutex_lock(&cm->mutex);
	list_del(&c->node);
	mutex_unlock(&cm->mutex);
	conn_release(c);
	spin_lock_irqsave(&cm->lock, flags);
	cm->info.conns--;
	spin_unlock_irqrestore(&cm->lock, flags);
	wake_up(&cm->wait);
}

/* Under cm->lock: queues the connection's teardown, once. */
static void conn_kill_locked(struct cm_conn *c)
{
	if (c->dying)
		return;
	c->dying = true;
	queue_work(c->cm->wq, &c->work);
}

/* rdma_cm events. */

static void cm_note_locked(struct rxe_cpeer_cm *cm, const struct rdma_cm_event *ev)
{
	cm->info.last_event = ev->event;
	cm->info.last_status = ev->status;
}

/*
 * The QP of a listener's connection: ours, moved to RTS with the
 * attributes rdma_cm gives for this request, so the buffer can be
 * registered before rdma_accept sends the REP that carries its rkey.
 */
static int conn_passive_qp(struct cm_conn *c, struct rdma_cm_id *id, u8 resp_res, u8 depth)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int mask, err;

	conn_qp_attr(c, &init);
	c->qp = ib_create_qp(c->pd, &init);
	if (IS_ERR(c->qp)) {
		err = PTR_ERR(c->qp);
		c->qp = NULL;
		return err;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_INIT;
	err = rdma_init_qp_attr(id, &attr, &mask);
	if (err)
		return err;
	/* rdma_cm grants READ only if the request offers initiator depth. */
	attr.qp_access_flags |= IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;
	err = ib_modify_qp(c->qp, &attr, mask | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	c->qp_init = true;
	err = conn_post_recvs(c);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	err = rdma_init_qp_attr(id, &attr, &mask);
	if (err)
		return err;
	attr.max_dest_rd_atomic = resp_res;
	err = ib_modify_qp(c->qp, &attr, mask);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	err = rdma_init_qp_attr(id, &attr, &mask);
	if (err)
		return err;
	attr.max_rd_atomic = depth;
	err = ib_modify_qp(c->qp, &attr, mask);
	if (err)
		return err;
	return conn_register(c);
}

/*
 * A listener's CONNECT_REQUEST. A nonzero return has rdma_cm destroy the
 * new id (and reject the request unless we did).
 */
static int cm_request(struct rxe_cpeer_cm *cm, struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *req = &ev->param.conn;
	struct rdma_conn_param param = {};
	struct cm_accept_pdata pd;
	unsigned long flags;
	struct cm_conn *c;
	bool refuse;
	u8 resp_res, depth;
	int err;

	spin_lock_irqsave(&cm->lock, flags);
	cm_note_locked(cm, ev);
	cm->info.connect_requests++;
	cm_copy_pdata(cm->info.pdata, &cm->info.pdata_len, req->private_data,
		      req->private_data_len);
	cm->info.remote_qpn = req->qp_num;
	refuse = cm->info.conns >= RXE_CPEER_CM_MAX_CONNS ||
		 (req->private_data && req->private_data_len >= TAG_LEN &&
		  !memcmp(req->private_data, RXE_CPEER_CM_REJECT_TAG, TAG_LEN));
	if (refuse)
		cm->info.rejected++;
	else
		cm->info.conns++;	/* its place, given back on failure */
	spin_unlock_irqrestore(&cm->lock, flags);
	wake_up(&cm->wait);
	if (refuse) {
		rdma_reject(id, RXE_CPEER_CM_REJECT_PDATA, REJ_LEN, IB_CM_REJ_CONSUMER_DEFINED);
		return 1;
	}

	/* At most what the request offers the other way. */
	resp_res = min_t(u8, 1, req->initiator_depth);
	depth = min_t(u8, 1, req->responder_resources);
	c = conn_alloc(cm, true);
	if (!c) {
		err = -ENOMEM;
		goto unreserve;
	}
	err = conn_setup(c, id->device);
	if (!err)
		err = conn_passive_qp(c, id, resp_res, depth);
	if (err)
		goto release;

	pd.addr = cpu_to_be64(c->mr->iova);
	pd.rkey = cpu_to_be32(c->mr->rkey);
	pd.len = cpu_to_be32(cm->buf_len);
	param.private_data = &pd;
	param.private_data_len = sizeof(pd);
	param.responder_resources = resp_res;
	param.initiator_depth = depth;
	param.flow_control = 1;
	param.rnr_retry_count = 7;
	param.qp_num = c->qp->qp_num;
	/* Events for the new id (after this handler) find the connection. */
	id->context = &c->ctx;
	err = rdma_accept(id, &param);
	if (err)
		goto release;
	c->id = id;

	spin_lock_irqsave(&cm->lock, flags);
	cm->info.local_qpn = c->qp->qp_num;
	cm->info.local_rkey = c->mr->rkey;
	cm->info.local_addr = c->mr->iova;
	spin_unlock_irqrestore(&cm->lock, flags);
	mutex_lock(&cm->mutex);
	list_add_tail(&c->node, &cm->conns);
	mutex_unlock(&cm->mutex);
	return 0;

release:
	/* c->id is NULL: the id is rdma_cm's to destroy. */
	conn_release(c);
unreserve:
	spin_lock_irqsave(&cm->lock, flags);
	cm->info.conns--;
	spin_unlock_irqrestore(&cm->lock, flags);
	return err;
}

static int cm_conn_event(struct cm_conn *c, struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *p = &ev->param.conn;
	struct rxe_cpeer_cm *cm = c->cm;
	struct cm_accept_pdata pd;
	bool step = false, end = false;
	unsigned long flags;

	spin_lock_irqsave(&cm->lock, flags);
	cm_note_locked(cm, ev);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		step = true;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		cm->info.established++;
		c->connected = true;
		step = true;
		if (c->echo)
			break;
		/* The client's REP: rdma_cm reports all its private data. */
		cm_copy_pdata(cm->info.pdata, &cm->info.pdata_len, p->private_data,
			      p->private_data_len);
		cm->info.remote_qpn = p->qp_num;
		if (p->private_data && p->private_data_len >= sizeof(pd)) {
			memcpy(&pd, p->private_data, sizeof(pd));
			cm->info.remote_addr = be64_to_cpu(pd.addr);
			cm->info.remote_rkey = be32_to_cpu(pd.rkey);
			cm->info.remote_len = be32_to_cpu(pd.len);
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		cm->info.rej_received++;
		cm->info.rej_reason = ev->status;
		cm_copy_pdata(cm->info.rej_pdata, &cm->info.rej_pdata_len, p->private_data,
			      p->private_data_len);
		step = end = true;
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		c->connected = false;
		step = end = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		cm->info.disconnected++;
		c->connected = false;
		end = true;
		break;
	default:
		break;
	}
	/* A listener's connection goes on its own; a client's with destroy. */
	if (end && c->echo)
		conn_kill_locked(c);
	if (step && !c->echo)
		cm->step_event = ev->event;
	spin_unlock_irqrestore(&cm->lock, flags);
	if (step && !c->echo)
		complete(&cm->step);
	/* Answers the peer's DREQ (a DREP); after our own DREQ, a no-op. */
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
		rdma_disconnect(id);
	wake_up(&cm->wait);
	return 0;
}

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct cm_ctx *ctx = id->context;
	struct rxe_cpeer_cm *cm;
	unsigned long flags;

	if (ctx->conn)
		return cm_conn_event(container_of(ctx, struct cm_conn, ctx), id, ev);
	cm = container_of(ctx, struct rxe_cpeer_cm, ctx);
	/* A request comes with the new id and the listener's context. */
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return cm_request(cm, id, ev);
	spin_lock_irqsave(&cm->lock, flags);
	cm_note_locked(cm, ev);
	spin_unlock_irqrestore(&cm->lock, flags);
	wake_up(&cm->wait);
	return 0;
}

/* Endpoints. */

static struct rxe_cpeer_cm *cm_alloc(u32 buf_len)
{
	struct rxe_cpeer_cm *cm;

	if (!buf_len || buf_len > RXE_CPEER_CM_BUF_MAX)
		return ERR_PTR(-EINVAL);
	cm = kzalloc(sizeof(*cm), GFP_KERNEL);
	if (!cm)
		return ERR_PTR(-ENOMEM);
	cm->ctx.conn = false;
	cm->buf_len = buf_len;
	cm->len = PAGE_ALIGN(buf_len);
	cm->buf = alloc_pages_exact(cm->len, GFP_KERNEL | __GFP_ZERO);
	cm->wq = alloc_workqueue("rxe_cpeer_cm", 0, 0);
	if (!cm->buf || !cm->wq) {
		if (cm->wq)
			destroy_workqueue(cm->wq);
		if (cm->buf)
			free_pages_exact(cm->buf, cm->len);
		kfree(cm);
		return ERR_PTR(-ENOMEM);
	}
	mutex_init(&cm->mutex);
	INIT_LIST_HEAD(&cm->conns);
	spin_lock_init(&cm->lock);
	init_waitqueue_head(&cm->wait);
	init_completion(&cm->step);
	cm->info.last_event = RXE_CPEER_CM_NO_EVENT;
	cm->info.local_len = buf_len;
	return cm;
}

void rxe_cpeer_cm_destroy(struct rxe_cpeer_cm *cm)
{
	unsigned long flags;
	struct cm_conn *c;

	if (!cm)
		return;
	/* No more requests: this waits for a request's handler under way. */
	if (cm->listen_id)
		rdma_destroy_id(cm->listen_id);
	mutex_lock(&cm->mutex);
	list_for_each_entry(c, &cm->conns, node) {
		spin_lock_irqsave(&cm->lock, flags);
		conn_kill_locked(c);
		spin_unlock_irqrestore(&cm->lock, flags);
	}
	mutex_unlock(&cm->mutex);
	/*
	 * Every connection is dying, so no handler queues more: this waits
	 * for all the teardowns, those the handlers queued included.
	 */
	destroy_workqueue(cm->wq);
	WARN_ON(!list_empty(&cm->conns));
	free_pages_exact(cm->buf, cm->len);
	mutex_destroy(&cm->mutex);
	kfree(cm);
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_destroy);

int rxe_cpeer_cm_listen(const u8 addr[16], u16 port, u32 buf_len, struct rxe_cpeer_cm **out)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	struct rxe_cpeer_cm *cm;
	unsigned long flags;
	int err;

	*out = NULL;
	cm = cm_alloc(buf_len);
	if (IS_ERR(cm))
		return PTR_ERR(cm);
	cm_sockaddr(addr, port, &ss);
	id = rdma_create_id(&init_net, cm_handler, &cm->ctx, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		err = PTR_ERR(id);
		goto fail;
	}
	cm->listen_id = id;
	err = rdma_bind_addr(id, (struct sockaddr *)&ss);
	if (!err)
		err = rdma_listen(id, BACKLOG);
	if (err)
		goto fail;
	spin_lock_irqsave(&cm->lock, flags);
	cm->info.local_port = cm_port(&id->route.addr.src_addr);
	spin_unlock_irqrestore(&cm->lock, flags);
	*out = cm;
	return 0;
fail:
	rxe_cpeer_cm_destroy(cm);
	return err;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_listen);

/* Waits for the event that ends a connect step; 0 if it is `want`. */
static int cm_step(struct rxe_cpeer_cm *cm, unsigned long end, int want)
{
	long left = (long)(end - jiffies);

	if (left <= 0 || !wait_for_completion_timeout(&cm->step, left))
		return -ETIMEDOUT;
	if (cm->step_event == want)
		return 0;
	switch (cm->step_event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		return -ETIMEDOUT;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return -ECONNABORTED;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return -EPROTO;
	}
}

int rxe_cpeer_cm_connect(const u8 dst[16], u16 port, const u8 *pdata, u8 pdata_len,
			 u32 buf_len, u32 timeout_ms, struct rxe_cpeer_cm **out)
{
	struct rdma_conn_param param = {};
	struct ib_qp_init_attr init;
	struct sockaddr_storage ss;
	struct in6_addr a;
	struct rxe_cpeer_cm *cm;
	unsigned long end, flags;
	struct cm_conn *c;
	int err;

	*out = NULL;
	memcpy(&a, dst, sizeof(a));
	if (ipv6_addr_any(&a) || pdata_len > RXE_CPEER_CM_REQ_PDATA_MAX || (pdata_len && !pdata))
		return -EINVAL;
	cm = cm_alloc(buf_len);
	if (IS_ERR(cm))
		return PTR_ERR(cm);
	c = conn_alloc(cm, false);
	if (!c) {
		rxe_cpeer_cm_destroy(cm);
		return -ENOMEM;
	}
	cm->client = c;
	cm->info.conns = 1;
	list_add_tail(&c->node, &cm->conns);
	c->id = rdma_create_id(&init_net, cm_handler, &c->ctx, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(c->id)) {
		err = PTR_ERR(c->id);
		c->id = NULL;
		goto fail;
	}
	end = jiffies + msecs_to_jiffies(timeout_ms);
	cm_sockaddr(dst, port, &ss);
	reinit_completion(&cm->step);
	err = rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&ss, timeout_ms);
	if (!err)
		err = cm_step(cm, end, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (err)
		goto fail;
	reinit_completion(&cm->step);
	err = rdma_resolve_route(c->id, timeout_ms);
	if (!err)
		err = cm_step(cm, end, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (err)
		goto fail;

	err = conn_setup(c, c->id->device);
	if (err)
		goto fail;
	conn_qp_attr(c, &init);
	err = rdma_create_qp(c->id, c->pd, &init);
	if (err)
		goto fail;
	c->qp = c->id->qp;
	c->qp_init = true;	/* rdma_create_qp leaves it in INIT */
	err = conn_post_recvs(c);
	if (err)
		goto fail;

	param.private_data = pdata_len ? pdata : NULL;
	param.private_data_len = pdata_len;
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	reinit_completion(&cm->step);
	err = rdma_connect(c->id, &param);
	if (!err)
		err = cm_step(cm, end, RDMA_CM_EVENT_ESTABLISHED);
	if (err == -ECONNREFUSED) {
		/* The caller reads the REJ in info, then destroys. */
		*out = cm;
		return err;
	}
	if (err)
		goto fail;
	err = conn_register(c);
	if (err)
		goto fail;
	spin_lock_irqsave(&cm->lock, flags);
	cm->info.local_qpn = c->qp->qp_num;
	cm->info.local_rkey = c->mr->rkey;
	cm->info.local_addr = c->mr->iova;
	cm->info.local_port = cm_port(&c->id->route.addr.src_addr);
	spin_unlock_irqrestore(&cm->lock, flags);
	*out = cm;
	return 0;
fail:
	rxe_cpeer_cm_destroy(cm);
	return err;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_connect);

int rxe_cpeer_cm_info(struct rxe_cpeer_cm *cm, struct rxe_cpeer_cm_info *info)
{
	unsigned long flags;

	spin_lock_irqsave(&cm->lock, flags);
	*info = cm->info;
	spin_unlock_irqrestore(&cm->lock, flags);
	return 0;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_info);

int rxe_cpeer_cm_send(struct rxe_cpeer_cm *cm, const void *data, u32 len)
{
	struct cm_conn *c = cm->client;
	struct cm_slot *s = NULL;
	unsigned long flags;
	bool connected;
	u64 addr;
	int i, err;

	if (!c)
		return -EOPNOTSUPP;
	if (!len || len > MSG)
		return -EINVAL;
	spin_lock_irqsave(&cm->lock, flags);
	connected = c->connected;
	for (i = 0; connected && i < SLOTS; i++) {
		if (!c->slots[i].busy) {
			s = &c->slots[i];
			s->busy = true;
			break;
		}
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	if (!connected)
		return -ENOTCONN;
	if (!s)
		return -EBUSY;
	addr = c->msg_dma + (SLOTS + s->idx) * MSG;
	ib_dma_sync_single_for_cpu(c->dev, addr, MSG, DMA_BIDIRECTIONAL);
	memcpy(c->msg + (SLOTS + s->idx) * MSG, data, len);
	reinit_completion(&s->done);
	err = cm_post_send(c, s, addr, len);
	if (err) {
		spin_lock_irqsave(&cm->lock, flags);
		s->busy = false;
		spin_unlock_irqrestore(&cm->lock, flags);
		return err;
	}
	/* On a timeout the slot stays busy until its completion comes. */
	if (!wait_for_completion_timeout(&s->done, msecs_to_jiffies(WAIT_MS)))
		return -ETIMEDOUT;
	return s->status;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_send);

static bool cm_rx_ready(struct rxe_cpeer_cm *cm, struct cm_conn *c)
{
	unsigned long flags;
	bool ready;

	spin_lock_irqsave(&cm->lock, flags);
	ready = c->rx_count || !c->connected;
	spin_unlock_irqrestore(&cm->lock, flags);
	return ready;
}

int rxe_cpeer_cm_recv(struct rxe_cpeer_cm *cm, void *out, u32 len, u32 timeout_ms)
{
	struct cm_conn *c = cm->client;
	unsigned long flags;
	struct cm_rx *r;
	int ret;

	if (!c)
		return -EOPNOTSUPP;
	wait_event_timeout(cm->wait, cm_rx_ready(cm, c), msecs_to_jiffies(timeout_ms));
	spin_lock_irqsave(&cm->lock, flags);
	if (c->rx_count) {
		r = &c->rx[c->rx_head];
		memcpy(out, r->data, min_t(u32, len, r->len));
		ret = r->len;
		c->rx_head = (c->rx_head + 1) % SLOTS;
		c->rx_count--;
	} else {
		ret = c->connected ? -ETIMEDOUT : -ENOTCONN;
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_recv);

int rxe_cpeer_cm_read_buf(struct rxe_cpeer_cm *cm, u32 off, void *out, u32 len)
{
	if ((u64)off + len > cm->buf_len)
		return -EINVAL;
	memcpy(out, cm->buf + off, len);
	return 0;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_read_buf);

int rxe_cpeer_cm_write_buf(struct rxe_cpeer_cm *cm, u32 off, const void *data, u32 len)
{
	if ((u64)off + len > cm->buf_len)
		return -EINVAL;
	memcpy(cm->buf + off, data, len);
	return 0;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_write_buf);

static u32 cm_disconnected(struct rxe_cpeer_cm *cm)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&cm->lock, flags);
	n = cm->info.disconnected;
	spin_unlock_irqrestore(&cm->lock, flags);
	return n;
}

int rxe_cpeer_cm_disconnect(struct rxe_cpeer_cm *cm, u32 timeout_ms)
{
	unsigned long flags;
	struct cm_conn *c;
	u32 target, n = 0;
	bool live;

	mutex_lock(&cm->mutex);
	target = cm_disconnected(cm);
	list_for_each_entry(c, &cm->conns, node) {
		spin_lock_irqsave(&cm->lock, flags);
		live = c->connected && !c->dying && c->id;
		spin_unlock_irqrestore(&cm->lock, flags);
		/* Sends a DREQ; DISCONNECTED comes with the DREP (or its timeout). */
		if (live && !rdma_disconnect(c->id))
			n++;
	}
	mutex_unlock(&cm->mutex);
	if (!n)
		return -ENOTCONN;
	target += n;
	if (!wait_event_timeout(cm->wait, (s32)(cm_disconnected(cm) - target) >= 0,
				msecs_to_jiffies(timeout_ms)))
		return -ETIMEDOUT;
	return 0;
}
EXPORT_SYMBOL_GPL(rxe_cpeer_cm_disconnect);
