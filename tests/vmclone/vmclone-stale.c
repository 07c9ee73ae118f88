// SPDX-License-Identifier: GPL-2.0
/*
 * vmclone-stale DATACENTER WORKER: SET_IDS that assigns the ids for a VM
 * fork count of 0, as an agent whose lease predates the fork would.  Exits
 * 0 when the device accepted it, 1 when it refused with ESTALE (as it must
 * after a fork), 2 on any other error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/snowflake.h>

int main(int argc, char **argv)
{
	struct snowflake_ids ids = {
		.flags = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_VM_FORKS,
		.vm_forks = 0,
	};
	int fd;

	if (argc != 3)
		return 2;
	ids.datacenter_id = (unsigned int)atoi(argv[1]);
	ids.worker_id = (unsigned int)atoi(argv[2]);
	fd = open("/dev/snowflake", O_RDONLY);
	if (fd < 0 || ioctl(fd, SNOWFLAKE_IOC_SET_IDS, &ids) == 0)
		return fd < 0 ? 2 : 0;
	fprintf(stderr, "vmclone-stale: %s\n", strerror(errno));
	return errno == ESTALE ? 1 : 2;
}
