// SPDX-License-Identifier: GPL-2.0
/* iosched's block-layer tracer: time in the scheduler, in the device and in all, per device, operation and
 * process. CO-RE: built once against a vmlinux.h, loaded on any kernel with BTF (5.11 or later).
 *
 * Requests are keyed by their pointer. blk-mq allocates them from a fixed pool and reuses them, so an entry
 * whose completion was missed is overwritten when its request comes round again; the loader sweeps out what
 * devices that went away leave behind. Counters are per CPU and cumulative, histograms are arrays: no lock, no
 * atomic, no string key, nothing per event but a few map lookups. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "blktrace.h"

#define REQ_OP_MASK ((1 << 8) - 1)
#define MAX_REQUESTS 65536
#define MAX_DEVICES 1024
#define MAX_PROCS 10240

/* Set by the loader before loading: the devices to trace (none listed: all). A short array in read-only data,
 * compared in a few instructions, where a map lookup would cost a helper call per event. */
const volatile __u32 filter_devs[BT_MAX_FILTER] = {};
const volatile __u32 n_filter_devs = 0;
const volatile bool has_io_start = false;
/* Capture mode (the loader's --capture): the one device whose requests are written to `events`. */
const volatile __u32 capture_dev = 0;
/* A command's capture (--capture-cgroup): the cgroup v2 id whose bios are written to `events`. */
const volatile __u64 capture_cgroup = 0;

/* Records waiting in the ring buffer beyond which the loader is woken at once. */
#define CAP_WAKE_BYTES (4 << 20)

/* Requests begun on the captured device and not yet completed (or merged away); in a command's capture, the
 * command's bios submitted and not yet completed. */
static __u64 cap_inflight;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_REQUESTS);
	__type(key, __u64);
	__type(value, struct bt_req);
} reqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_DEVICES * BT_OPS);
	__type(key, struct bt_op_key);
	__type(value, struct bt_op_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, struct bt_proc_key);
	__type(value, struct bt_proc_stats);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BT_COUNTS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

/* Capture mode's records; the loader sizes it (a page when not capturing). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

/* Zeroed values to create entries from (too big for the BPF stack). */
static struct bt_op_stats zero_stats;
static struct bt_proc_stats zero_proc;

/* Older kernels kept the disk in the request itself, and in the bio (before 5.12). */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

/* tp_btf arguments are typed kernel pointers: fields are read by plain (fault-safe) loads, no helper call. */
static __always_inline __u32 dev_of(struct request *rq)
{
	struct gendisk *disk;

	if (bpf_core_field_exists(((struct request___old *)rq)->rq_disk))
		disk = ((struct request___old *)rq)->rq_disk;
	else
		disk = rq->q->disk;
	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
}

static __always_inline bool traced(__u32 dev)
{
	if (!dev)
		return false;
	if (!n_filter_devs)
		return true;
	for (__u32 i = 0; i < BT_MAX_FILTER && i < n_filter_devs; i++)
		if (filter_devs[i] == dev)
			return true;
	return false;
}

/* The operation as blk_fill_rwbs names it (R, W, D, F, else N). */
static __always_inline __u32 op_of(struct request *rq)
{
	switch (rq->cmd_flags & REQ_OP_MASK) {
	case 0: return BT_READ;
	case 1: return BT_WRITE;
	case 2: return BT_FLUSH;
	case 3: case 5: return BT_DISCARD; /* discard, secure erase */
	default: return BT_OTHER;
	}
}

/* Python's int.bit_length(), capped: the bucket of bpftrace's hist(). */
static __always_inline __u32 slot_of(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { v >>= 1; r += 1; }
	r += v;
	return r < BT_SLOTS ? r : BT_SLOTS - 1;
}

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counts, &which);

	if (n)
		*n += 1;
}

static __always_inline struct bt_op_stats *stats_of(__u32 dev, __u32 op)
{
	struct bt_op_key key = { .dev = dev, .op = op };
	struct bt_op_stats *s = bpf_map_lookup_elem(&stats, &key);

	if (s)
		return s;
	bpf_map_update_elem(&stats, &key, &zero_stats, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stats, &key);
}

/* A new entry for a request (start: 0 when its accounting start was not seen), with the submitter's pid and
 * command. */
static __always_inline void begin(struct request *rq, __u32 dev, __u64 start, __u64 insert, __u64 issue)
{
	__u64 key = (__u64)rq;
	struct bt_req r = { .start = start, .insert = insert, .issue = issue, .dev = dev };

	r.pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(r.comm, sizeof(r.comm));
	if (bpf_map_update_elem(&reqs, &key, &r, BPF_ANY))
		count(BT_FULL);
}

/* Submitter's context: the moment diskstats starts timing the request (6.5 and later). */
SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start, struct request *rq)
{
	__u32 dev = dev_of(rq);

	if (traced(dev))
		begin(rq, dev, bpf_ktime_get_ns(), 0, 0);
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(block_rq_insert, struct request *rq)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct bt_req *r = bpf_map_lookup_elem(&reqs, &key);

	if (r) {
		r->insert = now;
	} else if (!has_io_start) {
		__u32 dev = dev_of(rq);

		if (traced(dev))
			begin(rq, dev, now, now, 0);
	}
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct bt_req *r = bpf_map_lookup_elem(&reqs, &key);

	count(BT_ISSUED);
	if (r) {
		r->issue = now;
	} else {
		__u32 dev = dev_of(rq);

		/* Issued without being seen to start: a request the kernel makes itself (a flush), or one in
		 * flight when tracing began. Its device time is still known; its total only without io_start. */
		if (traced(dev))
			begin(rq, dev, has_io_start ? 0 : now, 0, now);
	}
	return 0;
}

/* Everything is counted here, once per request: one look-up of its figures, not one per event. Completions
 * run in interrupt context, where the kernel would skip a program only if the same one were already running on
 * that CPU (tp_btf programs are guarded each on its own). */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct bt_req *r = bpf_map_lookup_elem(&reqs, &key);
	struct bt_op_stats *s;
	struct bt_proc_stats *p;
	struct bt_proc_key pk;
	__u32 op, slot;
	__u64 total;

	if (!r) {
		if (traced(dev_of(rq)))
			count(BT_UNTIMED); /* issued before tracing began, or refused by a full map */
		return 0;
	}
	op = op_of(rq);
	s = stats_of(r->dev, op);
	if (!s)
		goto done;
	s->ios += 1;
	s->bytes += nr_bytes;
	if (r->issue && r->issue <= now) {
		/* Time in the scheduler: 0 for a request issued without an insert. */
		s->sched[r->insert && r->insert <= r->issue ? slot_of((r->issue - r->insert) / 1000) : 0] += 1;
		s->device[slot_of((now - r->issue) / 1000)] += 1;
	}
	if (!r->start || r->start > now)
		goto done;
	total = now - r->start;
	slot = slot_of(total / 1000);
	s->total[slot] += 1;
	s->total_ns += total;
	pk.dev = r->dev;
	pk.pid = r->pid;
	p = bpf_map_lookup_elem(&procs, &pk);
	if (!p) {
		bpf_map_update_elem(&procs, &pk, &zero_proc, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&procs, &pk);
		if (!p)
			goto done;
	}
	if (!p->comm[0])
		__builtin_memcpy(p->comm, r->comm, sizeof(p->comm));
	p->ios += 1;
	/* A discard's range is not data moved. */
	if (op != BT_DISCARD)
		p->bytes += nr_bytes;
	p->lat[slot] += 1;
done:
	bpf_map_delete_elem(&reqs, &key);
	return 0;
}

/* Capture mode: these programs alone are loaded. A request is tracked from when it begins to when it completes
 * (or is merged into another), so the depth counts only requests seen to begin; it is written once, at its first
 * issue, with the time it began. */
static __always_inline void cap_begin(struct request *rq, __u64 start)
{
	__u64 key = (__u64)rq;
	struct bt_req r = { .start = start };

	if (bpf_map_update_elem(&reqs, &key, &r, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&cap_inflight, 1);
	else
		count(BT_FULL);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(cap_io_start, struct request *rq)
{
	if (dev_of(rq) == capture_dev)
		cap_begin(rq, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(cap_rq_insert, struct request *rq)
{
	__u64 key = (__u64)rq;

	if (dev_of(rq) == capture_dev && !bpf_map_lookup_elem(&reqs, &key))
		cap_begin(rq, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(cap_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct bt_req *r;
	struct bt_event *e;
	__u64 depth;

	if (dev_of(rq) != capture_dev)
		return 0;
	r = bpf_map_lookup_elem(&reqs, &key);
	if (!r) {
		/* Issued without being seen to begin: a flush the kernel made, or one begun before the capture. */
		cap_begin(rq, now);
		r = bpf_map_lookup_elem(&reqs, &key);
		if (!r)
			return 0;
	}
	if (r->issue)
		return 0; /* issued again after a requeue: already written */
	r->issue = now;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(BT_LOST);
		return 0;
	}
	depth = cap_inflight;
	e->t = r->start ? r->start : now;
	e->sector = rq->__sector;
	e->bytes = rq->__data_len;
	e->dev = capture_dev;
	e->depth = depth > 65535 ? 65535 : depth;
	e->op = op_of(rq);
	e->pad = 0;
	/* No wakeup per record: the loader drains the buffer every few tens of milliseconds, which costs far less
	 * than a wakeup (and a write to iosched) per request; a buffer filling up wakes it at once. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > CAP_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP
											   : BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline void cap_end(struct request *rq)
{
	__u64 key = (__u64)rq;

	if (bpf_map_delete_elem(&reqs, &key) == 0)
		__sync_fetch_and_sub(&cap_inflight, 1);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(cap_rq_complete, struct request *rq)
{
	if (dev_of(rq) == capture_dev)
		cap_end(rq);
	return 0;
}

/* A request merged into another never completes on its own. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(cap_rq_merge, struct request *rq)
{
	if (dev_of(rq) == capture_dev)
		cap_end(rq);
	return 0;
}

/* A command's capture: these two programs alone are loaded. A bio is attributed where it is submitted, in the
 * submitter's context: the command's own reads, the readahead its reads start and its page faults are submitted by
 * its tasks; at issue or completion the current task is often another's or a kernel thread. Only bios to request
 * based (blk-mq) disks are written: a bio-based device (dm, md) passes its bios down to one, in the same context
 * when it remaps them synchronously, so a stack is counted once, on the disk that has a scheduler. */
static __always_inline struct gendisk *disk_of_bio(struct bio *bio)
{
	if (bpf_core_field_exists(((struct bio___old *)bio)->bi_disk))
		return ((struct bio___old *)bio)->bi_disk;
	return bio->bi_bdev ? bio->bi_bdev->bd_disk : NULL;
}

static __always_inline __u32 op_of_bio(struct bio *bio)
{
	switch (bio->bi_opf & REQ_OP_MASK) {
	case 0: return BT_READ;
	case 1: return BT_WRITE;
	case 2: return BT_FLUSH;
	case 3: case 5: return BT_DISCARD;
	default: return BT_OTHER;
	}
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(cmd_bio_queue, struct bio *bio)
{
	__u64 key = (__u64)bio, now;
	struct bt_req r = {};
	struct gendisk *disk;
	struct bt_event *e;
	__u32 dev, op, bytes;
	__u64 depth;

	if (bpf_get_current_cgroup_id() != capture_cgroup)
		return 0;
	disk = disk_of_bio(bio);
	if (!disk || !disk->queue || !disk->queue->mq_ops)
		return 0;
	dev = ((__u32)disk->major << 20) | (__u32)disk->first_minor;
	if (!traced(dev))
		return 0;
	op = op_of_bio(bio);
	bytes = bio->bi_iter.bi_size;
	if (!bytes && op != BT_FLUSH)
		return 0;
	now = bpf_ktime_get_ns();
	r.start = now;
	r.dev = dev;
	/* An address already there was a bio of the command's that ended unseen: this one takes its place. */
	if (bpf_map_lookup_elem(&reqs, &key))
		bpf_map_update_elem(&reqs, &key, &r, BPF_EXIST);
	else if (bpf_map_update_elem(&reqs, &key, &r, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&cap_inflight, 1);
	else
		count(BT_FULL);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(BT_LOST);
		return 0;
	}
	depth = cap_inflight;
	e->t = now;
	e->sector = bio->bi_iter.bi_sector;
	e->bytes = bytes;
	e->dev = dev;
	e->depth = depth > 65535 ? 65535 : depth;
	e->op = op;
	e->pad = 0;
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > CAP_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP
											   : BPF_RB_NO_WAKEUP);
	return 0;
}

/* The command's bios end with the request they went into (blk-mq clears the mark that would trace each one at
 * block_bio_complete): each of its bios, up to CMD_RQ_BIOS, leaves the depth. One left in the map (a longer merge)
 * counts until its address is submitted again, which means it ended. */
#define CMD_RQ_BIOS 256

SEC("tp_btf/block_rq_complete")
int BPF_PROG(cmd_rq_complete, struct request *rq)
{
	struct bio *bio;

	if (!cap_inflight)
		return 0; /* nothing of the command's in flight: the usual case for everyone else's requests */
	bio = rq->bio;
	for (int i = 0; i < CMD_RQ_BIOS && bio; i++) {
		__u64 key = (__u64)bio;

		if (bpf_map_delete_elem(&reqs, &key) == 0)
			__sync_fetch_and_sub(&cap_inflight, 1);
		bio = bio->bi_next;
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
