// SPDX-License-Identifier: GPL-2.0
/* snowflake-agent(8): the etcd store is not implemented yet (backend = etcd refuses to start). */
#include "agent.h"

static int e_init(struct agent *a)
{
	(void)a;
	logm(AG_ERR, "backend etcd: not implemented in this build");
	return AG_EXIT_USAGE;
}

const struct store_ops ag_etcd_ops = { .name = "etcd", .init = e_init };
