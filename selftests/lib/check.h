/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CHECK(cond, fmt, ...) for the selftests' static user programs
 * (chardev_user, netlink_user, uverbs_user): if cond is false, print where,
 * the message and errno, and exit with status 1.
 */
#ifndef RDMA_RS_SELFTESTS_CHECK_H
#define RDMA_RS_SELFTESTS_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                 \
	do {                                                                             \
		if (!(cond)) {                                                           \
			printf("%s:%d: ", __func__, __LINE__);                           \
			printf(__VA_ARGS__);                                             \
			printf(" (errno %d)\n", errno);                                  \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

#endif
