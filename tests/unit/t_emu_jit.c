/*
 * t_emu_jit: the emu plugin's JIT code list and dumps (emu_jit), run in
 * this process, whose memory stands in for the guest's (qemu-user maps
 * guest addresses 1:1, as here).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "emu_jit.h"
#include "tap.h"

static char tmp[] = "/tmp/t_emu_jit.XXXXXX";

static void
test_list(void)
{
	struct emu_jit j;

	memset(&j, 0, sizeof(j));
	emu_jit_add(&j, 0x10000, 0x1000);
	emu_jit_add(&j, 0x10000, 0x1000);
	emu_jit_add(&j, 0x20000, 0x2000);
	emu_jit_add(&j, 0x30000, 0);
	IS_INT(j.n, 2, "a repeat and an empty region are not added");
	emu_jit_unmap(&j, 0x21000, 0x10);
	IS_INT(j.n, 1, "unmapping part of a region drops it");
	IS_U64(j.lost, 1, "and counts it lost");
	IS_U64(j.r[0].start, 0x10000, "the other stays");
	emu_jit_unmap(&j, 0x11000, 0x1000);
	IS_INT(j.n, 1, "unmapping next to it keeps it");
	for (int i = 0; i < EMU_JIT_MAX + 3; i++)
		emu_jit_add(&j, 0x100000 + (uint64_t)i * 0x1000, 0x1000);
	IS_INT(j.n, EMU_JIT_MAX, "at most EMU_JIT_MAX regions");
	IS_U64(j.lost, 5, "the rest counted lost");
}

static void
test_dump(void)
{
	struct emu_jit j;
	char path[PATH_MAX + 64], line[128], want[128];
	uint8_t *code, back[4096];
	FILE *f;
	long page = sysconf(_SC_PAGESIZE);

	code = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	OK(code != MAP_FAILED, "two pages mapped");
	if (code == MAP_FAILED)
		return;
	for (long i = 0; i < page; i++)
		code[i] = (uint8_t)(i ^ 0x5a);
	/* An unreadable region is skipped, not a fault. */
	munmap(code + page, (size_t)page);
	memset(&j, 0, sizeof(j));
	emu_jit_add(&j, (uint64_t)(uintptr_t)code, (uint64_t)page);
	emu_jit_add(&j, (uint64_t)(uintptr_t)(code + page), (uint64_t)page);
	IS_INT(emu_jit_dump(&j, tmp), 1, "the readable region dumped");
	snprintf(path, sizeof(path), "%s/jit", tmp);
	f = fopen(path, "r");
	OK(f != NULL && fgets(line, sizeof(line), f) != NULL, "list line");
	snprintf(want, sizeof(want), "%" PRIx64 " %lx\n",
	    (uint64_t)(uintptr_t)code, page);
	IS_STR(line, want, "START LEN in hex");
	OK(f != NULL && fgets(line, sizeof(line), f) == NULL, "one line");
	if (f != NULL)
		fclose(f);
	snprintf(path, sizeof(path), "%s/jit.%" PRIx64, tmp,
	    (uint64_t)(uintptr_t)code);
	f = fopen(path, "r");
	OK(f != NULL && fread(back, 1, (size_t)page, f) == (size_t)page &&
	    memcmp(back, code, (size_t)page) == 0, "the bytes as they were");
	if (f != NULL)
		fclose(f);
	munmap(code, (size_t)page);
}

static void
test_copy(void)
{
	char src[PATH_MAX + 16], dst[PATH_MAX + 16], buf[64];
	FILE *f;

	emu_jit_map_path(4242, buf, sizeof(buf));
	IS_STR(buf, "/tmp/perf-4242.map", "map path");
	snprintf(src, sizeof(src), "%s/src", tmp);
	snprintf(dst, sizeof(dst), "%s/dst", tmp);
	IS_INT(emu_jit_copy(src, dst), 0, "no source: nothing copied");
	OK(access(dst, F_OK) < 0, "no file made");
	f = fopen(src, "w");
	if (f != NULL) {
		fputs("1000 10 f\n", f);
		fclose(f);
	}
	IS_INT(emu_jit_copy(src, dst), 1, "copied");
	snprintf(src, sizeof(src), "/tmp/perf-%d.map", 4242);
	OK(emu_jit_is_map_path(4242, (uint64_t)(uintptr_t)src), "map path");
	OK(!emu_jit_is_map_path(4243, (uint64_t)(uintptr_t)src), "not pid's");
	snprintf(src, sizeof(src), "/tmp/perf-4242.map.bak");
	OK(!emu_jit_is_map_path(4242, (uint64_t)(uintptr_t)src),
	    "a longer name is not it");
	OK(!emu_jit_is_map_path(4242, 0), "NULL is not it");
	OK(!emu_jit_is_map_path(4242, 16), "an unmapped address is not it");
	f = fopen(dst, "r");
	OK(f != NULL && fgets(buf, sizeof(buf), f) != NULL &&
	    strcmp(buf, "1000 10 f\n") == 0, "same content");
	if (f != NULL)
		fclose(f);
}

int
main(void)
{
	if (mkdtemp(tmp) == NULL) {
		perror(tmp);
		return 1;
	}
	test_list();
	test_dump();
	test_copy();
	STEP(cleanup_remove_tree(tmp));
	return tap_done();
}
