// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel range (docs/reference.md, "Kernel range"): a feature the
 * running kernel lacks is said, not silently missing.  The VM-fork notifier
 * (register_random_vmfork_notifier(), Linux 5.18 with CONFIG_VMGENID):
 * sysfs vm_fork_notifier reads 1 exactly when the kernel has it (its symbol
 * in /proc/kallsyms, an account independent of the module), and where it
 * reads 0 the module says so at load (a load of the test's own).  Runs on every guest kernel: on 5.10
 * it checks the "not supported" side, on 6.1 and later the supported one.
 */
#define _GNU_SOURCE
#include <sys/klog.h>
#include <sys/utsname.h>

#include "kselftest_harness.h"
#include "snowflake_util.h"

#define SF_NO_VMFORK_MSG "this kernel does not report VM forks"

/* Does /proc/kallsyms list the kernel symbol @name?  1, 0, or -errno. */
static int kallsyms_has(const char *name)
{
	char line[512], *sym;
	int found = 0;
	FILE *f;

	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		/* "ADDR TYPE NAME[\t[MODULE]]" */
		sym = strrchr(line, ' ');
		if (!sym)
			continue;
		sym++;
		sym[strcspn(sym, "\t\n")] = '\0';
		found = !strcmp(sym, name);
	}
	fclose(f);
	return found;
}

/* Is @s in the kernel log?  1, 0, or -errno. */
static int klog_has(const char *s)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf;
	int n, found;

	if (len <= 0)
		return len < 0 ? -errno : 0;
	buf = calloc(1, (size_t)len + 1);
	if (!buf)
		return -ENOMEM;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	found = n < 0 ? -errno : strstr(buf, s) != NULL;
	free(buf);
	return found;
}

FIXTURE(krange) {
	int unused;
};

FIXTURE_SETUP(krange)
{
	ASSERT_TRUE(sf_path_exists(SF_SYSFS)) TH_LOG("the module is not loaded");
}

FIXTURE_TEARDOWN(krange)
{
}

TEST_F(krange, vm_fork_notifier_says_what_the_kernel_has)
{
	struct utsname u;
	uint64_t v = 2;
	int has, said;

	ASSERT_EQ(0, uname(&u));
	/* A load of our own: its messages are in the log (the guest's init
	 * clears it between the test binaries). */
	ASSERT_EQ(0, sf_reload_defaults());
	ASSERT_EQ(0, sf_sysfs_read_u64("vm_fork_notifier", &v));
	ASSERT_TRUE(v == 0 || v == 1);
	has = kallsyms_has("register_random_vmfork_notifier");
	ASSERT_LE(0, has) TH_LOG("cannot read /proc/kallsyms");
	said = klog_has(SF_NO_VMFORK_MSG);
	ASSERT_LE(0, said) TH_LOG("cannot read the kernel log");
	TH_LOG("Linux %s: vm_fork_notifier %llu, kernel symbol %s, load message %s",
	       u.release, (unsigned long long)v, has ? "present" : "absent",
	       said ? "printed" : "not printed");
	EXPECT_EQ((uint64_t)has, v);
	EXPECT_EQ(!v, said);
}

/* The file is read-only, for everyone: writing it changes nothing. */
TEST_F(krange, vm_fork_notifier_is_read_only)
{
	uint64_t before = 2, after = 3;

	ASSERT_EQ(0, sf_sysfs_read_u64("vm_fork_notifier", &before));
	EXPECT_NE(0, sf_sysfs_write_len("vm_fork_notifier", "1\n", 2));
	ASSERT_EQ(0, sf_sysfs_read_u64("vm_fork_notifier", &after));
	EXPECT_EQ(before, after);
}

TEST_HARNESS_MAIN
