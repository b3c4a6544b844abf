/*
 * symtab: see symtab.h.  This file holds the table itself: building the
 * sorted function array and its segments, the lookups, symtab_open() and
 * symtab_free().  ELF reading is in symelf.c, DWARF in dwarfinfo*.c, JIT
 * maps in jitmap.c.
 */
#include "sym/symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "sym/debugfind.h"
#include "sym/demangle.h"
#include "sym/symtab_int.h"

/* ---- arena ---------------------------------------------------------- */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

#define ARENA_CHUNK (256 * 1024)

void *
arena_alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->head;
	size_t cap;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (c == NULL || c->cap - c->used < size) {
		cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (c == NULL)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->bytes += sizeof(*c) + cap;
	}
	p = (char *)c->data + c->used;
	c->used += size;
	return p;
}

char *
arena_strndup(struct arena *a, const char *s, size_t len)
{
	char *p = arena_alloc(a, len + 1);

	if (p != NULL) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

char *
arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

void
arena_free(struct arena *a)
{
	struct arena_chunk *c, *next;

	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}

/* ---- segments ------------------------------------------------------- */

static int
range_in_cmp(const void *pa, const void *pb)
{
	const struct range_in *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi > b->hi ? -1 : 1;	/* outer first */
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return 0;
}

struct seg_out {
	struct range_seg *v;
	size_t n, cap;
};

static int
seg_emit(struct seg_out *o, uint64_t lo, uint64_t hi, uint32_t idx)
{
	struct range_seg *v;
	size_t cap;

	if (lo >= hi)
		return 0;
	if (o->n > 0 && o->v[o->n - 1].hi == lo && o->v[o->n - 1].idx == idx) {
		o->v[o->n - 1].hi = hi;
		return 0;
	}
	if (o->n == o->cap) {
		cap = o->cap ? 2 * o->cap : 64;
		v = realloc(o->v, cap * sizeof(*v));
		if (v == NULL)
			return -1;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n].lo = lo;
	o->v[o->n].hi = hi;
	o->v[o->n].idx = idx;
	o->n++;
	return 0;
}

/*
 * A sweep with a stack of open intervals: the top owns the addresses from
 * the cursor until it closes or the next interval opens.  An interval that
 * closed under the cursor (a partial overlap) owns nothing more.
 */
int
segs_build(struct range_in *in, size_t n, struct range_seg **out,
    size_t *n_out)
{
	struct seg_out o = { NULL, 0, 0 };
	struct range_in **stack;
	size_t i, top = 0;
	uint64_t cur = 0;
	int rc = 0;

	*out = NULL;
	*n_out = 0;
	stack = malloc((n + 1) * sizeof(*stack));
	if (stack == NULL)
		return -ERR_NOMEM;
	qsort(in, n, sizeof(*in), range_in_cmp);
	for (i = 0; i <= n && rc == 0; i++) {
		int last = i == n;
		uint64_t lo = last ? UINT64_MAX : in[i].lo;

		if (!last && in[i].lo >= in[i].hi)
			continue;
		while (top > 0 && stack[top - 1]->hi <= lo && rc == 0) {
			struct range_in *t = stack[--top];

			if (t->hi > cur) {
				rc = seg_emit(&o, cur, t->hi, t->idx);
				cur = t->hi;
			}
		}
		if (last || rc != 0)
			break;
		if (top > 0 && lo > cur)
			rc = seg_emit(&o, cur, lo, stack[top - 1]->idx);
		cur = lo;
		stack[top++] = &in[i];
	}
	free(stack);
	if (rc != 0) {
		free(o.v);
		return -ERR_NOMEM;
	}
	*out = o.v;
	*n_out = o.n;
	return 0;
}

/* The number of segments with s.lo <= addr. */
static size_t
segs_upper(const struct range_seg *s, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long
segs_find(const struct range_seg *s, size_t n, uint64_t addr)
{
	size_t k = segs_upper(s, n, addr);

	if (k == 0 || addr >= s[k - 1].hi)
		return -1;
	return (long)(k - 1);
}

long
segs_span(const struct range_seg *s, size_t n, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	size_t k = segs_upper(s, n, addr);

	if (k > 0 && addr < s[k - 1].hi) {
		*lo = s[k - 1].lo;
		*hi = s[k - 1].hi;
		return (long)(k - 1);
	}
	*lo = k > 0 ? s[k - 1].hi : 0;
	*hi = k < n ? s[k].lo : UINT64_MAX;
	return -1;
}

/* ---- building the function array ------------------------------------ */

int
symbuild_add(struct symtab *st, struct symbuild *b, const struct rawsym *r,
    const char *raw, size_t raw_len, struct error *e)
{
	struct rawsym *v;
	size_t cap;

	if (b->n == b->cap) {
		cap = b->cap ? 2 * b->cap : 1024;
		v = realloc(b->v, cap * sizeof(*v));
		if (v == NULL)
			return error_set(e, ERR_NOMEM, "symbol table");
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n] = *r;
	b->v[b->n].raw = arena_strndup(&st->arena, raw, raw_len);
	if (b->v[b->n].raw == NULL)
		return error_set(e, ERR_NOMEM, "symbol name");
	b->n++;
	return 0;
}

void
symbuild_free(struct symbuild *b)
{
	free(b->v);
	b->v = NULL;
	b->n = b->cap = 0;
}

static size_t
leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Address order, then the alias preference documented in symtab.h (perf's
 * choose_best_symbol, so that names agree with perf script's).
 */
/*
 * A compat alias: a name with a version that is not the default one
 * ("cfree@GLIBC_2.2.5", against "free@@GLIBC_2.2.5" or plain "free").
 */
static int
is_compat(const char *raw)
{
	const char *at = strchr(raw, '@');

	return at != NULL && at[1] != '@' && strcmp(at, "@plt") != 0;
}

static int
rawsym_cmp(const void *pa, const void *pb)
{
	const struct rawsym *a = pa, *b = pb;
	size_t ua, ub, la, lb;
	int ca, cb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->type_rank != b->type_rank)
		return a->type_rank < b->type_rank ? -1 : 1;
	if ((a->size == 0) != (b->size == 0))
		return a->size != 0 ? -1 : 1;
	if (a->bind_rank != b->bind_rank)
		return a->bind_rank < b->bind_rank ? -1 : 1;
	ca = is_compat(a->raw);
	cb = is_compat(b->raw);
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (a->seq_rank != b->seq_rank)
		return a->seq_rank < b->seq_rank ? -1 : 1;
	ua = leading_underscores(a->raw);
	ub = leading_underscores(b->raw);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	la = demangle_unversioned_len(a->raw);
	lb = demangle_unversioned_len(b->raw);
	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(a->raw, b->raw);
}

static int
same_base(const char *a, const char *b)
{
	size_t la = demangle_unversioned_len(a);

	return la == demangle_unversioned_len(b) && memcmp(a, b, la) == 0;
}

/* "target@plt" with target demangled. */
static const char *
plt_name(struct symtab *st, const char *raw)
{
	size_t len = strlen(raw) - 4;	/* without "@plt" */
	char *target, *dm, *name;

	target = strndup(raw, len);
	if (target == NULL)
		return NULL;
	dm = demangle(target);
	free(target);
	if (dm == NULL)
		return raw;
	len = strlen(dm);
	name = arena_alloc(&st->arena, len + 5);
	if (name != NULL) {
		memcpy(name, dm, len);
		memcpy(name + len, "@plt", 5);
	}
	free(dm);
	return name;
}

/*
 * The display name of raw, in the arena.  JIT names are kept as they are;
 * a PLT stub's target is demangled ("operator delete(void*)@plt").
 */
static const char *
display_name(struct symtab *st, const char *raw, uint32_t flags)
{
	char *dm;
	const char *name;

	if (flags & SYM_JIT)
		return raw;
	if (flags & SYM_PLT)
		return plt_name(st, raw);
	dm = demangle(raw);
	if (dm == NULL)
		return arena_strndup(&st->arena, raw,
		    demangle_unversioned_len(raw));
	name = arena_strdup(&st->arena, dm);
	free(dm);
	return name;
}

/* Fills s from the group g[0..n) (g[0] is the preferred entry). */
static int
make_group(struct symtab *st, struct sym *s, const struct rawsym *g,
    size_t n, uint64_t next_addr)
{
	const char **aliases;
	size_t i, j, k = 0;
	uint64_t size = 0, end;

	for (i = 0; i < n; i++)
		if (g[i].size > size)
			size = g[i].size;
	s->addr = g[0].addr;
	s->raw = g[0].raw;
	s->flags = g[0].flags;
	s->name = display_name(st, g[0].raw, g[0].flags);
	if (s->name == NULL)
		return -1;
	if (size == 0) {
		end = next_addr;
		if (g[0].limit > s->addr && (end <= s->addr || g[0].limit < end))
			end = g[0].limit;
		if (end > s->addr) {
			size = end - s->addr;
			s->flags |= SYM_SIZE_GUESSED;
		}
	}
	s->size = size;
	aliases = arena_alloc(&st->arena, n * sizeof(*aliases));
	if (aliases == NULL)
		return -1;
	for (i = 1; i < n; i++) {
		int dup = same_base(g[i].raw, g[0].raw);

		for (j = 0; j < k && !dup; j++)
			dup = same_base(g[i].raw, aliases[j]);
		if (!dup)
			aliases[k++] = g[i].raw;
	}
	s->aliases = aliases;
	s->n_aliases = (uint32_t)k;
	return 0;
}

static int
build_segs(const struct sym *syms, size_t n_syms, struct range_seg **segs,
    size_t *n_segs)
{
	struct range_in *in;
	size_t i;
	int rc;

	in = malloc((n_syms + 1) * sizeof(*in));
	if (in == NULL)
		return -ERR_NOMEM;
	for (i = 0; i < n_syms; i++) {
		in[i].lo = syms[i].addr;
		in[i].hi = syms[i].addr + syms[i].size;
		if (in[i].hi < in[i].lo)
			in[i].hi = UINT64_MAX;
		in[i].idx = (uint32_t)i;
		in[i].order = (uint32_t)i;
	}
	rc = segs_build(in, n_syms, segs, n_segs);
	free(in);
	return rc;
}

int
symtab_build_syms(struct symtab *st, struct symbuild *b, struct sym **out,
    size_t *n_out, struct range_seg **segs, size_t *n_segs)
{
	struct sym *syms;
	size_t i, j, n = 0;
	uint64_t next, covered = 0;

	*out = NULL;
	*segs = NULL;
	*n_out = *n_segs = 0;
	if (b->n > 0)
		qsort(b->v, b->n, sizeof(*b->v), rawsym_cmp);
	syms = malloc((b->n + 1) * sizeof(*syms));
	if (syms == NULL)
		return -ERR_NOMEM;
	for (i = 0; i < b->n; i = j) {
		for (j = i + 1; j < b->n && b->v[j].addr == b->v[i].addr; j++)
			;
		/* A label inside a function with a size is not an entry. */
		if (b->v[i].type_rank != 0 && b->v[i].addr < covered)
			continue;
		next = j < b->n ? b->v[j].addr : 0;
		if (make_group(st, &syms[n], &b->v[i], j - i, next) != 0) {
			free(syms);
			return -ERR_NOMEM;
		}
		if (!(syms[n].flags & SYM_SIZE_GUESSED) &&
		    syms[n].addr + syms[n].size > covered)
			covered = syms[n].addr + syms[n].size;
		n++;
	}
	if (build_segs(syms, n, segs, n_segs) != 0) {
		free(syms);
		return -ERR_NOMEM;
	}
	*out = syms;
	*n_out = n;
	return 0;
}

int
symtab_finish_syms(struct symtab *st, struct symbuild *b, struct error *e)
{
	struct range_seg *segs;
	struct sym *syms;
	size_t i, n, n_segs;

	if (symtab_build_syms(st, b, &syms, &n, &segs, &n_segs) != 0)
		return error_set(e, ERR_NOMEM, "symbol table");
	free(st->syms);
	free(st->segs);
	st->syms = syms;
	st->n_syms = n;
	st->segs = segs;
	st->n_segs = n_segs;
	st->stats.n_syms = n;
	st->stats.n_from_dwarf = st->stats.n_plt = 0;
	for (i = 0; i < n; i++) {
		if (syms[i].flags & SYM_FROM_DWARF)
			st->stats.n_from_dwarf++;
		if (syms[i].flags & SYM_PLT)
			st->stats.n_plt++;
	}
	return 0;
}

/* ---- lookups -------------------------------------------------------- */

const struct sym *
symtab_lookup(const struct symtab *st, uint64_t addr)
{
	long i = segs_find(st->segs, st->n_segs, addr);

	if (i >= 0)
		return &st->syms[st->segs[i].idx];
	return st->dw != NULL ? dwarfinfo_fn(st, addr, NULL, NULL) : NULL;
}

const struct sym *
symtab_lookup_span(const struct symtab *st, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	long i = segs_span(st->segs, st->n_segs, addr, lo, hi);

	if (i >= 0)
		return &st->syms[st->segs[i].idx];
	return st->dw != NULL ? dwarfinfo_fn(st, addr, lo, hi) : NULL;
}

const struct sym_inline *
symtab_inline_span(const struct symtab *st, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	long i;

	if (st->dw != NULL) {
		*lo = 0;
		*hi = UINT64_MAX;
		return dwarfinfo_inline(st, addr, lo, hi);
	}
	i = segs_span(st->isegs, st->n_isegs, addr, lo, hi);
	return i < 0 ? NULL : &st->inl[st->isegs[i].idx];
}

const struct sym_inline *
symtab_inline_at(const struct symtab *st, uint64_t addr)
{
	long i;

	if (st->dw != NULL)
		return dwarfinfo_inline(st, addr, NULL, NULL);
	i = segs_find(st->isegs, st->n_isegs, addr);
	return i < 0 ? NULL : &st->inl[st->isegs[i].idx];
}

/*
 * The last line row at or before addr: first in the sampled index (small
 * enough to stay in cache), then among the LINE_STRIDE rows it points to.
 */
const struct line_row *
line_table_find(const struct line_table *lt, uint64_t addr)
{
	size_t lo = 0, hi = lt->n_index, mid, k, end;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (lt->index[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	k = (lo - 1) * LINE_STRIDE;
	end = k + LINE_STRIDE < lt->n_rows ? k + LINE_STRIDE : lt->n_rows;
	while (k + 1 < end && lt->rows[k + 1].addr <= addr)
		k++;
	return &lt->rows[k];
}

int
symtab_line(const struct symtab *st, uint64_t addr, struct sym_line *out)
{
	const struct line_table *lt = &st->lines;
	const struct line_row *r;

	if (st->dw != NULL)
		r = dwarfinfo_line(st, addr, &lt);
	else
		r = line_table_find(lt, addr);
	if (r == NULL || r->file == LINE_END)
		return 0;
	out->file = lt->files[r->file];
	out->line = r->line;
	out->column = r->column;
	return 1;
}

int
symtab_addr_is_code(const struct symtab *st, uint64_t addr)
{
	size_t i;

	if (st->is_jit)
		return 1;
	for (i = 0; i < st->n_loads; i++) {
		const struct load_seg *l = &st->loads[i];

		if ((l->flags & PF_X) && addr >= l->vaddr &&
		    addr - l->vaddr < l->memsz)
			return 1;
	}
	return 0;
}

int
symtab_addr_from_offset(const struct symtab *st, uint64_t offset,
    uint64_t *addr)
{
	size_t i;

	if (st->is_jit) {
		*addr = offset;
		return 0;
	}
	/* Executable segments first: the trace only asks about code. */
	for (i = 0; i < 2 * st->n_loads; i++) {
		const struct load_seg *l = &st->loads[i % st->n_loads];
		int want_x = i < st->n_loads;

		if (!!(l->flags & PF_X) != want_x)
			continue;
		if (offset >= l->offset && offset - l->offset < l->filesz) {
			*addr = l->vaddr + (offset - l->offset);
			return 0;
		}
	}
	return -ERR_RANGE;
}

int
symtab_addr_from_map(const struct symtab *st, const struct sym_mapping *m,
    uint64_t ip, uint64_t *addr)
{
	if (st->is_jit) {
		*addr = ip;
		return 0;
	}
	if (ip < m->start || ip >= m->end)
		return -ERR_RANGE;
	return symtab_addr_from_offset(st, ip - m->start + m->pgoff, addr);
}

const struct sym *
symtab_sym(const struct symtab *st, size_t i)
{
	if (st->dw != NULL)
		return dwarfinfo_sym(st, i);
	return i < st->n_syms ? &st->syms[i] : NULL;
}

/* name is s's name, raw name or an alias (versions aside, not for PLT). */
static int
sym_matches(const struct sym *s, const char *name)
{
	int versions = !(s->flags & (SYM_PLT | SYM_JIT));
	uint32_t k;

	if (strcmp(s->name, name) == 0 || strcmp(s->raw, name) == 0 ||
	    (versions && same_base(s->raw, name)))
		return 1;
	for (k = 0; k < s->n_aliases; k++)
		if (strcmp(s->aliases[k], name) == 0 ||
		    (versions && same_base(s->aliases[k], name)))
			return 1;
	return 0;
}

const struct sym *
symtab_find(const struct symtab *st, const char *name)
{
	const struct sym *s;
	size_t i;

	for (i = 0; (s = symtab_sym(st, i)) != NULL; i++)
		if (sym_matches(s, name))
			return s;
	return NULL;
}

void
symtab_get_stats(const struct symtab *st, struct symtab_stats *out)
{
	*out = st->stats;
	out->n_bytes = sizeof(*st) +
	    st->n_syms * sizeof(*st->syms) + st->n_segs * sizeof(*st->segs) +
	    st->n_inl * sizeof(*st->inl) + st->n_isegs * sizeof(*st->isegs) +
	    st->lines.n_rows * sizeof(*st->lines.rows) +
	    st->lines.n_index * sizeof(*st->lines.index) +
	    st->lines.n_files * sizeof(*st->lines.files) +
	    st->n_loads * sizeof(*st->loads);
	if (st->dw != NULL)
		dwarfinfo_stats(st, out);
	out->n_bytes += st->arena.bytes;
}

const struct symtab_refused *
symtab_refused(const struct symtab *st)
{
	return &st->refused;
}

void
symtab_note_refused(struct symtab_refused *r, int rc, const struct error *e)
{
	if (r == NULL || rc != -ERR_PERM)
		return;
	if (r->n++ == 0)
		r->first = *e;
}

const char *
symtab_path(const struct symtab *st)
{
	return st->path;
}

const char *
symtab_debug_path(const struct symtab *st)
{
	return st->debug_path;
}

const unsigned char *
symtab_build_id(const struct symtab *st, size_t *len)
{
	*len = st->build_id_len;
	return st->build_id_len > 0 ? st->build_id : NULL;
}

void
symtab_free(struct symtab *st)
{
	if (st == NULL)
		return;
	free(st->path);
	free(st->debug_path);
	free(st->build_id);
	free(st->syms);
	free(st->segs);
	free(st->inl);
	free(st->isegs);
	free(st->lines.rows);
	free(st->lines.index);
	free(st->lines.files);
	free(st->loads);
	dwarfinfo_free(st->dw);
	arena_free(&st->arena);
	free(st);
}

/* ---- opening an image ----------------------------------------------- */

void
elf_file_close(struct elf_file *f)
{
	if (f->elf != NULL)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/* Checks that every header and section the file claims lies inside it. */
static int
elf_check_bounds(Elf *elf, off_t fsize, const char *path, struct error *e)
{
	uint64_t size = (uint64_t)fsize;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	size_t shnum;

	if (gelf_getehdr(elf, &eh) == NULL)
		return error_set(e, ERR_FORMAT, "%s: bad ELF header: %s", path,
		    elf_errmsg(-1));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64)
		return error_set(e, ERR_UNSUPPORTED, "%s: not a 64-bit ELF file",
		    path);
	if (eh.e_phoff > size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > size - eh.e_phoff)
		return error_set(e, ERR_TRUNCATED,
		    "%s: program headers end past the file (%llu bytes)", path,
		    (unsigned long long)size);
	/* Before libelf reads them: it reports a cut-off table as empty. */
	if (eh.e_shoff == 0)
		return error_set(e, ERR_UNSUPPORTED, "%s: no section headers",
		    path);
	shnum = eh.e_shnum > 0 ? eh.e_shnum : 1;
	if (eh.e_shoff > size || (uint64_t)shnum * eh.e_shentsize >
	    size - eh.e_shoff)
		return error_set(e, ERR_TRUNCATED,
		    "%s: section headers end past the file (%llu bytes)", path,
		    (unsigned long long)size);
	if (elf_getshdrnum(elf, &shnum) != 0 || shnum == 0 ||
	    shnum > (size - eh.e_shoff) / (eh.e_shentsize ? eh.e_shentsize : 1))
		return error_set(e, ERR_FORMAT, "%s: bad section header count",
		    path);
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL)
			return error_set(e, ERR_FORMAT, "%s: bad section header",
			    path);
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset))
			return error_set(e, ERR_TRUNCATED,
			    "%s: section %zu ends past the file (%llu bytes)",
			    path, elf_ndxscn(scn), (unsigned long long)size);
	}
	return 0;
}

int
symfile_open(const char *root, const char *path, struct error *e)
{
	const char *rel = beneath_inside(root, path);
	int fd, saved;

	if (rel != NULL)
		return beneath_open_at(root, rel, BENEATH_FILE, 0,
		    "the snapshot directory", e);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return error_set(e, ERR_NOTFOUND, "%s: no such file",
			    path);
		return error_set_errno(e, errno, "%s", path);
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		saved = errno;
		close(fd);
		return error_set_errno(e, saved, "%s", path);
	}
	return fd;
}

static int
elf_file_open(struct elf_file *f, const char *root, const char *path,
    struct error *e)
{
	struct stat sb;
	int rc;

	f->elf = NULL;
	f->fd = symfile_open(root, path, e);
	if (f->fd < 0)
		return f->fd;
	if (fstat(f->fd, &sb) != 0) {
		rc = error_set_errno(e, errno, "%s", path);
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		rc = error_set(e, ERR_FORMAT, "%s: not a regular file", path);
		goto fail;
	}
	f->size = sb.st_size;
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (f->elf == NULL || elf_kind(f->elf) != ELF_K_ELF) {
		rc = error_set(e, ERR_FORMAT, "%s: not an ELF file", path);
		goto fail;
	}
	rc = elf_check_bounds(f->elf, f->size, path, e);
	if (rc == 0)
		return 0;
fail:
	elf_file_close(f);
	return rc;
}

static int
copy_build_id(struct symtab *st, Elf *elf, struct error *e)
{
	const unsigned char *id;
	size_t len = debugfind_build_id(elf, &id);

	if (len == 0)
		return 0;
	st->build_id = malloc(len);
	if (st->build_id == NULL)
		return error_set(e, ERR_NOMEM, "build-id");
	memcpy(st->build_id, id, len);
	st->build_id_len = len;
	return 0;
}

/* Opens the separate debuginfo if the image lacks symbols or DWARF. */
static int
open_debuginfo(struct symtab *st, struct elf_file *main_f,
    struct elf_file *dbg, const struct symtab_options *opt, struct error *e)
{
	int want_dwarf = !(opt->flags & SYMTAB_NO_DWARF);
	unsigned flags = 0;
	struct error why;
	char *path = NULL;
	int rc;

	if (symelf_has_section(main_f->elf, ".symtab") &&
	    (!want_dwarf || symelf_has_section(main_f->elf, ".debug_info") ||
	    symelf_has_section(main_f->elf, ".zdebug_info")))
		return 0;
	if (opt->flags & SYMTAB_NO_SYSTEM_DEBUG)
		flags |= DEBUGFIND_NO_SYSTEM;
	if (opt->flags & SYMTAB_NO_DEBUGLINK)
		flags |= DEBUGFIND_NO_DEBUGLINK;
	rc = debugfind(main_f->elf, st->path, opt->root, opt->debug_dirs,
	    opt->n_debug_dirs, flags, &st->refused, &path, e);
	if (rc <= 0)
		return rc;
	/* A debuginfo file that does not open is as good as none (one
	 * swapped for a link since debugfind's check is refused, and said). */
	error_clear(&why);
	if ((rc = elf_file_open(dbg, opt->root, path, &why)) != 0) {
		symtab_note_refused(&st->refused, rc, &why);
		free(path);
		return 0;
	}
	st->debug_path = path;
	return 0;
}

static int
load_image(struct symtab *st, struct elf_file *main_f, struct elf_file *dbg,
    const struct symtab_options *opt, struct error *e)
{
	struct symbuild b = { NULL, 0, 0 };
	struct elf_file *dwarf_f;
	const char *dwarf_path;
	size_t n_elf;
	int rc;

	rc = copy_build_id(st, main_f->elf, e);
	if (rc == 0)
		rc = symelf_read_loads(st, main_f->elf, e);
	if (rc == 0)
		rc = open_debuginfo(st, main_f, dbg, opt, e);
	if (rc == 0)
		rc = symelf_read_syms(st, main_f->elf, dbg->elf, &b, e);
	if (rc == 0)
		rc = symtab_finish_syms(st, &b, e);
	if (rc == 0 && !(opt->flags & SYMTAB_NO_DWARF)) {
		dwarf_f = main_f;
		dwarf_path = st->path;
		if (dbg->elf != NULL &&
		    (symelf_has_section(dbg->elf, ".debug_info") ||
		    symelf_has_section(dbg->elf, ".zdebug_info"))) {
			dwarf_f = dbg;
			dwarf_path = st->debug_path;
		}
		n_elf = b.n;
		rc = dwarfinfo_read(st, dwarf_f, dwarf_path, opt, &b, e);
		if (rc == 0 && b.n > n_elf)
			rc = symtab_finish_syms(st, &b, e);
	}
	symbuild_free(&b);
	return rc;
}

int
symtab_open(const char *path, const struct symtab_options *opt,
    struct symtab **out, struct error *e)
{
	static const struct symtab_options defaults;
	struct elf_file main_f = { -1, NULL, 0 }, dbg = { -1, NULL, 0 };
	struct symtab *st;
	int rc;

	*out = NULL;
	if (opt == NULL)
		opt = &defaults;
	elf_version(EV_CURRENT);
	rc = elf_file_open(&main_f, opt->root, path, e);
	if (rc != 0)
		return rc;
	st = calloc(1, sizeof(*st));
	if (st == NULL || (st->path = strdup(path)) == NULL) {
		free(st);
		elf_file_close(&main_f);
		return error_set(e, ERR_NOMEM, "%s: symbol table", path);
	}
	st->stats.symbol_source = "none";
	rc = load_image(st, &main_f, &dbg, opt, e);
	elf_file_close(&dbg);
	elf_file_close(&main_f);
	if (rc != 0) {
		symtab_free(st);
		return rc;
	}
	*out = st;
	return 0;
}
