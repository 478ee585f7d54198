// SPDX-License-Identifier: GPL-2.0
/*
 * Triggers one kernel WARNING when loaded.
 *
 * Used only by the harness's own negative test: a guest run that loads this
 * module must be reported as failed even though every KTAP line passed.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init rdma_splat_test_init(void)
{
	WARN(1, "rdma_splat_test: deliberate warning for the harness self-test\n");
	return 0;
}

static void __exit rdma_splat_test_exit(void)
{
}

module_init(rdma_splat_test_init);
module_exit(rdma_splat_test_exit);
MODULE_DESCRIPTION("Deliberate WARN for the rdma-rs harness self-test");
MODULE_LICENSE("GPL");
