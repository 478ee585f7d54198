// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters of rtrs_liar_test.ko (6.12's Rust modules cannot
 * declare any; rtrs_liar.rs reads them by name through
 * rdma::kshim::param): the live session of the kernel's RNBD client that
 * the intruder case aims at, as rnbd.sh reads it from our server's log.
 */
#include <linux/moduleparam.h>

static char *victim_uuid = "";
module_param(victim_uuid, charp, 0444);
MODULE_PARM_DESC(victim_uuid,
		 "The session UUID of a live path on the server, 32 hex digits");

static int victim_cid_num;
module_param(victim_cid_num, int, 0444);
MODULE_PARM_DESC(victim_cid_num, "Its number of connections");
