/*
 * Tests for lib/procmaps: a maps text with every kind of line, our own
 * maps, the MMAP2 form, and our vDSO.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rec/procmaps.h"
#include "tap.h"

static const char sample[] =
    "55d4c6a00000-55d4c6a02000 r--p 00000000 08:01 1234567    /usr/bin/cat\n"
    "55d4c6a02000-55d4c6a07000 r-xp 00002000 08:01 1234567    /usr/bin/cat\n"
    "55d4c7000000-55d4c7021000 rw-p 00000000 00:00 0          [heap]\n"
    "7f0000000000-7f0000001000 r-xs 00001000 fd:02 42         /tmp/a b c (deleted)\n"
    "7ffd5a3f1000-7ffd5a3f3000 r-xp 00000000 00:00 0          [vdso]\n"
    "7ffd5a3f3000-7ffd5a3f5000 rw-p 00000000 00:00 0 \n";

static void
test_parse(void)
{
	struct procmaps m;
	struct perfdata_mmap mm;
	struct error e;

	IS_INT(procmaps_parse(sample, 0, &m, &e), 0, "parses");
	IS_INT((int)m.n, 6, "six mappings");
	IS_U64(m.v[1].start, 0x55d4c6a02000, "start");
	IS_U64(m.v[1].end, 0x55d4c6a07000, "end");
	IS_U64(m.v[1].pgoff, 0x2000, "offset");
	IS_INT(m.v[1].prot, PROT_READ | PROT_EXEC, "r-x");
	IS_INT(m.v[1].maj * 1000 + m.v[1].min, 8001, "device");
	IS_U64(m.v[1].ino, 1234567, "inode");
	IS_STR(m.v[1].path, "/usr/bin/cat", "path");
	IS_STR(m.v[2].path, "[heap]", "heap");
	IS_STR(m.v[3].path, "/tmp/a b c", "spaces kept, (deleted) cut");
	OK(m.v[3].deleted && m.v[3].shared, "deleted, shared");
	IS_INT(m.v[3].maj, 0xfd, "hex major");
	IS_STR(m.v[5].path, "", "anonymous");
	procmaps_to_mmap(&m.v[1], 10, 11, &mm);
	OK(mm.addr == 0x55d4c6a02000 && mm.len == 0x5000 &&
	    mm.pgoff == 0x2000 && mm.ino == 1234567 && mm.pid == 10 &&
	    mm.tid == 11 && mm.is_mmap2 && mm.flags == MAP_PRIVATE &&
	    strcmp(mm.filename, "/usr/bin/cat") == 0, "as MMAP2");
	procmaps_free(&m);
	IS_INT(procmaps_parse(sample, 1, &m, &e), 0, "exec only");
	IS_INT((int)m.n, 3, "three executable mappings");
	IS_STR(m.v[2].path, "[vdso]", "the vDSO among them");
	procmaps_free(&m);
	IS_INT(procmaps_parse("55d4c6a00000 r--p\n", 0, &m, &e), -ERR_FORMAT,
	    "a bad line");
	IS_STR(e.msg, "maps line '55d4c6a00000 r--p' is not START-END PERMS "
	    "OFFSET MAJ:MIN INODE [PATH]", "its message");
	OK(m.v == NULL && m.n == 0, "nothing left");
}

static void
test_self(void)
{
	char exe[PATH_MAX];
	struct procmaps m;
	struct error e;
	const void *vdso;
	size_t size, i;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int found = 0;

	exe[n > 0 ? n : 0] = '\0';
	IS_INT(procmaps_read(0, 1, &m, &e), 0, "our own maps");
	for (i = 0; i < m.n; i++)
		found |= strcmp(m.v[i].path, exe) == 0;
	OK(found, "our executable is mapped executable");
	procmaps_free(&m);
	IS_INT(procmaps_read(999999999, 0, &m, &e), -ERR_NOTFOUND,
	    "no such process");
	IS_INT(procmaps_vdso(&vdso, &size, &e), 0, "our vDSO");
	OK(size > 0 && size % 4096 == 0, "page multiple: %zu", size);
	OK(memcmp(vdso, "\177ELF", 4) == 0, "an ELF image");
}

int
main(void)
{
	test_parse();
	test_self();
	return tap_done();
}
