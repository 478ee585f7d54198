// SPDX-License-Identifier: GPL-2.0
/*
 * A module's own parameters, read by name, for param.rs.
 *
 * 6.12's Rust modules cannot declare module parameters, so a module that
 * needs some declares them in a C file of its own (module_param and
 * friends put them in its __param section, which the loader hands over as
 * mod->kp and parses before the module's init runs). This reads one of
 * them back the way /sys/module/<mod>/parameters/<name> does: through the
 * parameter's get operation, under the module's parameter lock, as text.
 */
#include <linux/errno.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include "param_glue.h"

/*
 * Writes the text of mod's parameter called name into buf, a page (what
 * every get operation may fill). Returns its length, -ENOENT if mod has no
 * such parameter (or is the kernel proper), -EPERM if it cannot be read, or
 * the get operation's error.
 */
int rdma_rs_module_param_get(struct module *mod, const char *name, char *buf)
{
	const struct kernel_param *kp;
	unsigned int i;
	int ret;

	if (!mod)
		return -ENOENT;
	for (i = 0; i < mod->num_kp; i++) {
		kp = &mod->kp[i];
		if (strcmp(kp->name, name) != 0)
			continue;
		if (!kp->ops || !kp->ops->get)
			return -EPERM;
		kernel_param_lock(mod);
		ret = kp->ops->get(buf, kp);
		kernel_param_unlock(mod);
		return ret;
	}
	return -ENOENT;
}
