/* elfsym: see elfsym.h. */
#include "elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

/* Finds name among the function symbols of one symbol table section. */
static int
find_in_section(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
    const char *name, GElf_Sym *out)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n;
	GElf_Sym sym;
	const char *s;

	if (d == NULL || sh->sh_entsize == 0)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		if (gelf_getsym(d, (int)i, &sym) == NULL ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0)
			continue;
		s = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (s != NULL && strcmp(s, name) == 0) {
			*out = sym;
			return 1;
		}
	}
	return 0;
}

static int
find_symbol(Elf *elf, const char *name, GElf_Sym *out)
{
	static const Elf64_Word kinds[] = { SHT_SYMTAB, SHT_DYNSYM };
	Elf_Scn *scn;
	GElf_Shdr sh;
	size_t k;

	for (k = 0; k < 2; k++) {
		for (scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
			if (gelf_getshdr(scn, &sh) != NULL &&
			    sh.sh_type == kinds[k] &&
			    find_in_section(elf, scn, &sh, name, out))
				return 1;
		}
	}
	return 0;
}

static int
vaddr_to_offset(Elf *elf, uint64_t va, uint64_t *off)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) == NULL ||
		    ph.p_type != PT_LOAD)
			continue;
		if (va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_filesz) {
			*off = va - ph.p_vaddr + ph.p_offset;
			return 1;
		}
	}
	return 0;
}

int
elfsym_lookup(const char *path, const char *name, uint64_t *off,
    uint64_t *size, struct error *e)
{
	GElf_Sym sym;
	Elf *elf;
	int fd, rc = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return error_set(e, ERR_INTERNAL, "libelf: %s", elf_errmsg(-1));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", path);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf == NULL || elf_kind(elf) != ELF_K_ELF)
		rc = error_set(e, ERR_FORMAT, "%s: not an ELF file", path);
	else if (!find_symbol(elf, name, &sym))
		rc = error_set(e, ERR_NOTFOUND, "%s: no function '%s'", path,
		    name);
	else if (!vaddr_to_offset(elf, sym.st_value, off))
		rc = error_set(e, ERR_FORMAT,
		    "%s: '%s' is in no loaded segment", path, name);
	else
		*size = sym.st_size;
	if (elf != NULL)
		elf_end(elf);
	close(fd);
	return rc;
}
