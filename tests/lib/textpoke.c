// SPDX-License-Identifier: GPL-2.0
/*
 * sf-textpoke: records every change the guest kernel makes to its own text
 * (PERF_RECORD_TEXT_POKE: static keys, static calls, jump labels, kprobes,
 * ftrace) while it runs, and prints them when told to stop.
 *
 * Why (tests/lib/vm.sh, "How a guest boots"): under QEMU's multi-threaded
 * TCG, a kernel that patches text (text_poke_bp()) while another vCPU runs
 * it may leave that vCPU executing the int3 it wrote.  A guest booted with
 * VM_MODE=parallel starts with one CPU online and brings the others up only
 * for the tests that need two at once, with this recorder started first:
 * if nothing patches text from then on, the race had nothing to race with,
 * and the host checks that it was so.
 *
 * Usage: sf-textpoke OUT          (run in the background; SIGTERM stops it)
 * It writes OUT.ready once its events are open, then follows the CPUs as
 * they come online (a side-band event only sees the pokes made on its own
 * CPU), and on SIGTERM writes to OUT:
 *   SNOWFLAKE-TEXTPOKE poke cpu=C addr=0xA len=N kernel|module sym=SYMBOL
 *   SNOWFLAKE-TEXTPOKE-END pokes=P core=K module=M lost=L cpus=N failed=F online=O
 * cpus: the CPUs it followed; failed: the times an event could not be
 * opened on an online CPU; online: the CPUs online at the stop.  The host
 * (tests/lib/vm.sh, vm_textpoke) requires failed=0 and cpus=online: a CPU
 * without a recorder would hide its pokes.  While it runs, OUT.cpus holds
 * how many CPUs it follows, so that the guest starts its tests only once
 * a CPU that came up is followed (a poke in the 20 ms before that is
 * before any test ran with two CPUs).
 * "core" counts pokes into the kernel's own text (_stext.._etext), "module"
 * the others (module space: a module's jump labels are patched while it
 * is being loaded, before any CPU can run its code; a key that changes
 * while modules run changes the kernel's own sites too).  Each is named
 * when it is seen, while its module is still loaded.
 * Exit status: 0, or 1 when the events could not be opened (reason on
 * stderr and in OUT).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS	64
#define DATA_PAGES	16
#define MAX_POKES	4096

struct ring {
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	size_t size;
};

struct poke {
	uint64_t addr;
	uint16_t len;
	int cpu;
	bool core;
	char sym[160];
};

static struct ring rings[MAX_CPUS];
static struct poke pokes[MAX_POKES];
static unsigned long npokes, lost, dropped, open_failed;
static uint64_t stext, etext;	/* the kernel's own text: [_stext, _etext) */
static long page;
static int ncpus;	/* the CPUs this kernel may bring up: each has a ring */
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int open_cpu(int cpu)
{
	struct perf_event_attr attr;
	struct ring *r = &rings[cpu];
	void *m;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.text_poke = 1;
	attr.exclude_kernel = 0;
	fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	m = mmap(NULL, (1 + DATA_PAGES) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;

		close(fd);
		return -e;
	}
	r->meta = m;
	r->data = (unsigned char *)m + page;
	r->size = DATA_PAGES * page;
	return 0;
}

/* Copy @len bytes at ring offset @off (wrapping) into @dst. */
static void ring_copy(const struct ring *r, uint64_t off, void *dst, size_t len)
{
	size_t o = off % r->size, first = len < r->size - o ? len : r->size - o;

	memcpy(dst, r->data + o, first);
	memcpy((unsigned char *)dst + first, r->data, len - first);
}

static void symbolize(uint64_t addr, char *out, size_t n);

static void drain(int cpu)
{
	struct ring *r = &rings[cpu];
	uint64_t head, tail;

	if (!r->meta)
		return;
	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	tail = r->meta->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		unsigned char rec[512];

		ring_copy(r, tail, &h, sizeof(h));
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_TEXT_POKE && h.size <= sizeof(rec)) {
			uint64_t addr;
			uint16_t old_len;

			ring_copy(r, tail, rec, h.size);
			memcpy(&addr, rec + sizeof(h), sizeof(addr));
			memcpy(&old_len, rec + sizeof(h) + 8, sizeof(old_len));
			if (npokes < MAX_POKES) {
				struct poke *p = &pokes[npokes];

				p->addr = addr;
				p->len = old_len;
				p->cpu = cpu;
				p->core = addr >= stext && addr < etext;
				/* Now: a module's symbols go when it is unloaded. */
				symbolize(addr, p->sym, sizeof(p->sym));
			} else {
				dropped++;
			}
			npokes++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t n;

			ring_copy(r, tail, rec, h.size);
			memcpy(&n, rec + sizeof(h) + 8, sizeof(n));
			lost += n;
		}
		tail += h.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

/*
 * Whether CPU @cpu is online now: its "online" file, or for cpu0, which
 * often has none, always (a CPU that does not exist is not online).
 */
static bool cpu_online(int cpu)
{
	char path[64], c = '0';
	int fd;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
		return c == '1';
	}
	return cpu == 0;
}

/* Open an event on every online CPU that has none; returns how many are open. */
static int follow_cpus(FILE *err)
{
	int cpu, nopen = 0;

	for (cpu = 0; cpu < ncpus; cpu++) {
		int ret;

		if (rings[cpu].meta) {
			nopen++;
			continue;
		}
		if (!cpu_online(cpu))
			continue;
		ret = open_cpu(cpu);
		if (ret < 0) {
			open_failed++;
			if (err)
				fprintf(err, "sf-textpoke: perf_event_open(text_poke) on cpu %d: %s\n",
					cpu, strerror(-ret));
			continue;
		}
		nopen++;
	}
	return nopen;
}

/* The kallsyms symbol at or below @addr, "name+0xoff [module]". */
static void symbolize(uint64_t addr, char *out, size_t n)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], best[256] = "?", mod[128] = "";
	uint64_t best_a = 0;

	if (!f) {
		snprintf(out, n, "?");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t a;
		char type, name[256], m[128] = "";

		if (sscanf(line, "%" SCNx64 " %c %255s %127s", &a, &type, name, m) < 3)
			continue;
		if (type != 't' && type != 'T')
			continue;
		if (a <= addr && a > best_a) {
			best_a = a;
			snprintf(best, sizeof(best), "%s", name);
			snprintf(mod, sizeof(mod), "%s", m);
		}
	}
	fclose(f);
	snprintf(out, n, "%s+0x%" PRIx64 "%s%s", best, best_a ? addr - best_a : addr,
		 mod[0] ? " " : "", mod);
}

/* The kernel's own text, from /proc/kallsyms; 0 when found. */
static int text_range(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && !(stext && etext)) {
		uint64_t a;
		char type, name[256];

		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "_stext"))
			stext = a;
		else if (!strcmp(name, "_etext"))
			etext = a;
	}
	fclose(f);
	return stext && etext > stext ? 0 : -1;
}

/* The CPUs online now (cpu0 often has no "online" file: it is always up). */
static int online_cpus(void)
{
	int cpu, n = 0;

	for (cpu = 0; cpu < ncpus; cpu++)
		n += cpu_online(cpu);
	return n;
}

/* OUT.cpus: how many CPUs are followed now (the guest waits on it). */
static void say_cpus(const char *cpus_path, int cpus)
{
	FILE *f = fopen(cpus_path, "w");

	if (f) {
		fprintf(f, "%d\n", cpus);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	char cpus_path[4096];
	int followed;
	unsigned long i, core = 0, module = 0;
	char ready[4096];
	struct sigaction sa;
	FILE *out;
	int cpus;

	if (argc != 2) {
		fprintf(stderr, "usage: sf-textpoke OUT\n");
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	/* The CPUs present, online or not (maxcpus=1 leaves them offline). */
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus < 1 || ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	if (text_range()) {
		fprintf(stderr, "sf-textpoke: no _stext/_etext in /proc/kallsyms (kptr_restrict?)\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	cpus = follow_cpus(stderr);
	out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 1;
	}
	if (cpus == 0) {
		fprintf(out, "SNOWFLAKE-TEXTPOKE-END unavailable: no text_poke event could be opened\n");
		fclose(out);
		return 1;
	}
	snprintf(cpus_path, sizeof(cpus_path), "%s.cpus", argv[1]);
	say_cpus(cpus_path, cpus);
	followed = cpus;
	snprintf(ready, sizeof(ready), "%s.ready", argv[1]);
	fclose(fopen(ready, "w"));

	while (!stop) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		int cpu;

		/* A CPU that came online since: its event, from now on. */
		if (cpus < ncpus)
			cpus = follow_cpus(stderr);
		if (cpus != followed) {
			say_cpus(cpus_path, cpus);
			followed = cpus;
		}
		for (cpu = 0; cpu < ncpus; cpu++)
			drain(cpu);
		nanosleep(&ts, NULL);
	}
	for (int cpu = 0; cpu < ncpus; cpu++)
		drain(cpu);

	for (i = 0; i < npokes && i < MAX_POKES; i++) {
		if (pokes[i].core)
			core++;
		else
			module++;
		fprintf(out, "SNOWFLAKE-TEXTPOKE poke cpu=%d addr=0x%" PRIx64 " len=%u %s sym=%s\n",
			pokes[i].cpu, pokes[i].addr, pokes[i].len,
			pokes[i].core ? "kernel" : "module", pokes[i].sym);
	}
	/* Pokes past MAX_POKES were not looked up: count them as core. */
	core += dropped;
	fprintf(out, "SNOWFLAKE-TEXTPOKE-END pokes=%lu core=%lu module=%lu lost=%lu cpus=%d failed=%lu online=%d\n",
		npokes, core, module, lost, cpus, open_failed, online_cpus());
	fclose(out);
	return 0;
}
