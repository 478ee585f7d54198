// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters of rdma_rs_rtrs.ko: the settings of the RTRS
 * server, with the names of the kernel's rtrs-server parameters. 6.12's
 * Rust modules cannot declare parameters, so they are declared here; the
 * crate's init reads them by name (rdma::kshim::param), checks them and
 * refuses to load on bad values (rtrs::srv::Params::from_module). The
 * defaults are those of rtrs::srv::Params::DEFAULT and must stay equal to
 * them; the queue depth differs from the kernel's (512): a test guest is
 * small.
 */
#include <linux/moduleparam.h>

static bool always_invalidate = true;
module_param(always_invalidate, bool, 0444);
MODULE_PARM_DESC(always_invalidate,
		 "A memory region per chunk, invalidated when a request arrives in it and registered again under a new key (default: Y)");

static int max_chunk_size = 128 << 10;
module_param(max_chunk_size, int, 0444);
MODULE_PARM_DESC(max_chunk_size,
		 "Bytes of a chunk, the largest request with its headers: a power of two, at least 8192 (default: 131072)");

static int sess_queue_depth = 64;
module_param(sess_queue_depth, int, 0444);
MODULE_PARM_DESC(sess_queue_depth,
		 "Chunks per path, the requests a client may have in flight: 1 to 65535 (default: 64)");
