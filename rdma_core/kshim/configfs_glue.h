/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The configfs glue of configfs_glue.c, bound for configfs.rs: one
 * subsystem per call of rdma_rs_cfs_register, whose directory takes
 * mkdir/rmdir of items with up to RDMA_RS_CFS_MAX_ATTRS attribute files.
 * What the items are is Rust's business (the rdma_rs_cfs_* callbacks).
 */
#ifndef RDMA_RS_CONFIGFS_GLUE_H
#define RDMA_RS_CONFIGFS_GLUE_H

#include <linux/types.h>

#define RDMA_RS_CFS_MAX_ATTRS 8

struct module;
struct rdma_rs_cfs;

struct rdma_rs_cfs *rdma_rs_cfs_register(struct module *owner, const char *name,
					 const void *group_ctx,
					 const char *const *attr_names,
					 const bool *attr_writable, u32 nattrs);
void rdma_rs_cfs_unregister(struct rdma_rs_cfs *cfs);

#endif
