/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A module's own parameters, read by name, for param.rs (see
 * param_glue.c).
 */
#ifndef RDMA_RS_PARAM_GLUE_H
#define RDMA_RS_PARAM_GLUE_H

struct module;

int rdma_rs_module_param_get(struct module *mod, const char *name, char *buf);

#endif
