/*
 * symelf: the ELF half of symtab (see symtab_int.h): PT_LOAD segments,
 * function symbols from .symtab or .dynsym, and PLT stubs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/symtab_int.h"

#define R_X86_64_GLOB_DAT_ 6
#define R_X86_64_JUMP_SLOT_ 7
#define R_X86_64_IRELATIVE_ 37

static Elf_Scn *
find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *n;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (gelf_getshdr(scn, sh) == NULL)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n != NULL && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

static Elf_Scn *
find_section_type(Elf *elf, uint32_t type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, sh) != NULL && sh->sh_type == type)
			return scn;
	return NULL;
}

int
symelf_has_section(Elf *elf, const char *name)
{
	GElf_Shdr sh;

	return find_section(elf, name, &sh) != NULL;
}

int
symelf_read_loads(struct symtab *st, Elf *elf, struct error *e)
{
	GElf_Phdr ph;
	size_t i, n;

	if (elf_getphdrnum(elf, &n) != 0)
		return error_set(e, ERR_FORMAT, "%s: bad program headers: %s",
		    st->path, elf_errmsg(-1));
	st->loads = calloc(n + 1, sizeof(*st->loads));
	if (st->loads == NULL)
		return error_set(e, ERR_NOMEM, "%s: segments", st->path);
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) == NULL ||
		    ph.p_type != PT_LOAD)
			continue;
		st->loads[st->n_loads].vaddr = ph.p_vaddr;
		st->loads[st->n_loads].offset = ph.p_offset;
		st->loads[st->n_loads].filesz = ph.p_filesz;
		st->loads[st->n_loads].memsz = ph.p_memsz;
		st->loads[st->n_loads].flags = ph.p_flags;
		st->n_loads++;
	}
	return 0;
}

static uint8_t
bind_rank(unsigned bind)
{
	switch (bind) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 2;
	default:
		return 1;
	}
}

/* The header of section ndx into sh: 0, or -1 when it has none. */
static int
section_header(Elf *elf, size_t ndx, GElf_Shdr *sh)
{
	Elf_Scn *scn;

	if (ndx == SHN_UNDEF || ndx >= SHN_LORESERVE)
		return -1;
	scn = elf_getscn(elf, ndx);
	return scn != NULL && gelf_getshdr(scn, sh) != NULL ? 0 : -1;
}

/* The end address of section ndx, 0 when unknown. */
static uint64_t
section_end(Elf *elf, size_t ndx)
{
	GElf_Shdr sh;

	return section_header(elf, ndx, &sh) == 0 ? sh.sh_addr + sh.sh_size :
	    0;
}

/* Whether section ndx holds code. */
static int
section_exec(Elf *elf, size_t ndx)
{
	GElf_Shdr sh;

	return section_header(elf, ndx, &sh) == 0 &&
	    (sh.sh_flags & SHF_EXECINSTR);
}

/*
 * A label: a symbol without type in code, visible outside its object
 * (assembly entry points such as ld.so's _start), which perf names
 * code by too.  Functions win over labels (symtab.h, "Labels").
 */
static int
is_label(Elf *elf, const GElf_Sym *sym)
{
	unsigned vis = GELF_ST_VISIBILITY(sym->st_other);

	return GELF_ST_TYPE(sym->st_info) == STT_NOTYPE &&
	    vis != STV_HIDDEN && vis != STV_INTERNAL &&
	    section_exec(elf, sym->st_shndx);
}

static int
read_symbols(struct symtab *st, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
    uint32_t src_flag, struct symbuild *b, struct error *e)
{
	Elf_Data *data;
	struct rawsym r;
	GElf_Sym sym;
	const char *name;
	size_t i, n;
	unsigned type;
	int rc, label;

	if (sh->sh_entsize == 0)
		return error_set(e, ERR_FORMAT, "%s: symbol table entry size 0",
		    st->path);
	n = sh->sh_size / sh->sh_entsize;
	data = elf_getdata(scn, NULL);
	if (data == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		if (gelf_getsym(data, (int)i, &sym) == NULL)
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
		    sym.st_name == 0)
			continue;
		label = type != STT_FUNC && type != STT_GNU_IFUNC;
		if (label && !is_label(elf, &sym))
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (name == NULL || *name == '\0')
			continue;
		memset(&r, 0, sizeof(r));
		r.addr = sym.st_value;
		r.size = sym.st_size;
		r.limit = section_end(elf, sym.st_shndx);
		r.bind_rank = bind_rank(GELF_ST_BIND(sym.st_info));
		r.type_rank = (uint8_t)label;
		r.flags = src_flag;
		if (GELF_ST_BIND(sym.st_info) == STB_GLOBAL)
			r.flags |= SYM_GLOBAL;
		else if (GELF_ST_BIND(sym.st_info) == STB_WEAK)
			r.flags |= SYM_WEAK;
		if (type == STT_GNU_IFUNC)
			r.flags |= SYM_IFUNC;
		rc = symbuild_add(st, b, &r, name, strlen(name), e);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A GOT slot that a PLT entry jumps through, and what it is for. */
struct got_slot {
	uint64_t addr;
	const char *name;	/* NULL for R_X86_64_IRELATIVE */
	uint64_t addend;
};

struct got_map {
	struct got_slot *v;
	size_t n;
};

static int
got_slot_cmp(const void *pa, const void *pb)
{
	const struct got_slot *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Collects JUMP_SLOT, GLOB_DAT and IRELATIVE targets of one RELA section. */
static int
got_add_relocs(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
    struct got_map *m)
{
	Elf_Data *rd = elf_getdata(scn, NULL), *symd = NULL;
	Elf_Scn *dscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr dsh;
	GElf_Rela rel;
	GElf_Sym sym;
	struct got_slot *v;
	size_t i, n;
	unsigned type;

	if (rd == NULL || sh->sh_entsize == 0)
		return 0;
	if (dscn != NULL && gelf_getshdr(dscn, &dsh) != NULL)
		symd = elf_getdata(dscn, NULL);
	n = sh->sh_size / sh->sh_entsize;
	v = realloc(m->v, (m->n + n + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	m->v = v;
	for (i = 0; i < n && gelf_getrela(rd, (int)i, &rel) != NULL; i++) {
		struct got_slot *g = &m->v[m->n];

		type = GELF_R_TYPE(rel.r_info);
		g->addr = rel.r_offset;
		g->addend = (uint64_t)rel.r_addend;
		g->name = NULL;
		if (type == R_X86_64_IRELATIVE_) {
			m->n++;
			continue;
		}
		if ((type != R_X86_64_JUMP_SLOT_ && type != R_X86_64_GLOB_DAT_) ||
		    symd == NULL ||
		    gelf_getsym(symd, (int)GELF_R_SYM(rel.r_info), &sym) == NULL)
			continue;
		g->name = elf_strptr(elf, dsh.sh_link, sym.st_name);
		if (g->name != NULL && *g->name != '\0')
			m->n++;
	}
	return 0;
}

static const struct got_slot *
got_find(const struct got_map *m, uint64_t addr)
{
	struct got_slot key = { addr, NULL, 0 };

	if (m->n == 0)
		return NULL;
	return bsearch(&key, m->v, m->n, sizeof(*m->v), got_slot_cmp);
}

/*
 * The GOT slot an x86-64 PLT entry jumps through: the target of its
 * "jmp *disp32(%rip)" (ff 25, maybe after endbr64 and a bnd prefix).
 */
static int
plt_entry_slot(const unsigned char *code, size_t len, uint64_t addr,
    uint64_t *slot)
{
	size_t i;
	int32_t disp;

	for (i = 0; i + 6 <= len; i++) {
		if (code[i] != 0xff || code[i + 1] != 0x25)
			continue;
		memcpy(&disp, code + i + 2, 4);
		*slot = addr + i + 6 + (uint64_t)(int64_t)disp;
		return 1;
	}
	return 0;
}

static int
add_plt_entry(struct symtab *st, const struct got_slot *g, uint64_t addr,
    uint64_t size, struct symbuild *b, struct error *e)
{
	char buf[512];
	struct rawsym r;

	if (g->name != NULL)
		snprintf(buf, sizeof(buf), "%s@plt", g->name);
	else
		snprintf(buf, sizeof(buf), "*ABS*+0x%llx@plt",
		    (unsigned long long)g->addend);
	memset(&r, 0, sizeof(r));
	r.addr = addr;
	r.size = size;
	r.bind_rank = 1;
	r.flags = SYM_PLT;
	return symbuild_add(st, b, &r, buf, strlen(buf), e);
}

/* Names every entry of one PLT section whose GOT slot has a relocation. */
static int
read_plt_section(struct symtab *st, Elf *elf, const char *name,
    uint64_t default_entsize, const struct got_map *m, struct symbuild *b,
    struct error *e)
{
	const struct got_slot *g;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *d;
	uint64_t ent, off, slot;
	int rc;

	scn = find_section(elf, name, &sh);
	if (scn == NULL || sh.sh_type != SHT_PROGBITS ||
	    (d = elf_getdata(scn, NULL)) == NULL || d->d_buf == NULL)
		return 0;
	ent = sh.sh_entsize >= 8 ? sh.sh_entsize : default_entsize;
	for (off = 0; off + ent <= d->d_size; off += ent) {
		if (!plt_entry_slot((const unsigned char *)d->d_buf + off, ent,
		    sh.sh_addr + off, &slot))
			continue;
		g = got_find(m, slot);
		if (g == NULL)
			continue;
		rc = add_plt_entry(st, g, sh.sh_addr + off, ent, b, e);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * x86-64 PLT stubs (.plt, .plt.sec, .plt.got), named "target@plt" as
 * objdump and perf name them: each entry's indirect jump gives its GOT
 * slot, whose dynamic relocation gives the target.
 */
static int
read_plt(struct symtab *st, Elf *elf, struct symbuild *b, struct error *e)
{
	static const char *const secs[] = { ".plt", ".plt.sec", ".plt.got" };
	struct got_map m = { NULL, 0 };
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Ehdr eh;
	size_t i;
	int rc = 0;

	if (gelf_getehdr(elf, &eh) == NULL || eh.e_machine != EM_X86_64)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_RELA &&
		    got_add_relocs(elf, scn, &sh, &m) != 0) {
			free(m.v);
			return error_set(e, ERR_NOMEM, "%s: PLT", st->path);
		}
	if (m.n > 0)
		qsort(m.v, m.n, sizeof(*m.v), got_slot_cmp);
	for (i = 0; rc == 0 && i < sizeof(secs) / sizeof(secs[0]); i++)
		rc = read_plt_section(st, elf, secs[i], i == 2 ? 8 : 16, &m, b,
		    e);
	free(m.v);
	return rc;
}

int
symelf_read_syms(struct symtab *st, Elf *main_elf, Elf *debug_elf,
    struct symbuild *b, struct error *e)
{
	GElf_Shdr sh;
	Elf_Scn *scn;
	int rc;

	if ((scn = find_section_type(main_elf, SHT_SYMTAB, &sh)) != NULL) {
		st->stats.symbol_source = ".symtab";
		rc = read_symbols(st, main_elf, scn, &sh, 0, b, e);
	} else if (debug_elf != NULL &&
	    (scn = find_section_type(debug_elf, SHT_SYMTAB, &sh)) != NULL) {
		st->stats.symbol_source = ".symtab";
		rc = read_symbols(st, debug_elf, scn, &sh, 0, b, e);
	} else if ((scn = find_section_type(main_elf, SHT_DYNSYM, &sh)) !=
	    NULL) {
		st->stats.symbol_source = ".dynsym";
		rc = read_symbols(st, main_elf, scn, &sh, SYM_FROM_DYNSYM, b,
		    e);
	} else {
		rc = 0;
	}
	if (rc == 0)
		rc = read_plt(st, main_elf, b, e);
	return rc;
}
