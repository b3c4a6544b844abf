/* jit_archive: see jit_archive.h. */
#include "jit_archive.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt/manifest.h"
#include "sym/symtab.h"
#include "tool/report.h"

#define JIT_IMAGE_MAX (256u << 20)
#define BUILD_ID_LEN 20

void
rec_jit_map_path(int pid, char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/perf-%d.map", pid);
}

int
rec_jit_is_image_name(const char *name)
{
	return strncmp(name, REC_JIT_IMAGE_PREFIX,
	    sizeof(REC_JIT_IMAGE_PREFIX) - 1) == 0;
}

/*
 * The JIT map at path, opened once and checked as the file it is: perf's
 * /tmp/perf-PID.map lies where anyone may write, so a link (to a file
 * someone else wants copied), a FIFO or a device (whose open would
 * block) and a file neither the recording user's nor root's are refused
 * before a byte is read.  Returns the descriptor, -ERR_NOTFOUND (no
 * map), or -ERR_PERM / -ERR_IO with why in e.
 */
static int
open_map(const char *path, struct error *e)
{
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -ERR_NOTFOUND;
	if (fd < 0)
		return errno == ELOOP ? error_set(e, ERR_PERM, "a symbolic "
		    "link; refused") : error_set_errno(e, errno, "open");
	if (fstat(fd, &st) < 0)
		rc = error_set_errno(e, errno, "fstat");
	else if (!S_ISREG(st.st_mode))
		rc = error_set(e, ERR_PERM, "not a regular file (a FIFO, a "
		    "device?); refused");
	else if (st.st_uid != geteuid() && st.st_uid != 0)
		rc = error_set(e, ERR_PERM, "owned by uid %u, neither the "
		    "recording user (uid %u) nor root; refused",
		    (unsigned)st.st_uid, (unsigned)geteuid());
	else
		return fd;
	close(fd);
	return rc;
}

/* A JIT map not archived: said now and in the manifest's warnings. */
static int
map_not_archived(struct snapshot *s, const char *from, const char *why,
    struct error *e)
{
	report_warning("ptrec", "snapshot", "JIT map %s not archived: %s",
	    from, why);
	return manifest_add_warning(&s->manifest, e, "JIT map %s not "
	    "archived: %s", from, why);
}

int
rec_jit_archive_map(struct snapshot *s, int pid, const char *copy,
    struct error *e)
{
	struct manifest_jit_map row;
	char live[64], rel[64];
	const char *from, *dir;
	struct error ie;
	int fd = -ERR_NOTFOUND, rc;

	if (manifest_find_jit_map(&s->manifest, (uint32_t)pid) != NULL)
		return 1;
	rec_jit_map_path(pid, live, sizeof(live));
	error_clear(&ie);
	if ((from = copy) != NULL)
		fd = open_map(from, &ie);
	if (fd == -ERR_NOTFOUND)
		fd = open_map(from = live, &ie);
	if (fd == -ERR_NOTFOUND)
		return 0;	/* the program made no JIT map */
	if (fd < 0)
		return map_not_archived(s, from, ie.msg, e);
	if ((dir = snapshot_path(s, REC_JIT_MAP_DIR)) == NULL) {
		close(fd);
		return error_set(e, ERR_RANGE, "%s: path too long",
		    REC_JIT_MAP_DIR);
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		rc = error_set_errno(e, errno, "%s: create", dir);
		close(fd);
		return rc;
	}
	snprintf(rel, sizeof(rel), "%s/perf-%d.map", REC_JIT_MAP_DIR, pid);
	/* The program may write its map on as we copy it: a warning, not
	 * a lost snapshot. */
	rc = snapshot_copy_in_fd(s, rel, fd, from, &ie);
	close(fd);
	if (rc == -ERR_NOMEM)
		return error_set(e, ERR_NOMEM, "%s", ie.msg);
	if (rc < 0)
		return map_not_archived(s, from, ie.msg, e);
	row.pid = (uint32_t)pid;
	row.path = live;
	row.archived = rel;
	rc = manifest_add_jit_map(&s->manifest, &row, e);
	return rc < 0 ? rc : 1;
}

/* ---- the ELF image ------------------------------------------------ */

/* The pieces of the file, in file order after the code. */
struct jit_elf {
	uint8_t *buf;
	size_t size;
	Elf64_Sym *syms;
	size_t n_syms;
	char *strtab;
	size_t strtab_len;
};

enum { SH_NULL, SH_NOTE, SH_TEXT, SH_SYMTAB, SH_STRTAB, SH_SHSTRTAB, SH_N };

static const char shstrtab[] =
    "\0.note.gnu.build-id\0.text\0.symtab\0.strtab\0.shstrtab";
enum { NAME_NOTE = 1, NAME_TEXT = 20, NAME_SYMTAB = 26, NAME_STRTAB = 34,
    NAME_SHSTRTAB = 42 };

/* The JIT map functions of pid that lie in [start, start + len). */
static int
collect_syms(struct snapshot *s, int pid, uint64_t start, size_t len,
    struct jit_elf *je, struct error *e)
{
	const struct manifest_jit_map *row;
	const struct sym *sym;
	struct symtab *st = NULL;
	struct error ie;
	const char *path;
	size_t i, n, pos;

	/* The null symbol and the empty name come first. */
	je->syms = calloc(1, sizeof(*je->syms));
	je->strtab = calloc(1, 1);
	je->n_syms = 1;
	je->strtab_len = 1;
	if (je->syms == NULL || je->strtab == NULL)
		return error_set(e, ERR_NOMEM, "JIT image");
	row = manifest_find_jit_map(&s->manifest, (uint32_t)pid);
	path = row != NULL && row->archived != NULL ?
	    snapshot_path(s, row->archived) : NULL;
	if (path == NULL || symtab_open_jitmap(path, &st, &ie) < 0)
		return 0;	/* code without names is still code */
	for (i = 0; (sym = symtab_sym(st, i)) != NULL; i++) {
		Elf64_Sym *grown;
		char *str;

		if (sym->addr < start || sym->addr >= start + len)
			continue;
		n = strlen(sym->raw) + 1;
		grown = realloc(je->syms, (je->n_syms + 1) * sizeof(*grown));
		if (grown != NULL)
			je->syms = grown;
		str = realloc(je->strtab, je->strtab_len + n);
		if (str != NULL)
			je->strtab = str;
		if (grown == NULL || str == NULL) {
			symtab_free(st);
			return error_set(e, ERR_NOMEM, "JIT image");
		}
		pos = je->strtab_len;
		memcpy(je->strtab + pos, sym->raw, n);
		je->strtab_len += n;
		memset(&je->syms[je->n_syms], 0, sizeof(*je->syms));
		je->syms[je->n_syms].st_name = (Elf64_Word)pos;
		je->syms[je->n_syms].st_info = ELF64_ST_INFO(STB_GLOBAL,
		    STT_FUNC);
		je->syms[je->n_syms].st_shndx = SH_TEXT;
		je->syms[je->n_syms].st_value = sym->addr;
		je->syms[je->n_syms].st_size = sym->size;
		je->n_syms++;
	}
	symtab_free(st);
	return 0;
}

static size_t
align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static void
set_shdr(Elf64_Shdr *sh, Elf64_Word name, Elf64_Word type, uint64_t flags,
    uint64_t addr, size_t off, size_t size)
{
	memset(sh, 0, sizeof(*sh));
	sh->sh_name = name;
	sh->sh_type = type;
	sh->sh_flags = flags;
	sh->sh_addr = addr;
	sh->sh_offset = off;
	sh->sh_size = size;
	sh->sh_addralign = type == SHT_PROGBITS ? 16 : 1;
	if (type == SHT_SYMTAB || type == SHT_NOTE)
		sh->sh_addralign = type == SHT_NOTE ? 4 : 8;
}

/* The build-id: what makes this image this image, code and names. */
static void
build_id_of(const struct jit_elf *je, uint64_t start, const uint8_t *code,
    size_t len, uint8_t id[BUILD_ID_LEN])
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;

	sha256_init(&h);
	sha256_update(&h, sizeof(start), (const uint8_t *)&start);
	sha256_update(&h, len, code);
	sha256_update(&h, je->n_syms * sizeof(*je->syms),
	    (const uint8_t *)je->syms);
	sha256_update(&h, je->strtab_len, (const uint8_t *)je->strtab);
	sha256_digest(&h, SHA256_DIGEST_SIZE, digest);
	memcpy(id, digest, BUILD_ID_LEN);
}

/*
 * Lays the file out: headers and the build-id note, the code at
 * REC_JIT_TEXT_OFFSET + (start & 0xfff) (so that file offset and address
 * agree modulo the page size, as PT_LOAD wants), then .symtab, .strtab,
 * .shstrtab and the section headers.
 */
static int
build_elf(struct jit_elf *je, uint64_t start, const uint8_t *code,
    size_t len, struct error *e)
{
	size_t note_off = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
	size_t note_len = 16 + BUILD_ID_LEN;
	size_t text_off = REC_JIT_TEXT_OFFSET + (start & 0xfff);
	size_t sym_off = align8(text_off + len);
	size_t str_off = sym_off + je->n_syms * sizeof(Elf64_Sym);
	size_t shstr_off = str_off + je->strtab_len;
	size_t sh_off = align8(shstr_off + sizeof(shstrtab));
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	uint8_t *note;

	je->size = sh_off + SH_N * sizeof(Elf64_Shdr);
	if ((je->buf = calloc(1, je->size)) == NULL)
		return error_set(e, ERR_NOMEM, "JIT image");
	eh = (Elf64_Ehdr *)je->buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = start;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = sh_off;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = SH_N;
	eh->e_shstrndx = SH_SHSTRTAB;

	ph = (Elf64_Phdr *)(je->buf + eh->e_phoff);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_offset = text_off;
	ph->p_vaddr = ph->p_paddr = start;
	ph->p_filesz = ph->p_memsz = len;
	ph->p_align = 0x1000;

	note = je->buf + note_off;
	((uint32_t *)note)[0] = 4;		/* namesz */
	((uint32_t *)note)[1] = BUILD_ID_LEN;	/* descsz */
	((uint32_t *)note)[2] = NT_GNU_BUILD_ID;
	memcpy(note + 12, "GNU", 4);
	build_id_of(je, start, code, len, note + 16);

	memcpy(je->buf + text_off, code, len);
	memcpy(je->buf + sym_off, je->syms, je->n_syms * sizeof(Elf64_Sym));
	memcpy(je->buf + str_off, je->strtab, je->strtab_len);
	memcpy(je->buf + shstr_off, shstrtab, sizeof(shstrtab));

	sh = (Elf64_Shdr *)(je->buf + sh_off);
	set_shdr(&sh[SH_NOTE], NAME_NOTE, SHT_NOTE, SHF_ALLOC, 0, note_off,
	    note_len);
	set_shdr(&sh[SH_TEXT], NAME_TEXT, SHT_PROGBITS,
	    SHF_ALLOC | SHF_EXECINSTR, start, text_off, len);
	set_shdr(&sh[SH_SYMTAB], NAME_SYMTAB, SHT_SYMTAB, 0, 0, sym_off,
	    je->n_syms * sizeof(Elf64_Sym));
	sh[SH_SYMTAB].sh_link = SH_STRTAB;
	sh[SH_SYMTAB].sh_info = 1;		/* first global symbol */
	sh[SH_SYMTAB].sh_entsize = sizeof(Elf64_Sym);
	set_shdr(&sh[SH_STRTAB], NAME_STRTAB, SHT_STRTAB, 0, 0, str_off,
	    je->strtab_len);
	set_shdr(&sh[SH_SHSTRTAB], NAME_SHSTRTAB, SHT_STRTAB, 0, 0, shstr_off,
	    sizeof(shstrtab));
	return 0;
}

int
rec_jit_image(struct snapshot *s, int pid, uint64_t start,
    const uint8_t *code, size_t len, struct rec_jit_image *out,
    struct error *e)
{
	struct jit_elf je;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len > JIT_IMAGE_MAX)
		return error_set(e, ERR_RANGE, "JIT code at 0x%" PRIx64
		    ": %zu bytes", start, len);
	memset(&je, 0, sizeof(je));
	snprintf(out->name, sizeof(out->name), "%s%d/%" PRIx64,
	    REC_JIT_IMAGE_PREFIX, pid, start);
	out->pgoff = REC_JIT_TEXT_OFFSET + (start & 0xfff);
	if ((rc = collect_syms(s, pid, start, len, &je, e)) == 0 &&
	    (rc = build_elf(&je, start, code, len, e)) == 0)
		rc = snapshot_archive_memory(s, out->name, je.buf, je.size,
		    &out->img, e);
	out->n_syms = je.n_syms - (je.n_syms > 0);
	free(je.buf);
	free(je.syms);
	free(je.strtab);
	return rc;
}
