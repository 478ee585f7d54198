/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Block devices of our own (blk.rs): a blk-mq disk whose requests go to
 * Rust, with the queue limits a remote device announces, and what a
 * request carries (operation, range, data).
 */
#ifndef RDMA_RS_BLK_GLUE_H
#define RDMA_RS_BLK_GLUE_H

#include <linux/types.h>

struct module;
struct request;
struct rdma_rs_blk;
struct rdma_rs_sysdir;

/* What the disk announces. */
struct rdma_rs_blk_limits {
	u64 nsectors;
	u32 logical_block_size;
	u32 physical_block_size;
	u32 max_hw_sectors;
	u32 max_segments;
	u32 max_discard_sectors;
	u32 discard_granularity;
	u32 max_write_zeroes_sectors;
	u32 max_secure_erase_sectors;
	u32 queue_depth;
	bool write_cache;
	bool fua;
	bool read_only;
};

/* A request's operation (blk.rs RqOp); the block.rs values where shared. */
enum rdma_rs_rq_op {
	RDMA_RS_RQ_READ = 0,
	RDMA_RS_RQ_WRITE = 1,
	RDMA_RS_RQ_FLUSH = 2,
	RDMA_RS_RQ_DISCARD = 3,
	RDMA_RS_RQ_SECURE_ERASE = 4,
	RDMA_RS_RQ_WRITE_ZEROES = 5,
	RDMA_RS_RQ_OTHER = 6,
};

/* Flags of a request. */
enum rdma_rs_rq_flag {
	RDMA_RS_RQ_SYNC = 1 << 0,
	RDMA_RS_RQ_FUA = 1 << 1,
};

struct rdma_rs_blk *rdma_rs_blk_add(const char *name, const struct rdma_rs_blk_limits *lim,
				    struct module *owner, const void *ctx);
void rdma_rs_blk_del(struct rdma_rs_blk *b);
void rdma_rs_blk_set_capacity(struct rdma_rs_blk *b, u64 nsectors);
const char *rdma_rs_blk_name(struct rdma_rs_blk *b);
unsigned int rdma_rs_blk_openers(struct rdma_rs_blk *b);
int rdma_rs_blk_link(struct rdma_rs_sysdir *dir, const char *name, struct rdma_rs_blk *b);

u32 rdma_rs_rq_op(struct request *rq);
u32 rdma_rs_rq_flags(struct request *rq);
u64 rdma_rs_rq_pos(struct request *rq);
u32 rdma_rs_rq_bytes(struct request *rq);
u32 rdma_rs_rq_tag(struct request *rq);
int rdma_rs_rq_copy(struct request *rq, void *buf, u32 len, bool to_rq);

/* A piece of a request's data: a page (referenced), an offset, a length. */
struct rdma_rs_rq_piece {
	struct page *page;
	u32 offset;
	u32 len;
};

int rdma_rs_rq_pieces(struct request *rq, u32 skip, struct rdma_rs_rq_piece *out, u32 max);
void rdma_rs_rq_end(struct request *rq, int err);

#endif
