/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sysfs glue of sysfs_glue.c, bound for sysfs.rs. The file ids are
 * shared with Rust through bindgen.
 */
#ifndef RDMA_RS_SYSFS_GLUE_H
#define RDMA_RS_SYSFS_GLUE_H

#include <linux/types.h>

enum rdma_rs_attr_id {
	RDMA_RS_ATTR_NODE_GUID = 0,
	RDMA_RS_ATTR_NODE_TYPE = 1,
	RDMA_RS_ATTR_FW_VER = 2,
	RDMA_RS_ATTR_SYS_IMAGE_GUID = 3,
	RDMA_RS_ATTR_RESOURCES = 4,
	RDMA_RS_ATTR_NODE_DESC = 5,
	RDMA_RS_ATTR_PORT_STATE = 10,
	RDMA_RS_ATTR_PORT_PHYS_STATE = 11,
	RDMA_RS_ATTR_PORT_LINK_LAYER = 12,
	RDMA_RS_ATTR_PORT_LID = 13,
	RDMA_RS_ATTR_PORT_SM_LID = 14,
	RDMA_RS_ATTR_PORT_CAP_MASK = 15,
	RDMA_RS_ATTR_PORT_RATE = 16,
	RDMA_RS_ATTR_GID = 20,
	RDMA_RS_ATTR_GID_TYPE = 21,
	RDMA_RS_ATTR_PKEY = 22,
	RDMA_RS_ATTR_HW_COUNTER = 23,
	RDMA_RS_ATTR_GID_NDEV = 24,
};

struct kobject;
struct net_device;
struct rdma_rs_sysfs;
struct rdma_rs_sysclass;

int rdma_rs_sysfs_init(void);
void rdma_rs_sysfs_exit(void);
/*
 * In cls (a class of class_glue.c) if not NULL, else in rdma_rs; with a
 * "device" link to the parent of link_nd's device if link_nd (held by the
 * caller during the call) is not NULL and has one.
 */
struct rdma_rs_sysfs *rdma_rs_sysfs_add(struct rdma_rs_sysclass *cls, const char *name,
					const void *dev, u32 nports, u32 gid_len, u32 pkey_len,
					const char *const *counter_names, u32 ncounters,
					struct net_device *link_nd);
/* Port port's directory (from 1), with a reference for the caller. */
struct kobject *rdma_rs_sysfs_port_dir(struct rdma_rs_sysfs *s, u32 port);
void rdma_rs_sysfs_del(struct rdma_rs_sysfs *s);

#endif
