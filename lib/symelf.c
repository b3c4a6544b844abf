/*
 * symelf: the ELF half of symtab (see symtab_int.h): PT_LOAD segments,
 * function symbols from .symtab or .dynsym, and PLT stubs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symtab_int.h"

#define R_X86_64_JUMP_SLOT_ 7
#define R_X86_64_IRELATIVE_ 37
#define PLT_ENTRY_SIZE 16

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
		return 1;
	default:
		return 2;
	}
}

/* The end address of section ndx, 0 when unknown. */
static uint64_t
section_end(Elf *elf, size_t ndx)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (ndx == SHN_UNDEF || ndx >= SHN_LORESERVE)
		return 0;
	scn = elf_getscn(elf, ndx);
	if (scn == NULL || gelf_getshdr(scn, &sh) == NULL)
		return 0;
	return sh.sh_addr + sh.sh_size;
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
	int rc;

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
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
		    sym.st_name == 0)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (name == NULL || *name == '\0')
			continue;
		memset(&r, 0, sizeof(r));
		r.addr = sym.st_value;
		r.size = sym.st_size;
		r.limit = section_end(elf, sym.st_shndx);
		r.bind_rank = bind_rank(GELF_ST_BIND(sym.st_info));
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

/* Adds one PLT stub named after relocation rel. */
static int
add_plt_stub(struct symtab *st, Elf *elf, const GElf_Shdr *relsh,
    Elf_Data *dynsym, const GElf_Rela *rel, uint64_t addr,
    struct symbuild *b, struct error *e)
{
	char buf[512];
	struct rawsym r;
	GElf_Sym sym;
	const char *name = NULL;
	GElf_Shdr dsh;
	Elf_Scn *dscn;

	if (GELF_R_TYPE(rel->r_info) == R_X86_64_IRELATIVE_) {
		snprintf(buf, sizeof(buf), "*ABS*+0x%llx@plt",
		    (unsigned long long)rel->r_addend);
	} else {
		dscn = elf_getscn(elf, relsh->sh_link);
		if (dynsym == NULL || dscn == NULL ||
		    gelf_getshdr(dscn, &dsh) == NULL ||
		    gelf_getsym(dynsym, (int)GELF_R_SYM(rel->r_info), &sym) ==
		    NULL)
			return 0;
		name = elf_strptr(elf, dsh.sh_link, sym.st_name);
		if (name == NULL || *name == '\0')
			return 0;
		snprintf(buf, sizeof(buf), "%s@plt", name);
	}
	memset(&r, 0, sizeof(r));
	r.addr = addr;
	r.size = PLT_ENTRY_SIZE;
	r.bind_rank = 2;
	r.flags = SYM_PLT;
	return symbuild_add(st, b, &r, buf, strlen(buf), e);
}

/*
 * x86-64 lazy-binding PLT: entry i of .plt.sec (IBT), else entry i + 1 of
 * .plt (entry 0 is the resolver trampoline), belongs to relocation i of
 * .rela.plt.
 */
static int
read_plt(struct symtab *st, Elf *elf, struct symbuild *b, struct error *e)
{
	GElf_Shdr relsh, pltsh;
	Elf_Scn *relscn, *dscn;
	Elf_Data *reldata, *dynsym = NULL;
	GElf_Ehdr eh;
	GElf_Rela rel;
	uint64_t base;
	size_t i, n;
	int rc;

	if (gelf_getehdr(elf, &eh) == NULL || eh.e_machine != EM_X86_64)
		return 0;
	relscn = find_section(elf, ".rela.plt", &relsh);
	if (relscn == NULL || relsh.sh_type != SHT_RELA ||
	    relsh.sh_entsize == 0)
		return 0;
	if (find_section(elf, ".plt.sec", &pltsh) != NULL)
		base = pltsh.sh_addr;
	else if (find_section(elf, ".plt", &pltsh) != NULL)
		base = pltsh.sh_addr + PLT_ENTRY_SIZE;
	else
		return 0;
	reldata = elf_getdata(relscn, NULL);
	dscn = elf_getscn(elf, relsh.sh_link);
	if (dscn != NULL)
		dynsym = elf_getdata(dscn, NULL);
	if (reldata == NULL)
		return 0;
	n = relsh.sh_size / relsh.sh_entsize;
	for (i = 0; i < n; i++) {
		uint64_t addr = base + i * PLT_ENTRY_SIZE;

		if (gelf_getrela(reldata, (int)i, &rel) == NULL)
			break;
		if (addr + PLT_ENTRY_SIZE > pltsh.sh_addr + pltsh.sh_size)
			break;
		if (GELF_R_TYPE(rel.r_info) != R_X86_64_JUMP_SLOT_ &&
		    GELF_R_TYPE(rel.r_info) != R_X86_64_IRELATIVE_)
			continue;
		rc = add_plt_stub(st, elf, &relsh, dynsym, &rel, addr, b, e);
		if (rc != 0)
			return rc;
	}
	return 0;
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
