/*
 * helper_fxtread FILE [-e|-n|-p]: the test side's reader of the Fuchsia
 * trace format ptquery writes, built to do what Perfetto's importer does
 * with it (no Perfetto consumer installs here), so that a test can ask
 * how Perfetto nests ptkit's spans.  It follows, in perfetto's
 * src/trace_processor:
 *  - importers/fuchsia/fuchsia_trace_tokenizer.cc, FuchsiaTraceTokenizer::
 *    Parse (records framed by the size in their header, size 0 fatal) and
 *    ParseRecord (the initialization record's ticks; string and thread
 *    records fill the provider's tables, which every event resolves
 *    against as it is read, so a later reuse of an index does not change
 *    it; kernel objects name a process, or a thread and its "process" koid
 *    argument, at once; an event with an undefined string or a timestamp
 *    that TicksToNs cannot convert is dropped);
 *  - importers/fuchsia/fuchsia_trace_utils.cc, TicksToNs and
 *    IsInlineString/IsInlineThread (ref 0 and refs with bit 15 inline);
 *  - sorter/trace_sorter.h, TimestampedEvent::operator< (events parsed in
 *    the order of (time, order read): equal times keep the file's order);
 *  - importers/fuchsia/fuchsia_trace_parser.cc, FuchsiaTraceParser::Parse
 *    (instant: a slice of duration 0; begin; end, matched by neither name
 *    nor category; complete: duration end - start, dropped when
 *    negative), each on the track of its thread (pid, tid);
 *  - importers/common/slice_tracker.cc, SliceTracker::StartSlice (at most
 *    kMaxDepth = 512 open slices; a deeper one dropped),
 *    MaybeCloseStack (finished slices popped when they end before the new
 *    event, or at it unless both last no time; a complete slice that starts
 *    inside a finished one and ends after it dropped; finished slices
 *    under open ones truncated), CompleteSliceBegin and
 *    MatchingIncompleteSliceIndex (an end closes the innermost open slice)
 *    and CompleteSliceFinalize (popped when on top).
 * On top of what Perfetto accepts, it faults (exit 1, "fxtread: word W:
 * what") on what ptquery must never write: a record or argument past its
 * end, a reference to an undefined string or thread, ticks other than
 * nanoseconds, record types and event types ptquery does not use.
 * Its output, first with -e one line per slice in the order Perfetto makes
 * them, "tid start end category name" (end "-" for a slice left open);
 * with -n one line per slice, "tid<TAB>name<TAB>caller name" ("-" for
 * none), as t7003 prints Chrome's; with -p the names, "process PID NAME"
 * and "thread TID PID NAME"; then always the line "records=N strings=S
 * threads=T kobjs=K events=E slices=L dropped=D" (D: events and slices
 * Perfetto would drop or cut short, and ends that close nothing).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512			/* SliceTracker::kMaxDepth */
#define PENDING (-1)			/* kPendingDuration */

enum { EV_INSTANT = 0, EV_BEGIN = 2, EV_END = 3, EV_COMPLETE = 4 };

/* An event as the tokenizer hands it to the sorter: resolved. */
struct event {
	int64_t ts, end;		/* end: complete events only */
	uint64_t pid, tid;
	unsigned type;
	size_t seq;			/* order read */
	char *cat, *name;
};

struct slice {
	int64_t ts, dur;
	uint64_t tid;
	long parent;			/* index into slices, -1 none */
	char *cat, *name;
};

/* A thread's track and its stack of slice indices. */
struct track {
	uint64_t pid, tid;
	size_t *stack, n, cap;
};

struct named {
	uint64_t id, pid;
	char *name;
};

struct reader {
	const uint64_t *w;
	size_t n;
	uint64_t ticks;			/* per second */
	char *str[0x8000];
	uint64_t thr_pid[256], thr_tid[256];
	int thr_set[256];
	struct event *ev;
	size_t nev, capev;
	struct slice *sl;
	size_t nsl, capsl;
	struct track *tr;
	size_t ntr, captr;
	struct named *procs, *thrs;
	size_t nprocs, capprocs, nthrs, capthrs;
	uint64_t records, strings, threads, kobjs, dropped;
};

static int
fault(size_t at, const char *what)
{
	fprintf(stderr, "fxtread: word %zu: %s\n", at, what);
	return -1;
}

static void *
grow(void *p, size_t *cap, size_t need, size_t size)
{
	void *q;

	if (need <= *cap)
		return p;
	*cap = need * 2 + 16;
	if ((q = realloc(p, *cap * size)) == NULL) {
		fprintf(stderr, "fxtread: out of memory\n");
		exit(2);
	}
	return q;
}

static char *
dup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL) {
		fprintf(stderr, "fxtread: out of memory\n");
		exit(2);
	}
	return d;
}

/* fuchsia_trace_utils.cc TicksToNs: -1 when it does not fit. */
static int64_t
ticks_to_ns(uint64_t ticks, uint64_t tps)
{
	uint64_t hi = ticks >> 32, lo = ticks & 0xffffffffull;
	uint64_t ns = 1000000000ull, k, rhi;
	int64_t res;

	if (tps == 0)
		return -1;
	k = (ns << 32) / tps;
	rhi = hi * k;
	if (hi != 0 && rhi / hi != k)
		return -1;
	res = (int64_t)(rhi + lo * ns / tps);
	return res < 0 ? -1 : res;
}

/* A string reference at word *at (inline ones consume words). */
static int
string_ref(struct reader *r, unsigned ref, size_t *at, size_t end,
    const char **out)
{
	static char inl[2][0x8000];
	static int which;
	size_t len, words;

	if (ref == 0) {
		*out = "";
		return 0;
	}
	if (ref & 0x8000) {
		len = ref & 0x7fff;
		words = (len + 7) / 8;
		if (*at + words > end)
			return fault(*at, "inline string past its record");
		which ^= 1;
		memcpy(inl[which], r->w + *at, len);
		inl[which][len] = '\0';
		*at += words;
		*out = inl[which];
		return 0;
	}
	if (r->str[ref] == NULL)
		return fault(*at, "reference to an undefined string");
	*out = r->str[ref];
	return 0;
}

/*
 * Arguments (FuchsiaTraceParser::ParseArgs): each sized by its header.
 * *koid_process: the value of a koid argument named "process", if any.
 */
static int
args(struct reader *r, unsigned nargs, size_t *at, size_t end,
    int *has_process, uint64_t *process)
{
	const char *name;

	for (unsigned i = 0; i < nargs; i++) {
		uint64_t h;
		size_t size, start = *at;

		if (*at >= end)
			return fault(*at, "argument past its record");
		h = r->w[(*at)++];
		size = (h >> 4) & 0xfff;
		if (size == 0 || start + size > end)
			return fault(start, "argument size");
		if (string_ref(r, (h >> 16) & 0xffff, at, end, &name) < 0)
			return -1;
		if (strcmp(name, "process") == 0 && has_process != NULL) {
			if ((h & 0xf) != 8 || size != 2)
				return fault(start, "process argument not a koid");
			*has_process = 1;
			*process = r->w[start + 1];
		}
		*at = start + size;
	}
	return 0;
}

static int
string_record(struct reader *r, uint64_t h, size_t at, size_t size)
{
	unsigned idx = (h >> 16) & 0x7fff;
	size_t len = (h >> 32) & 0x7fff;

	if (idx == 0 || size != 1 + (len + 7) / 8)
		return fault(at, "bad string record");
	free(r->str[idx]);
	if ((r->str[idx] = malloc(len + 1)) == NULL)
		return fault(at, "out of memory");
	memcpy(r->str[idx], r->w + at + 1, len);
	r->str[idx][len] = '\0';
	r->strings++;
	return 0;
}

static void
name_object(struct named **list, size_t *n, size_t *cap, uint64_t id,
    uint64_t pid, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].id == id && (*list)[i].pid == pid) {
			free((*list)[i].name);
			(*list)[i].name = dup(name);
			return;
		}
	*list = grow(*list, cap, *n + 1, sizeof(**list));
	(*list)[*n].id = id;
	(*list)[*n].pid = pid;
	(*list)[*n].name = dup(name);
	(*n)++;
}

static int
kernel_object(struct reader *r, uint64_t h, size_t at, size_t size)
{
	unsigned type = (h >> 16) & 0xff;
	size_t p = at + 2, end = at + size;
	const char *name;
	char namebuf[0x8000];
	uint64_t pid = 0;
	int has_pid = 0;

	if (size < 2)
		return fault(at, "kernel object size");
	if (string_ref(r, (h >> 24) & 0xffff, &p, end, &name) < 0)
		return -1;
	snprintf(namebuf, sizeof(namebuf), "%s", name);
	if (args(r, (h >> 40) & 0xf, &p, end, &has_pid, &pid) < 0)
		return -1;
	if (p != end)
		return fault(at, "kernel object size");
	r->kobjs++;
	if (type == 1)			/* process: SetProcessMetadata */
		name_object(&r->procs, &r->nprocs, &r->capprocs,
		    r->w[at + 1], 0, namebuf);
	else if (type == 2)		/* thread: UpdateThread, set_name */
		name_object(&r->thrs, &r->nthrs, &r->capthrs,
		    r->w[at + 1], pid, namebuf);
	else
		return fault(at, "kernel object type we never write");
	return 0;
}

static int
event_record(struct reader *r, uint64_t h, size_t at, size_t size)
{
	unsigned type = (h >> 16) & 0xf, nargs = (h >> 20) & 0xf;
	unsigned thr = (h >> 24) & 0xff;
	size_t p = at + 1, end = at + size;
	const char *cat, *name;
	char catbuf[0x8000];
	uint64_t pid, tid, te = 0;
	int64_t ts;

	if (type != EV_INSTANT && type != EV_BEGIN && type != EV_END &&
	    type != EV_COMPLETE)
		return fault(at, "event type we never write");
	if (p >= end)
		return fault(at, "event without a timestamp");
	ts = ticks_to_ns(r->w[p++], r->ticks);
	if (thr == 0) {
		if (p + 2 > end)
			return fault(at, "inline thread past the record");
		pid = r->w[p];
		tid = r->w[p + 1];
		p += 2;
	} else if (!r->thr_set[thr]) {
		return fault(at, "reference to an undefined thread");
	} else {
		pid = r->thr_pid[thr];
		tid = r->thr_tid[thr];
	}
	if (string_ref(r, (h >> 32) & 0xffff, &p, end, &cat) < 0)
		return -1;
	snprintf(catbuf, sizeof(catbuf), "%s", cat);
	if (string_ref(r, (h >> 48) & 0xffff, &p, end, &name) < 0 ||
	    args(r, nargs, &p, end, NULL, NULL) < 0)
		return -1;
	if (type == EV_COMPLETE) {
		if (p >= end)
			return fault(at, "complete event without its end");
		te = r->w[p++];
	}
	if (p != end)
		return fault(at, "event size does not match its contents");
	if (ts < 0) {			/* fuchsia_timestamp_overflow */
		r->dropped++;
		return 0;
	}
	r->ev = grow(r->ev, &r->capev, r->nev + 1, sizeof(*r->ev));
	r->ev[r->nev] = (struct event){ ts, ticks_to_ns(te, r->ticks), pid,
	    tid, type, r->nev, dup(catbuf), dup(name) };
	r->nev++;
	return 0;
}

static int
record(struct reader *r, size_t at, size_t *size)
{
	uint64_t h = r->w[at];

	*size = (h >> 4) & 0xfff;
	if (*size == 0 || at + *size > r->n)
		return fault(at, "record size");
	r->records++;
	switch (h & 0xf) {
	case 0:
		return 0;
	case 1:
		if (*size != 2 || r->w[at + 1] != 1000000000ull)
			return fault(at, "ticks are not nanoseconds");
		r->ticks = r->w[at + 1];
		return 0;
	case 2:
		return string_record(r, h, at, *size);
	case 3:
		if (*size != 3 || ((h >> 16) & 0xff) == 0)
			return fault(at, "bad thread record");
		r->thr_set[(h >> 16) & 0xff] = 1;
		r->thr_pid[(h >> 16) & 0xff] = r->w[at + 1];
		r->thr_tid[(h >> 16) & 0xff] = r->w[at + 2];
		r->threads++;
		return 0;
	case 4:
		return event_record(r, h, at, *size);
	case 7:
		return kernel_object(r, h, at, *size);
	default:
		return fault(at, "record type we never write");
	}
}

/* TimestampedEvent::operator<: time, then the order read. */
static int
cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct track *
track_of(struct reader *r, uint64_t pid, uint64_t tid)
{
	for (size_t i = 0; i < r->ntr; i++)
		if (r->tr[i].pid == pid && r->tr[i].tid == tid)
			return &r->tr[i];
	r->tr = grow(r->tr, &r->captr, r->ntr + 1, sizeof(*r->tr));
	r->tr[r->ntr] = (struct track){ pid, tid, NULL, 0, 0 };
	return &r->tr[r->ntr++];
}

/*
 * SliceTracker::MaybeCloseStack for an event at ts lasting dur (PENDING
 * for a begin or an end): 0 when the event's slice is to be dropped.
 */
static int
maybe_close_stack(struct reader *r, struct track *t, int64_t ts, int64_t dur)
{
	int incomplete_descendent = 0;

	for (long i = (long)t->n - 1; i >= 0; i--) {
		struct slice *s = &r->sl[t->stack[i]];
		int64_t end_ts = s->ts + s->dur;

		if (s->dur == PENDING) {
			incomplete_descendent = 1;
			continue;
		}
		if (incomplete_descendent) {
			if (ts <= end_ts)
				continue;
			/* misplaced_end_event: open ones under it cut */
			r->dropped++;
			for (long j = (long)t->n - 1; j > i; j--) {
				struct slice *c = &r->sl[t->stack[j]];

				c->dur = end_ts - c->ts;
				t->n--;
			}
			t->n--;
			incomplete_descendent = 0;
			continue;
		}
		if (end_ts < ts || (end_ts == ts && !(s->dur == 0 && dur == 0))) {
			t->n--;
			continue;
		}
		if (dur == PENDING)
			continue;
		if (ts < end_ts && ts + dur > end_ts)
			return 0;	/* slice_drop_overlapping_complete_event */
	}
	return 1;
}

/* SliceTracker::StartSlice. */
static void
start_slice(struct reader *r, const struct event *e, int64_t dur)
{
	struct track *t = track_of(r, e->pid, e->tid);

	if (!maybe_close_stack(r, t, e->ts, dur) || t->n >= MAX_DEPTH) {
		r->dropped++;
		return;
	}
	r->sl = grow(r->sl, &r->capsl, r->nsl + 1, sizeof(*r->sl));
	r->sl[r->nsl] = (struct slice){ e->ts, dur, e->tid,
	    t->n ? (long)t->stack[t->n - 1] : -1, e->cat, e->name };
	t->stack = grow(t->stack, &t->cap, t->n + 1, sizeof(*t->stack));
	t->stack[t->n++] = r->nsl++;
}

/* SliceTracker::End: CompleteSliceBegin, then CompleteSliceFinalize. */
static void
end_slice(struct reader *r, const struct event *e)
{
	struct track *t = track_of(r, e->pid, e->tid);
	long i;

	maybe_close_stack(r, t, e->ts, PENDING);
	for (i = (long)t->n - 1; i >= 0; i--)
		if (r->sl[t->stack[i]].dur == PENDING)
			break;
	if (i < 0) {			/* an end that closes nothing */
		r->dropped++;
		return;
	}
	r->sl[t->stack[i]].dur = e->ts - r->sl[t->stack[i]].ts;
	if ((size_t)i == t->n - 1)
		t->n--;
}

/* FuchsiaTraceParser::Parse, for the events ptquery writes. */
static void
parse_events(struct reader *r)
{
	qsort(r->ev, r->nev, sizeof(*r->ev), cmp_event);
	for (size_t i = 0; i < r->nev; i++) {
		const struct event *e = &r->ev[i];

		switch (e->type) {
		case EV_INSTANT:
			start_slice(r, e, 0);
			break;
		case EV_BEGIN:
			start_slice(r, e, PENDING);
			break;
		case EV_END:
			end_slice(r, e);
			break;
		case EV_COMPLETE:
			if (e->end < 0 || e->end - e->ts < 0)
				r->dropped++;
			else
				start_slice(r, e, e->end - e->ts);
			break;
		}
	}
}

int
main(int argc, char *argv[])
{
	static struct reader r = { .ticks = 1000000000ull };
	const char *mode = argc > 2 ? argv[2] : "";
	FILE *f;
	long len;
	uint64_t *buf;
	size_t at, size;
	int rc = 0;

	if (argc < 2 || (f = fopen(argv[1], "rb")) == NULL) {
		fprintf(stderr, "usage: helper_fxtread FILE [-e|-n|-p]\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	if (len < 8 || len % 8 != 0 || (buf = malloc((size_t)len)) == NULL ||
	    fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "fxtread: %s: not whole 64-bit words\n",
		    argv[1]);
		fclose(f);
		return 1;
	}
	fclose(f);
	r.w = buf;
	r.n = (size_t)len / 8;
	if (buf[0] != 0x0016547846040010ull)
		rc = fault(0, "no magic number record");
	for (at = 0; rc == 0 && at < r.n; at += size)
		rc = record(&r, at, &size);
	if (rc == 0)
		parse_events(&r);
	for (size_t i = 0; rc == 0 && i < r.nsl; i++) {
		const struct slice *s = &r.sl[i];

		if (strcmp(mode, "-e") == 0 && s->dur == PENDING)
			printf("%" PRIu64 " %" PRId64 " - %s %s\n", s->tid,
			    s->ts, s->cat, s->name);
		else if (strcmp(mode, "-e") == 0)
			printf("%" PRIu64 " %" PRId64 " %" PRId64 " %s %s\n",
			    s->tid, s->ts, s->ts + s->dur, s->cat, s->name);
		else if (strcmp(mode, "-n") == 0)
			printf("%" PRIu64 "\t%s\t%s\n", s->tid, s->name,
			    s->parent < 0 ? "-" : r.sl[s->parent].name);
	}
	for (size_t i = 0; rc == 0 && strcmp(mode, "-p") == 0 &&
	    i < r.nprocs; i++)
		printf("process %" PRIu64 " %s\n", r.procs[i].id,
		    r.procs[i].name);
	for (size_t i = 0; rc == 0 && strcmp(mode, "-p") == 0 &&
	    i < r.nthrs; i++)
		printf("thread %" PRIu64 " %" PRIu64 " %s\n", r.thrs[i].id,
		    r.thrs[i].pid, r.thrs[i].name);
	if (rc == 0)
		printf("records=%" PRIu64 " strings=%" PRIu64 " threads=%"
		    PRIu64 " kobjs=%" PRIu64 " events=%zu slices=%zu dropped=%"
		    PRIu64 "\n", r.records, r.strings, r.threads, r.kobjs,
		    r.nev, r.nsl, r.dropped);
	for (size_t i = 0; i < 0x8000; i++)
		free(r.str[i]);
	for (size_t i = 0; i < r.nev; i++) {
		free(r.ev[i].cat);
		free(r.ev[i].name);
	}
	for (size_t i = 0; i < r.ntr; i++)
		free(r.tr[i].stack);
	for (size_t i = 0; i < r.nprocs; i++)
		free(r.procs[i].name);
	for (size_t i = 0; i < r.nthrs; i++)
		free(r.thrs[i].name);
	free(r.ev);
	free(r.sl);
	free(r.tr);
	free(r.procs);
	free(r.thrs);
	free(buf);
	return rc == 0 ? 0 : 1;
}
