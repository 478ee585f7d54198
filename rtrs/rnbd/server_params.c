// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters of rdma_rs_rnbd_server.ko, with the names and
 * meaning of the kernel's rnbd_server's. 6.12's Rust modules cannot
 * declare parameters, so they are declared here; the crate's init reads
 * them by name (rdma::kshim::param) and refuses to load on bad values.
 */
#include <linux/limits.h>
#include <linux/moduleparam.h>

static ushort port_nr = 1234;
module_param(port_nr, ushort, 0444);
MODULE_PARM_DESC(port_nr,
		 "The port the server listens on, in the network namespace of the process that loads the module (default: 1234)");

static char dev_search_path[PATH_MAX] = "/";
module_param_string(dev_search_path, dev_search_path, sizeof(dev_search_path), 0444);
MODULE_PARM_DESC(dev_search_path,
		 "The folder a client's device name is found in; %SESSNAME% in it stands for the session's name (default: /)");
