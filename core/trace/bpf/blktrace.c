// SPDX-License-Identifier: GPL-2.0
/* Loads iosched's block tracer (blktrace.bpf.c) and prints one JSON object per interval on stdout:
 *
 *   {"ready":1,"t":NS,"io_start":B,"stats":B}   once every program is attached
 *   {"t":NS,"ops":[[dev,op,ios,bytes,total_ns,[sched],[device],[total]],...],
 *    "procs":[[dev,pid,"comm",ios,bytes,[lat]],...],"untimed":N,"full":N,"swept":N,"issued":N,
 *    "timed":N,"prog_ns":N,"prog_runs":N}
 *
 * "ops" are cumulative since the start (summed over CPUs); "procs" cover the interval only (read and deleted);
 * histograms are log2 buckets of microseconds with trailing zeros left out; t is CLOCK_MONOTONIC. untimed
 * counts completions seen without their request, full requests the map refused, swept the stale entries removed
 * (their completion never came), issued every request issued on
 * the machine (traced or not: the programs run for each), all cumulative. prog_ns and
 * prog_runs are the programs' own run time and runs, and timed the requests issued meanwhile: the kernel times
 * BPF programs only while someone asks it to, at two clock reads a run, so the loader asks for one interval in
 * every --stats-every (10); null when the kernel refuses.
 *
 *   iosched-blktrace [--interval-ms N] [--dev DEV_T]... [--stats-every N | --no-stats]
 *   (no --dev: every device; --dev 0 alone: none; --no-stats: never time the programs, for benchmarks)
 *
 * Capture mode writes every request of one device instead, one line each as it is issued, and a status object
 * every interval:
 *
 *   iosched-blktrace --capture DEV_T [--interval-ms N]
 *   {"ready":1,"t":NS,"io_start":B,"capture":true}
 *   T OP SECTOR BYTES DEPTH        (T: ns, CLOCK_MONOTONIC, when the request began; OP as enum bt_op)
 *   {"t":NS,"lost":N,"full":N}     (records the ring buffer had no room for; requests the map refused)
 *
 * A command's capture writes every bio the processes of one cgroup (v2, by its id) submit, on any request-based
 * disk (or those --dev names), one line each as it is submitted:
 *
 *   iosched-blktrace --capture-cgroup CGROUP_ID [--dev DEV_T]... [--interval-ms N]
 *   {"ready":1,"t":NS,"io_start":B,"capture":true,"cgroup":true}
 *   T OP SECTOR BYTES DEPTH DEV    (T: when it was submitted; DEV: the whole disk's dev_t)
 *   {"t":NS,"lost":N,"full":N}
 *
 * It ends on SIGTERM, SIGINT or SIGHUP, or when stdout closes; its programs go with it (nothing is pinned). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "blktrace.h"
#include "blktrace.skel.h"

#define MAX_DEVS 1024
#define MAX_PROC_KEYS 10240
#define MAX_SWEEP 65536
#define SWEEP_NS (60ULL * 1000000000ULL)
#define DRAIN_MS 50

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void print_hist(const __u64 *h)
{
	int last = BT_SLOTS - 1;

	while (last >= 0 && !h[last])
		last--;
	putchar('[');
	for (int i = 0; i <= last; i++)
		printf(i ? ",%llu" : "%llu", (unsigned long long)h[i]);
	putchar(']');
}

/* A command name as a JSON string: bytes outside printable ASCII as \u00XX (latin-1, always valid). */
static void print_comm(const char *comm)
{
	putchar('"');
	for (int i = 0; i < BT_COMM_LEN && comm[i]; i++) {
		unsigned char c = (unsigned char)comm[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_ops(int fd, int ncpus)
{
	struct bt_op_key key, next, *prev = NULL;
	struct bt_op_stats *cpu = calloc(ncpus, sizeof(*cpu));
	struct bt_op_stats sum;
	bool first = true;

	printf("\"ops\":[");
	if (!cpu) {
		putchar(']');
		return;
	}
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, cpu))
			continue;
		memset(&sum, 0, sizeof(sum));
		for (int c = 0; c < ncpus; c++) {
			sum.ios += cpu[c].ios;
			sum.bytes += cpu[c].bytes;
			sum.total_ns += cpu[c].total_ns;
			for (int i = 0; i < BT_SLOTS; i++) {
				sum.sched[i] += cpu[c].sched[i];
				sum.device[i] += cpu[c].device[i];
				sum.total[i] += cpu[c].total[i];
			}
		}
		printf("%s[%u,%u,%llu,%llu,%llu,", first ? "" : ",", key.dev, key.op, (unsigned long long)sum.ios,
		       (unsigned long long)sum.bytes, (unsigned long long)sum.total_ns);
		print_hist(sum.sched);
		putchar(',');
		print_hist(sum.device);
		putchar(',');
		print_hist(sum.total);
		putchar(']');
		first = false;
	}
	putchar(']');
	free(cpu);
}

/* Each process's entry is read and deleted in one step: IO it does meanwhile starts a new entry. */
static void print_procs(int fd, int ncpus)
{
	static struct bt_proc_key keys[MAX_PROC_KEYS];
	struct bt_proc_key key, *prev = NULL;
	struct bt_proc_stats *cpu = calloc(ncpus, sizeof(*cpu)), sum;
	int n = 0;

	while (n < MAX_PROC_KEYS && bpf_map_get_next_key(fd, prev, &keys[n]) == 0) {
		key = keys[n++];
		prev = &key;
	}
	printf("\"procs\":[");
	for (int i = 0, first = 1; cpu && i < n; i++) {
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], cpu)) {
			if (bpf_map_lookup_elem(fd, &keys[i], cpu))
				continue;
			bpf_map_delete_elem(fd, &keys[i]);
		}
		memset(&sum, 0, sizeof(sum));
		for (int c = 0; c < ncpus; c++) {
			sum.ios += cpu[c].ios;
			sum.bytes += cpu[c].bytes;
			for (int k = 0; k < BT_SLOTS; k++)
				sum.lat[k] += cpu[c].lat[k];
			if (!sum.comm[0] && cpu[c].comm[0])
				memcpy(sum.comm, cpu[c].comm, sizeof(sum.comm));
		}
		printf("%s[%u,%u,", first ? "" : ",", keys[i].dev, keys[i].pid);
		print_comm(sum.comm);
		printf(",%llu,%llu,", (unsigned long long)sum.ios, (unsigned long long)sum.bytes);
		print_hist(sum.lat);
		putchar(']');
		first = 0;
	}
	putchar(']');
	free(cpu);
}

/* Entries of requests not seen for SWEEP_NS: left by a device that went away, or by a completion missed (the
 * kernel skips a program while another runs on that CPU). A live request is reused long before. */
static unsigned long long sweep(int fd)
{
	static __u64 keys[MAX_SWEEP];
	unsigned long long now = now_ns(), gone = 0;
	__u64 key, *prev = NULL;
	struct bt_req r;
	int n = 0;

	while (n < MAX_SWEEP && bpf_map_get_next_key(fd, prev, &key) == 0) {
		prev = &keys[n];
		keys[n++] = key;
	}
	for (int i = 0; i < n; i++) {
		__u64 last;

		if (bpf_map_lookup_elem(fd, &keys[i], &r))
			continue;
		last = r.start > r.insert ? r.start : r.insert;
		last = last > r.issue ? last : r.issue;
		if (last + SWEEP_NS < now && bpf_map_delete_elem(fd, &keys[i]) == 0)
			gone++;
	}
	return gone;
}

static unsigned long long sum_percpu(int fd, __u32 key, int ncpus)
{
	__u64 *v = calloc(ncpus, sizeof(*v));
	unsigned long long out = 0;

	if (v && bpf_map_lookup_elem(fd, &key, v) == 0)
		for (int c = 0; c < ncpus; c++)
			out += v[c];
	free(v);
	return out;
}

static void print_prog_stats(struct blktrace_bpf *skel, bool stats)
{
	struct bpf_program *prog;
	unsigned long long ns = 0, runs = 0;

	if (!stats) {
		printf(",\"prog_ns\":null,\"prog_runs\":null");
		return;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		ns += info.run_time_ns;
		runs += info.run_cnt;
	}
	printf(",\"prog_ns\":%llu,\"prog_runs\":%llu", ns, runs);
}

static bool kernel_has(const char *typedef_name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	found = btf__find_by_name_kind(btf, typedef_name, BTF_KIND_TYPEDEF) >= 0;
	btf__free(btf);
	return found;
}

static int usage(void)
{
	fprintf(stderr, "usage: iosched-blktrace [--interval-ms N] [--dev DEV_T]... [--stats-every N | --no-stats]\n"
		"       iosched-blktrace --capture DEV_T [--interval-ms N]\n"
		"       iosched-blktrace --capture-cgroup CGROUP_ID [--dev DEV_T]... [--interval-ms N]\n");
	return 2;
}

static int print_event(void *ctx, void *data, size_t size)
{
	const struct bt_event *e = data;

	(void)ctx;
	if (size < sizeof(*e))
		return 0;
	printf("%llu %u %llu %u %u\n", (unsigned long long)e->t, e->op, (unsigned long long)e->sector, e->bytes,
	       e->depth);
	return 0;
}

static int print_cmd_event(void *ctx, void *data, size_t size)
{
	const struct bt_event *e = data;

	(void)ctx;
	if (size < sizeof(*e))
		return 0;
	printf("%llu %u %llu %u %u %u\n", (unsigned long long)e->t, e->op, (unsigned long long)e->sector, e->bytes,
	       e->depth, e->dev);
	return 0;
}

/* Capture mode's loop: drain the ring buffer into stdout, a status object every interval. */
static int capture_loop(struct blktrace_bpf *skel, long interval_ms, int ncpus, bool by_cgroup)
{
	struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(skel->maps.events),
						  by_cgroup ? print_cmd_event : print_event, NULL, NULL);
	unsigned long long next = now_ns() + interval_ms * 1000000ULL;
	int counts = bpf_map__fd(skel->maps.counts);

	if (!rb) {
		fprintf(stderr, "cannot open the ring buffer\n");
		return 1;
	}
	while (!stopping) {
		/* The programs wake us only when the buffer fills: drain it every DRAIN_MS either way. */
		int n = ring_buffer__poll(rb, DRAIN_MS);

		if (n >= 0)
			n = ring_buffer__consume(rb);
		if (n < 0 && n != -EINTR)
			break;
		if (now_ns() >= next) {
			next += interval_ms * 1000000ULL;
			printf("{\"t\":%llu,\"lost\":%llu,\"full\":%llu}\n", now_ns(),
			       sum_percpu(counts, BT_LOST, ncpus), sum_percpu(counts, BT_FULL, ncpus));
		}
		if (fflush(stdout) || ferror(stdout))
			break;
	}
	/* What the ring buffer still holds was captured: written before the end. */
	ring_buffer__consume(rb);
	printf("{\"t\":%llu,\"lost\":%llu,\"full\":%llu,\"end\":1}\n", now_ns(), sum_percpu(counts, BT_LOST, ncpus),
	       sum_percpu(counts, BT_FULL, ncpus));
	fflush(stdout);
	ring_buffer__free(rb);
	return 0;
}

/* Which programs load: the statistics', capture mode's (block_io_start and block_rq_merge where they exist) or a
 * command's capture's. */
static void choose_programs(struct blktrace_bpf *skel, bool capture, bool by_cgroup, bool io_start, bool rq_merge)
{
	bool stats = !capture && !by_cgroup;

	bpf_program__set_autoload(skel->progs.block_io_start, stats && io_start);
	bpf_program__set_autoload(skel->progs.block_rq_insert, stats);
	bpf_program__set_autoload(skel->progs.block_rq_issue, stats);
	bpf_program__set_autoload(skel->progs.block_rq_complete, stats);
	bpf_program__set_autoload(skel->progs.cap_io_start, capture && io_start);
	bpf_program__set_autoload(skel->progs.cap_rq_insert, capture && !io_start);
	bpf_program__set_autoload(skel->progs.cap_rq_issue, capture);
	bpf_program__set_autoload(skel->progs.cap_rq_complete, capture);
	bpf_program__set_autoload(skel->progs.cap_rq_merge, capture && rq_merge);
	bpf_program__set_autoload(skel->progs.cmd_bio_queue, by_cgroup);
	bpf_program__set_autoload(skel->progs.cmd_rq_complete, by_cgroup);
}

int main(int argc, char **argv)
{
	unsigned int devs[MAX_DEVS];
	int ndevs = 0, ncpus, stats_fd = -1, err;
	long stats_every = 10, tick = 0;
	unsigned long long issued, timed = 0, window_from = 0;
	bool can_time;
	long interval_ms = 1000;
	unsigned long long swept = 0, last_sweep;
	bool want_stats = true;
	unsigned long capture_dev = 0;
	unsigned long long capture_cgroup = 0;
	struct blktrace_bpf *skel;
	struct timespec next;
	bool io_start;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--no-stats")) {
			want_stats = false;
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--interval-ms")) {
			interval_ms = strtol(argv[++i], &end, 10);
			if (*end || interval_ms < 10 || interval_ms > 3600000)
				return usage();
		} else if (!strcmp(argv[i], "--stats-every")) {
			stats_every = strtol(argv[++i], &end, 10);
			if (*end || stats_every < 1 || stats_every > 1000000)
				return usage();
		} else if (!strcmp(argv[i], "--capture")) {
			capture_dev = strtoul(argv[++i], &end, 10);
			if (*end || !capture_dev || capture_dev > 0xffffffffUL)
				return usage();
		} else if (!strcmp(argv[i], "--capture-cgroup")) {
			capture_cgroup = strtoull(argv[++i], &end, 10);
			if (*end || !capture_cgroup)
				return usage();
		} else if (!strcmp(argv[i], "--dev") && ndevs < MAX_DEVS) {
			unsigned long dev = strtoul(argv[++i], &end, 10);

			if (*end || dev > 0xffffffffUL)  /* 0: trace no device at all */
				return usage();
			devs[ndevs++] = (unsigned int)dev;
		} else {
			return usage();
		}
	}
	if (capture_dev && capture_cgroup)
		return usage();
	libbpf_set_print(print_libbpf);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		fprintf(stderr, "cannot count the possible CPUs\n");
		return 1;
	}
	skel = blktrace_bpf__open();
	if (!skel) {
		fprintf(stderr, "cannot open the BPF object\n");
		return 1;
	}
	io_start = kernel_has("btf_trace_block_io_start");
	skel->rodata->has_io_start = io_start;
	/* More devices than the program filters on: it traces all, and iosched keeps those it asked for. */
	if (ndevs <= BT_MAX_FILTER) {
		for (int i = 0; i < ndevs; i++)
			skel->rodata->filter_devs[i] = devs[i];
		skel->rodata->n_filter_devs = ndevs;
	}
	skel->rodata->capture_dev = (__u32)capture_dev;
	skel->rodata->capture_cgroup = (__u64)capture_cgroup;
	choose_programs(skel, capture_dev != 0, capture_cgroup != 0, io_start, kernel_has("btf_trace_block_rq_merge"));
	/* 16 MiB holds about 500k records: a burst's worth while the reader is busy. */
	if (capture_dev || capture_cgroup)
		bpf_map__set_max_entries(skel->maps.events, 16 << 20);
	err = blktrace_bpf__load(skel);
	if (err) {
		fprintf(stderr, "cannot load the BPF programs: %s\n", strerror(-err));
		goto out;
	}
	err = blktrace_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "cannot attach the BPF programs: %s\n", strerror(-err));
		goto out;
	}
	if (capture_dev || capture_cgroup) {
		setvbuf(stdout, NULL, _IOFBF, 1 << 20);
		printf("{\"ready\":1,\"t\":%llu,\"io_start\":%s,\"capture\":true%s}\n", now_ns(),
		       io_start ? "true" : "false", capture_cgroup ? ",\"cgroup\":true" : "");
		err = capture_loop(skel, interval_ms, ncpus, capture_cgroup != 0);
		goto out;
	}
	/* The kernel times BPF programs (all of them) only while someone holds this descriptor. */
	stats_fd = want_stats ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	can_time = stats_fd >= 0;
	if (can_time)
		close(stats_fd);
	stats_fd = -1;
	printf("{\"ready\":1,\"t\":%llu,\"io_start\":%s,\"stats\":%s}\n", now_ns(), io_start ? "true" : "false",
	       can_time ? "true" : "false");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &next);
	last_sweep = now_ns();
	while (!stopping) {
		next.tv_nsec += (interval_ms % 1000) * 1000000L;
		next.tv_sec += interval_ms / 1000 + next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		while (!stopping && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		if (stopping)
			break;
		if (now_ns() - last_sweep > SWEEP_NS / 4) {
			swept += sweep(bpf_map__fd(skel->maps.reqs));
			last_sweep = now_ns();
		}
		/* One interval in stats_every is timed: the requests issued in it are what its run time is over. */
		issued = sum_percpu(bpf_map__fd(skel->maps.counts), BT_ISSUED, ncpus);
		if (stats_fd >= 0) {
			close(stats_fd);
			stats_fd = -1;
			timed += issued - window_from;
		} else if (can_time && tick % stats_every == 0) {
			stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
			window_from = issued;
		}
		tick++;
		printf("{\"t\":%llu,", now_ns());
		print_ops(bpf_map__fd(skel->maps.stats), ncpus);
		putchar(',');
		print_procs(bpf_map__fd(skel->maps.procs), ncpus);
		printf(",\"untimed\":%llu,\"full\":%llu,\"swept\":%llu,\"issued\":%llu",
		       sum_percpu(bpf_map__fd(skel->maps.counts), BT_UNTIMED, ncpus),
		       sum_percpu(bpf_map__fd(skel->maps.counts), BT_FULL, ncpus), swept, issued);
		if (can_time)
			printf(",\"timed\":%llu", timed);
		print_prog_stats(skel, can_time);
		printf("}\n");
		if (fflush(stdout) || ferror(stdout))
			break; /* the reader went away */
	}
	err = 0;
	if (stats_fd >= 0)
		close(stats_fd);
out:
	blktrace_bpf__destroy(skel);
	return err ? 1 : 0;
}
