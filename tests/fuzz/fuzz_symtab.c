/*
 * libFuzzer target: lib/symtab on arbitrary bytes as an ELF image
 * (symbol tables, PLT, DWARF functions, inlined calls, lines), then
 * every lookup over the code it claims.  Separate debuginfo is not
 * searched (no system dir, no debuglink): the input is the whole world.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sym/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab_options opt = { NULL, 0,
	    SYMTAB_NO_SYSTEM_DEBUG | SYMTAB_NO_DEBUGLINK };
	const struct sym_inline *in;
	const struct sym *s;
	struct sym_line ln;
	struct symtab *st;
	struct error e;
	char path[64];
	uint64_t a, lo, hi;
	size_t i, n = 0;
	int fd;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (symtab_open(path, &opt, &st, &e) == 0) {
		for (i = 0; (s = symtab_sym(st, i)) != NULL && n < 100000; i++) {
			for (a = s->addr; a < s->addr + s->size && n < 100000;
			    a++, n++) {
				symtab_lookup_span(st, a, &lo, &hi);
				for (in = symtab_inline_span(st, a, &lo, &hi); in;
				    in = in->parent)
					;
				symtab_line(st, a, &ln);
			}
			symtab_find(st, s->name);
		}
		symtab_free(st);
	}
	close(fd);
	return 0;
}
