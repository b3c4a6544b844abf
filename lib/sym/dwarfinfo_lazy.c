/*
 * dwarfinfo_lazy: the lazy DWARF index of a symtab (the default; see
 * dwarfinfo.c for the whole design).  Owns the index symtab_open() builds
 * from the units' address ranges (.debug_aranges, else each unit's ranges):
 * units whose ranges overlap grouped, the groups' disjoint regions, the
 * groups read at open because their functions change the symbol table,
 * reading a group's DIEs (and, apart, its line rows) the first time a
 * lookup needs them, publishing what was read without a lock for later
 * lookups, the lookups themselves (dwarfinfo_fn, _inline, _line, _sym,
 * _stats) and the DWARF source a lazy table reads (the sections through
 * dwarfimg.h, else the file).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sym/dwarfimg.h"
#include "sym/dwarfinfo_int.h"
#include "sym/symtab_int.h"

/* What one group of units holds, once read. */
struct dw_part {
	struct sym *syms;	/* functions only DWARF knows, and their */
	size_t n_syms;		/* segments (none for a group read at open: */
	struct range_seg *segs;	/* its functions went into st->syms) */
	size_t n_segs;
	struct inl_table inl;
};

/* Units whose address ranges overlap, transitively: read together. */
struct dw_group {
	_Atomic(struct dw_part *) part;	/* NULL until read */
	_Atomic(struct line_table *) lines;	/* NULL until read */
	uint32_t first, n;		/* their units: unit_off[first ..] */
};

/* Addresses of one group: regions are disjoint and sorted. */
struct dw_region {
	uint64_t lo, hi;
	uint32_t group;
};

/* Every function in address order, for symtab_sym(). */
struct sym_list {
	const struct sym **v;
	size_t n;
};

struct dwarf_lazy {
	pthread_mutex_t lock;	/* held while libdw is used */
	struct elf_file f;	/* the file the DWARF is in, or: */
	char *image;		/* its sections decompressed (dwarfimg.h) */
	size_t image_size;
	Elf *image_elf;
	Dwarf *dw;
	struct alt_file alt;
	Dwarf_Off *unit_off;	/* unit DIE offsets, by group */
	struct dw_group *groups;
	size_t n_groups;
	struct dw_region *regions;
	size_t n_regions;
	struct range_seg *solid;	/* see covered() */
	size_t n_solid;
	struct file_set files;	/* call sites' files, shared by groups */
	uint32_t n_calls;	/* call_ids handed out */
	struct dw_part empty;	/* a group that could not be read */
	struct line_table no_lines;	/* ... nor its line rows */
	_Atomic(struct sym_list *) all;
};

/* One unit while the index is built. */
struct unit_ent {
	Dwarf_Off off, die_off;
	uint32_t parent;	/* union-find over overlapping units */
	uint32_t group;
	int has_range;
};

/* An address range of one unit. */
struct piece {
	uint64_t lo, hi;
	uint32_t unit;
};

struct lazy_build {
	struct unit_ent *u;
	size_t n_u;
	struct piece *p;
	size_t n_p, cap_p;
};

static int
add_piece(struct lazy_build *lb, uint64_t lo, uint64_t hi, uint32_t unit)
{
	if (lb->n_p == lb->cap_p) {
		size_t cap = lb->cap_p ? 2 * lb->cap_p : 1024;
		struct piece *v = realloc(lb->p, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		lb->p = v;
		lb->cap_p = cap;
	}
	lb->p[lb->n_p].lo = lo;
	lb->p[lb->n_p].hi = hi;
	lb->p[lb->n_p].unit = unit;
	lb->n_p++;
	lb->u[unit].has_range = 1;
	return 0;
}

/* 1 when [lo, hi) meets an executable segment: nothing else has code. */
static int
range_has_code(const struct symtab *st, uint64_t lo, uint64_t hi)
{
	size_t i;

	for (i = 0; i < st->n_loads; i++) {
		const struct load_seg *l = &st->loads[i];

		if ((l->flags & PF_X) && lo < l->vaddr + l->memsz &&
		    hi > l->vaddr)
			return 1;
	}
	return 0;
}

/* The units of .debug_info, in offset order (the eager pass's order). */
static int
list_units(Dwarf *dw, struct lazy_build *lb)
{
	Dwarf_Off off = 0, next, abbrev;
	size_t hsize, cap = 0;
	uint8_t asize, osize;
	Dwarf_Half version;
	struct unit_ent *v;

	/* No type signature pointer: that would walk .debug_types. */
	while (dwarf_next_unit(dw, off, &next, &hsize, &version, &abbrev,
	    &asize, &osize, NULL, NULL) == 0) {
		if (lb->n_u == cap) {
			cap = cap ? 2 * cap : 256;
			if (cap > UINT32_MAX ||
			    (v = realloc(lb->u, cap * sizeof(*v))) == NULL)
				return -1;
			lb->u = v;
		}
		memset(&lb->u[lb->n_u], 0, sizeof(*lb->u));
		lb->u[lb->n_u].off = off;
		lb->u[lb->n_u].die_off = off + hsize;
		lb->u[lb->n_u].parent = (uint32_t)lb->n_u;
		lb->n_u++;
		off = next;
	}
	return 0;
}

/* The unit holding .debug_info offset off, or -1. */
static long
unit_of(const struct lazy_build *lb, Dwarf_Off off)
{
	size_t lo = 0, hi = lb->n_u, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (lb->u[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? -1 : (long)lo - 1;
}

/*
 * The units' address ranges: .debug_aranges where it lists a unit (one
 * small table instead of every unit's DIE), the unit DIE's own ranges for
 * the others.  A unit with neither has no code.
 */
static int
find_pieces(const struct symtab *st, Dwarf *dw, struct lazy_build *lb)
{
	Dwarf_Aranges *ar;
	Dwarf_Addr addr, base, lo, hi;
	Dwarf_Word len;
	Dwarf_Off off;
	Dwarf_Die die;
	ptrdiff_t roff;
	size_t i, n = 0;
	long u;

	if (dwarf_getaranges(dw, &ar, &n) != 0)
		n = 0;
	for (i = 0; i < n; i++) {
		if (dwarf_getarangeinfo(dwarf_onearange(ar, i), &addr, &len,
		    &off) != 0 || (u = unit_of(lb, off)) < 0)
			continue;
		lb->u[u].has_range = 1;	/* listed, even if not code */
		if (len > 0 && addr + len > addr &&
		    range_has_code(st, addr, addr + len) &&
		    add_piece(lb, addr, addr + len, (uint32_t)u) != 0)
			return -1;
	}
	for (i = 0; i < lb->n_u; i++) {
		if (lb->u[i].has_range ||
		    dwarf_offdie(dw, lb->u[i].die_off, &die) == NULL)
			continue;
		roff = 0;
		while ((roff = dwarf_ranges(&die, roff, &base, &lo, &hi)) > 0)
			if (hi > lo && range_has_code(st, lo, hi) &&
			    add_piece(lb, lo, hi, (uint32_t)i) != 0)
				return -1;
	}
	return 0;
}

static uint32_t
uf_find(struct unit_ent *u, uint32_t i)
{
	while (u[i].parent != i) {
		u[i].parent = u[u[i].parent].parent;
		i = u[i].parent;
	}
	return i;
}

static void
uf_union(struct unit_ent *u, uint32_t a, uint32_t b)
{
	a = uf_find(u, a);
	b = uf_find(u, b);
	if (a < b)
		u[b].parent = a;
	else if (b < a)
		u[a].parent = b;
}

static int
piece_cmp(const void *pa, const void *pb)
{
	const struct piece *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/*
 * Merges overlapping pieces into regions, their units into groups, and
 * lists each group's units in offset order.  Returns 0 or -1.
 */
static int
build_groups(struct dwarf_lazy *dl, struct lazy_build *lb)
{
	size_t i, j, n_r = 0;
	uint32_t g, *fill;

	/* No pieces (a unit without ranges): no array to sort. */
	if (lb->n_p > 1)
		qsort(lb->p, lb->n_p, sizeof(*lb->p), piece_cmp);
	dl->regions = malloc((lb->n_p + 1) * sizeof(*dl->regions));
	if (dl->regions == NULL)
		return -1;
	for (i = 0; i < lb->n_p; i = j) {
		uint64_t hi = lb->p[i].hi;

		for (j = i + 1; j < lb->n_p && lb->p[j].lo < hi; j++) {
			uf_union(lb->u, lb->p[i].unit, lb->p[j].unit);
			if (lb->p[j].hi > hi)
				hi = lb->p[j].hi;
		}
		dl->regions[n_r].lo = lb->p[i].lo;
		dl->regions[n_r].hi = hi;
		dl->regions[n_r].group = lb->p[i].unit;	/* a unit, for now */
		n_r++;
	}
	dl->n_regions = n_r;
	for (i = 0; i < lb->n_u; i++)
		lb->u[i].group = UINT32_MAX;
	for (i = 0; i < lb->n_u; i++) {
		uint32_t r = uf_find(lb->u, (uint32_t)i);

		if (!lb->u[i].has_range)
			continue;
		if (lb->u[r].group == UINT32_MAX)
			lb->u[r].group = (uint32_t)dl->n_groups++;
		lb->u[i].group = lb->u[r].group;
	}
	for (i = 0; i < n_r; i++)
		dl->regions[i].group = lb->u[dl->regions[i].group].group;
	dl->groups = calloc(dl->n_groups + 1, sizeof(*dl->groups));
	dl->unit_off = malloc((lb->n_u + 1) * sizeof(*dl->unit_off));
	fill = calloc(dl->n_groups + 1, sizeof(*fill));
	if (dl->groups == NULL || dl->unit_off == NULL || fill == NULL) {
		free(fill);
		return -1;
	}
	for (i = 0; i < lb->n_u; i++)
		if (lb->u[i].group != UINT32_MAX)
			dl->groups[lb->u[i].group].n++;
	for (g = 0, j = 0; g < dl->n_groups; g++) {
		dl->groups[g].first = (uint32_t)j;
		j += dl->groups[g].n;
	}
	for (i = 0; i < lb->n_u; i++) {
		if ((g = lb->u[i].group) == UINT32_MAX)
			continue;
		dl->unit_off[dl->groups[g].first + fill[g]++] = lb->u[i].die_off;
	}
	free(fill);
	return 0;
}

/* The number of regions that start at or before addr. */
static size_t
regions_upper(const struct dwarf_lazy *dl, uint64_t addr)
{
	size_t lo = 0, hi = dl->n_regions, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (dl->regions[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
part_free(struct dw_part *p)
{
	free(p->syms);
	free(p->segs);
	free(p->inl.inl);
	free(p->inl.isegs);
	free(p);
}

/*
 * Reads group g's units.  Their functions go into into when it is not
 * NULL (a group read at open), else into the part.  Called with dl->lock
 * held or before the table is shared.  Returns the part, or NULL when
 * memory ran out (e says so).
 */
static struct dw_part *
group_read(struct symtab *st, struct dwarf_lazy *dl, uint32_t g,
    struct symbuild *into, struct error *e)
{
	const struct dw_group *gr = &dl->groups[g];
	struct symbuild own = { NULL, 0, 0 };
	struct dw_part *p;
	struct dw_ctx c;
	Dwarf_Die cudie;
	uint32_t i;
	int rc = 0, tag;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		error_set(e, ERR_NOMEM, "%s: DWARF", st->path);
		return NULL;
	}
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.b = into != NULL ? into : &own;
	c.e = e;
	c.solid = dl->solid;
	c.n_solid = dl->n_solid;
	c.files = &dl->files;
	c.n_calls = dl->n_calls;
	for (i = 0; i < gr->n && rc == 0; i++) {
		if (dwarf_offdie(dl->dw, dl->unit_off[gr->first + i],
		    &cudie) == NULL)
			continue;
		tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit)
			continue;
		dwi_unit_begin(&c, &cudie);
		rc = dwi_walk(&c, &cudie, 0, 0, 0);
	}
	if (rc == 0)
		rc = dwi_finish_inlines(&c, &p->inl);
	if (rc == 0 && own.n > 0 && symtab_build_syms(st, &own, &p->syms,
	    &p->n_syms, &p->segs, &p->n_segs) != 0)
		rc = nomem(&c);
	dl->n_calls = c.n_calls;
	dwi_ctx_free(&c);
	symbuild_free(&own);
	if (rc != 0) {
		part_free(p);
		return NULL;
	}
	return p;
}

/* Group g's part, read the first time it is asked for. */
static const struct dw_part *
group_part(const struct symtab *st, uint32_t g)
{
	struct dwarf_lazy *dl = st->dw;
	struct dw_part *p;
	struct error e;

	p = atomic_load_explicit(&dl->groups[g].part, memory_order_acquire);
	if (p != NULL)
		return p;
	pthread_mutex_lock(&dl->lock);
	p = atomic_load_explicit(&dl->groups[g].part, memory_order_relaxed);
	if (p == NULL) {
		/* The arena and the file set are only written under the lock. */
		p = group_read((struct symtab *)st, dl, g, NULL, &e);
		if (p == NULL)
			p = &dl->empty;
		atomic_store_explicit(&dl->groups[g].part, p,
		    memory_order_release);
	}
	pthread_mutex_unlock(&dl->lock);
	return p;
}

/*
 * The groups whose functions would change the symbol table: a symbol of
 * guessed size ends where the next function starts, and one of size 0
 * (the last) would get a size from it, so the units with code there are
 * read now, into b, as the eager pass would.  Everything a later group
 * adds then lies where no symbol is, and changes no symbol.
 */
static int
read_sensitive(struct symtab *st, struct dwarf_lazy *dl, struct symbuild *b,
    struct error *e)
{
	struct dw_part *p;
	size_t i, k;
	uint64_t lo, hi;

	for (i = 0; i < st->n_syms; i++) {
		const struct sym *s = &st->syms[i];

		if (s->size != 0 && !(s->flags & SYM_SIZE_GUESSED))
			continue;
		lo = s->addr;
		hi = s->size != 0 ? s->addr + s->size :
		    i + 1 < st->n_syms ? st->syms[i + 1].addr : UINT64_MAX;
		k = regions_upper(dl, lo);
		if (k > 0 && dl->regions[k - 1].hi > lo)
			k--;
		for (; k < dl->n_regions && dl->regions[k].lo < hi; k++) {
			uint32_t g = dl->regions[k].group;

			if (atomic_load_explicit(&dl->groups[g].part,
			    memory_order_relaxed) != NULL)
				continue;
			if ((p = group_read(st, dl, g, b, e)) == NULL)
				return -ERR_NOMEM;
			atomic_store_explicit(&dl->groups[g].part, p,
			    memory_order_relaxed);
		}
	}
	return 0;
}

static int
lazy_index(struct symtab *st, struct dwarf_lazy *dl, struct symbuild *b,
    struct error *e)
{
	struct lazy_build lb = { NULL, 0, NULL, 0, 0 };
	int rc = -ERR_NOMEM;

	if (dwi_solid_segs(st, &dl->solid, &dl->n_solid) == 0 &&
	    list_units(dl->dw, &lb) == 0 && find_pieces(st, dl->dw, &lb) == 0 &&
	    build_groups(dl, &lb) == 0)
		rc = 0;
	free(lb.u);
	free(lb.p);
	if (rc != 0)
		return error_set(e, ERR_NOMEM, "%s: DWARF", st->path);
	return read_sensitive(st, dl, b, e);
}

void
dwarfinfo_free(struct dwarf_lazy *dl)
{
	struct line_table *lt;
	struct sym_list *all;
	struct dw_part *p;
	size_t g;

	if (dl == NULL)
		return;
	for (g = 0; dl->groups != NULL && g < dl->n_groups; g++) {
		p = atomic_load_explicit(&dl->groups[g].part,
		    memory_order_relaxed);
		if (p != NULL && p != &dl->empty)
			part_free(p);
		lt = atomic_load_explicit(&dl->groups[g].lines,
		    memory_order_relaxed);
		if (lt != NULL && lt != &dl->no_lines) {
			free(lt->rows);
			free(lt->index);
			free(lt->files);
			free(lt);
		}
	}
	all = atomic_load_explicit(&dl->all, memory_order_relaxed);
	if (all != NULL) {
		free(all->v);
		free(all);
	}
	free(dl->groups);
	free(dl->regions);
	free(dl->unit_off);
	free(dl->solid);
	dwi_file_set_free(&dl->files);
	if (dl->dw != NULL)
		dwarf_end(dl->dw);
	dwi_alt_close(&dl->alt);
	if (dl->image_elf != NULL)
		elf_end(dl->image_elf);
	dwarfimg_free(dl->image, dl->image_size);
	elf_file_close(&dl->f);
	pthread_mutex_destroy(&dl->lock);
	free(dl);
}

/* The DWARF a lazy table reads: the image, else the file itself. */
struct lazy_src {
	char *image;
	size_t image_size;
	Elf *image_elf;
	Dwarf *dw;
	struct alt_file alt;
};

static void
lazy_src_close(struct lazy_src *ls)
{
	if (ls->dw != NULL)
		dwarf_end(ls->dw);
	dwi_alt_close(&ls->alt);
	if (ls->image_elf != NULL)
		elf_end(ls->image_elf);
	dwarfimg_free(ls->image, ls->image_size);
}

/*
 * Opens f's DWARF through a decompressed image of it when it has
 * compressed sections (dwarfimg.h), else as it is.  Returns 1 with ls
 * filled, 0 when f has no DWARF, or -ERR_NOMEM.
 */
static int
lazy_src_open(struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct lazy_src *ls,
    struct symtab_refused *refused, struct error *e)
{
	int rc;

	memset(ls, 0, sizeof(*ls));
	ls->alt.fd = -1;
	rc = dwarfimg_build(f->elf, &ls->image, &ls->image_size);
	if (rc < 0)
		return error_set(e, ERR_NOMEM, "%s: DWARF", path);
	if (rc == 1 && (ls->image_elf = elf_memory(ls->image,
	    ls->image_size)) != NULL)
		ls->dw = dwarf_begin_elf(ls->image_elf, DWARF_C_READ, NULL);
	if (ls->dw == NULL) {
		lazy_src_close(ls);
		memset(ls, 0, sizeof(*ls));
		ls->alt.fd = -1;
		ls->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	}
	if (ls->dw == NULL)
		return 0;
	rc = dwi_alt_attach(ls->dw, path, opt, &ls->alt, refused, e);
	if (rc != 0) {
		lazy_src_close(ls);
		return rc;
	}
	return 1;
}

/* Takes over ls, and f when ls reads f itself (also on failure). */
static int
lazy_open(struct symtab *st, struct elf_file *f, struct lazy_src *ls,
    struct symbuild *b, struct error *e)
{
	struct dwarf_lazy *dl = calloc(1, sizeof(*dl));
	int rc;

	if (dl == NULL) {
		lazy_src_close(ls);
		return error_set(e, ERR_NOMEM, "%s: DWARF", st->path);
	}
	pthread_mutex_init(&dl->lock, NULL);
	dl->f.fd = -1;
	if (ls->image == NULL) {
		dl->f = *f;
		f->fd = -1;
		f->elf = NULL;
		/*
		 * Mapped (or read in now): the descriptor need not stay
		 * open.  FDREAD also does what FDDONE does.
		 */
		if (elf_cntl(dl->f.elf, ELF_C_FDREAD) == 0) {
			close(dl->f.fd);
			dl->f.fd = -1;
		}
	}
	dl->image = ls->image;
	dl->image_size = ls->image_size;
	dl->image_elf = ls->image_elf;
	dl->dw = ls->dw;
	dl->alt = ls->alt;
	rc = lazy_index(st, dl, b, e);
	if (rc != 0) {
		dwarfinfo_free(dl);
		return rc;
	}
	st->dw = dl;
	st->stats.has_dwarf = 1;
	return 0;
}

static void
narrow(uint64_t *lo, uint64_t *hi, uint64_t glo, uint64_t ghi)
{
	if (glo > *lo)
		*lo = glo;
	if (ghi < *hi)
		*hi = ghi;
}

enum part_kind { PART_FN, PART_INL };

static long
part_span(const struct dw_part *p, enum part_kind k, uint64_t addr,
    uint64_t *lo, uint64_t *hi)
{
	if (k == PART_FN)
		return segs_span(p->segs, p->n_segs, addr, lo, hi);
	return segs_span(p->inl.isegs, p->inl.n_isegs, addr, lo, hi);
}

static const void *
part_entry(const struct dw_part *p, enum part_kind k, long i)
{
	if (k == PART_FN)
		return &p->syms[p->segs[i].idx];
	return &p->inl.inl[p->inl.isegs[i].idx];
}

/*
 * The entry at addr among the groups' functions or inlined calls.  Only
 * the group whose region holds addr can have one there.  A gap's bounds
 * come from the neighbouring regions' groups too, read outwards until a
 * region lies beyond the bound found so far ([*lo, *hi) narrows).
 */
static const void *
lazy_find(const struct symtab *st, enum part_kind kind, uint64_t addr,
    uint64_t *lo, uint64_t *hi)
{
	const struct dwarf_lazy *dl = st->dw;
	size_t k = regions_upper(dl, addr), down = k, up = k;
	const struct dw_part *p;
	uint64_t glo, ghi;
	long i;

	if (k > 0 && addr < dl->regions[k - 1].hi) {
		p = group_part(st, dl->regions[k - 1].group);
		i = part_span(p, kind, addr, &glo, &ghi);
		if (lo == NULL)
			return i < 0 ? NULL : part_entry(p, kind, i);
		narrow(lo, hi, glo, ghi);
		if (i >= 0)
			return part_entry(p, kind, i);
		down = k - 1;
	} else if (lo == NULL)
		return NULL;
	while (down > 0 && dl->regions[down - 1].hi > *lo) {
		down--;
		p = group_part(st, dl->regions[down].group);
		if (part_span(p, kind, addr, &glo, &ghi) < 0)
			narrow(lo, hi, glo, ghi);
	}
	for (; up < dl->n_regions && dl->regions[up].lo < *hi; up++) {
		p = group_part(st, dl->regions[up].group);
		if (part_span(p, kind, addr, &glo, &ghi) < 0)
			narrow(lo, hi, glo, ghi);
	}
	return NULL;
}

const struct sym *
dwarfinfo_fn(const struct symtab *st, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	return lazy_find(st, PART_FN, addr, lo, hi);
}

const struct sym_inline *
dwarfinfo_inline(const struct symtab *st, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	return lazy_find(st, PART_INL, addr, lo, hi);
}

/* The line rows of group g's units, as the eager pass reads them. */
static struct line_table *
group_lines_read(struct symtab *st, struct dwarf_lazy *dl, uint32_t g)
{
	const struct dw_group *gr = &dl->groups[g];
	struct file_set files;
	struct line_table *lt;
	struct dw_ctx c;
	struct error e;
	Dwarf_Attribute a;
	Dwarf_Die cudie;
	uint32_t i;
	int rc = 0, tag;

	if ((lt = calloc(1, sizeof(*lt))) == NULL)
		return NULL;
	memset(&c, 0, sizeof(c));
	memset(&files, 0, sizeof(files));
	c.st = st;
	c.e = &e;
	c.files = &files;
	for (i = 0; i < gr->n && rc == 0; i++) {
		if (dwarf_offdie(dl->dw, dl->unit_off[gr->first + i],
		    &cudie) == NULL)
			continue;
		tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit)
			continue;
		c.comp_dir = dwarf_formstring(dwarf_attr(&cudie,
		    DW_AT_comp_dir, &a));
		rc = dwi_read_lines(&c, &cudie);
	}
	if (rc == 0)
		rc = dwi_lines_build(&c, lt);
	dwi_ctx_free(&c);
	dwi_file_set_free(&files);
	if (rc != 0) {
		free(lt);
		return NULL;
	}
	return lt;
}

/* Group g's line rows, read the first time they are asked for. */
static const struct line_table *
group_lines(const struct symtab *st, uint32_t g)
{
	struct dwarf_lazy *dl = st->dw;
	struct line_table *lt;

	lt = atomic_load_explicit(&dl->groups[g].lines, memory_order_acquire);
	if (lt != NULL)
		return lt;
	pthread_mutex_lock(&dl->lock);
	lt = atomic_load_explicit(&dl->groups[g].lines, memory_order_relaxed);
	if (lt == NULL) {
		lt = group_lines_read((struct symtab *)st, dl, g);
		if (lt == NULL)
			lt = &dl->no_lines;
		atomic_store_explicit(&dl->groups[g].lines, lt,
		    memory_order_release);
	}
	pthread_mutex_unlock(&dl->lock);
	return lt;
}

/*
 * Which of two rows at or before an address the sorted table would put
 * last: the higher address; at one address an end of sequence sorts
 * first.  (Two groups' rows meet only where one group's code ends and
 * the next one's begins: an end and a row, or two ends, which answer
 * the same.)
 */
static int
row_later(const struct line_row *r, const struct line_row *best)
{
	if (best == NULL || r->addr != best->addr)
		return best == NULL || r->addr > best->addr;
	return best->file == LINE_END && r->file != LINE_END;
}

/*
 * The last row at or before addr: the group whose region holds addr has
 * it, unless its last such row lies below that region; then the regions
 * below are read downwards until one ends before the best row so far.
 */
const struct line_row *
dwarfinfo_line(const struct symtab *st, uint64_t addr,
    const struct line_table **lt_out)
{
	const struct dwarf_lazy *dl = st->dw;
	size_t down = regions_upper(dl, addr);
	const struct line_table *lt;
	const struct line_row *r, *best = NULL;

	*lt_out = &dl->no_lines;
	if (down > 0 && addr < dl->regions[down - 1].hi) {
		const struct dw_region *reg = &dl->regions[--down];

		lt = group_lines(st, reg->group);
		best = line_table_find(lt, addr);
		*lt_out = lt;
		if (best != NULL && (best->addr > reg->lo ||
		    (best->addr == reg->lo && best->file != LINE_END)))
			return best;
	}
	for (; down > 0; down--) {
		const struct dw_region *reg = &dl->regions[down - 1];

		if (best != NULL && reg->hi < best->addr)
			break;
		lt = group_lines(st, reg->group);
		r = line_table_find(lt, addr);
		if (r != NULL && row_later(r, best)) {
			best = r;
			*lt_out = lt;
		}
	}
	return best;
}

static int
sym_ptr_cmp(const void *pa, const void *pb)
{
	const struct sym *a = *(const struct sym *const *)pa;
	const struct sym *b = *(const struct sym *const *)pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return strcmp(a->raw, b->raw);
}

/* st->syms and every group's functions, in address order. */
static struct sym_list *
all_build(const struct symtab *st, const struct dwarf_lazy *dl)
{
	const struct dw_part *p;
	struct sym_list *l;
	size_t g, i, n = st->n_syms;

	for (g = 0; g < dl->n_groups; g++)
		n += group_part(st, (uint32_t)g)->n_syms;
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->v = malloc((n + 1) * sizeof(*l->v))) == NULL) {
		free(l);
		return NULL;
	}
	for (i = 0; i < st->n_syms; i++)
		l->v[l->n++] = &st->syms[i];
	for (g = 0; g < dl->n_groups; g++) {
		p = group_part(st, (uint32_t)g);
		for (i = 0; i < p->n_syms; i++)
			l->v[l->n++] = &p->syms[i];
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), sym_ptr_cmp);
	return l;
}

const struct sym *
dwarfinfo_sym(const struct symtab *st, size_t i)
{
	struct dwarf_lazy *dl = st->dw;
	struct sym_list *l;

	l = atomic_load_explicit(&dl->all, memory_order_acquire);
	if (l == NULL) {
		struct sym_list *mine = all_build(st, dl);

		pthread_mutex_lock(&dl->lock);
		l = atomic_load_explicit(&dl->all, memory_order_relaxed);
		if (l == NULL && mine != NULL) {
			atomic_store_explicit(&dl->all, mine,
			    memory_order_release);
			l = mine;
			mine = NULL;
		}
		pthread_mutex_unlock(&dl->lock);
		if (mine != NULL) {
			free(mine->v);
			free(mine);
		}
	}
	if (l == NULL)		/* out of memory: what the symbol table has */
		return i < st->n_syms ? &st->syms[i] : NULL;
	return i < l->n ? l->v[i] : NULL;
}

void
dwarfinfo_stats(const struct symtab *st, struct symtab_stats *out)
{
	const struct dwarf_lazy *dl = st->dw;
	const struct line_table *lt;
	const struct dw_part *p;
	size_t g;

	out->n_bytes += sizeof(*dl);
	for (g = 0; g < dl->n_groups; g++) {
		p = group_part(st, (uint32_t)g);
		lt = group_lines(st, (uint32_t)g);
		out->n_syms += p->n_syms;
		out->n_from_dwarf += p->n_syms;
		out->n_inlines += p->inl.n_inl;
		out->n_lines += lt->n_rows;
		out->n_bytes += p->n_syms * sizeof(*p->syms) +
		    p->n_segs * sizeof(*p->segs) +
		    p->inl.n_inl * sizeof(*p->inl.inl) +
		    p->inl.n_isegs * sizeof(*p->inl.isegs) +
		    lt->n_rows * sizeof(*lt->rows) +
		    lt->n_index * sizeof(*lt->index) +
		    lt->n_files * sizeof(*lt->files);
	}
}

/*
 * dwarfinfo_read without SYMTAB_EAGER_DWARF: builds st->dw, the index of
 * f's units (taking over f as dwarfinfo_read says).  Returns 0 (also when
 * f has no DWARF) or -ERR_NOMEM.
 */
int
dwi_lazy_read(struct symtab *st, struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct symbuild *b, struct error *e)
{
	struct lazy_src ls;
	int rc;

	rc = lazy_src_open(f, path, opt, &ls, &st->refused, e);
	return rc <= 0 ? rc : lazy_open(st, f, &ls, b, e);
}
