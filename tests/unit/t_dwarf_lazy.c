/*
 * t_dwarf_lazy: a table that reads DWARF per compile unit on demand
 * answers every lookup exactly as one that read everything at open
 * (SYMTAB_EAGER_DWARF): function, inline chain with call sites, line, and
 * the spans, at every address of every executable segment, asked in
 * address order, in a scattered order and from several threads at once;
 * and the same function list and statistics.  The images: the spans and
 * symtab fixtures (LTO, dwz, C++, stripped with separate debuginfo) and
 * libc and ld.so with their system debuginfo.
 */
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/symtab.h"
#include "tap.h"

struct range {
	uint64_t lo, hi;
};

/* The executable PT_LOAD segments of path (at most max). */
static size_t
code_ranges(const char *path, struct range *r, size_t max)
{
	GElf_Phdr ph;
	size_t i, n = 0, nph;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	if ((fd = open(path, O_RDONLY)) < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf != NULL && elf_getphdrnum(elf, &nph) == 0)
		for (i = 0; i < nph && n < max; i++)
			if (gelf_getphdr(elf, (int)i, &ph) != NULL &&
			    ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				r[n].lo = ph.p_vaddr;
				r[n].hi = ph.p_vaddr + ph.p_memsz;
				n++;
			}
	elf_end(elf);
	close(fd);
	return n;
}

static int
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
same_sym(const struct sym *a, const struct sym *b)
{
	uint32_t i;

	if (a == NULL || b == NULL)
		return a == b;
	if (a->addr != b->addr || a->size != b->size ||
	    a->flags != b->flags || a->n_aliases != b->n_aliases ||
	    !same_str(a->name, b->name) || !same_str(a->raw, b->raw))
		return 0;
	for (i = 0; i < a->n_aliases; i++)
		if (!same_str(a->aliases[i], b->aliases[i]))
			return 0;
	return 1;
}

/*
 * call_ids are numbered in reading order, so they differ; what must hold
 * is that they group the same ranges: a bijection, kept in two maps.
 */
struct id_map {
	uint32_t *e2l, *l2e;	/* id + 1; 0 unset */
	size_t n;
};

static int
same_id(struct id_map *m, uint32_t e, uint32_t l)
{
	if (e >= m->n || l >= m->n)
		return 0;
	if (m->e2l[e] == 0 && m->l2e[l] == 0) {
		m->e2l[e] = l + 1;
		m->l2e[l] = e + 1;
	}
	return m->e2l[e] == l + 1 && m->l2e[l] == e + 1;
}

static int
same_inline(struct id_map *m, const struct sym_inline *a,
    const struct sym_inline *b)
{
	for (; a != NULL && b != NULL; a = a->parent, b = b->parent)
		if (a->lo != b->lo || a->hi != b->hi || a->depth != b->depth ||
		    a->call_line != b->call_line ||
		    a->call_column != b->call_column ||
		    !same_str(a->name, b->name) || !same_str(a->raw, b->raw) ||
		    !same_str(a->call_file, b->call_file) ||
		    !same_id(m, a->call_id, b->call_id))
			return 0;
	return a == b;
}

/* Every answer at addr; 0 and a message in why when they differ. */
static int
same_at(const struct symtab *ea, const struct symtab *la, struct id_map *m,
    uint64_t addr, const char **why)
{
	uint64_t elo, ehi, llo, lhi;
	const struct sym_inline *ei, *li;
	const struct sym *es, *ls;
	struct sym_line eln, lln;
	int erc, lrc;

	ls = symtab_lookup_span(la, addr, &llo, &lhi);
	es = symtab_lookup_span(ea, addr, &elo, &ehi);
	if (!same_sym(es, ls) || elo != llo || ehi != lhi)
		return *why = "function or its span", 0;
	if (symtab_lookup(la, addr) != ls)
		return *why = "symtab_lookup and symtab_lookup_span", 0;
	li = symtab_inline_span(la, addr, &llo, &lhi);
	ei = symtab_inline_span(ea, addr, &elo, &ehi);
	if (!same_inline(m, ei, li) || elo != llo || ehi != lhi)
		return *why = "inline chain or its span", 0;
	if (symtab_inline_at(la, addr) != li)
		return *why = "symtab_inline_at and symtab_inline_span", 0;
	lrc = symtab_line(la, addr, &lln);
	erc = symtab_line(ea, addr, &eln);
	if (lrc != erc || (erc == 1 && (!same_str(eln.file, lln.file) ||
	    eln.line != lln.line || eln.column != lln.column)))
		return *why = "line", 0;
	return 1;
}

static uint64_t
gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * Compares every address of r; scattered: in the order i * stride mod
 * length, stride coprime with it.  Returns the first address that
 * differs (*why set), or UINT64_MAX.
 */
static uint64_t
compare_range(const struct symtab *ea, const struct symtab *la,
    struct id_map *m, struct range r, uint64_t stride, const char **why)
{
	uint64_t len = r.hi - r.lo, i, off;

	while (stride > 1 && gcd(stride, len) != 1)
		stride++;
	for (i = 0, off = 0; i < len; i++) {
		if (!same_at(ea, la, m, r.lo + off, why))
			return r.lo + off;
		off = stride > 1 ? (off + stride) % len : off + 1;
	}
	return UINT64_MAX;
}

static struct symtab *
open_mode(const char *path, unsigned flags)
{
	struct symtab_options o;
	struct symtab *st = NULL;
	struct error e;

	memset(&o, 0, sizeof(o));
	o.flags = flags;
	if (symtab_open(path, &o, &st, &e) != 0) {
		DIAG("%s: %s", path, e.msg);
		return NULL;
	}
	return st;
}

static int
id_map_init(struct id_map *m, const struct symtab *eager)
{
	struct symtab_stats s;

	symtab_get_stats(eager, &s);
	m->n = s.n_inlines + 1;
	m->e2l = calloc(m->n, sizeof(*m->e2l));
	m->l2e = calloc(m->n, sizeof(*m->l2e));
	return m->e2l != NULL && m->l2e != NULL ? 0 : -1;
}

static void
id_map_free(struct id_map *m)
{
	free(m->e2l);
	free(m->l2e);
}

/* The function lists and statistics (every unit read by then). */
static void
compare_whole(const char *name, const struct symtab *ea,
    const struct symtab *la)
{
	struct symtab_stats es, ls;
	const struct sym *a, *b;
	size_t i;

	for (i = 0; (a = symtab_sym(ea, i)) != NULL; i++)
		if (!same_sym(a, b = symtab_sym(la, i)))
			break;
	OK(a == NULL && symtab_sym(la, i) == NULL,
	    "%s: symtab_sym lists the same %zu functions", name, i);
	symtab_get_stats(ea, &es);
	symtab_get_stats(la, &ls);
	OK(es.n_syms == ls.n_syms && es.n_from_dwarf == ls.n_from_dwarf &&
	    es.n_plt == ls.n_plt && es.n_inlines == ls.n_inlines &&
	    es.n_lines == ls.n_lines && es.has_dwarf == ls.has_dwarf &&
	    strcmp(es.symbol_source, ls.symbol_source) == 0,
	    "%s: same statistics (%zu functions, %zu from DWARF, %zu inlined "
	    "ranges, %zu line rows)", name, ls.n_syms, ls.n_from_dwarf,
	    ls.n_inlines, ls.n_lines);
	a = symtab_sym(ea, i / 2);
	if (a != NULL)
		OK(same_sym(symtab_find(ea, a->name), symtab_find(la, a->name)),
		    "%s: symtab_find(%s)", name, a->name);
}

/* Both orders, each on a fresh lazy table.  Returns 0 when skipped. */
static int
compare_image(const char *name, const char *path, unsigned flags,
    int want_dwarf)
{
	struct range r[8];
	size_t n = code_ranges(path, r, 8), k;
	struct symtab *ea, *la;
	struct symtab_stats s;
	struct id_map m;
	const char *why = "";
	uint64_t bad = UINT64_MAX, stride, total = 0;
	int pass;

	if (n == 0 || (ea = open_mode(path, flags | SYMTAB_EAGER_DWARF)) == NULL)
		return 0;
	symtab_get_stats(ea, &s);
	if (want_dwarf && !s.has_dwarf) {
		symtab_free(ea);
		return 0;
	}
	for (pass = 0; pass < 2; pass++) {
		if ((la = open_mode(path, flags)) == NULL ||
		    id_map_init(&m, ea) != 0) {
			OK(0, "%s: open", name);
			symtab_free(la);
			break;
		}
		stride = pass == 0 ? 1 : 7919;
		for (k = 0; k < n && bad == UINT64_MAX; k++) {
			bad = compare_range(ea, la, &m, r[k], stride, &why);
			total += pass == 0 ? r[k].hi - r[k].lo : 0;
		}
		if (bad != UINT64_MAX)
			DIAG("%s: first difference at %#llx: %s", name,
			    (unsigned long long)bad, why);
		OK(bad == UINT64_MAX, "%s: %s order: every answer at %llu "
		    "addresses as eager", name,
		    pass == 0 ? "address" : "scattered",
		    (unsigned long long)total);
		if (pass == 1)
			compare_whole(name, ea, la);
		id_map_free(&m);
		symtab_free(la);
	}
	symtab_free(ea);
	return 1;
}

struct worker {
	const struct symtab *ea, *la;
	struct range r;
	uint64_t stride, bad;
	const char *why;
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	struct id_map m;

	if (id_map_init(&m, w->ea) != 0)
		return NULL;
	w->bad = compare_range(w->ea, w->la, &m, w->r, w->stride, &w->why);
	id_map_free(&m);
	return NULL;
}

/* Four threads on one fresh lazy table, each in its own order. */
static void
compare_threads(const char *name, const char *path)
{
	struct worker w[4];
	pthread_t t[4];
	struct range r;
	struct symtab *ea, *la;
	int i, ok = 1;

	if (code_ranges(path, &r, 1) == 0 ||
	    (ea = open_mode(path, SYMTAB_EAGER_DWARF)) == NULL)
		return;
	if ((la = open_mode(path, 0)) == NULL) {
		symtab_free(ea);
		return;
	}
	for (i = 0; i < 4; i++) {
		w[i].ea = ea;
		w[i].la = la;
		w[i].r = r;
		w[i].stride = (uint64_t)(1 + i * 4099);
		w[i].bad = 0;
		w[i].why = "did not run";
		if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
			w[i].bad = 1;
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		if (w[i].bad != UINT64_MAX) {
			DIAG("thread %d: %s at %#llx", i, w[i].why,
			    (unsigned long long)w[i].bad);
			ok = 0;
		}
	}
	OK(ok, "%s: 4 threads on one lazy table answer as eager", name);
	symtab_free(la);
	symtab_free(ea);
}

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/*
 * A lazy table keeps its DWARF open, but not a descriptor: a process
 * with hundreds of images must not run out of them.
 */
static void
check_descriptors(const char *name, const char *path)
{
	struct symtab *st;
	int before = count_fds(), after;

	if ((st = open_mode(path, SYMTAB_NO_SYSTEM_DEBUG)) == NULL) {
		OK(0, "%s: open", name);
		return;
	}
	after = count_fds();
	OK(before >= 0 && after == before && symtab_inline_at(st, 0) == NULL,
	    "%s: a lazy table holds no descriptor (%d before, %d after)",
	    name, before, after);
	symtab_free(st);
}

int
main(void)
{
	static const char *const spans[] = { "tree", "cxx", "sig", "threads",
	    "dl", "libspansdl.so", "lto", "jit" };
	static const char *const sym[] = { "inl", "inl-pie", "inl-dw4",
	    "inl-nosym", "inl-gz", "inl-zgnu", "cxx", "libshl.so", "memc",
	    "dwz/a", "strip/link/inl" };
	const char *b = getenv("PTKIT_BUILD");
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	const char *ldso = "/lib64/ld-linux-x86-64.so.2";
	char path[4096];
	size_t i;

	if (b == NULL)
		b = "build";
	for (i = 0; i < sizeof(spans) / sizeof(*spans); i++) {
		snprintf(path, sizeof(path), "%s/tests/fixtures/spans/%s", b,
		    spans[i]);
		OK(compare_image(spans[i], path, SYMTAB_NO_SYSTEM_DEBUG, 1),
		    "spans fixture %s has DWARF", spans[i]);
	}
	for (i = 0; i < sizeof(sym) / sizeof(*sym); i++) {
		snprintf(path, sizeof(path), "%s/fixtures/sym/%s", b, sym[i]);
		OK(compare_image(sym[i], path, SYMTAB_NO_SYSTEM_DEBUG, 1),
		    "symtab fixture %s has DWARF", sym[i]);
	}
	if (!compare_image("libc", libc, 0, 1))
		DIAG("skipped libc: no debuginfo (libc6-dbg)");
	if (!compare_image("ld.so", ldso, 0, 1))
		DIAG("skipped ld.so: no debuginfo (libc6-dbg)");
	compare_threads("ld.so", ldso);
	snprintf(path, sizeof(path), "%s/fixtures/sym/inl-pie", b);
	check_descriptors("inl-pie", path);
	snprintf(path, sizeof(path), "%s/fixtures/sym/inl-gz", b);
	check_descriptors("inl-gz", path);
	snprintf(path, sizeof(path), "%s/fixtures/sym/dwz/a", b);
	check_descriptors("dwz/a", path);
	return tap_done();
}
