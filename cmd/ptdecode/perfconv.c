/*
 * perfconv: see perfconv.h.
 *
 * perf script --itrace=be gives every taken branch (from, to, time) and
 * every decoder error.  Between two taken branches the program ran
 * straight on, except for conditional branches that were not taken; the
 * converter walks those instructions in the snapshot's images (lib/
 * x86class) and cuts a block at every branch, so its blocks have the
 * same shape as the native decoder's: the two streams can be compared
 * block for block.
 */
#include "perfconv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "tool/report.h"
#include "snapload.h"
#include "base/spawn.h"
#include "fmt/snapshot.h"
#include "dec/x86class.h"

#define WALK_MAX 1000000	/* instructions between two taken branches */

/* One line of perf's output. */
struct pline {
	uint32_t tid;
	int is_error;
	int tr_end;		/* tracing stops after this branch */
	uint64_t from, to;	/* error: to is the ip */
	uint64_t time;		/* perf ns */
	int32_t code;		/* error code */
};

struct conv {
	struct snap s;
	struct output out;
	struct pline *line;
	size_t nr, cap;
	const struct snap_thread *t;
	struct blks_end end;
	const struct ptdec_section *last;
	uint64_t next_ip;	/* after the last block's last instruction */
};

static int
conv_push(struct conv *c, const struct pline *l, struct error *e)
{
	if (c->nr == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 4096;
		struct pline *p = realloc(c->line, cap * sizeof(*p));

		if (p == NULL)
			return error_set(e, ERR_NOMEM, "perf script output");
		c->line = p;
		c->cap = cap;
	}
	c->line[c->nr++] = *l;
	return 0;
}

/* "1000.000000240:" to ns; 0 if it is not a time. */
static uint64_t
parse_time(const char *tok)
{
	char *end;
	uint64_t sec = strtoull(tok, &end, 10), ns = 0;
	int digits = 0;

	if (*end != '.')
		return 0;
	for (end++; *end >= '0' && *end <= '9' && digits < 9; end++, digits++)
		ns = ns * 10 + (uint64_t)(*end - '0');
	while (digits++ < 9)
		ns *= 10;
	return sec * 1000000000ULL + ns;
}

/*
 * " instruction trace error type 1 time 1000.0 cpu -1 pid 7 tid 7 ip
 * 0x401625 code 5: Failed to get instruction"
 */
static int
parse_error_line(const char *s, struct pline *l)
{
	const char *p;

	memset(l, 0, sizeof(*l));
	l->is_error = 1;
	if ((p = strstr(s, " tid ")) == NULL)
		return -1;
	l->tid = (uint32_t)strtoul(p + 5, NULL, 10);
	if ((p = strstr(s, " time ")) != NULL)
		l->time = parse_time(p + 6);
	if ((p = strstr(s, " ip 0x")) != NULL)
		l->to = strtoull(p + 6, NULL, 16);
	if ((p = strstr(s, " code ")) != NULL)
		l->code = (int32_t)strtol(p + 6, NULL, 10);
	return 0;
}

/* "TID TIME: FLAGS... FROM => TO" (perf script -F tid,time,flags,ip,addr). */
static int
parse_branch_line(char *s, struct pline *l)
{
	char *tok[64];
	int n = 0;

	memset(l, 0, sizeof(*l));
	for (char *t = strtok(s, " \t\n"); t != NULL && n < 64;
	    t = strtok(NULL, " \t\n"))
		tok[n++] = t;
	if (n < 5 || strcmp(tok[n - 2], "=>") != 0)
		return -1;
	l->tid = (uint32_t)strtoul(tok[0], NULL, 10);
	l->time = parse_time(tok[1]);
	l->from = strtoull(tok[n - 3], NULL, 16);
	l->to = strtoull(tok[n - 1], NULL, 16);
	for (int i = 2; i + 1 < n - 3; i++) {
		if (strcmp(tok[i], "tr") == 0 && strcmp(tok[i + 1], "end") == 0)
			l->tr_end = 1;
	}
	return 0;
}

static int
read_perf(struct conv *c, FILE *f, struct error *e)
{
	char *buf = NULL;
	size_t cap = 0;
	struct pline l;
	int rc = 0;

	while (rc == 0 && getline(&buf, &cap, f) >= 0) {
		int ok = strstr(buf, "instruction trace error") != NULL ?
		    parse_error_line(buf, &l) : parse_branch_line(buf, &l);

		if (ok == 0)
			rc = conv_push(c, &l, e);
	}
	free(buf);
	return rc;
}

static int
run_perf_script(struct conv *c, uint32_t tid, struct error *e)
{
	char bid[4200], data[4200], tidarg[32];
	char *argv[] = { "perf", "--buildid-dir", bid, "script", "-i", data,
	    "--itrace=be", "-F", "tid,time,flags,ip,addr", "--ns", tidarg,
	    NULL };
	struct spawn sp;
	FILE *f;
	int rc, fd;

	snprintf(bid, sizeof(bid), "%s/images", c->s.dir);
	snprintf(data, sizeof(data), "%s/perf.data", c->s.dir);
	snprintf(tidarg, sizeof(tidarg), "--tid=%u", tid);
	if (tid == UINT32_MAX)
		argv[10] = NULL;
	spawn_init(&sp, argv);
	sp.in = SPAWN_NULL;
	sp.out = SPAWN_PIPE;
	if ((rc = spawn_start(&sp, e)) < 0)
		return rc;
	if ((fd = dup(sp.out)) < 0 || (f = fdopen(fd, "r")) == NULL) {
		if (fd >= 0)
			close(fd);
		PTKIT_DROP(spawn_finish(&sp, e));	/* reaped; e is set below */
		return error_set(e, ERR_IO, "perf script: cannot read its output");
	}
	rc = read_perf(c, f, e);
	fclose(f);
	if (spawn_finish(&sp, rc < 0 ? NULL : e) < 0 && rc == 0)
		rc = -ERR_CHILD;
	return rc;
}

/*
 * perf script opens the snapshot's files itself, by path, following
 * links: every file the manifest archives (images, their debuginfo, JIT
 * maps) is checked beneath the snapshot first, as the native decoders
 * open them, and perf is not run when one is a link, leads out or is not
 * a regular file.  A link swapped in between this check and perf's open
 * is not seen (ptdecode(1) says so).
 */
static int
check_for_perf(const struct snap *s, struct error *e)
{
	const struct manifest *m = &s->man;
	const char *rel[2];
	struct error why;
	int fd;

	for (size_t i = 0; i < m->nr_images + m->nr_jit_maps; i++) {
		if (i < m->nr_images) {
			rel[0] = m->images[i].archived;
			rel[1] = m->images[i].debug;
		} else {
			rel[0] = m->jit_maps[i - m->nr_images].archived;
			rel[1] = NULL;
		}
		for (int k = 0; k < 2; k++) {
			if (rel[k] == NULL)
				continue;
			if ((fd = snapshot_member_open(s->dir, rel[k],
			    &why)) >= 0)
				close(fd);
			else if (fd == -ERR_NOMEM)
				return error_set(e, ERR_NOMEM, "%s", why.msg);
			else if (fd != -ERR_NOTFOUND)
				return error_set(e, -fd, "%s (perf script would "
				    "follow it: not run)", why.msg);
		}
	}
	return 0;
}

/* ----------------------------------------------------------------- */
/* Records */

static uint64_t
rec_time(const struct conv *c, uint64_t perf_ns)
{
	return perf_ns > c->s.cfg.time.base_ns ? perf_ns - c->s.cfg.time.base_ns :
	    0;
}

static int
put(struct conv *c, const struct blks_record *r, struct error *e)
{
	uint64_t *k = c->end.c;

	if (r->type == BLKS_BLOCK) {
		k[BLKS_C_BLOCKS]++;
		k[BLKS_C_INSNS] += r->u.block.ninsn;
	} else if (r->type == BLKS_EVENT) {
		k[BLKS_C_EVENTS]++;
	} else if (r->type == BLKS_GAP) {
		k[BLKS_C_GAPS]++;
		k[r->u.gap.cause == BLKS_GAP_UNKNOWN_IMAGE ?
		    BLKS_C_UNKNOWN_IMAGE : BLKS_C_DECODE_ERRORS]++;
	}
	return output_record(&c->out, r, e);
}

static int
put_event(struct conv *c, unsigned kind, uint64_t ip, uint64_t time,
    uint64_t arg, struct error *e)
{
	struct blks_record r;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_EVENT;
	r.u.event.kind = (uint8_t)kind;
	r.u.event.arg = arg;
	r.u.event.ip = ip;
	r.u.event.flags = ip == 0 ? BLKS_EVF_IP_SUPPRESSED : 0;
	r.u.event.time = rec_time(c, time);
	return put(c, &r, e);
}

static int
put_gap(struct conv *c, unsigned cause, uint64_t ip, uint64_t time,
    int32_t code, const char *text, struct error *e)
{
	struct blks_record r;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_GAP;
	r.u.gap.cause = (uint8_t)cause;
	r.u.gap.ip = ip;
	r.u.gap.time = rec_time(c, time);
	r.u.gap.errcode = code;
	r.u.gap.text = text;
	return put(c, &r, e);
}

static int
put_block(struct conv *c, uint64_t ip, uint64_t end_ip, uint32_t n,
    int iclass, uint64_t time, struct error *e)
{
	struct blks_record r;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	r.u.block.ip = ip;
	r.u.block.end_ip = end_ip;
	r.u.block.ninsn = n;
	r.u.block.iclass = (uint8_t)iclass;
	r.u.block.mode = ptem_64bit;
	r.u.block.time = rec_time(c, time);
	return put(c, &r, e);
}

/* Reads up to 15 bytes of the thread's process at ip; 0 if unmapped. */
static int
read_insn(struct conv *c, uint64_t ip, uint8_t *buf)
{
	const struct ptdec_images *im = &c->s.images;
	const struct ptdec_section *s = c->last;

	if (s == NULL || s->pid != c->t->pid || ip < s->vaddr ||
	    ip - s->vaddr >= s->size) {
		s = NULL;
		for (size_t i = 0; i < im->nr; i++) {
			if (im->sec[i].pid == c->t->pid &&
			    ip >= im->sec[i].vaddr &&
			    ip - im->sec[i].vaddr < im->sec[i].size)
				s = &im->sec[i];
		}
		if ((c->last = s) == NULL)
			return 0;
	}
	return pt_iscache_read(im->iscache, buf, 15, s->isid, ip);
}

/*
 * The blocks from ip to the taken branch at from.  Returns 0, 1 when the
 * walk failed (a GAP says why), or a write error.
 */
static int
walk(struct conv *c, uint64_t ip, uint64_t from, uint64_t time,
    struct error *e)
{
	uint64_t start = ip;
	uint32_t n = 0;
	uint8_t buf[15];
	unsigned len;
	int cls, rd, rc;

	for (int steps = 0; steps < WALK_MAX; steps++) {
		if ((rd = read_insn(c, ip, buf)) <= 0)
			return (rc = put_gap(c, BLKS_GAP_UNKNOWN_IMAGE, ip, time,
			    -pte_nomap, "no image holds this address", e)) < 0 ?
			    rc : 1;
		cls = x86_insn_class_len(buf, (size_t)rd, 1, &len);
		if (cls == ptic_error)
			return (rc = put_gap(c, BLKS_GAP_DECODE_ERROR, ip, time,
			    -pte_bad_insn, "cannot decode the instruction",
			    e)) < 0 ? rc : 1;
		n++;
		c->next_ip = ip + len;
		if (ip == from)
			return put_block(c, start, ip, n, cls, time, e);
		if (cls != ptic_other) {
			if ((rc = put_block(c, start, ip, n, cls, time, e)) < 0)
				return rc;
			if (cls != ptic_cond_jump)
				return (rc = put_gap(c, BLKS_GAP_DECODE_ERROR,
				    ip, time, 0, "perf reports no branch here",
				    e)) < 0 ? rc : 1;
			start = ip + len;
			n = 0;
		}
		ip += len;
	}
	return (rc = put_gap(c, BLKS_GAP_DECODE_ERROR, ip, time, 0,
	    "no branch within a million instructions", e)) < 0 ? rc : 1;
}

/* Converts the lines of thread c->t. */
static int
convert_thread(struct conv *c, struct error *e)
{
	uint64_t cur = 0, resume = 0;
	int rc;

	for (size_t i = 0; i < c->nr; i++) {
		const struct pline *l = &c->line[i];

		if (l->tid != c->t->tid)
			continue;
		if (l->is_error) {
			rc = put_gap(c, l->code == 5 ? BLKS_GAP_UNKNOWN_IMAGE :
			    BLKS_GAP_DECODE_ERROR, l->to, l->time, -l->code,
			    "perf: instruction trace error", e);
			cur = 0;
		} else if (l->from == 0) {
			/* as libipt: resumed where it stopped (a syscall) */
			rc = put_event(c, BLKS_EV_ENABLED, l->to, l->time,
			    l->to == resume, e);
			cur = l->to;
		} else {
			rc = cur != 0 ? walk(c, cur, l->from, l->time, e) : 0;
			if (rc >= 0 && l->tr_end)
				rc = put_event(c, BLKS_EV_DISABLED, l->to,
				    l->time, BLKS_DIS_SYNC, e);
			resume = l->tr_end && l->to == 0 ? c->next_ip : 0;
			cur = l->tr_end ? 0 : l->to;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
convert(struct conv *c, uint32_t tid, struct error *e)
{
	struct blks_record r;
	int rc;

	for (size_t i = 0; i < c->s.nr_threads; i++) {
		c->t = &c->s.threads[i];
		if (tid != UINT32_MAX && c->t->tid != tid)
			continue;
		memset(&r, 0, sizeof(r));
		r.type = BLKS_THREAD;
		r.u.thread = (struct blks_thread){ .tid = c->t->tid,
		    .pid = c->t->pid, .name = c->t->name,
		    .flags = c->t->wrapped ? BLKS_THREAD_WRAPPED : 0,
		    .trace_bytes = c->t->queue->total_size };
		memset(&c->end, 0, sizeof(c->end));
		c->end.tid = c->t->tid;
		c->end.c[BLKS_C_TRACE_BYTES] = c->t->queue->total_size;
		if ((rc = output_record(&c->out, &r, e)) < 0 ||
		    (rc = convert_thread(c, e)) < 0)
			return rc;
		r.type = BLKS_END;
		r.u.end = c->end;
		for (int k = 0; k < BLKS_C_NR; k++)
			c->out.total[k] += c->end.c[k];
		c->out.threads++;
		if ((rc = output_record(&c->out, &r, e)) < 0)
			return rc;
	}
	return 0;
}

int
run_perf(const char *snapshot, int format, uint32_t tid)
{
	struct conv *c = calloc(1, sizeof(*c));
	char lost[48] = "";
	struct error e;
	int rc, opened = 0;

	if (c == NULL) {
		report("ptdecode", snapshot, NULL, "out of memory");
		return -1;
	}
	error_clear(&e);
	if ((rc = snap_load(&c->s, snapshot, &e)) == 0) {
		c->s.hdr.decoder = BLKS_DECODER_PERF;
		if ((rc = check_for_perf(&c->s, &e)) == 0)
			rc = run_perf_script(c, tid, &e);
	}
	if (rc == 0) {
		opened = 1;
		rc = output_open(&c->out, format, &c->s, tid,
		    tid != UINT32_MAX, &e);
	}
	if (rc == 0)
		rc = convert(c, tid, &e);
	if (opened)
		rc = output_close(&c->out, rc, &e);
	if (rc < 0)
		report_error("ptdecode", opened && output_write_failed(&c->out) ?
		    "stdout" : snapshot, &e, NULL);
	if (rc == 0 && manifest_untraced(&c->s.man) > 0)
		snprintf(lost, sizeof(lost), " (untraced %llu)",
		    (unsigned long long)manifest_untraced(&c->s.man));
	if (rc == 0)
		report("ptdecode", snapshot, NULL, "perf: %llu thread%s%s, "
		    "%llu blocks, %llu instructions, %llu gaps",
		    (unsigned long long)c->out.threads,
		    c->out.threads == 1 ? "" : "s", lost,
		    (unsigned long long)c->out.total[BLKS_C_BLOCKS],
		    (unsigned long long)c->out.total[BLKS_C_INSNS],
		    (unsigned long long)c->out.total[BLKS_C_GAPS]);
	snap_free(&c->s);
	free(c->line);
	free(c);
	return rc < 0 ? -1 : 0;
}
