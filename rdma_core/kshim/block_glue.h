/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Block devices opened by path, and IO on them from kernel buffers
 * (block.rs): what an RNBD server needs of the block layer.
 */
#ifndef RDMA_RS_BLOCK_GLUE_H
#define RDMA_RS_BLOCK_GLUE_H

#include <linux/types.h>

struct file;
struct rdma_rs_sysdir;

/* What a device announces (RNBD's OPEN_RSP carries it). */
struct rdma_rs_bdev_info {
	u64 nsectors;
	u32 logical_block_size;
	u32 physical_block_size;
	u32 max_segments;
	u32 max_hw_sectors;
	u32 max_write_zeroes_sectors;
	u32 max_discard_sectors;
	u32 discard_granularity;
	u32 discard_alignment;
	u32 max_secure_erase_sectors;
	bool write_cache;
	bool fua;
	bool read_only;
	/* "%pg": the device's name, NUL-terminated. */
	char name[32];
};

/* Block operations (block.rs BioOp). */
enum rdma_rs_bio_op {
	RDMA_RS_BIO_READ = 0,
	RDMA_RS_BIO_WRITE = 1,
	RDMA_RS_BIO_FLUSH = 2,
	RDMA_RS_BIO_DISCARD = 3,
	RDMA_RS_BIO_SECURE_ERASE = 4,
	RDMA_RS_BIO_WRITE_ZEROES = 5,
};

/* Flags of a block operation. */
enum rdma_rs_bio_flag {
	RDMA_RS_BIO_SYNC = 1 << 0,
	RDMA_RS_BIO_FUA = 1 << 1,
};

struct file *rdma_rs_bdev_open(const char *path, bool write);
void rdma_rs_bdev_close(struct file *bdev_file);
void rdma_rs_bdev_info(struct file *bdev_file, struct rdma_rs_bdev_info *out);
int rdma_rs_bdev_io(struct file *bdev_file, u32 op, u32 flags, u64 sector, void *buf, u32 len,
		    u32 bi_size, u16 prio);
int rdma_rs_bdev_link(struct rdma_rs_sysdir *dir, const char *name, struct file *bdev_file);

#endif
