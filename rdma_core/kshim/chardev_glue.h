/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The misc character device glue of chardev_glue.c, bound for chardev.rs:
 * one /dev/<name> per rdma_rs_chardev_register, whose open files call the
 * rdma_rs_chardev_* functions of chardev.rs; anonymous files (a descriptor
 * with no node) served the same way; and the accessors an mmap handler
 * needs on the VMA it is given.
 */
#ifndef RDMA_RS_CHARDEV_GLUE_H
#define RDMA_RS_CHARDEV_GLUE_H

#include <linux/types.h>

struct file;
struct module;
struct page;
struct poll_table_struct;
struct wait_queue_head;
struct vm_area_struct;
struct rdma_rs_chardev;

struct rdma_rs_chardev *rdma_rs_chardev_register(struct module *owner, const char *name,
						 const char *nodename, unsigned short mode,
						 int abi_version, const void *ctx);
void rdma_rs_chardev_unregister(struct rdma_rs_chardev *d);
unsigned int rdma_rs_chardev_major(const struct rdma_rs_chardev *d);
unsigned int rdma_rs_chardev_minor(const struct rdma_rs_chardev *d);

int rdma_rs_anon_file(struct module *owner, const char *name, void *ctx, bool writable,
		      struct file **out);
void rdma_rs_anon_file_install(int fd, struct file *file);
struct file *rdma_rs_chardev_fget(int fd, void **file_ctx);
void rdma_rs_chardev_fput(struct file *file);
void rdma_rs_anon_file_abort(int fd, struct file *file);

unsigned long rdma_rs_vma_start(const struct vm_area_struct *vma);
unsigned long rdma_rs_vma_end(const struct vm_area_struct *vma);
unsigned long rdma_rs_vma_pgoff(const struct vm_area_struct *vma);
bool rdma_rs_vma_is_shared(const struct vm_area_struct *vma);
int rdma_rs_vma_map_pages(struct vm_area_struct *vma, struct page **pages, unsigned long n);
void rdma_rs_vma_zap(struct vm_area_struct *vma);
void rdma_rs_vma_install(struct vm_area_struct *vma, void *state);

void rdma_rs_pollq_init(struct wait_queue_head *wq);
void rdma_rs_pollq_wake(struct wait_queue_head *wq, unsigned int mask);
void rdma_rs_poll_wait(struct file *file, struct wait_queue_head *wq,
		       struct poll_table_struct *pt);

#endif
