/* libFuzzer target: the perf JIT map reader (lib/sym/jitmap.c) on any text. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sym/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct sym *s;
	struct symtab *st;
	struct error e;
	char path[64];
	size_t i;
	int fd;

	fd = memfd_create("fuzz-jitmap", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (symtab_open_jitmap(path, &st, &e) == 0) {
		for (i = 0; (s = symtab_sym(st, i)) != NULL; i++)
			if (symtab_lookup(st, s->addr) == NULL && s->size > 0)
				__builtin_trap();	/* a range lost its start */
		symtab_free(st);
	}
	close(fd);
	return 0;
}
