/*
 * dwarfimg: see dwarfimg.h.  The image is the ELF header, the kept
 * sections' data (each aligned to 16 bytes), then every section header
 * of the source, in its order.
 */
#include "sym/dwarfimg.h"

#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/error.h"

/* What symtab's use of libdw reads (see dwarfinfo.c). */
static const char *const wanted[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
	".debug_line_str", ".debug_str_offsets", ".debug_addr",
	".debug_ranges", ".debug_rnglists", ".debug_aranges", ".debug_types",
	".debug_sup", ".gnu_debugaltlink",
};

/* One section of the source, as the image will have it. */
struct img_scn {
	Elf64_Shdr sh;		/* the image's header */
	const unsigned char *src;	/* bytes to copy or inflate */
	size_t src_len;
	int inflate;
};

static int
is_wanted(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(wanted) / sizeof(*wanted); i++)
		if (strcmp(name, wanted[i]) == 0)
			return 1;
	return 0;
}

/*
 * Fills s for section scn.  Returns 1 when it is kept with its data, 0
 * when only its header is, -1 when the file is better left to libdw.
 */
static int
plan_section(Elf *src, Elf_Scn *scn, size_t shstrndx, struct img_scn *s)
{
	const Elf64_Shdr *sh = elf64_getshdr(scn);
	const char *name;
	Elf_Data *raw;
	GElf_Chdr ch;

	if (sh == NULL)
		return -1;
	s->sh = *sh;
	name = elf_strptr(src, shstrndx, sh->sh_name);
	if (name != NULL && strncmp(name, ".zdebug", 7) == 0)
		return -1;
	if (elf_ndxscn(scn) != shstrndx && (name == NULL ||
	    !is_wanted(name) || sh->sh_type == SHT_NOBITS)) {
		if (elf_ndxscn(scn) != 0) {
			s->sh.sh_type = SHT_NOBITS;
			s->sh.sh_flags &= ~(Elf64_Xword)SHF_COMPRESSED;
			s->sh.sh_offset = 0;
		}
		return 0;
	}
	if ((raw = elf_rawdata(scn, NULL)) == NULL || raw->d_size !=
	    sh->sh_size)
		return -1;
	s->src = raw->d_buf;
	s->src_len = raw->d_size;
	if (!(sh->sh_flags & SHF_COMPRESSED))
		return 1;
	if (gelf_getchdr(scn, &ch) == NULL || ch.ch_type != ELFCOMPRESS_ZLIB ||
	    s->src_len < sizeof(Elf64_Chdr))
		return -1;
	s->src += sizeof(Elf64_Chdr);
	s->src_len -= sizeof(Elf64_Chdr);
	s->sh.sh_size = ch.ch_size;
	s->sh.sh_addralign = ch.ch_addralign;
	s->sh.sh_flags &= ~(Elf64_Xword)SHF_COMPRESSED;
	s->inflate = 1;
	return 1;
}

/* Copies or inflates the kept sections into img.  Returns 0 or -1. */
static int
fill_sections(char *img, const struct img_scn *s, size_t n)
{
	struct libdeflate_decompressor *d = NULL;
	size_t i, got;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		char *dst = img + s[i].sh.sh_offset;

		if (s[i].src == NULL)
			continue;
		if (!s[i].inflate) {
			memcpy(dst, s[i].src, s[i].src_len);
			continue;
		}
		if (d == NULL && (d = libdeflate_alloc_decompressor()) == NULL)
			return -1;
		if (libdeflate_zlib_decompress(d, s[i].src, s[i].src_len, dst,
		    s[i].sh.sh_size, &got) != LIBDEFLATE_SUCCESS ||
		    got != s[i].sh.sh_size)
			rc = -1;
	}
	libdeflate_free_decompressor(d);
	return rc;
}

/* Plans every section; *n_inflate counts the compressed ones kept. */
static int
plan(Elf *src, struct img_scn *s, size_t shnum, size_t shstrndx,
    size_t *n_inflate, size_t *data_end)
{
	size_t i, off = sizeof(Elf64_Ehdr);
	Elf_Scn *scn;
	int k;

	*n_inflate = 0;
	for (i = 0; i < shnum; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		if ((scn = elf_getscn(src, i)) == NULL ||
		    (k = plan_section(src, scn, shstrndx, &s[i])) < 0)
			return -1;
		if (k == 0)
			continue;
		*n_inflate += (size_t)s[i].inflate;
		off = (off + 15) & ~(size_t)15;
		s[i].sh.sh_offset = off;
		if (s[i].sh.sh_size > SIZE_MAX / 2 - off)
			return -1;
		off += s[i].sh.sh_size;
	}
	*data_end = (off + 15) & ~(size_t)15;
	return 0;
}

int
dwarfimg_build(Elf *src, char **image, size_t *size)
{
	const Elf64_Ehdr *eh = elf64_getehdr(src);
	struct img_scn *s;
	Elf64_Ehdr *neh;
	Elf64_Shdr *nsh;
	size_t shnum, shstrndx, n_inflate, data_end, total, i;
	char *img;

	*image = NULL;
	*size = 0;
	if (eh == NULL || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_type == ET_REL || elf_getshdrnum(src, &shnum) != 0 ||
	    elf_getshdrstrndx(src, &shstrndx) != 0 || shnum == 0)
		return 0;
	if ((s = calloc(shnum, sizeof(*s))) == NULL)
		return -ERR_NOMEM;
	if (plan(src, s, shnum, shstrndx, &n_inflate, &data_end) != 0 ||
	    n_inflate == 0 || shnum > (SIZE_MAX - data_end) / sizeof(*nsh)) {
		free(s);
		return 0;
	}
	total = data_end + shnum * sizeof(*nsh);
	/*
	 * Populated up front: one call maps the pages that inflating would
	 * otherwise fault in one by one (2000 faults for libc, dear in a VM).
	 */
	img = mmap(NULL, total, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (img == MAP_FAILED) {
		free(s);
		return -ERR_NOMEM;
	}
	if (fill_sections(img, s, shnum) != 0) {
		munmap(img, total);
		free(s);
		return 0;
	}
	neh = (Elf64_Ehdr *)img;
	*neh = *eh;
	neh->e_phoff = 0;
	neh->e_phnum = 0;
	neh->e_phentsize = 0;
	neh->e_shoff = data_end;
	neh->e_shentsize = sizeof(*nsh);
	nsh = (Elf64_Shdr *)(img + data_end);
	for (i = 0; i < shnum; i++)
		nsh[i] = s[i].sh;
	free(s);
	*image = img;
	*size = total;
	return 1;
}

void
dwarfimg_free(char *image, size_t size)
{
	if (image != NULL)
		munmap(image, size);
}
