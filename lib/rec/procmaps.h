/*
 * procmaps: a process's mappings, read from /proc/PID/maps.
 *
 * Owns the mappings a hardware recorder must synthesise because the
 * kernel made them before the PT event existed (notes/recorder.md §3.2:
 * the executable, ld.so and, on attach, every library), turned into the
 * MMAP2 form of perfdata.h; and the vDSO image, which is the same for
 * every process of one kernel, so the recorder's own copy (AT_SYSINFO_EHDR)
 * is the traced program's.
 */
#ifndef PTKIT_PROCMAPS_H
#define PTKIT_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "fmt/perfdata.h"

struct procmaps_entry {
	uint64_t start, end, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint32_t prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
	int shared;		/* 's' rather than 'p' */
	char *path;		/* "" anonymous, "[vdso]", "/usr/bin/x", ... */
	int deleted;		/* the path ended in " (deleted)" (cut off) */
};

struct procmaps {
	struct procmaps_entry *v;
	size_t n;
};

/*
 * Parses the text of a maps file; with exec_only, keeps executable
 * mappings only.  Returns 0, -ERR_FORMAT (e quotes the line), -ERR_NOMEM.
 * On failure m is empty.
 */
int procmaps_parse(const char *text, int exec_only, struct procmaps *m,
    struct error *e) PTKIT_MUST_CHECK;

/* Reads /proc/PID/maps (pid 0: ourselves) and parses it. */
int procmaps_read(pid_t pid, int exec_only, struct procmaps *m,
    struct error *e) PTKIT_MUST_CHECK;

void procmaps_free(struct procmaps *m);

/*
 * The MMAP2 record for a mapping of thread tid of process pid (time and
 * sample_id left 0; filename borrowed from en).
 */
void procmaps_to_mmap(const struct procmaps_entry *en, uint32_t pid,
    uint32_t tid, struct perfdata_mmap *out);

/*
 * This process's vDSO: its address and size.  Returns 0, or -ERR_NOTFOUND
 * (no vDSO, as under qemu-user).
 */
int procmaps_vdso(const void **base, size_t *size, struct error *e)
    PTKIT_MUST_CHECK;

#endif
