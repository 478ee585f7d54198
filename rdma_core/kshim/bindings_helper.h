/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers the rdma crate's raw bindings are generated from, and the
 * prototypes of the C wrappers in helpers.c.
 */
#include <linux/list.h>
#include <linux/irq_poll.h>
#include <linux/irq_work.h>
#include <linux/timer.h>
#include <linux/in6.h>
#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>

#include "helpers.h"
#include "configfs_glue.h"
#include "net_glue.h"
#include "udp_glue.h"
#include "sysfs_glue.h"
#include "pages_glue.h"
#include "chardev_glue.h"
#include "kobj_glue.h"
#include "class_glue.h"
#include "param_glue.h"
#include "netlink_glue.h"
#include "block_glue.h"
#include "blk_glue.h"
#include "../../include/rdma/peer_mem.h"
