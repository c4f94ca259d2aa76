/* What the block tracer's BPF program and its loader share: map keys and values. */
#ifndef IOSCHED_BLKTRACE_H
#define IOSCHED_BLKTRACE_H

/* log2 buckets of microseconds, as bpftrace's hist(): bucket 0 holds 0, bucket k holds [2^(k-1), 2^k); the
 * last one holds everything above (2^30 us is 18 minutes). */
#define BT_SLOTS 32
#define BT_COMM_LEN 16
/* Devices the program filters on itself; the loader traces every device when asked for more. */
#define BT_MAX_FILTER 64

/* Operations, grouped as /proc/diskstats groups them (op_stat_group). */
enum bt_op { BT_READ, BT_WRITE, BT_FLUSH, BT_DISCARD, BT_OTHER, BT_OPS };

/* One request in flight, keyed by its pointer; times are CLOCK_MONOTONIC ns, 0 when not seen. */
struct bt_req {
	__u64 start;  /* accounting start (block_io_start), or the first event seen without it */
	__u64 insert; /* into the IO scheduler */
	__u64 issue;  /* to the driver */
	__u32 pid;
	__u32 dev;
	char comm[BT_COMM_LEN];
};

struct bt_op_key {
	__u32 dev; /* the kernel's dev_t: major << 20 | minor */
	__u32 op;
};

/* Per CPU, cumulative: the loader adds the CPUs up and prints the totals every interval. */
struct bt_op_stats {
	__u64 ios;     /* counted at completion, as diskstats counts */
	__u64 bytes;   /* a discard's range, a write's data */
	__u64 total_ns;
	__u64 sched[BT_SLOTS];  /* insert -> issue, 0 for a request issued without an insert */
	__u64 device[BT_SLOTS]; /* issue -> complete */
	__u64 total[BT_SLOTS];  /* accounting start -> complete: what iostat's await averages */
};

struct bt_proc_key {
	__u32 dev;
	__u32 pid;
};

/* Per process: read and deleted by the loader every interval. */
struct bt_proc_stats {
	__u64 ios;
	__u64 bytes;
	__u64 lat[BT_SLOTS];
	char comm[BT_COMM_LEN];
};

/* Per CPU counters: completions the tracer could not time, requests the map refused, and every request issued
 * on the machine (the programs run for all of them: their cost is spread over all). */
enum bt_count { BT_UNTIMED, BT_FULL, BT_ISSUED, BT_LOST, BT_COUNTS };

/* Capture mode: one record per request of the captured device, written at issue into a ring buffer. t is when
 * the request began (block_io_start, what the submitter did), else when it was first seen; depth is the
 * device's requests begun and not yet completed, this one included.
 * A command's capture: one record per bio its cgroup submits, written at submission; t is then, dev the whole
 * disk's dev_t, depth the cgroup's bios submitted and not yet completed, this one included. */
struct bt_event {
	__u64 t;
	__u64 sector;
	__u32 bytes;
	__u32 dev;
	__u16 depth;
	__u8 op;
	__u8 pad;
};

#endif
