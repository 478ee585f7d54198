// SPDX-License-Identifier: GPL-2.0
/*
 * rtrs_cbench: the RTRS benchmark's load, on the kernel's RTRS.
 *
 * At load it opens a server of the kernel's RTRS (rtrs_srv_open) on port
 * 1240, which answers every request at once from its chunk memory, and a
 * session of the kernel's client to it from 10.84.0.2 to 10.84.0.1 (the
 * kernel's rxe devices cbo1 and cbo0 of selftests/bench.sh). Then it runs
 * the workloads of selftests/rtrs/ulp/rtrs_bench.rs, the same ones our RTRS
 * runs there: 4 KiB random and 128 KiB sequential, read and write, 64
 * requests in flight, and prints one line per workload,
 *
 *	bench: theirs rtrs-<inval> <test> <size> <requests> <nanoseconds>
 *
 * <inval> is the parameter `inval` (Y or N): the always_invalidate that
 * rtrs-server.ko was loaded with, which this module cannot change. The
 * load fails (and prints nothing) if a request fails.
 */
#include <linux/inet.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <linux/wait.h>

#include "rtrs.h"

#define PORT 1240
#define QD 64
#define MAX_SIZE (128 * 1024)

static char *inval = "Y";
module_param(inval, charp, 0444);
MODULE_PARM_DESC(inval, "The always_invalidate of rtrs-server, for the printed lines (Y or N)");

/* The user message of a request: where it would go on a block device. */
struct bench_msg {
	__le64 offset;
	__le32 len;
	__le32 write;
};

struct bench;

struct slot {
	struct bench *b;
	struct rtrs_permit *permit;
	struct rtrs_clt_req_ops ops;
	struct scatterlist sg;
	void *buf;
	int index;
};

struct bench {
	struct rtrs_clt_sess *sess;
	struct slot slots[QD];
	spinlock_t lock;	/* free, errors */
	int free[QD];
	int nfree;
	int errors;
	wait_queue_head_t wq;
};

/* The server: every request is answered at once, as it came. */
static atomic_t srv_bad = ATOMIC_INIT(0);

static int srv_rdma_ev(void *priv, struct rtrs_srv_op *id, void *data,
		       size_t datalen, const void *usr, size_t usrlen)
{
	if (usrlen != sizeof(struct bench_msg))
		atomic_inc(&srv_bad);
	rtrs_srv_resp_rdma(id, usrlen == sizeof(struct bench_msg) ? 0 : -EINVAL);
	return 0;
}

static int srv_link_ev(struct rtrs_srv_sess *sess, enum rtrs_srv_link_ev ev,
		       void *priv)
{
	return 0;
}

static struct rtrs_srv_ops srv_ops = {
	.rdma_ev = srv_rdma_ev,
	.link_ev = srv_link_ev,
};

static void clt_link_ev(void *priv, enum rtrs_clt_link_ev ev)
{
}

/* A request completed (softirq): its permit and its slot go back. */
static void slot_done(void *priv, int err)
{
	struct slot *s = priv;
	struct bench *b = s->b;
	unsigned long flags;

	rtrs_clt_put_permit(b->sess, s->permit);
	s->permit = NULL;
	spin_lock_irqsave(&b->lock, flags);
	if (err)
		b->errors++;
	b->free[b->nfree++] = s->index;
	spin_unlock_irqrestore(&b->lock, flags);
	wake_up(&b->wq);
}

static int take_slot(struct bench *b)
{
	unsigned long flags;
	int i = -1;

	spin_lock_irqsave(&b->lock, flags);
	if (b->nfree)
		i = b->free[--b->nfree];
	spin_unlock_irqrestore(&b->lock, flags);
	return i;
}

static bool all_free(struct bench *b)
{
	unsigned long flags;
	bool all;

	spin_lock_irqsave(&b->lock, flags);
	all = b->nfree == QD;
	spin_unlock_irqrestore(&b->lock, flags);
	return all;
}

/*
 * @count requests of @size (WRITE or READ), QD in flight, at random
 * offsets (@random) or one after the other; the nanoseconds they took, or
 * a negative errno.
 */
static s64 run(struct bench *b, int dir, bool random, size_t size, int count)
{
	u64 next = 0, t0;
	int i, slot, err = 0;

	t0 = ktime_get_ns();
	for (i = 0; i < count; i++) {
		struct bench_msg msg;
		struct kvec vec = { .iov_base = &msg, .iov_len = sizeof(msg) };
		struct slot *s;

		wait_event(b->wq, (slot = take_slot(b)) >= 0);
		s = &b->slots[slot];
		s->permit = rtrs_clt_get_permit(b->sess, RTRS_IO_CON, RTRS_PERMIT_WAIT);
		if (!s->permit) {
			err = -EBUSY;
			break;
		}
		if (random)
			next = (get_random_u32() % (1U << 18)) * (u64)size;
		msg.offset = cpu_to_le64(next);
		msg.len = cpu_to_le32(size);
		msg.write = cpu_to_le32(dir == WRITE);
		next += size;
		sg_init_one(&s->sg, s->buf, size);
		err = rtrs_clt_request(dir, &s->ops, b->sess, s->permit, &vec, 1,
				       size, &s->sg, 1);
		if (err) {
			slot_done(s, err);
			break;
		}
	}
	wait_event(b->wq, all_free(b));
	if (err)
		return err;
	if (b->errors)
		return -EIO;
	return ktime_get_ns() - t0;
}

static const struct {
	const char *name;
	int dir;
	bool random;
	size_t size;
	int count;
} workloads[] = {
	{ "randwrite", WRITE, true, 4096, 8192 },
	{ "randread", READ, true, 4096, 8192 },
	{ "seqwrite", WRITE, false, MAX_SIZE, 1024 },
	{ "seqread", READ, false, MAX_SIZE, 1024 },
};

static int bench_run(struct bench *b)
{
	s64 ns[ARRAY_SIZE(workloads)];
	int i;

	/* Warm up: every connection and permit used once. */
	ns[0] = run(b, WRITE, true, 4096, 4 * QD);
	if (ns[0] < 0)
		return ns[0];
	for (i = 0; i < ARRAY_SIZE(workloads); i++) {
		ns[i] = run(b, workloads[i].dir, workloads[i].random,
			    workloads[i].size, workloads[i].count);
		if (ns[i] < 0) {
			pr_err("rtrs_cbench: %s failed: %lld\n", workloads[i].name, ns[i]);
			return ns[i];
		}
	}
	if (atomic_read(&srv_bad)) {
		pr_err("rtrs_cbench: the server saw %d bad messages\n", atomic_read(&srv_bad));
		return -EIO;
	}
	for (i = 0; i < ARRAY_SIZE(workloads); i++)
		pr_info("bench: theirs rtrs-%s %s %zu %d %lld\n", inval,
			workloads[i].name, workloads[i].size, workloads[i].count, ns[i]);
	return 0;
}

static int __init rtrs_cbench_init(void)
{
	struct sockaddr_storage src = {}, dst = {};
	struct rtrs_addr addr = { .src = &src, .dst = &dst };
	struct rtrs_clt_ops clt_ops = { .link_ev = clt_link_ev };
	struct rtrs_srv_ctx *srv;
	struct rtrs_attrs attrs;
	struct bench *b;
	int i, err;

	if (strcmp(inval, "Y") && strcmp(inval, "N"))
		return -EINVAL;
	if (inet_pton_with_scope(&init_net, AF_INET, "10.84.0.2", NULL, &src) ||
	    inet_pton_with_scope(&init_net, AF_INET, "10.84.0.1", "1240", &dst))
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	spin_lock_init(&b->lock);
	init_waitqueue_head(&b->wq);
	for (i = 0; i < QD; i++) {
		struct slot *s = &b->slots[i];

		s->b = b;
		s->index = i;
		s->ops.priv = s;
		s->ops.conf_fn = slot_done;
		s->buf = kmalloc(MAX_SIZE, GFP_KERNEL);
		if (!s->buf) {
			err = -ENOMEM;
			goto free;
		}
		memset(s->buf, i, MAX_SIZE);
		b->free[b->nfree++] = i;
	}
	srv = rtrs_srv_open(&srv_ops, PORT);
	if (IS_ERR(srv)) {
		err = PTR_ERR(srv);
		pr_err("rtrs_cbench: rtrs_srv_open: %d\n", err);
		goto free;
	}
	b->sess = rtrs_clt_open(&clt_ops, "rtrs_cbench", &addr, 1, PORT, 0, 1, 0, 0);
	if (IS_ERR(b->sess)) {
		err = PTR_ERR(b->sess);
		pr_err("rtrs_cbench: rtrs_clt_open: %d\n", err);
		goto srv_close;
	}
	err = rtrs_clt_query(b->sess, &attrs);
	if (!err && (attrs.max_io_size < MAX_SIZE || attrs.queue_depth < QD)) {
		pr_err("rtrs_cbench: the server takes %u bytes, %u requests; %u, %u needed\n",
		       attrs.max_io_size, attrs.queue_depth, MAX_SIZE, QD);
		err = -EINVAL;
	}
	if (!err)
		err = bench_run(b);
	rtrs_clt_close(b->sess);
srv_close:
	rtrs_srv_close(srv);
free:
	for (i = 0; i < QD; i++)
		kfree(b->slots[i].buf);
	kfree(b);
	/* The figures are printed; nothing stays loaded but the module. */
	return err;
}

static void __exit rtrs_cbench_exit(void)
{
}

module_init(rtrs_cbench_init);
module_exit(rtrs_cbench_exit);
MODULE_DESCRIPTION("The RTRS benchmark's load on the kernel's RTRS");
MODULE_LICENSE("GPL");
