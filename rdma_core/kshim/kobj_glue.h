/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Plain sysfs directories under /sys/kernel, and directories of read-only
 * statistics files in them, for kobj.rs (see kobj_glue.c).
 */
#ifndef RDMA_RS_KOBJ_GLUE_H
#define RDMA_RS_KOBJ_GLUE_H

#include <linux/types.h>

/* The roots of rdma_rs_kobj_dir_add_root: /sys/kernel and /sys/kernel/mm. */
#define RDMA_RS_KOBJ_ROOT_KERNEL 0
#define RDMA_RS_KOBJ_ROOT_MM 1

struct kobject;
struct rdma_rs_stats;

struct kobject *rdma_rs_kobj_dir_add_root(u32 root, const char *name);
struct kobject *rdma_rs_kobj_dir_add(struct kobject *parent, const char *name);
void rdma_rs_kobj_dir_put(struct kobject *dir);

struct rdma_rs_stats *rdma_rs_stats_add(struct kobject *parent, const char *name,
					const char *const *names, u32 n, const void *ctx);
void rdma_rs_stats_del(struct rdma_rs_stats *s);

#endif
