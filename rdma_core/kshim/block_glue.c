// SPDX-License-Identifier: GPL-2.0
/*
 * Block devices for block.rs: opened by path as a struct file (the 6.12
 * handle of an open block device), what they announce, synchronous IO
 * from a kernel buffer (kmalloc'ed or vmalloc'ed) and a sysfs link to
 * the device.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>

#include "block_glue.h"
#include "class_glue.h"

struct file *rdma_rs_bdev_open(const char *path, bool write)
{
	blk_mode_t mode = BLK_OPEN_READ | (write ? BLK_OPEN_WRITE : 0);

	return bdev_file_open_by_path(path, mode, NULL, NULL);
}

void rdma_rs_bdev_close(struct file *bdev_file)
{
	fput(bdev_file);
}

void rdma_rs_bdev_info(struct file *bdev_file, struct rdma_rs_bdev_info *out)
{
	struct block_device *bdev = file_bdev(bdev_file);

	memset(out, 0, sizeof(*out));
	out->nsectors = bdev_nr_sectors(bdev);
	out->logical_block_size = bdev_logical_block_size(bdev);
	out->physical_block_size = bdev_physical_block_size(bdev);
	out->max_segments = bdev_max_segments(bdev);
	out->max_hw_sectors = queue_max_hw_sectors(bdev_get_queue(bdev));
	out->max_write_zeroes_sectors = bdev_write_zeroes_sectors(bdev);
	out->max_discard_sectors = bdev_max_discard_sectors(bdev);
	out->discard_granularity = bdev_discard_granularity(bdev);
	out->discard_alignment = bdev_discard_alignment(bdev);
	out->max_secure_erase_sectors = bdev_max_secure_erase_sectors(bdev);
	out->write_cache = bdev_write_cache(bdev);
	out->fua = bdev_fua(bdev);
	out->read_only = bdev_read_only(bdev);
	snprintf(out->name, sizeof(out->name), "%pg", bdev);
}

/* The request flags of operation @op with @flags; false for a bad op. */
static bool bio_opf(u32 op, u32 flags, blk_opf_t *opf)
{
	switch (op) {
	case RDMA_RS_BIO_READ:
		*opf = REQ_OP_READ;
		break;
	case RDMA_RS_BIO_WRITE:
		*opf = REQ_OP_WRITE;
		break;
	case RDMA_RS_BIO_FLUSH:
		*opf = REQ_OP_WRITE | REQ_PREFLUSH;
		break;
	case RDMA_RS_BIO_DISCARD:
		*opf = REQ_OP_DISCARD;
		break;
	case RDMA_RS_BIO_SECURE_ERASE:
		*opf = REQ_OP_SECURE_ERASE;
		break;
	case RDMA_RS_BIO_WRITE_ZEROES:
		*opf = REQ_OP_WRITE_ZEROES;
		break;
	default:
		return false;
	}
	if (flags & RDMA_RS_BIO_SYNC)
		*opf |= REQ_SYNC;
	if (flags & RDMA_RS_BIO_FUA)
		*opf |= REQ_FUA;
	return true;
}

/*
 * Adds the pages of @len bytes at @buf to @bio: one segment for linear
 * memory, a segment per page for vmalloc memory. False if they do not fit.
 */
static bool bio_add_buf(struct bio *bio, void *buf, u32 len)
{
	if (!is_vmalloc_addr(buf)) {
		bio_add_virt_nofail(bio, buf, len);
		return true;
	}
	while (len) {
		unsigned int off = offset_in_page(buf);
		unsigned int n = min_t(u32, len, PAGE_SIZE - off);

		if (bio_add_page(bio, vmalloc_to_page(buf), n, off) != n)
			return false;
		buf += n;
		len -= n;
	}
	return true;
}

int rdma_rs_bdev_io(struct file *bdev_file, u32 op, u32 flags, u64 sector, void *buf, u32 len,
		    u32 bi_size, u16 prio)
{
	struct block_device *bdev = file_bdev(bdev_file);
	bool vmap = len && is_vmalloc_addr(buf);
	unsigned int nr;
	struct bio *bio;
	blk_opf_t opf;
	int ret;

	if (!bio_opf(op, flags, &opf))
		return -EINVAL;
	if (!len)
		nr = 0;
	else if (vmap)
		nr = DIV_ROUND_UP(offset_in_page(buf) + len, PAGE_SIZE);
	else
		nr = 1;
	if (nr > BIO_MAX_VECS)
		return -EINVAL;
	bio = bio_alloc(bdev, nr, opf, GFP_KERNEL);
	if (!bio)
		return -ENOMEM;
	if (len) {
		if (!bio_add_buf(bio, buf, len)) {
			bio_put(bio);
			return -EINVAL;
		}
		if (vmap)
			flush_kernel_vmap_range(buf, len);
	} else {
		bio->bi_iter.bi_size = bi_size;
	}
	bio->bi_iter.bi_sector = sector;
	bio_set_prio(bio, prio);
	ret = submit_bio_wait(bio);
	if (vmap && op == RDMA_RS_BIO_READ)
		invalidate_kernel_vmap_range(buf, len);
	bio_put(bio);
	return ret;
}

int rdma_rs_bdev_link(struct rdma_rs_sysdir *dir, const char *name, struct file *bdev_file)
{
	return sysfs_create_link(rdma_rs_sysdir_kobj(dir), bdev_kobj(file_bdev(bdev_file)), name);
}
