// SPDX-License-Identifier: GPL-2.0
/*
 * Block devices of our own for blk.rs: a tag set and a gendisk per disk,
 * one hardware queue that may sleep (BLK_MQ_F_BLOCKING), every request
 * started and handed to Rust (rdma_rs_blk_queue_rq) with the disk's
 * context; accessors of what a request carries; its completion.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/slab.h>

#include <linux/sysfs.h>

#include "blk_glue.h"
#include "class_glue.h"

/* blk.rs: takes the request (started) for the disk whose context is ctx. */
void rdma_rs_blk_queue_rq(const void *ctx, struct request *rq);

struct rdma_rs_blk {
	struct blk_mq_tag_set tag_set;
	struct gendisk *disk;
	struct block_device_operations fops;
	const void *ctx;
};

static blk_status_t blk_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct rdma_rs_blk *b = hctx->queue->queuedata;

	blk_mq_start_request(bd->rq);
	rdma_rs_blk_queue_rq(b->ctx, bd->rq);
	return BLK_STS_OK;
}

static const struct blk_mq_ops blk_mq_ops = {
	.queue_rq = blk_queue_rq,
};

struct rdma_rs_blk *rdma_rs_blk_add(const char *name, const struct rdma_rs_blk_limits *l,
				    struct module *owner, const void *ctx)
{
	struct queue_limits lim = {
		.logical_block_size = l->logical_block_size,
		.physical_block_size = l->physical_block_size,
		.max_hw_sectors = l->max_hw_sectors,
		.max_segments = l->max_segments,
		.max_hw_discard_sectors = l->max_discard_sectors,
		.discard_granularity = l->discard_granularity,
		.max_write_zeroes_sectors = l->max_write_zeroes_sectors,
		.max_secure_erase_sectors = l->max_secure_erase_sectors,
	};
	struct rdma_rs_blk *b;
	int ret;

	if (l->write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
	if (l->fua)
		lim.features |= BLK_FEAT_FUA;
	if (!l->queue_depth || strlen(name) >= DISK_NAME_LEN)
		return ERR_PTR(-EINVAL);
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return ERR_PTR(-ENOMEM);
	b->ctx = ctx;
	b->fops.owner = owner;
	b->tag_set.ops = &blk_mq_ops;
	b->tag_set.nr_hw_queues = 1;
	b->tag_set.queue_depth = l->queue_depth;
	b->tag_set.numa_node = NUMA_NO_NODE;
	b->tag_set.flags = BLK_MQ_F_BLOCKING;
	b->tag_set.driver_data = b;
	ret = blk_mq_alloc_tag_set(&b->tag_set);
	if (ret)
		goto free;
	b->disk = blk_mq_alloc_disk(&b->tag_set, &lim, b);
	if (IS_ERR(b->disk)) {
		ret = PTR_ERR(b->disk);
		goto free_tags;
	}
	b->disk->fops = &b->fops;
	b->disk->private_data = b;
	strscpy(b->disk->disk_name, name, DISK_NAME_LEN);
	set_capacity(b->disk, l->nsectors);
	if (l->read_only)
		set_disk_ro(b->disk, true);
	ret = add_disk(b->disk);
	if (ret)
		goto put_disk;
	return b;

put_disk:
	put_disk(b->disk);
free_tags:
	blk_mq_free_tag_set(&b->tag_set);
free:
	kfree(b);
	return ERR_PTR(ret);
}

/*
 * Removes the disk: new IO fails, IO in flight is waited for (so every
 * request handed to Rust must end), then everything is freed.
 */
void rdma_rs_blk_del(struct rdma_rs_blk *b)
{
	del_gendisk(b->disk);
	put_disk(b->disk);
	blk_mq_free_tag_set(&b->tag_set);
	kfree(b);
}

void rdma_rs_blk_set_capacity(struct rdma_rs_blk *b, u64 nsectors)
{
	set_capacity_and_notify(b->disk, nsectors);
}

const char *rdma_rs_blk_name(struct rdma_rs_blk *b)
{
	return b->disk->disk_name;
}

/* How many times the disk is open now (a hint: it may change at once). */
unsigned int rdma_rs_blk_openers(struct rdma_rs_blk *b)
{
	return disk_openers(b->disk);
}

/* A link name in dir to the disk's sysfs directory; it goes with dir. */
int rdma_rs_blk_link(struct rdma_rs_sysdir *dir, const char *name, struct rdma_rs_blk *b)
{
	return sysfs_create_link(rdma_rs_sysdir_kobj(dir), &disk_to_dev(b->disk)->kobj, name);
}

u32 rdma_rs_rq_op(struct request *rq)
{
	switch (req_op(rq)) {
	case REQ_OP_READ:
		return RDMA_RS_RQ_READ;
	case REQ_OP_WRITE:
		return RDMA_RS_RQ_WRITE;
	case REQ_OP_FLUSH:
		return RDMA_RS_RQ_FLUSH;
	case REQ_OP_DISCARD:
		return RDMA_RS_RQ_DISCARD;
	case REQ_OP_SECURE_ERASE:
		return RDMA_RS_RQ_SECURE_ERASE;
	case REQ_OP_WRITE_ZEROES:
		return RDMA_RS_RQ_WRITE_ZEROES;
	default:
		return RDMA_RS_RQ_OTHER;
	}
}

u32 rdma_rs_rq_flags(struct request *rq)
{
	u32 f = 0;

	if (rq->cmd_flags & REQ_SYNC)
		f |= RDMA_RS_RQ_SYNC;
	if (rq->cmd_flags & REQ_FUA)
		f |= RDMA_RS_RQ_FUA;
	return f;
}

u64 rdma_rs_rq_pos(struct request *rq)
{
	return blk_rq_pos(rq);
}

u32 rdma_rs_rq_bytes(struct request *rq)
{
	return blk_rq_bytes(rq);
}

u32 rdma_rs_rq_tag(struct request *rq)
{
	return rq->tag;
}

/*
 * Copies the request's data into buf (to_rq false: a write's data) or buf
 * into the request's pages (to_rq true: a read's data), len bytes, which
 * must be the request's payload size. -EINVAL otherwise.
 */
int rdma_rs_rq_copy(struct request *rq, void *buf, u32 len, bool to_rq)
{
	struct req_iterator iter;
	struct bio_vec bv;
	u32 done = 0;

	if (blk_rq_payload_bytes(rq) != len)
		return -EINVAL;
	rq_for_each_segment(bv, rq, iter) {
		void *p;

		if (bv.bv_len > len - done)
			return -EINVAL;
		p = bvec_kmap_local(&bv);
		if (to_rq)
			memcpy(p, buf + done, bv.bv_len);
		else
			memcpy(buf + done, p, bv.bv_len);
		kunmap_local(p);
		if (to_rq)
			flush_dcache_page(bv.bv_page);
		done += bv.bv_len;
	}
	return done == len ? 0 : -EINVAL;
}

/*
 * The request's data segments, one page each, from the skip-th on: at
 * most max of them into out, each page with a reference taken for the
 * caller. Returns how many were filled.
 */
int rdma_rs_rq_pieces(struct request *rq, u32 skip, struct rdma_rs_rq_piece *out, u32 max)
{
	struct req_iterator iter;
	struct bio_vec bv;
	u32 i = 0, n = 0;

	rq_for_each_segment(bv, rq, iter) {
		if (n == max)
			break;
		if (i++ < skip)
			continue;
		get_page(bv.bv_page);
		out[n].page = bv.bv_page;
		out[n].offset = bv.bv_offset;
		out[n].len = bv.bv_len;
		n++;
	}
	return n;
}

void rdma_rs_rq_end(struct request *rq, int err)
{
	blk_mq_end_request(rq, errno_to_blk_status(err));
}
