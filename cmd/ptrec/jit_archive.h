/*
 * jit_archive: code made at run time, in a snapshot, for every recorder.
 *
 * Owns two things (man/ptkit-snapshot.5, "JIT code"):
 *
 * - The JIT map of a traced process, perf's /tmp/perf-PID.map, archived
 *   as jit/perf-PID.map with a manifest.jit_maps row.  The emu, pt and
 *   perf recorders all archive it through rec_jit_archive_map(), from a
 *   copy they took while the program lived when they have one, else from
 *   the file as it is when the snapshot is written.
 *
 * - The bytes of an anonymous executable mapping (only the emu recorder
 *   can read them), turned into an image that perf and ptdecode decode as
 *   any other: a small ELF file (ET_EXEC, one PT_LOAD holding the bytes
 *   at the mapping's address, page-aligned at file offset
 *   REC_JIT_TEXT_OFFSET, a .symtab made from the archived JIT map, a
 *   build-id that is the SHA-256 of the bytes and symbols cut to 20
 *   bytes), archived by build-id and named "//anon-jit/PID/START" (START
 *   in hex) in perf.data and the manifest.  Its MMAP2 record maps it with
 *   pgoff REC_JIT_TEXT_OFFSET + (start & 0xfff).
 */
#ifndef PTREC_JIT_ARCHIVE_H
#define PTREC_JIT_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "fmt/snapshot.h"

#define REC_JIT_MAP_DIR SNAPSHOT_JIT_DIR
#define REC_JIT_IMAGE_PREFIX SNAPSHOT_JIT_IMAGE_PREFIX
#define REC_JIT_TEXT_OFFSET 0x1000u

/* What rec_jit_image() archived. */
struct rec_jit_image {
	char name[64];			/* "//anon-jit/PID/START" */
	uint64_t pgoff;			/* MMAP2 pgoff for the mapping */
	size_t n_syms;			/* JIT map functions inside it */
	struct snapshot_image img;	/* with its build-id */
};

/* "/tmp/perf-PID.map" into buf. */
void rec_jit_map_path(int pid, char *buf, size_t size);

/*
 * Archives the JIT map of pid: from copy when it is not NULL and exists
 * (a copy taken while the program lived), else from /tmp/perf-PID.map,
 * opened once without following a link and read through that
 * descriptor: a link, anything but a regular file, or a file owned by
 * neither the recording user nor root is refused.  Adds the manifest
 * row.  Returns 1 when archived, 0 when there is no map or it was
 * refused or could not be copied (a warning on stderr and in the
 * manifest then says why), or -ERR_NOMEM.
 */
int rec_jit_archive_map(struct snapshot *s, int pid, const char *copy,
    struct error *e);

/*
 * Archives len bytes of code that ran at start in pid as an image (see
 * above), with the functions of pid's archived JIT map (if any) that lie
 * inside it as symbols.  Returns 0 and *out, -ERR_RANGE (len 0 or too
 * big), -ERR_IO, -ERR_NOMEM.
 */
int rec_jit_image(struct snapshot *s, int pid, uint64_t start,
    const uint8_t *code, size_t len, struct rec_jit_image *out,
    struct error *e);

/* 1 when name is one rec_jit_image() gives, else 0. */
int rec_jit_is_image_name(const char *name);

#endif
