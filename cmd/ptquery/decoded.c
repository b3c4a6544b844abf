/*
 * ptquery --kind branches and --kind insns: decoded on demand.  The
 * analysis keeps calls, not instructions, so these run ptdecode on the
 * snapshot for one thread and window (lib/spawn: argv, no shell; its
 * stderr kept in a temporary file for the error message), read its JSON
 * Lines, and look the code up through lib/codemap (instruction lengths)
 * and lib/symcache (source lines) from the MAP records it printed; the
 * instructions' text (mnemonics, disassembly) is lib/dec/x86text's, from
 * the bytes of the images those records name.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "dec/x86class.h"
#include "dec/x86text.h"
#include "span/codemap.h"
#include "query.h"
#include "tool/report.h"
#include "base/progpath.h"
#include "base/spawn.h"
#include "sym/symcache.h"
#include "sym/symtab.h"
#include "span/spandir.h"
#include "fmt/store.h"

#define MAX_MAPS 4096

struct map_ent {
	struct blks_map m;
	char *name, *image;
	const struct symtab *st;	/* NULL: no lines */
	int fd;				/* the image, for its bytes; -1 closed,
					   -2 unreadable */
};

struct decoded {
	const struct analysis *a;
	const struct query_options *o;
	struct codemap *cm;
	struct cs_code code;
	struct symcache *sc;
	struct map_ent *map;
	size_t n_map;
	/* branches */
	uint64_t fn_lo, fn_hi;
	struct branch *br;
	size_t n_br, cap_br;
	uint64_t pending_ip, pending_fall;	/* a JCC waiting for the next */
	int pending;
	/* insns */
	struct insn_row *ins;
	size_t n_ins, want_ins;		/* kept: up to the end of the page */
	uint64_t total_ins;		/* rows in the whole window */
	char line_file[PATH_MAX];
	uint32_t thread_pid;		/* of the open thread */
	/* the window's cap (--max-insns) */
	uint64_t window_insns;		/* decoded so far, every thread */
	int cut;			/* the cap was reached */
	uint64_t cut_ns;		/* the time of the last block read */
};

struct branch {
	uint64_t ip, taken, not_taken;
	uint64_t target;		/* where it jumped, 0: never taken */
};

struct insn_row {
	uint64_t time, ip;
};

static uint64_t
hex_member(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return (uint64_t)json_integer_value(v);
	return json_is_string(v) ? strtoull(json_string_value(v), NULL, 0) : 0;
}

static int
add_map(struct decoded *d, const json_t *o)
{
	const json_t *name = json_object_get(o, "name");
	const json_t *image = json_object_get(o, "image");
	struct map_ent *m;
	struct error e;

	if (d->n_map == MAX_MAPS || !json_is_string(name))
		return 0;
	m = &d->map[d->n_map];
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->m.pid = (uint32_t)hex_member(o, "pid");
	m->m.exec = (uint32_t)hex_member(o, "exec");
	m->m.start = hex_member(o, "start");
	m->m.size = hex_member(o, "end") - m->m.start;
	m->m.pgoff = hex_member(o, "pgoff");
	if ((m->name = strdup(json_string_value(name))) == NULL ||
	    (m->image = strdup(json_is_string(image) ?
	    json_string_value(image) : json_string_value(name))) == NULL) {
		free(m->name);
		return -ERR_NOMEM;
	}
	m->m.name = m->name;
	m->m.image = m->image;
	d->n_map++;
	if (json_is_true(json_object_get(o, "missing")))
		return 0;
	if (symcache_get(d->sc, m->image, 0, &m->st, &e) < 0)
		m->st = NULL;
	return codemap_add(d->cm, &m->m, &e);
}

/* The source line of ip: "file" in d->line_file, the line returned. */
static uint32_t
line_of(struct decoded *d, uint32_t pid, uint64_t ip)
{
	struct sym_line l;
	uint64_t addr;

	d->line_file[0] = '\0';
	for (size_t i = d->n_map; i-- > 0;) {
		const struct map_ent *m = &d->map[i];
		struct sym_mapping sm = { m->m.start, m->m.start + m->m.size,
		    m->m.pgoff };

		if (m->m.pid != pid || ip < sm.start || ip >= sm.end)
			continue;
		if (m->st == NULL || symtab_addr_from_map(m->st, &sm, ip,
		    &addr) < 0 || symtab_line(m->st, addr, &l) != 1)
			return 0;
		snprintf(d->line_file, sizeof(d->line_file), "%s", l.file ?
		    l.file : "");
		return l.line;
	}
	return 0;
}

/*
 * The instruction at ip as text (x86text: AT&T) and its mnemonic, read
 * from the image mapped there.  Returns its length, 0 when unknown.
 */
static unsigned
insn_text(struct decoded *d, uint32_t pid, uint64_t ip, char *text,
    size_t size, char *mnem, size_t msize, int64_t *disp)
{
	uint8_t buf[X86_MAX_INSN_LEN];
	struct x86_insn in;
	ssize_t n;

	for (size_t i = d->n_map; i-- > 0;) {
		struct map_ent *m = &d->map[i];

		if (m->m.pid != pid || ip < m->m.start ||
		    ip - m->m.start >= m->m.size)
			continue;
		if (m->fd == -1 && (m->fd = open(m->image, O_RDONLY |
		    O_CLOEXEC)) < 0)
			m->fd = -2;
		if (m->fd < 0 || (n = pread(m->fd, buf, sizeof(buf),
		    (off_t)(ip - m->m.start + m->m.pgoff))) <= 0)
			break;
		if (disp != NULL && x86_insn_decode(buf, (size_t)n, 1, &in) ==
		    0 && in.direct)
			*disp = in.disp + (int64_t)in.length;
		return x86_text(buf, (size_t)n, ip, text, size, mnem, msize);
	}
	x86_text(NULL, 0, ip, text, size, mnem, msize);
	return 0;
}

/* ----------------------------------------------------------------- */
/* Blocks */

static int
branch_count(struct decoded *d, uint64_t ip, int taken, uint64_t to)
{
	size_t i;

	for (i = 0; i < d->n_br && d->br[i].ip != ip; i++)
		;
	if (i == d->n_br) {
		if (d->n_br == d->cap_br) {
			size_t cap = d->cap_br ? d->cap_br * 2 : 64;
			struct branch *n = realloc(d->br, cap * sizeof(*n));

			if (n == NULL)
				return -ERR_NOMEM;
			d->br = n;
			d->cap_br = cap;
		}
		memset(&d->br[d->n_br++], 0, sizeof(*d->br));
		d->br[i].ip = ip;
	}
	if (taken) {
		d->br[i].taken++;
		d->br[i].target = to;
	} else {
		d->br[i].not_taken++;
	}
	return 0;
}

static int
block_branches(struct decoded *d, uint32_t pid, uint64_t ip, uint64_t end,
    const char *class)
{
	struct cs_insn in;
	int rc = 0;

	if (d->pending) {
		if (ip == d->pending_fall)
			rc = branch_count(d, d->pending_ip, 0, 0);
		else
			rc = branch_count(d, d->pending_ip, 1, ip);
		d->pending = 0;
	}
	if (rc == 0 && strcmp(class, "cond_jump") == 0 && end >= d->fn_lo &&
	    end < d->fn_hi && d->code.insn(d->code.ctx, pid, end, &in) == 1) {
		d->pending = 1;
		d->pending_ip = end;
		d->pending_fall = end + in.len;
	}
	return rc;
}

static int
block_insns(struct decoded *d, uint32_t pid, uint64_t ip, uint64_t n,
    uint64_t time)
{
	struct cs_insn in;

	/* --module: a block lies in one mapping; its image decides */
	if (query_module_filtered(d->o)) {
		const char *name = NULL;

		for (size_t i = d->n_map; i-- > 0 && name == NULL;)
			if (d->map[i].m.pid == pid && ip >= d->map[i].m.start &&
			    ip - d->map[i].m.start < d->map[i].m.size)
				name = d->map[i].name;
		if (name == NULL || !query_module_ok(d->o, name))
			return 0;
	}
	/* Past the page the rows are only counted, the same way. */
	for (uint64_t i = 0; i < n; i++) {
		if (d->n_ins < d->want_ins) {
			d->ins[d->n_ins].time = time;
			d->ins[d->n_ins].ip = ip;
			d->n_ins++;
		}
		d->total_ins++;
		if (d->code.insn(d->code.ctx, pid, ip, &in) != 1)
			break;		/* the rest of the block is unknown */
		ip += in.len;
	}
	return 0;
}

static int
record(struct decoded *d, const json_t *o, uint32_t *pid)
{
	const char *type = json_string_value(json_object_get(o, "type"));

	if (type == NULL)
		return 0;
	if (strcmp(type, "map") == 0)
		return add_map(d, o);
	if (strcmp(type, "thread") == 0) {
		*pid = d->thread_pid = (uint32_t)hex_member(o, "pid");
		d->pending = 0;
		return 0;
	}
	/* an exec: the code from here is the process's next program's */
	if (strcmp(type, "event") == 0 && json_is_string(json_object_get(o,
	    "kind")) && strcmp(json_string_value(json_object_get(o, "kind")),
	    "exec") == 0)
		*pid = blks_space(d->thread_pid, (uint32_t)hex_member(o, "arg"));
	if (strcmp(type, "gap") == 0 || strcmp(type, "event") == 0) {
		d->pending = 0;	/* the next block is not the branch's */
		return 0;
	}
	if (strcmp(type, "block") != 0)
		return 0;
	/* A block past the cap: the window is cut before it. */
	if (d->o->max_insns > 0 && d->window_insns >= d->o->max_insns) {
		d->cut = 1;
		return 0;
	}
	d->window_insns += hex_member(o, "ninsn");
	d->cut_ns = hex_member(o, "time");
	if (d->o->kind == K_BRANCHES) {
		const char *class = json_string_value(json_object_get(o,
		    "class"));
		struct cs_fn f;

		/* The function's extent, once the maps (first) are in. */
		if (d->fn_hi == 0 && d->code.fn(d->code.ctx, *pid, d->fn_lo,
		    &f) == 1) {
			d->fn_lo = f.lo;
			d->fn_hi = f.hi;
		}
		return block_branches(d, *pid, hex_member(o, "ip"),
		    hex_member(o, "end_ip"), class ? class : "");
	}
	return block_insns(d, *pid, hex_member(o, "ip"),
	    hex_member(o, "ninsn"), hex_member(o, "time"));
}

/* Runs ptdecode for tid in [from, to) and feeds its records to d. */
static int
decode(struct decoded *d, const char *snap, uint64_t tid, uint64_t from,
    uint64_t to)
{
	char prog[PATH_MAX], t[24], f[24], u[24], *line = NULL;
	char *argv[] = { prog, "--tid", t, "--from", f, "--to", u,
	    "--format", "jsonl", (char *)snap, NULL };
	FILE *err = tmpfile(), *in = NULL;
	struct spawn sp;
	struct error e;
	uint32_t pid = 0;
	size_t cap = 0;
	ssize_t n;
	int rc = 0, frc;

	progpath_sibling_tool("ptdecode", prog, sizeof(prog));
	snprintf(t, sizeof(t), "%" PRIu64, tid);
	snprintf(f, sizeof(f), "%" PRIu64, from);
	snprintf(u, sizeof(u), "%" PRIu64, to);
	spawn_init(&sp, argv);
	sp.die_with_parent = 1;
	sp.in = SPAWN_NULL;
	sp.out = SPAWN_PIPE;
	sp.err = err ? spawn_fd(fileno(err)) : SPAWN_NULL;
	if (spawn_start(&sp, &e) < 0) {
		report_error(query_tool, "ptdecode", &e, NULL);
		goto out;
	}
	if ((in = fdopen(sp.out, "r")) == NULL) {
		rc = -1;
	} else {
		sp.out = -1;
		while (rc == 0 && !d->cut &&
		    (n = getline(&line, &cap, in)) > 0) {
			json_t *o = json_loadb(line, (size_t)n, 0, NULL);

			rc = o == NULL ? -ERR_FORMAT : record(d, o, &pid);
			json_decref(o);
		}
		/* Cut: the rest of the window is not wanted. */
		if (d->cut)
			spawn_kill(&sp, SIGTERM);
		fclose(in);
	}
	frc = spawn_finish(&sp, &e);
	if (frc < 0 && d->cut) {
		frc = 0;		/* ended by us, however it went */
		sp.exit_code = 0;
	}
	if (frc < 0) {
		char last[512] = "", buf[512];

		/* ptdecode's last line of complaint is the hint. */
		if (err != NULL) {
			rewind(err);
			while (fgets(buf, sizeof(buf), err) != NULL)
				if (buf[0] != '\n')
					memcpy(last, buf, sizeof(last));
			last[strcspn(last, "\n")] = '\0';
		}
		report(query_tool, snap, last[0] ? last : NULL, "decoding "
		    "with ptdecode failed");
		rc = -1;
	} else if (rc < 0) {
		report(query_tool, snap, NULL, "ptdecode's output: %s",
		    err_str(rc));
	}
out:
	free(line);
	if (err != NULL)
		fclose(err);
	return rc < 0 || sp.exit_code != 0 ? -1 : 0;
}

/* ----------------------------------------------------------------- */
/* Tables */

static const struct col branch_cols[] = {
	{ "ip", COL_HEX, 1 }, { "taken", COL_U64, 0 },
	{ "not_taken", COL_U64, 0 }, { "executed", COL_U64, 0 },
	{ "line", COL_U64, 1 }, { "file", COL_STR, 0 },
	{ "target", COL_HEX, 1 }, { "mnemonic", COL_STR, 0 },
	{ "symbol", COL_STR, 0 },
};

static const struct col insn_cols[] = {
	{ "time_ns", COL_U64, 1 }, { "ip", COL_HEX, 1 },
	{ "line", COL_U64, 1 }, { "file", COL_STR, 0 },
	{ "symbol", COL_STR, 0 }, { "insn", COL_STR, 0 },
};

struct dec_rows {
	struct decoded *d;
	uint32_t pid;
	char sym[512];
	char file[PATH_MAX];
	char text[160], mnem[32];
};

static void
symbol_of(struct dec_rows *r, uint64_t ip)
{
	struct cs_fn fn;

	if (r->d->code.fn(r->d->code.ctx, r->pid, ip, &fn) == 1 &&
	    fn.name != NULL)
		snprintf(r->sym, sizeof(r->sym), "%s+0x%" PRIx64, fn.name,
		    ip - fn.lo);
	else
		snprintf(r->sym, sizeof(r->sym), "0x%" PRIx64, ip);
}

static void
branch_get(void *ctx, size_t row, union cell *c)
{
	struct dec_rows *r = ctx;
	const struct branch *b = &r->d->br[row];

	c[0].u = b->ip;
	c[1].u = b->taken;
	c[2].u = b->not_taken;
	c[3].u = b->taken + b->not_taken;
	c[4].u = line_of(r->d, r->pid, b->ip);
	snprintf(r->file, sizeof(r->file), "%s", r->d->line_file);
	c[5].s = r->file[0] ? r->file : "-";
	c[6].u = b->target;
	{
		int64_t disp = 0;

		/* never taken: where it would have gone, from its code */
		if (insn_text(r->d, r->pid, b->ip, NULL, 0, r->mnem,
		    sizeof(r->mnem), &disp) > 0 && b->target == 0 && disp != 0)
			c[6].u = b->ip + (uint64_t)disp;
	}
	c[7].s = r->mnem;
	symbol_of(r, b->ip);
	c[8].s = r->sym;
}

static void
insn_get(void *ctx, size_t row, union cell *c)
{
	struct dec_rows *r = ctx;
	const struct insn_row *in = &r->d->ins[row];

	c[0].u = in->time;
	c[1].u = in->ip;
	c[2].u = line_of(r->d, r->pid, in->ip);
	snprintf(r->file, sizeof(r->file), "%s", r->d->line_file);
	c[3].s = r->file[0] ? r->file : "-";
	symbol_of(r, in->ip);
	c[4].s = r->sym;
	insn_text(r->d, r->pid, in->ip, r->text, sizeof(r->text), NULL, 0,
	    NULL);
	c[5].s = r->text;
}

static int
by_ip(const void *a, const void *b)
{
	const struct branch *x = a, *y = b;

	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/*
 * branches: the window of each thread's spans of --function, decoded,
 * counting the conditional jumps that end a block inside the function.
 */
static int
run_branches(struct decoded *d, const char *snap, struct dec_rows *r)
{
	const struct spanidx *ix = &d->a->ix;
	int64_t fn = agg_find_string(d->a, d->o->function);
	uint32_t tids[64];
	uint64_t lo[64], hi[64];
	size_t nt = 0;

	if (fn < 0) {
		report(query_tool, d->a->dir, NULL, "no function named '%s'",
		    d->o->function);
		return -1;
	}
	d->fn_lo = UINT64_MAX;
	for (uint64_t row = 0; row < ix->rows; row++) {
		uint32_t tid = spanidx_u32(ix, SPANIDX_TID, row);
		uint64_t st = spanidx_u64(ix, SPANIDX_START_NS, row);
		uint64_t en = spanidx_u64(ix, SPANIDX_END_NS, row);
		size_t i;

		if (spanidx_u32(ix, SPANIDX_FN, row) != (uint32_t)fn ||
		    !query_tid_ok(d->o, tid) ||
		    !query_module_ok(d->o, analysis_module(d->a, row)) ||
		    en < d->o->from_ns || st >= d->o->to_ns)
			continue;
		if (d->fn_lo == UINT64_MAX)
			d->fn_lo = spanidx_u64(ix, SPANIDX_ENTRY, row);
		r->pid = spanidx_u32(ix, SPANIDX_PID, row);
		for (i = 0; i < nt && tids[i] != tid; i++)
			;
		if (i == nt && nt < 64) {
			tids[nt] = tid;
			lo[nt] = st;
			hi[nt++] = en;
		} else if (i < nt) {
			lo[i] = st < lo[i] ? st : lo[i];
			hi[i] = en > hi[i] ? en : hi[i];
		}
	}
	for (size_t i = 0; i < nt && !d->cut; i++)
		if (decode(d, snap, tids[i], lo[i], hi[i] + 1) < 0)
			return -1;
	if (d->n_br > 0)	/* br is NULL when no branch was seen */
		qsort(d->br, d->n_br, sizeof(*d->br), by_ip);
	return 0;
}

int
kind_decoded(const struct analysis *a, const struct query_options *o)
{
	struct codemap_options co = { 0 };
	struct symtab_options so = { 0 };
	char snap[PATH_MAX], root[PATH_MAX];
	struct decoded d;
	struct dec_rows r;
	struct table t = { NULL, NULL, 0, 0, &r, NULL, NULL, "" };
	size_t first = 0;
	int rc = EXIT_FAIL;
	struct error e;

	if (o->format > F_JSON) {
		report(query_tool, "--format", "use text, table, csv or json",
		    "this format does not apply to --kind %s",
		    o->kind == K_BRANCHES ? "branches" : "insns");
		return EXIT_USAGE;
	}
	if (o->kind == K_BRANCHES && o->function == NULL) {
		report(query_tool, "--kind branches", NULL, "needs --function "
		    "NAME");
		return EXIT_USAGE;
	}
	if (o->kind == K_INSNS && !o->has_tid) {
		report(query_tool, "--kind insns", NULL, "needs --tid TID (and "
		    "a window: --from, --to)");
		return EXIT_USAGE;
	}
	if (store_analysis_source(a->dir, analysis_manifest_str(a,
	    SPANDIR_M_SNAPSHOT, ""), snap, sizeof(snap), &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	if (snap[0] == '\0') {
		report(query_tool, a->dir, NULL, "names no snapshot to decode");
		return EXIT_FAIL;
	}
	if (query_cursor(o, SIZE_MAX / 2, &first) != 0)
		return EXIT_USAGE;
	memset(&d, 0, sizeof(d));
	memset(&r, 0, sizeof(r));
	r.d = &d;
	d.a = a;
	d.o = o;
	/* ptdecode names the archived images by the snapshot's real path:
	 * files under it open beneath it, never by their path */
	if (realpath(snap, root) == NULL)
		snprintf(root, sizeof(root), "%s", snap);
	so.root = root;
	co.snapshot = root;
	co.no_inline = 1;
	d.map = calloc(MAX_MAPS, sizeof(*d.map));
	d.sc = symcache_new(&so);
	if (d.map == NULL || d.sc == NULL || codemap_new(&d.cm, &co, &e) < 0) {
		report(query_tool, NULL, NULL, "out of memory");
		goto out;
	}
	codemap_code(d.cm, &d.code);
	if (o->kind == K_BRANCHES) {
		if (run_branches(&d, snap, &r) < 0)
			goto out;
		t.kind = "branches";
		t.cols = branch_cols;
		t.ncols = 9;
		t.nrows = d.n_br;
		t.note = "taken counts the times the jump was taken (to "
		    "target); the compiler may have made that the source's if "
		    "being false";
		t.get = branch_get;
		snprintf(t.summary, sizeof(t.summary), "%s: %zu conditional "
		    "branches; taken means the jump was taken (to target), "
		    "which may be the source's if being false",
		    o->function, d.n_br);
	} else {
		/* Decode one row past the page: it says whether more exist. */
		d.want_ins = first + (o->has_limit ? o->limit : 1000) + 1;
		if ((d.ins = malloc(d.want_ins * sizeof(*d.ins))) == NULL) {
			report(query_tool, NULL, NULL, "out of memory");
			goto out;
		}
		if (decode(&d, snap, o->tid, o->from_ns, o->to_ns) < 0)
			goto out;
		for (size_t i = 0; i < a->ix.rows; i++)
			if (spanidx_u32(&a->ix, SPANIDX_TID, i) == o->tid) {
				r.pid = spanidx_u32(&a->ix, SPANIDX_PID, i);
				break;
			}
		t.kind = "insns";
		t.cols = insn_cols;
		t.ncols = 6;
		t.nrows = d.n_ins;
		t.total = d.total_ins;
		t.get = insn_get;
		snprintf(t.summary, sizeof(t.summary), "thread %" PRIu64 ": %"
		    PRIu64 " instructions", o->tid, d.total_ins);
	}
	if (d.cut) {
		size_t n = strlen(t.summary);

		snprintf(t.summary + n, sizeof(t.summary) - n, "; the window "
		    "was cut after %" PRIu64 " instructions, at %" PRIu64
		    " ns (--max-insns %" PRIu64 "): raise it or narrow --from "
		    "and --to", d.window_insns, d.cut_ns, o->max_insns);
		report_warning(query_tool, "--max-insns", "decoding stopped "
		    "after %" PRIu64 " instructions, at %" PRIu64 " ns: the "
		    "rows count only that part of the window; raise "
		    "--max-insns or narrow --from and --to", d.window_insns,
		    d.cut_ns);
	}
	/* What the code map could not read of the snapshot is said, as
	 * ptspans says it: the rows go without that code. */
	{
		char note[ERROR_MSG_MAX + 128];

		if (codemap_refused_note(d.cm, note, sizeof(note)) > 0)
			report_warning(query_tool, root, "%s", note);
	}
	if (o->sort != NULL && (rc = table_sort(&t, o->sort)) != 0)
		goto out;
	{
		struct query_options po = *o;

		/* insns: the page limit, whatever is past it unknown. */
		if (o->kind == K_INSNS && !po.has_limit) {
			po.has_limit = 1;
			po.limit = 1000;
		}
		rc = table_print(&t, &po);
	}
out:
	free(t.order);
	for (size_t i = 0; i < d.n_map; i++) {
		if (d.map[i].fd >= 0)
			close(d.map[i].fd);
		free(d.map[i].name);
		free(d.map[i].image);
	}
	free(d.map);
	free(d.br);
	free(d.ins);
	codemap_free(d.cm);
	symcache_free(d.sc);
	return rc;
}
