/*
 * Tests for lib/symtab (and debugfind, demangle, jitmap, symcache).
 *
 * Expectations come from binutils run on the same files at test time:
 * readelf -sW for symbol ranges, nm -C for demangled names, objdump -d for
 * instruction addresses and PLT stubs, addr2line -a -f -i for inline
 * chains and file:line.  Fixtures are built by mk/sym.mk.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/debugfind.h"
#include "sym/demangle.h"
#include "base/error.h"
#include "base/spawn.h"
#include "sym/symcache.h"
#include "sym/symtab.h"
#include "tap.h"

#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

static char fixdir[2048];
static struct error e_unused;

static char *build_id_hex(const char *path);

static const char *
fix(const char *name)
{
	static char buf[8][4096];
	static int slot;
	char *p = buf[slot++ % 8];

	snprintf(p, 4096, "%s/%s", fixdir, name);
	return p;
}

/*
 * Runs argv with stdout captured and stderr discarded (readelf complains
 * about debuginfo files).  Returns 0 and *out (malloc'd), or -1.
 */
static int
capture(char *const *argv, char **out)
{
	struct spawn sp;
	struct error e;
	size_t len = 0, cap = 65536;
	ssize_t n;
	char *buf = malloc(cap), *nb;

	*out = NULL;
	if (buf == NULL)
		return -1;
	spawn_init(&sp, argv);
	sp.in = SPAWN_NULL;
	sp.out = SPAWN_PIPE;
	sp.err = SPAWN_NULL;
	if (spawn_start(&sp, &e) != 0) {
		DIAG("%s: %s", argv[0], e.msg);
		free(buf);
		return -1;
	}
	for (;;) {
		if (cap - len < 4096) {
			nb = realloc(buf, cap * 2);
			if (nb == NULL)
				break;
			buf = nb;
			cap *= 2;
		}
		n = read(sp.out, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (spawn_finish(&sp, &e) != 0) {
		DIAG("%s: %s", argv[0], e.msg);
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

/* Runs prog with NULL-terminated arguments; its stdout, or NULL. */
static char *
run(const char *prog, ...)
{
	char *argv[64], *out;
	va_list ap;
	int n = 0;

	argv[n++] = (char *)prog;
	va_start(ap, prog);
	while (n < 63 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	return capture(argv, &out) == 0 ? out : NULL;
}

/* ---- readelf -sW -------------------------------------------------- */

struct elfsym {
	unsigned long long value, size;
	char type[16], bind[16], ndx[16];
	char name[1024];
};

/* Parses the FUNC/IFUNC symbols of the first symbol table readelf prints
 * that has `section` in its heading (".symtab" or ".dynsym"). */
static size_t
readelf_funcs(const char *path, const char *section, struct elfsym *out,
    size_t max)
{
	char *txt = run("readelf", "-sW", path, (char *)NULL), *line, *save;
	int in = 0;
	size_t n = 0;

	if (txt == NULL)
		return 0;
	for (line = strtok_r(txt, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		struct elfsym s;
		char vis[16];
		unsigned num;

		if (strncmp(line, "Symbol table", 12) == 0) {
			in = strstr(line, section) != NULL;
			continue;
		}
		memset(&s, 0, sizeof(s));
		if (!in || sscanf(line, " %u: %llx %llu %15s %15s %15s %15s %1023s",
		    &num, &s.value, &s.size, s.type, s.bind, vis, s.ndx,
		    s.name) != 8)
			continue;
		if ((strcmp(s.type, "FUNC") != 0 && strcmp(s.type, "IFUNC") != 0)
		    || strcmp(s.ndx, "UND") == 0 || strcmp(s.ndx, "ABS") == 0)
			continue;
		if (n < max)
			out[n++] = s;
	}
	free(txt);
	return n;
}

static const struct elfsym *
elfsym_by_name(const struct elfsym *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

static int
same_unversioned(const char *a, const char *b)
{
	size_t la = demangle_unversioned_len(a);

	return la == demangle_unversioned_len(b) && strncmp(a, b, la) == 0;
}

/* raw is s's name or an alias, ignoring versions (kept once, see symtab.h). */
static int
sym_has_name(const struct sym *s, const char *raw)
{
	uint32_t i;

	if (same_unversioned(s->raw, raw))
		return 1;
	for (i = 0; i < s->n_aliases; i++)
		if (same_unversioned(s->aliases[i], raw))
			return 1;
	return 0;
}

static struct elfsym syms_buf[20000];

/* Every sized function readelf lists has exactly its range and a name. */
static void
check_ranges(const struct symtab *st, const char *path, const char *section)
{
	size_t n = readelf_funcs(path, section, syms_buf, 20000), i, bad = 0;
	const struct sym *s;

	for (i = 0; i < n; i++) {
		const struct elfsym *r = &syms_buf[i];

		if (r->size == 0)
			continue;
		s = symtab_lookup(st, r->value);
		if (s == NULL || s->addr != r->value || s->size != r->size ||
		    !sym_has_name(s, r->name) ||
		    symtab_lookup(st, r->value + r->size - 1) != s) {
			if (bad++ < 5)
				DIAG("%s: %s %llx+%llu: got %s %llx+%llu", path,
				    r->name, r->value, r->size,
				    s ? s->raw : "(none)",
				    s ? (unsigned long long)s->addr : 0,
				    s ? (unsigned long long)s->size : 0);
		}
	}
	OK(n > 5, "%s: readelf lists %zu functions", path, n);
	IS_INT(bad, 0, "%s: every function's range and name match readelf",
	    path);
}

/* ---- addr2line parity --------------------------------------------- */

/* Instruction addresses of function fn in objdump -d output of path. */
static size_t
objdump_insns(const char *path, const char *fn, unsigned long long *out,
    size_t max)
{
	char *txt = run("objdump", "-d", "--no-show-raw-insn", path,
	    (char *)NULL), *line, *save, head[1100];
	int in = 0, pos = 0;
	size_t n = 0;
	unsigned long long a;

	if (txt == NULL)
		return 0;
	snprintf(head, sizeof(head), "<%s>:", fn);
	for (line = strtok_r(txt, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strchr(line, '<') != NULL && strstr(line, ">:") != NULL &&
		    line[0] != ' ') {
			in = strstr(line, head) != NULL;
			continue;
		}
		if (in && line[0] == ' ' && sscanf(line, " %llx%n", &a, &pos) == 1 &&
		    line[pos] == ':' && n < max)
			out[n++] = a;
	}
	free(txt);
	return n;
}

/* Address of the "<name>:" heading in objdump -d output, or 0. */
static unsigned long long
objdump_label(const char *path, const char *name)
{
	char *txt = run("objdump", "-d", path, (char *)NULL), *p, head[1100];
	unsigned long long a = 0;

	if (txt == NULL)
		return 0;
	snprintf(head, sizeof(head), " <%s>:\n", name);
	p = strstr(txt, head);
	if (p != NULL) {
		while (p > txt && p[-1] != '\n')
			p--;
		a = strtoull(p, NULL, 16);
	}
	free(txt);
	return a;
}

/* Every "<x@plt>:" label of objdump -d is a PLT stub of ours, same raw name. */
static void
check_plt(const struct symtab *st, const char *path)
{
	char *txt = run("objdump", "-d", path, (char *)NULL), *line, *save;
	char name[1024];
	unsigned long long a;
	size_t n = 0, bad = 0;
	const struct sym *s;

	for (line = txt ? strtok_r(txt, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		/* "<printf@plt-0x10>" is objdump's label for PLT0. */
		if (sscanf(line, "%llx <%1023[^>]>:", &a, name) != 2 ||
		    strlen(name) < 4 ||
		    strcmp(name + strlen(name) - 4, "@plt") != 0)
			continue;
		n++;
		s = symtab_lookup(st, a);
		if (s == NULL || s->addr != a || strcmp(s->raw, name) != 0 ||
		    !(s->flags & SYM_PLT)) {
			if (bad++ < 3)
				DIAG("%s: %llx <%s>: ours %s", path, a, name,
				    s ? s->raw : "(none)");
		}
	}
	free(txt);
	OK(n > 0, "%s: objdump names %zu PLT stubs", path, n);
	IS_INT(bad, 0, "%s: every PLT stub objdump names is ours", path);
}

static void
strip_discriminator(char *s)
{
	char *d = strstr(s, " (discriminator");

	if (d != NULL)
		*d = '\0';
}

/* What our table says for addr, in addr2line -f -i form. */
static void
our_frames(const struct symtab *st, unsigned long long addr,
    const char *outer, char *buf, size_t len)
{
	const struct sym *fn = symtab_lookup(st, addr);
	const struct sym_inline *in = symtab_inline_at(st, addr);
	const char *fname = outer ? outer : fn ? fn->name : "??";
	struct sym_line ln;
	size_t o = 0;

	if (fn != NULL && outer != NULL && !sym_has_name(fn, outer))
		fname = fn->name;

	if (symtab_line(st, addr, &ln))
		o += snprintf(buf + o, len - o, "%s\n%s:%u\n",
		    in ? in->name : fname, ln.file, ln.line);
	else
		o += snprintf(buf + o, len - o, "%s\n??:0\n",
		    in ? in->name : fname);
	for (; in != NULL && o < len; in = in->parent)
		o += snprintf(buf + o, len - o, "%s\n%s:%u\n",
		    in->parent ? in->parent->name : fname,
		    in->call_file ? in->call_file : "??", in->call_line);
}

/*
 * Keeps the addresses inside fn's symbol range (readelf): objdump runs a
 * label on over the alignment padding that follows it.
 */
static size_t
drop_padding(const char *ref, const char *fn, unsigned long long *addrs,
    size_t n)
{
	static struct elfsym v[20000];
	const struct elfsym *r;
	size_t i, k = 0, nv;

	nv = readelf_funcs(ref, ".symtab", v, 20000);
	r = elfsym_by_name(v, nv, fn);
	if (r == NULL)
		return n;
	for (i = 0; i < n; i++)
		if (addrs[i] >= r->value && addrs[i] < r->value + r->size)
			addrs[k++] = addrs[i];
	return k;
}

static size_t
every_byte(const char *ref, const char *fn, unsigned long long *addrs,
    size_t max)
{
	static struct elfsym v[20000];
	const struct elfsym *r;
	size_t i, nv;

	nv = readelf_funcs(ref, ".symtab", v, 20000);
	r = elfsym_by_name(v, nv, fn);
	for (i = 0; r != NULL && i < r->size && i < max; i++)
		addrs[i] = r->value + i;
	return i;
}

/*
 * For every instruction of fn in ref (a binary with DWARF), compares our
 * table of st with addr2line -f -i on ref.  addr2line names the function
 * as DWARF does: outer, when not NULL, is that name, which must be one of
 * the names (preferred or alias) our table has there.  Returns the inline
 * depth seen.
 */
/* Drops the file part of every "file:line" line (see test_libc). */
static void
drop_paths(char *buf)
{
	char *line = buf, *eol, *colon, *w = buf;
	size_t len;

	while (*line != '\0') {
		eol = strchr(line, '\n');
		len = eol ? (size_t)(eol - line) + 1 : strlen(line);
		colon = memrchr(line, ':', len);
		if (colon != NULL && colon > line && colon[-1] != ':' &&
		    (colon[1] == '?' || (colon[1] >= '0' && colon[1] <= '9'))) {
			len -= (size_t)(colon - line);
			line = colon;
		}
		memmove(w, line, len);
		w += len;
		line += len;
	}
	*w = '\0';
}

static unsigned
check_addr2line_mode(const struct symtab *st, const char *ref,
    const char *fn, const char *outer, const char *label, int paths)
{
	static unsigned long long addrs[4096];
	char *argv[4096 + 8], *txt, *p, *next, ours[8192], theirs[8192];
	char hex[4096][24];
	size_t n, i, bad = 0, to = 0;
	unsigned maxdepth = 0;
	int k = 0;

	n = objdump_insns(ref, fn, addrs, 4096);
	n = drop_padding(ref, fn, addrs, n);
	if (n == 0)	/* a debuginfo file has no code: every byte then */
		n = every_byte(ref, fn, addrs, 4096);
	argv[k++] = "addr2line";
	argv[k++] = "-a";
	argv[k++] = "-f";
	argv[k++] = "-i";
	argv[k++] = "-e";
	argv[k++] = (char *)ref;
	for (i = 0; i < n; i++) {
		snprintf(hex[i], sizeof(hex[i]), "0x%llx", addrs[i]);
		argv[k++] = hex[i];
	}
	argv[k] = NULL;
	if (n == 0 || capture(argv, &txt) != 0) {
		OK(0, "%s: %s: addr2line ran on %zu addresses", label, fn, n);
		return 0;
	}
	/* Split at the "0x..." address lines addr2line -a prints. */
	p = txt;
	for (i = 0; i < n; i++) {
		const struct sym_inline *in;
		unsigned d = 0;
		char *q;

		p = strchr(p, '\n');
		if (p == NULL)
			break;
		p++;
		next = strstr(p, "\n0x");
		to = next ? (size_t)(next - p + 1) : strlen(p);
		if (to >= sizeof(theirs))
			to = sizeof(theirs) - 1;
		memcpy(theirs, p, to);
		theirs[to] = '\0';
		while ((q = strstr(theirs, " (discriminator")) != NULL) {
			char *eol = strchr(q, '\n');

			memmove(q, eol, strlen(eol) + 1);
		}
		strip_discriminator(theirs);
		our_frames(st, addrs[i], outer, ours, sizeof(ours));
		if (!paths) {
			drop_paths(ours);
			drop_paths(theirs);
		}
		if (strcmp(ours, theirs) != 0 && bad++ < 3)
			DIAG("%s %#llx:\n--- addr2line:\n%s--- ours:\n%s", label,
			    addrs[i], theirs, ours);
		for (in = symtab_inline_at(st, addrs[i]); in; in = in->parent)
			d++;
		if (d > maxdepth)
			maxdepth = d;
		p += to;
	}
	free(txt);
	IS_INT(bad, 0, "%s: %s: %zu addresses: inline chains and file:line "
	    "equal addr2line -f -i", label, fn, n);
	return maxdepth;
}

static unsigned
check_addr2line(const struct symtab *st, const char *ref, const char *fn,
    const char *outer, const char *label)
{
	return check_addr2line_mode(st, ref, fn, outer, label, 1);
}

static int exec_load(const char *path, unsigned long long *vaddr,
    unsigned long long *off);

/* ---- the C fixture ------------------------------------------------ */

static void
test_c_fixture(const char *name, int pie)
{
	struct symtab_options opt = { NULL, 0, SYMTAB_NO_SYSTEM_DEBUG };
	const char *path = fix(name);
	struct symtab *st = NULL;
	const struct sym *s, *next;
	struct symtab_stats stats;
	struct error e;
	unsigned long long plt, vaddr, off;
	unsigned depth;
	uint32_t i;
	int seen_alias = 0, seen_weak = 0;

	IS_INT(symtab_open(path, &opt, &st, &e), 0, "%s: opens", name);
	if (st == NULL) {
		DIAG("%s", e.msg);
		return;
	}
	symtab_get_stats(st, &stats);
	IS_STR(stats.symbol_source, ".symtab", "%s: names from .symtab", name);
	OK(stats.has_dwarf && stats.n_lines > 50 && stats.n_inlines > 3,
	    "%s: DWARF read (%zu lines, %zu inlined ranges)", name,
	    stats.n_lines, stats.n_inlines);
	OK(symtab_debug_path(st) == NULL, "%s: no separate debuginfo needed",
	    name);
	check_ranges(st, path, ".symtab");

	s = symtab_find(st, "static_worker");
	OK(s != NULL && strcmp(s->name, "static_worker") == 0 &&
	    (s->flags & (SYM_GLOBAL | SYM_WEAK)) == 0,
	    "%s: the static function keeps its name, local", name);

	/* Aliases: two globals and a weak at one address. */
	s = symtab_find(st, "sym_exported");
	OK(s != NULL, "%s: sym_exported found", name);
	if (s != NULL) {
		IS_STR(s->name, "sym_exported", "%s: preferred alias: global, "
		    "longest name (as perf chooses)", name);
		IS_INT(s->n_aliases, 2, "%s: two other names kept", name);
		for (i = 0; i < s->n_aliases; i++) {
			seen_alias |= strcmp(s->aliases[i], "sym_alias") == 0;
			seen_weak |= strcmp(s->aliases[i], "sym_weak_alias") == 0;
		}
		OK(seen_alias && seen_weak && s->n_aliases == 2 &&
		    strcmp(s->aliases[0], "sym_alias") == 0,
		    "%s: aliases in preference order: sym_alias, "
		    "sym_weak_alias", name);
		OK(s->flags & SYM_GLOBAL, "%s: alias group is global", name);
	}

	/* A size of 0 runs to the next function. */
	s = symtab_find(st, "asm_nosize");
	OK(s != NULL && (s->flags & SYM_SIZE_GUESSED),
	    "%s: asm_nosize has a guessed size", name);
	if (s != NULL) {
		next = symtab_lookup(st, s->addr + s->size);
		OK(s->size >= 6 && (next == NULL || next->addr == s->addr +
		    s->size), "%s: asm_nosize runs to %s (%llu bytes)", name,
		    next ? next->name : "the section end",
		    (unsigned long long)s->size);
	}

	plt = objdump_label(path, "printf@plt");
	s = symtab_lookup(st, plt);
	OK(plt != 0 && s != NULL && s->addr == plt && s->size == 16 &&
	    strcmp(s->name, "printf@plt") == 0 && (s->flags & SYM_PLT),
	    "%s: printf@plt at %#llx as objdump says", name, plt);
	check_plt(st, path);
	OK(symtab_find(st, "printf") == NULL,
	    "%s: \"printf\" is not its PLT stub", name);

	depth = check_addr2line(st, path, "static_worker", NULL, name);
	OK(depth >= 2, "%s: inline chain two deep in static_worker (%u)",
	    name, depth);
	check_addr2line(st, path, "sym_alias", "sym_exported", name);
	check_addr2line(st, path, "main", NULL, name);
	/* A mapping as MMAP2 gives it: identity for ET_EXEC, biased for PIE. */
	s = symtab_find(st, "static_worker");
	if (s != NULL && exec_load(path, &vaddr, &off)) {
		uint64_t bias = pie ? 0x555555554000ull : 0, a = 0;
		struct sym_mapping m;

		m.start = bias + (vaddr & ~0xfffull);
		m.end = m.start + 0x1000;
		m.pgoff = off & ~0xfffull;
		OK(symtab_addr_from_map(st, &m, bias + s->addr + 3, &a) == 0 &&
		    a == s->addr + 3 && symtab_lookup(st, a) == s,
		    "%s: static_worker by runtime address %#llx", name,
		    (unsigned long long)(bias + s->addr + 3));
	}
	symtab_free(st);
}

/* A frames string for addr with call sites, for comparing two tables. */
static void
frames_full(const struct symtab *st, uint64_t addr, char *buf, size_t len)
{
	const struct sym_inline *in;
	struct sym_line ln;
	size_t o;

	our_frames(st, addr, NULL, buf, len);
	o = strlen(buf);
	for (in = symtab_inline_at(st, addr); in != NULL && o < len;
	    in = in->parent)
		o += snprintf(buf + o, len - o, "%s d%u col %u\n", in->raw,
		    in->depth, in->call_column);
	if (symtab_line(st, addr, &ln) && o < len)
		snprintf(buf + o, len - o, "col %u\n", ln.column);
}

/* dwz moves shared DIEs to a supplementary file; nothing may change. */
static void
test_dwz(const char *tmp)
{
	struct symtab_options opt = { NULL, 0, SYMTAB_NO_SYSTEM_DEBUG };
	struct symtab *ref = NULL, *st = NULL;
	struct symtab_stats rs, ss;
	const struct sym *s;
	char a[8192], b[8192], lone[4200], *out, *id;
	char root[4200], dir[4300], dst[4400];
	const char *roots[1];
	uint64_t addr;
	size_t i, n = 0, bad = 0;

	IS_INT(symtab_open(fix("cxx"), &opt, &ref, &e_unused), 0,
	    "dwz: cxx opens");
	IS_INT(symtab_open(fix("dwz/a"), &opt, &st, &e_unused), 0,
	    "dwz: the dwz'd copy opens");
	if (ref == NULL || st == NULL)
		goto out;
	symtab_get_stats(ref, &rs);
	symtab_get_stats(st, &ss);
	OK(rs.n_inlines == ss.n_inlines && rs.n_lines == ss.n_lines &&
	    rs.n_syms == ss.n_syms, "dwz: same counts (%zu inlined, %zu "
	    "lines)", ss.n_inlines, ss.n_lines);
	for (i = 0; (s = symtab_sym(ref, i)) != NULL; i++) {
		for (addr = s->addr; addr < s->addr + s->size; addr++) {
			frames_full(ref, addr, a, sizeof(a));
			frames_full(st, addr, b, sizeof(b));
			n++;
			if (strcmp(a, b) != 0 && bad++ < 2)
				DIAG("%#llx:\n%s---\n%s",
				    (unsigned long long)addr, a, b);
		}
	}
	IS_INT(bad, 0, "dwz: %zu addresses symbolize as without dwz", n);
	symtab_free(st);
	st = NULL;

	/* Alone, its supplementary file only under a root, by build-id. */
	snprintf(lone, sizeof(lone), "%s/a", tmp);
	out = run("cp", fix("dwz/a"), lone, (char *)NULL);
	free(out);
	IS_INT(symtab_open(lone, &opt, &st, &e_unused), 0,
	    "dwz: loads without the supplementary file");
	OK(st && symtab_find(st, "geo::thrower(int)") != NULL,
	    "dwz: symbols still named from .symtab");
	symtab_free(st);
	st = NULL;
	id = build_id_hex(fix("dwz/common"));
	OK(id != NULL, "dwz: the supplementary file has a build-id");
	if (id == NULL)
		goto out;
	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", root, id);
	snprintf(dst, sizeof(dst), "%s/%s.debug", dir, id + 2);
	free(id);
	free(run("mkdir", "-p", dir, (char *)NULL));
	free(run("cp", fix("dwz/common"), dst, (char *)NULL));
	roots[0] = root;
	opt.debug_dirs = roots;
	opt.n_debug_dirs = 1;
	IS_INT(symtab_open(lone, &opt, &st, &e_unused), 0,
	    "dwz: loads with the supplementary file under a root");
	for (i = 0, bad = 0; st && (s = symtab_sym(ref, i)) != NULL; i++)
		for (addr = s->addr; addr < s->addr + s->size; addr++) {
			frames_full(ref, addr, a, sizeof(a));
			frames_full(st, addr, b, sizeof(b));
			bad += strcmp(a, b) != 0;
		}
	IS_INT(bad, 0, "dwz: supplementary file found by build-id");
	free(run("rm", "-rf", root, (char *)NULL));
	unlink(lone);
out:
	symtab_free(st);
	symtab_free(ref);
}

/* The span lookups agree with the point lookups over a whole function. */
static void
test_spans(void)
{
	struct symtab *st = NULL;
	const struct sym *fn, *f2;
	const struct sym_inline *in;
	struct error e;
	uint64_t a, b, lo, hi, flo, fhi;
	size_t spans = 0, bad = 0, inlined = 0;

	IS_INT(symtab_open(fix("inl"), NULL, &st, &e), 0, "spans: inl opens");
	if (st == NULL)
		return;
	fn = symtab_find(st, "static_worker");
	OK(fn != NULL, "spans: static_worker");
	for (a = fn ? fn->addr : 0; fn != NULL && a < fn->addr + fn->size;
	    a = hi) {
		in = symtab_inline_span(st, a, &lo, &hi);
		spans++;
		inlined += in != NULL;
		if (lo > a || hi <= a)
			bad++;
		for (b = lo; b < hi && b < fn->addr + fn->size + 64; b++)
			if (symtab_inline_at(st, b) != in)
				bad++;
	}
	IS_INT(bad, 0, "spans: inline spans hold one answer each");
	/* leaf_add's call in mid_mix has DW_AT_ranges: two entries, one id. */
	{
		const struct sym_inline *seen[64];
		size_t ns = 0, j;
		int shared = 0;

		for (a = fn ? fn->addr : 0; fn && a < fn->addr + fn->size; a++) {
			in = symtab_inline_at(st, a);
			if (in == NULL || in->depth != 2)
				continue;
			for (j = 0; j < ns && seen[j] != in; j++)
				if (seen[j]->call_id == in->call_id &&
				    strcmp(in->name, "leaf_add") == 0 &&
				    seen[j]->parent->call_id ==
				    in->parent->call_id)
					shared = 1;
			if (j == ns && ns < 64)
				seen[ns++] = in;
		}
		OK(shared, "spans: a call with several ranges keeps one call_id");
	}
	OK(spans > 3 && inlined > 1, "spans: %zu spans in static_worker, %zu "
	    "inlined", spans, inlined);
	f2 = symtab_lookup_span(st, fn ? fn->addr + 1 : 0, &flo, &fhi);
	OK(f2 == fn && fn && flo == fn->addr && fhi == fn->addr + fn->size,
	    "spans: the function span is its range");
	OK(symtab_lookup_span(st, 1, &flo, &fhi) == NULL && flo == 0 &&
	    fhi == symtab_sym(st, 0)->addr, "spans: the gap before the first "
	    "function");
	symtab_free(st);
}

/* SYMTAB_NO_DWARF: names only. */
static void
test_no_dwarf(void)
{
	struct symtab_options opt = { NULL, 0,
	    SYMTAB_NO_DWARF | SYMTAB_NO_SYSTEM_DEBUG };
	struct symtab *st = NULL;
	struct symtab_stats stats;
	const struct sym *s;
	struct sym_line ln;

	IS_INT(symtab_open(fix("inl"), &opt, &st, &e_unused), 0,
	    "no DWARF: opens");
	if (st == NULL)
		return;
	symtab_get_stats(st, &stats);
	s = symtab_find(st, "static_worker");
	OK(!stats.has_dwarf && stats.n_lines == 0 && stats.n_inlines == 0 &&
	    s != NULL && symtab_inline_at(st, s->addr + 8) == NULL &&
	    !symtab_line(st, s->addr, &ln), "no DWARF: names, nothing else");
	symtab_free(st);
}

/* Compressed DWARF reads as the plain one does. */
static void
test_compressed(const char *name, const char *section, const char *ref)
{
	struct symtab *st = NULL;
	struct symtab_stats stats;
	char *txt = run("readelf", "-SW", fix(name), (char *)NULL);

	OK(txt && strstr(txt, section) != NULL, "%s: has %s", name, section);
	free(txt);
	IS_INT(symtab_open(fix(name), NULL, &st, &e_unused), 0, "%s: opens",
	    name);
	if (st == NULL)
		return;
	symtab_get_stats(st, &stats);
	OK(stats.has_dwarf && stats.n_inlines > 3, "%s: DWARF read", name);
	check_addr2line(st, fix(ref), "static_worker", NULL, name);
	symtab_free(st);
}

/* static_worker is gone from .symtab; DWARF must supply it. */
static void
test_dwarf_only_function(void)
{
	struct symtab_options opt = { NULL, 0, SYMTAB_NO_SYSTEM_DEBUG };
	struct elfsym *ref = NULL;
	struct symtab *st = NULL;
	const struct sym *s;
	struct error e;
	size_t n;

	n = readelf_funcs(fix("inl-pie"), ".symtab", syms_buf, 20000);
	ref = (struct elfsym *)elfsym_by_name(syms_buf, n, "static_worker");
	OK(ref != NULL, "inl-pie: readelf lists static_worker");
	n = readelf_funcs(fix("inl-nosym"), ".symtab", syms_buf + 10000, 10000);
	OK(elfsym_by_name(syms_buf + 10000, n, "static_worker") == NULL,
	    "inl-nosym: .symtab lacks static_worker");
	IS_INT(symtab_open(fix("inl-nosym"), &opt, &st, &e), 0,
	    "inl-nosym: opens");
	if (st == NULL || ref == NULL)
		return;
	s = symtab_lookup(st, ref->value + 1);
	OK(s != NULL && strcmp(s->name, "static_worker") == 0 &&
	    (s->flags & SYM_FROM_DWARF) && s->addr == ref->value &&
	    s->size == ref->size,
	    "inl-nosym: static_worker from DWARF at %#llx+%llu", ref->value,
	    ref->size);
	symtab_free(st);
}

/* ---- separate debuginfo ------------------------------------------- */

static char *
build_id_hex(const char *path)
{
	char *txt = run("readelf", "-n", path, (char *)NULL), *p, *id;

	if (txt == NULL)
		return NULL;
	p = strstr(txt, "Build ID: ");
	id = p ? strndup(p + 10, strcspn(p + 10, "\n")) : NULL;
	free(txt);
	return id;
}

static void
test_separate_debuginfo(void)
{
	struct symtab_options none = { NULL, 0, SYMTAB_NO_SYSTEM_DEBUG };
	const char *roots[2] = { "/nonexistent-root", NULL };
	struct symtab_options withroot = { roots, 2, SYMTAB_NO_SYSTEM_DEBUG };
	struct symtab *st = NULL;
	struct symtab_stats stats;
	const struct sym *s;
	struct error e;
	char want[8192], root[4096], *id;

	/* By .gnu_debuglink, beside the binary. */
	IS_INT(symtab_open(fix("strip/link/inl"), &none, &st, &e), 0,
	    "stripped (debuglink): opens");
	if (st != NULL) {
		IS_STR(symtab_debug_path(st), fix("strip/link/inl.debug"),
		    "stripped (debuglink): found inl.debug beside it");
		symtab_get_stats(st, &stats);
		IS_STR(stats.symbol_source, ".symtab",
		    "stripped (debuglink): .symtab from the debug file");
		check_ranges(st, fix("inl-pie"), ".symtab");
		check_addr2line(st, fix("inl-pie"), "static_worker", NULL,
		    "stripped (debuglink)");
		symtab_free(st);
		st = NULL;
	}

	/* No debuginfo reachable: .dynsym only, static function unnamed. */
	IS_INT(symtab_open(fix("strip/bid/inl"), &none, &st, &e), 0,
	    "stripped (no debuginfo): opens");
	if (st != NULL) {
		symtab_get_stats(st, &stats);
		IS_STR(stats.symbol_source, ".dynsym",
		    "stripped (no debuginfo): falls back to .dynsym");
		OK(symtab_debug_path(st) == NULL && !stats.has_dwarf,
		    "stripped (no debuginfo): no DWARF");
		OK(symtab_find(st, "static_worker") == NULL,
		    "stripped (no debuginfo): static_worker unknown");
		symtab_free(st);
		st = NULL;
	}

	/* By build-id, under a --debug-dir root. */
	snprintf(root, sizeof(root), "%s", fix("strip/root"));
	roots[1] = root;
	id = build_id_hex(fix("inl-pie"));
	OK(id != NULL && strlen(id) == 40, "inl-pie has a build-id");
	if (id == NULL)
		return;
	snprintf(want, sizeof(want), "%s/.build-id/%.2s/%s.debug", root, id,
	    id + 2);
	IS_INT(symtab_open(fix("strip/bid/inl"), &withroot, &st, &e), 0,
	    "stripped (build-id): opens");
	if (st != NULL) {
		IS_STR(symtab_debug_path(st), want,
		    "stripped (build-id): found under the second root");
		s = symtab_find(st, "static_worker");
		OK(s != NULL && !(s->flags & SYM_FROM_DYNSYM),
		    "stripped (build-id): static_worker named");
		check_addr2line(st, fix("inl-pie"), "static_worker", NULL,
		    "stripped (build-id)");
		symtab_free(st);
		st = NULL;
	}
	free(id);
}

/* perf's build-id cache layout (a snapshot's images/), and the CRC path. */
static void
test_debug_layouts(const char *tmp)
{
	struct symtab_options opt = { NULL, 0, SYMTAB_NO_SYSTEM_DEBUG };
	const char *roots[1];
	struct symtab *st = NULL;
	struct error e;
	char dir[4096], dbg[4200], *id, *out;

	id = build_id_hex(fix("inl-pie"));
	if (id == NULL)
		return;
	snprintf(dir, sizeof(dir), "%s/images/.build-id/%.2s/%s", tmp, id,
	    id + 2);
	snprintf(dbg, sizeof(dbg), "%s/debug", dir);
	free(id);
	out = run("mkdir", "-p", dir, (char *)NULL);
	free(out);
	out = run("cp", fix("strip/link/inl.debug"), dbg, (char *)NULL);
	free(out);
	snprintf(dir, sizeof(dir), "%s/images", tmp);
	roots[0] = dir;
	opt.debug_dirs = roots;
	opt.n_debug_dirs = 1;
	IS_INT(symtab_open(fix("strip/bid/inl"), &opt, &st, &e), 0,
	    "perf layout: opens");
	IS_STR(st ? symtab_debug_path(st) : NULL, dbg,
	    "perf layout: images/.build-id/xx/rest/debug found");
	OK(st && symtab_find(st, "static_worker") != NULL,
	    "perf layout: static_worker named");
	symtab_free(st);
	st = NULL;
	out = run("rm", "-rf", dir, (char *)NULL);
	free(out);

	/* Through a symbolic link: the debuglink is beside the real file. */
	opt.n_debug_dirs = 0;
	snprintf(dir, sizeof(dir), "%s/link-to-inl", tmp);
	OK(symlink(fix("strip/link/inl"), dir) == 0, "symlink made");
	IS_INT(symtab_open(dir, &opt, &st, &e), 0, "symlink: opens");
	OK(st && symtab_debug_path(st) &&
	    strstr(symtab_debug_path(st), "/strip/link/inl.debug") != NULL,
	    "symlink: debuglink looked up beside the real file");
	symtab_free(st);
	st = NULL;
	unlink(dir);

	IS_INT(symtab_open(fix("strip-crc/crc/inl"), &opt, &st, &e), 0,
	    "crc: opens");
	IS_STR(st ? symtab_debug_path(st) : NULL,
	    fix("strip-crc/crc/inl.debug"),
	    "crc: no build-id, debuglink CRC matches");
	OK(st && symtab_find(st, "static_worker") != NULL,
	    "crc: static_worker named");
	symtab_free(st);
	st = NULL;
	IS_INT(symtab_open(fix("strip-crc/crcbad/inl"), &opt, &st, &e), 0,
	    "crc mismatch: opens");
	OK(st && symtab_debug_path(st) == NULL,
	    "crc mismatch: a wrong inl.debug is refused");
	symtab_free(st);
	IS_U64(debugfind_crc32(0, (const unsigned char *)"123456789", 9),
	    0xcbf43926u, "crc32 check value");
}

/* ---- C++ ---------------------------------------------------------- */

struct name_pair {
	char raw[2048];
	char dem[4096];
};

static struct name_pair pairs[4096];

/* Pairs raw and demangled names from nm and nm -C (same order). */
static size_t
nm_pairs(const char *path)
{
	char *a = run("nm", "--defined-only", path, (char *)NULL);
	char *b = run("nm", "-C", "--defined-only", path, (char *)NULL);
	char *la, *lb, *sa, *sb;
	size_t n = 0;

	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return 0;
	}
	for (la = strtok_r(a, "\n", &sa), lb = strtok_r(b, "\n", &sb);
	    la != NULL && lb != NULL && n < 4096;
	    la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb)) {
		if (strlen(la) < 19 || strlen(lb) < 19 ||
		    strchr("tTwWi", la[17]) == NULL)
			continue;
		snprintf(pairs[n].raw, sizeof(pairs[n].raw), "%s", la + 19);
		snprintf(pairs[n].dem, sizeof(pairs[n].dem), "%s", lb + 19);
		n++;
	}
	free(a);
	free(b);
	return n;
}

static void
test_cxx(void)
{
	struct symtab *st = NULL;
	const struct sym *s;
	struct error e;
	size_t n, i, k, bad = 0, compared = 0;
	int lambda = 0, spaced = 0;

	IS_INT(symtab_open(fix("cxx"), NULL, &st, &e), 0, "cxx: opens");
	if (st == NULL)
		return;
	check_ranges(st, fix("cxx"), ".symtab");
	check_plt(st, fix("cxx"));
	s = symtab_find(st, "_ZdlPvm@plt");
	IS_STR(s ? s->name : NULL, "operator delete(void*, unsigned long)@plt",
	    "cxx: a PLT stub's target demangled");
	n = nm_pairs(fix("cxx"));
	for (i = 0; (s = symtab_sym(st, i)) != NULL; i++) {
		for (k = 0; k < n; k++)
			if (strcmp(pairs[k].raw, s->raw) == 0)
				break;
		if (k == n)
			continue;
		compared++;
		if (strcmp(pairs[k].dem, s->name) != 0 && bad++ < 5)
			DIAG("%s: nm -C '%s', ours '%s'", s->raw, pairs[k].dem,
			    s->name);
		lambda |= strstr(s->name, "{lambda(int)#1}") != NULL;
		spaced |= strstr(s->name, "std::allocator<char> >") != NULL;
	}
	OK(compared > 10, "cxx: %zu names compared with nm -C", compared);
	IS_INT(bad, 0, "cxx: every demangled name equals nm -C's");
	OK(lambda, "cxx: the lambda's name is intact");
	OK(spaced, "cxx: names with spaces and nested templates intact");
	s = symtab_find(st, "_ZN3geo5scaleIiEET_S1_S1_");
	OK(s != NULL && strcmp(s->name, "int geo::scale<int>(int, int)") == 0
	    && strcmp(s->raw, "_ZN3geo5scaleIiEET_S1_S1_") == 0,
	    "cxx: template: demangled and raw kept");
	s = symtab_find(st, "geo::thrower(int)");
	OK(s != NULL && strcmp(s->raw, "_ZN3geo7throwerEi") == 0,
	    "cxx: found by demangled name");
	symtab_free(st);
}

static void
test_demangle(void)
{
	static const struct {
		const char *raw, *want;
	} cases[] = {
		{ "_ZN1r5inner7generic17h204e2e43aaf846a2E",
		  "r::inner::generic" },
		{ "_RINvNtCs6GmmlP4bgsG_1r5inner7genericReEB4_",
		  "r::inner::generic::<&str>" },
		{ "_RINvNtCs6GmmlP4bgsG_1r5inner7genericmEB4_",
		  "r::inner::generic::<u32>" },
		{ "_ZZ4mainENKUliE_clEi",
		  "main::{lambda(int)#1}::operator()(int) const" },
		{ "_Z3fooi.cold", "foo(int) [clone .cold]" },
		{ "_ZN3geo5scaleIiEET_S1_S1_@@V_1.0",
		  "int geo::scale<int>(int, int)" },
	};
	size_t i;
	char *d;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		d = demangle(cases[i].raw);
		IS_STR(d, cases[i].want, "demangle %s", cases[i].raw);
		free(d);
	}
	OK(demangle("main") == NULL, "demangle: a C name is not mangled");
	OK(demangle("_Zgarbage") == NULL, "demangle: malformed gives NULL");
	IS_INT(demangle_unversioned_len("memcpy@@GLIBC_2.14"), 6,
	    "version suffix length");
}

/* ---- shared library with a load bias ------------------------------ */

/* The executable PT_LOAD: vaddr and offset. */
static int
exec_load(const char *path, unsigned long long *vaddr,
    unsigned long long *off)
{
	char *txt = run("readelf", "-lW", path, (char *)NULL), *line, *save;
	unsigned long long o, v, p, fs, ms;
	char flags[8];
	int found = 0;

	if (txt == NULL)
		return 0;
	for (line = strtok_r(txt, "\n", &save); line != NULL && !found;
	    line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx %7[RWE ]",
		    &o, &v, &p, &fs, &ms, flags) == 6 &&
		    strchr(flags, 'E') != NULL) {
			*vaddr = v;
			*off = o;
			found = 1;
		}
	free(txt);
	return found;
}

static void
test_shared_lib(void)
{
	const unsigned long long base = 0x7f3a12340000ull;
	struct symtab *st = NULL;
	struct sym_mapping m;
	const struct sym *s;
	unsigned long long v = 0, o = 0;
	uint64_t addr;
	struct error e;
	size_t n;
	const struct elfsym *pub, *priv;

	IS_INT(symtab_open(fix("libshl.so"), NULL, &st, &e), 0,
	    "libshl.so: opens");
	if (st == NULL)
		return;
	check_ranges(st, fix("libshl.so"), ".symtab");
	check_plt(st, fix("libshl.so"));
	n = readelf_funcs(fix("libshl.so"), ".symtab", syms_buf, 20000);
	pub = elfsym_by_name(syms_buf, n, "shl_public");
	priv = elfsym_by_name(syms_buf, n, "shl_private");
	OK(pub && priv && exec_load(fix("libshl.so"), &v, &o),
	    "libshl.so: readelf gives the symbols and the code segment");
	if (pub == NULL || priv == NULL) {
		symtab_free(st);
		return;
	}
	/* As an MMAP2 record gives it: page-aligned start and offset. */
	m.start = base + (v & ~0xfffull);
	m.end = m.start + 0x10000;
	m.pgoff = o & ~0xfffull;
	IS_INT(symtab_addr_from_map(st, &m, base + priv->value + 2, &addr), 0,
	    "libshl.so: runtime address converts");
	IS_U64(addr, priv->value + 2, "libshl.so: to the ELF address");
	s = symtab_lookup(st, addr);
	OK(s && strcmp(s->name, "shl_private") == 0,
	    "libshl.so: static function named at its runtime address");
	IS_INT(symtab_addr_from_map(st, &m, m.start - 1, &addr), -ERR_RANGE,
	    "libshl.so: an address before the mapping is refused");
	IS_INT(symtab_addr_from_offset(st, pub->value - v + o, &addr), 0,
	    "libshl.so: file offset converts");
	s = symtab_lookup(st, addr);
	OK(s && strcmp(s->name, "shl_public") == 0 && s->addr == pub->value,
	    "libshl.so: shl_public by file offset");
	check_addr2line(st, fix("libshl.so"), "shl_private", NULL,
	    "libshl.so");
	symtab_free(st);
}

/* ---- libc through libc6-dbg --------------------------------------- */

/*
 * The names perf report gives libc's hot functions (through libc6-dbg)
 * are the preferred names of ours: the alias choice is perf's.
 */
static void
test_perf_names(const char *tmp)
{
	char data[4200], *txt, *line, *save, *p, *at;
	struct symtab *st = NULL;
	const struct sym *s;
	size_t n = 0, bad = 0;

	snprintf(data, sizeof(data), "%s/perf.data", tmp);
	txt = run("perf", "record", "-q", "-e", "cpu-clock", "-o", data,
	    fix("memc"), (char *)NULL);
	free(txt);
	txt = run("perf", "report", "-i", data, "--sort", "dso,sym",
	    "--stdio", (char *)NULL);
	unlink(data);
	if (txt == NULL || strstr(txt, "libc.so.6") == NULL) {
		OK(1, "# SKIP perf record -e cpu-clock is not usable here");
		free(txt);
		return;
	}
	if (symtab_open(LIBC_PATH, NULL, &st, &e_unused) != 0) {
		OK(0, "libc opens: %s", e_unused.msg);
		free(txt);
		return;
	}
	for (line = strtok_r(txt, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || strstr(line, "libc.so.6") == NULL ||
		    (p = strstr(line, "[.] ")) == NULL)
			continue;
		p += 4;
		/* perf 6.1 prints a bare "@plt" for libc stubs it cannot name. */
		if (strcmp(p, "@plt") == 0)
			continue;
		n++;
		/*
		 * perf may print the versioned alias (memcpy@@GLIBC_2.14);
		 * our names keep versions in raw only (symtab.h), so compare
		 * without it.
		 */
		if ((at = strchr(p, '@')) != NULL && at != p &&
		    (at[1] == '@' || (at[1] >= 'A' && at[1] <= 'Z')))
			*at = '\0';
		s = symtab_find(st, p);
		if (s == NULL || strcmp(s->name, p) != 0) {
			if (bad++ < 3)
				DIAG("perf names '%s' (line '%s'), ours '%s'",
				    p, line, s ? s->name : "(none)");
		}
	}
	free(txt);
	if (n == 0) {
		/* Sampling: a run may hit no named libc function at all. */
		OK(1, "# SKIP perf sampled no named libc function this time");
		OK(1, "# SKIP nothing to compare");
		symtab_free(st);
		return;
	}
	OK(n >= 1, "perf: %zu libc functions sampled", n);
	IS_INT(bad, 0, "perf: every libc name perf reports is our preferred "
	    "name");
	symtab_free(st);
}

/* Debian's ld.so has no .symtab either: libc6-dbg names it too. */
static void
test_ldso(void)
{
	const char *path = "/lib64/ld-linux-x86-64.so.2";
	struct symtab *st = NULL;
	const struct elfsym *r;
	const struct sym *s;
	char want[4096], *id;
	size_t n;

	id = build_id_hex(path);
	if (id == NULL)
		return;
	snprintf(want, sizeof(want), "/usr/lib/debug/.build-id/%.2s/%s.debug",
	    id, id + 2);
	free(id);
	IS_INT(symtab_open(path, NULL, &st, &e_unused), 0, "ld.so: opens");
	if (st == NULL)
		return;
	IS_STR(symtab_debug_path(st), want, "ld.so: debuginfo by build-id");
	n = readelf_funcs(want, ".symtab", syms_buf, 20000);
	r = elfsym_by_name(syms_buf, n, "_dl_fixup");
	s = r ? symtab_lookup(st, r->value + 1) : NULL;
	OK(s && strcmp(s->name, "_dl_fixup") == 0 && s->addr == r->value &&
	    s->size == r->size, "ld.so: _dl_fixup as readelf says");
	check_ranges(st, want, ".symtab");
	symtab_free(st);
}

static void
test_libc(void)
{
	struct symtab *st = NULL;
	struct symtab_stats stats;
	const struct elfsym *r;
	const struct sym *s;
	struct error e;
	char want[4096], *id;
	struct sym_line ln = { "", 0, 0 };
	size_t n;
	static const char *names[] = { "memcpy", "__libc_start_call_main",
		"__memmove_avx_unaligned_erms", "malloc" };
	size_t i;

	if (access(LIBC_PATH, R_OK) != 0) {
		OK(1, "# SKIP no %s", LIBC_PATH);
		return;
	}
	id = build_id_hex(LIBC_PATH);
	if (id == NULL)
		return;
	snprintf(want, sizeof(want), "/usr/lib/debug/.build-id/%.2s/%s.debug",
	    id, id + 2);
	free(id);
	if (access(want, R_OK) != 0) {
		OK(0, "libc6-dbg installed (%s)", want);
		return;
	}
	IS_INT(symtab_open(LIBC_PATH, NULL, &st, &e), 0, "libc: opens");
	if (st == NULL)
		return;
	IS_STR(symtab_debug_path(st), want, "libc: debuginfo by build-id");
	symtab_get_stats(st, &stats);
	IS_STR(stats.symbol_source, ".symtab", "libc: .symtab of libc6-dbg");
	n = readelf_funcs(want, ".symtab", syms_buf, 20000);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char ver[256];

		r = elfsym_by_name(syms_buf, n, names[i]);
		if (r == NULL) {
			snprintf(ver, sizeof(ver), "%s@@GLIBC_2.14", names[i]);
			r = elfsym_by_name(syms_buf, n, ver);
		}
		s = r ? symtab_lookup(st, r->value + r->size / 2) : NULL;
		OK(r && s && strcmp(s->name, names[i]) == 0 &&
		    s->addr == r->value && s->size == r->size,
		    "libc: %s at %#llx+%llu as readelf says", names[i],
		    r ? r->value : 0, r ? r->size : 0);
	}
	s = symtab_find(st, "__memcpy_avx_unaligned_erms");
	OK(s && strcmp(s->name, "__memmove_avx_unaligned_erms") == 0 &&
	    s->n_aliases == 1 &&
	    strcmp(s->aliases[0], "__memcpy_avx_unaligned_erms") == 0,
	    "libc: __memcpy_avx_unaligned_erms is an alias of the longer "
	    "__memmove_avx_unaligned_erms, as perf names it");
	check_ranges(st, want, ".symtab");
	check_plt(st, LIBC_PATH);
	/*
	 * binutils 2.40's addr2line names libc's unit file (libc-start.c)
	 * where the line table says libc_start_call_main.h (readelf
	 * --debug-dump=decodedline and libdw agree): compare names and line
	 * numbers with addr2line, and the file with what readelf says.
	 */
	check_addr2line_mode(st, want, "__libc_start_call_main", NULL,
	    "libc", 0);
	r = elfsym_by_name(syms_buf, n, "__libc_start_call_main");
	OK(r && symtab_line(st, r->value, &ln) && ln.line == 29 &&
	    strcmp(ln.file, "./csu/../sysdeps/nptl/libc_start_call_main.h") ==
	    0, "libc: __libc_start_call_main at libc_start_call_main.h:29 "
	    "(%s:%u)", r ? ln.file : "", r ? ln.line : 0);
	symtab_free(st);
}

/* ---- JIT maps ----------------------------------------------------- */

static int
write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

static void
test_jitmap(const char *tmp)
{
	static const char map[] =
	    "7f0000001000 40 jit_one\n"
	    "0x7f0000001040 0x20 LazyCompile:*foo bar.js:12\n"
	    "7f0000002000 10 old_code\n"
	    "7f0000002000 10 new_code\n";
	char path[4096];
	struct symtab *st = NULL;
	struct sym_mapping m = { 0, UINT64_MAX, 0 };
	const struct sym *s;
	struct error e;
	uint64_t a;

	snprintf(path, sizeof(path), "%s/perf-1234.map", tmp);
	OK(write_file(path, map, sizeof(map) - 1) == 0, "jit: map written");
	IS_INT(symtab_open_jitmap(path, &st, &e), 0, "jit: loads");
	if (st == NULL)
		return;
	s = symtab_lookup(st, 0x7f000000103full);
	OK(s && strcmp(s->name, "jit_one") == 0 && s->addr == 0x7f0000001000ull
	    && s->size == 0x40 && (s->flags & SYM_JIT), "jit: jit_one range");
	s = symtab_lookup(st, 0x7f0000001050ull);
	IS_STR(s ? s->name : NULL, "LazyCompile:*foo bar.js:12",
	    "jit: a name with spaces, 0x prefixes");
	OK(symtab_lookup(st, 0x7f0000001060ull) == NULL, "jit: past the end");
	s = symtab_lookup(st, 0x7f0000002000ull);
	IS_STR(s ? s->name : NULL, "new_code", "jit: the later line wins");
	OK(symtab_addr_from_map(st, &m, 0x7f0000001010ull, &a) == 0 &&
	    a == 0x7f0000001010ull, "jit: runtime addresses are its own");
	symtab_free(st);
	st = NULL;

	/* A bad line and a last line cut mid-write: skipped, counted. */
	OK(write_file(path, "7f00 10 a\nzz 10 b\n7f80 10 c\n7f90 1", 30) == 0,
	    "jit: map with bad lines");
	IS_INT(symtab_open_jitmap(path, &st, &e), 0,
	    "jit: bad lines do not spoil the map");
	if (st != NULL) {
		struct symtab_stats stats;

		symtab_get_stats(st, &stats);
		IS_INT(stats.n_bad_lines, 2, "jit: two lines skipped");
		IS_INT(stats.first_bad_line, 2, "jit: the first on line 2");
		IS_STR(symtab_lookup(st, 0x7f85) ? symtab_lookup(st, 0x7f85)->name
		    : NULL, "c", "jit: the line after a bad one is kept");
		symtab_free(st);
		st = NULL;
	}
	OK(write_file(path, "zz 10 b\n", 8) == 0, "jit: map of nothing good");
	IS_INT(symtab_open_jitmap(path, &st, &e), -ERR_FORMAT,
	    "jit: no good line at all is a format error");
	OK(strstr(e.msg, "line 1: expected a hexadecimal start address") !=
	    NULL, "jit: the message names the line (%s)", e.msg);
	OK(st == NULL, "jit: nothing returned on error");
	OK(write_file(path, "", 0) == 0, "jit: empty map");
	IS_INT(symtab_open_jitmap(path, &st, &e), 0, "jit: empty map loads");
	OK(st && symtab_sym(st, 0) == NULL, "jit: and is empty");
	symtab_free(st);
	st = NULL;
	IS_INT(symtab_open_jitmap("/nonexistent/perf-1.map", &st, &e),
	    -ERR_NOTFOUND, "jit: missing map");
}

/* ---- errors ------------------------------------------------------- */

static void
test_errors(const char *tmp)
{
	char path[4096], *buf;
	struct symtab *st = NULL;
	struct stat sb;
	struct error e;
	size_t k, len, bad = 0;
	int fd, rc;

	IS_INT(symtab_open("/nonexistent/prog", NULL, &st, &e), -ERR_NOTFOUND,
	    "missing file");
	IS_STR(e.msg, "/nonexistent/prog: no such file", "missing: message");
	snprintf(path, sizeof(path), "%s/text", tmp);
	write_file(path, "#!/bin/sh\necho hello, this is not ELF\n", 38);
	IS_INT(symtab_open(path, NULL, &st, &e), -ERR_FORMAT, "not ELF");
	OK(strstr(e.msg, "/text: not an ELF file") != NULL,
	    "not ELF: message (%s)", e.msg);
	IS_INT(symtab_open(tmp, NULL, &st, &e), -ERR_FORMAT, "a directory");
	write_file(path, "", 0);
	IS_INT(symtab_open(path, NULL, &st, &e), -ERR_FORMAT, "empty file");

	/* The C fixture cut at many lengths: an error, never a crash. */
	fd = open(fix("inl"), O_RDONLY);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		OK(0, "inl readable");
		return;
	}
	len = (size_t)sb.st_size;
	buf = malloc(len);
	OK(buf && read(fd, buf, len) == (ssize_t)len, "inl read");
	close(fd);
	snprintf(path, sizeof(path), "%s/cut", tmp);
	for (k = 1; k < 64; k++) {
		size_t cut = len * k / 64;

		write_file(path, buf, cut);
		rc = symtab_open(path, NULL, &st, &e);
		if (rc != -ERR_TRUNCATED && rc != -ERR_FORMAT) {
			if (bad++ < 3)
				DIAG("cut at %zu: rc %d %s", cut, rc, e.msg);
		}
		symtab_free(st);
		st = NULL;
	}
	IS_INT(bad, 0, "truncated ELF: 63 cuts all fail cleanly");
	write_file(path, buf, len - 100);
	IS_INT(symtab_open(path, NULL, &st, &e), -ERR_TRUNCATED,
	    "truncated ELF: section headers cut");
	OK(strstr(e.msg, "section headers end past the file") != NULL,
	    "truncated ELF: message (%s)", e.msg);
	write_file(path, buf, 40);
	rc = symtab_open(path, NULL, &st, &e);
	OK(rc == -ERR_FORMAT || rc == -ERR_TRUNCATED,
	    "truncated ELF header: %s", e.msg);
	free(buf);
}

/* ---- the cache ---------------------------------------------------- */

struct cache_arg {
	struct symcache *c;
	const char *path;
	const struct symtab *st;
	int rc;
	uint64_t sum;		/* a digest of every answer the thread got */
};

/* Gets the shared table, then looks up every byte of every function. */
static void *
cache_thread(void *p)
{
	struct cache_arg *a = p;
	const struct sym_inline *in;
	const struct sym *s;
	struct sym_line ln;
	struct error e;
	uint64_t addr;
	size_t i;

	a->sum = 0;
	a->rc = symcache_get(a->c, a->path, 0, &a->st, &e);
	for (i = 0; a->rc == 0 && (s = symtab_sym(a->st, i)) != NULL; i++)
		for (addr = s->addr; addr < s->addr + s->size; addr++) {
			a->sum += (uint64_t)(uintptr_t)symtab_lookup(a->st, addr);
			for (in = symtab_inline_at(a->st, addr); in;
			    in = in->parent)
				a->sum += in->call_id + in->depth;
			if (symtab_line(a->st, addr, &ln))
				a->sum += ln.line + strlen(ln.file);
		}
	return NULL;
}

static void
test_cache(void)
{
	struct symcache *c = symcache_new(NULL);
	struct cache_arg a[4];
	pthread_t t[4];
	const struct symtab *st;
	struct error e;
	const char *path = fix("cxx");
	int i, same = 1;

	OK(c != NULL, "cache: created");
	for (i = 0; i < 4; i++) {
		a[i].c = c;
		a[i].path = path;
		pthread_create(&t[i], NULL, cache_thread, &a[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		same &= a[i].rc == 0 && a[i].st == a[0].st && a[i].st != NULL &&
		    a[i].sum == a[0].sum;
	}
	OK(same, "cache: four threads share one table and get the same "
	    "answers");
	IS_INT(symcache_get(c, "/nonexistent/x", 0, &st, &e), -ERR_NOTFOUND,
	    "cache: error");
	error_clear(&e);
	IS_INT(symcache_get(c, "/nonexistent/x", 0, &st, &e), -ERR_NOTFOUND,
	    "cache: same error again");
	IS_STR(e.msg, "/nonexistent/x: no such file", "cache: same message");
	symcache_free(c);
}

/*
 * symtab_options.root: the files of a snapshot open beneath it.  A link
 * there (planted, or swapped in after a check) is never followed: not
 * to the image, not to its debuginfo, not to a JIT map.
 */
static void
test_root(const char *tmp)
{
	struct symtab_options opt = { NULL, 0, SYMTAB_NO_SYSTEM_DEBUG };
	const char *roots[1];
	struct symcache *c;
	const struct symtab *cst;
	struct symtab *st = NULL;
	struct error e;
	char snap[4096], dir[4200], dbg[4300], img[4300], real[4300];
	char map[4300], why[4400], *id;

	id = build_id_hex(fix("inl-pie"));
	if (id == NULL)
		return;
	snprintf(snap, sizeof(snap), "%s/rootsnap", tmp);
	snprintf(dir, sizeof(dir), "%s/images/.build-id/%.2s/%s", snap, id,
	    id + 2);
	free(id);
	snprintf(dbg, sizeof(dbg), "%s/debug", dir);
	snprintf(img, sizeof(img), "%s/images/elf", snap);
	snprintf(real, sizeof(real), "%s/images/elf.real", snap);
	free(run("mkdir", "-p", dir, (char *)NULL));
	free(run("cp", fix("strip/link/inl.debug"), dbg, (char *)NULL));
	free(run("cp", fix("strip/bid/inl"), img, (char *)NULL));
	snprintf(dir, sizeof(dir), "%s/images", snap);
	roots[0] = dir;
	opt.debug_dirs = roots;
	opt.n_debug_dirs = 1;
	opt.root = snap;
	IS_INT(symtab_open(img, &opt, &st, &e), 0, "root: an image opens");
	IS_STR(st ? symtab_debug_path(st) : NULL, dbg,
	    "root: its debuginfo found beneath the snapshot");
	IS_U64(st ? symtab_refused(st)->n : 99, 0, "root: nothing refused");
	symtab_free(st);
	st = NULL;

	/* The debuginfo swapped for a link (to the very same bytes). */
	snprintf(map, sizeof(map), "%s/outside.debug", tmp);
	OK(rename(dbg, map) == 0 && symlink(map, dbg) == 0,
	    "root: debug is now a link out");
	IS_INT(symtab_open(img, &opt, &st, &e), 0,
	    "root: the image still opens");
	OK(st != NULL && symtab_debug_path(st) == NULL &&
	    symtab_find(st, "static_worker") == NULL,
	    "root: but the linked debuginfo is not read");
	/* Not dropped silently: counted, with why, for the tool to say. */
	IS_U64(st ? symtab_refused(st)->n : 0, 1,
	    "root: the linked debuginfo counted as refused");
	snprintf(why, sizeof(why), "%s: leads outside the snapshot "
	    "directory", dbg + strlen(snap) + 1);
	IS_STR(st ? symtab_refused(st)->first.msg : NULL, why,
	    "root: naming it");
	symtab_free(st);
	st = NULL;
	c = symcache_new(&opt);
	OK(c != NULL, "root: a cache");
	if (c != NULL) {
		struct symtab_refused r;

		IS_INT(symcache_get(c, img, 0, &cst, &e), 0,
		    "root: the cache loads the image");
		r = symcache_refused(c);
		IS_U64(r.n, 1, "root: the cache counts the refusal");
		IS_STR(r.first.msg, why, "root: the cache names it");
		symcache_free(c);
	}

	/* The image itself a link that stays inside the snapshot. */
	OK(rename(img, real) == 0 && symlink("elf.real", img) == 0,
	    "root: elf is now a link");
	IS_INT(symtab_open(img, &opt, &st, &e), -ERR_PERM,
	    "root: a linked image is refused");
	IS_STR(e.msg, "images/elf: a symbolic link on the way; links are not "
	    "followed inside the snapshot directory", "root: naming it");
	opt.root = NULL;
	IS_INT(symtab_open(img, &opt, &st, &e), 0,
	    "no root: the same link is followed, as named");
	symtab_free(st);
	st = NULL;

	/* A JIT map, through the cache, as the code map asks for it. */
	snprintf(real, sizeof(real), "%s/perf-1.map", tmp);
	write_file(real, "1000 10 jitted\n", 15);
	snprintf(map, sizeof(map), "%s/jit.map", snap);
	OK(symlink(real, map) == 0, "root: a JIT map linked out");
	opt.root = snap;
	c = symcache_new(&opt);
	OK(c != NULL, "root: a cache");
	if (c != NULL) {
		IS_INT(symcache_get(c, map, 1, &cst, &e), -ERR_PERM,
		    "root: the linked JIT map is refused");
		IS_STR(e.msg, "jit.map: leads outside the snapshot directory",
		    "root: naming it");
		symcache_free(c);
	}
	free(run("rm", "-rf", snap, (char *)NULL));
}

int
main(void)
{
	const char *b = getenv("PTKIT_BUILD");
	char tmp[] = "/tmp/t_symtab.XXXXXX";

	snprintf(fixdir, sizeof(fixdir), "%s/fixtures/sym", b ? b : "build");
	if (mkdtemp(tmp) == NULL) {
		OK(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	test_demangle();
	test_c_fixture("inl", 0);
	test_c_fixture("inl-pie", 1);
	test_c_fixture("inl-dw4", 1);
	test_compressed("inl-gz", ".debug_info", "inl-gz");
	/* binutils 2.40 cannot read .zdebug_rnglists: ask about the original. */
	test_compressed("inl-zgnu", ".zdebug_info", "inl-pie");
	test_dwarf_only_function();
	test_no_dwarf();
	test_separate_debuginfo();
	test_debug_layouts(tmp);
	test_dwz(tmp);
	test_spans();
	test_cxx();
	test_shared_lib();
	test_libc();
	test_ldso();
	test_perf_names(tmp);
	test_jitmap(tmp);
	test_errors(tmp);
	test_root(tmp);
	test_cache();
	free(run("rm", "-rf", tmp, (char *)NULL));
	return tap_done();
}
