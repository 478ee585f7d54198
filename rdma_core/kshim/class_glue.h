/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sysfs classes of other modules (/sys/class/<class>/...), with trees of
 * directories of read/write files, for class.rs (see class_glue.c).
 */
#ifndef RDMA_RS_CLASS_GLUE_H
#define RDMA_RS_CLASS_GLUE_H

#include <linux/types.h>

struct rdma_rs_sysclass;
struct rdma_rs_sysdir;
struct kobject;

/* One file of a directory, as Rust describes it (the name is copied). */
struct rdma_rs_sysfile {
	const char *name;
	u32 id;
	bool writable;
};

struct rdma_rs_sysclass *rdma_rs_sysclass_add(const char *name,
					      const struct rdma_rs_sysfile *files, u32 nfiles,
					      const void *ctx);
void rdma_rs_sysclass_del(struct rdma_rs_sysclass *c);
struct class;
/* The driver-core class, for trees made elsewhere (sysfs_glue.c). */
struct class *rdma_rs_sysclass_class(struct rdma_rs_sysclass *c);
/* Whether /sys/class has an entry called name (for sysfs_glue.c too). */
bool rdma_rs_class_name_taken(const char *name);

/* The kobject of a directory (for links into it). */
struct kobject *rdma_rs_sysdir_kobj(struct rdma_rs_sysdir *d);
struct rdma_rs_sysdir *rdma_rs_sysdir_add(struct rdma_rs_sysclass *c, struct rdma_rs_sysdir *parent,
					  const char *name, const struct rdma_rs_sysfile *files,
					  u32 nfiles, const void *ctx);
void rdma_rs_sysdir_close(struct rdma_rs_sysdir *d);

#endif
