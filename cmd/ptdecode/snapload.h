/*
 * snapload: what ptdecode needs from a snapshot directory, gathered once.
 *
 * Owns: reading manifest.json and perf.data (through lib/manifest and
 * lib/perfdata), resolving every executable mapping to a file to read
 * (the snapshot's archive first, by path then by build-id; the live
 * filesystem only as a counted fallback; an archived file is opened once,
 * beneath the snapshot, and read through that descriptor only), loading
 * those into the shared
 * image section cache, the MAP records, the thread list with each
 * thread's trace, and the decode parameters (CPU identity, MTC and
 * nominal frequency, CPUID 0x15 ratio, TIME_CONV, capture start).
 */
#ifndef PTDECODE_SNAPLOAD_H
#define PTDECODE_SNAPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "dec/ptdec.h"

struct snap_thread {
	uint32_t tid, pid;
	const char *name;		/* borrowed; "" if unknown */
	int wrapped;
	const struct perfdata_queue *queue;
};

/* An archived file of the snapshot, open for the decode's life. */
struct snap_file {
	char *rel;			/* as the manifest names it */
	int fd;
};

struct snap {
	char *dir;			/* absolute */
	struct snap_file *files;	/* opened beneath dir, once each */
	size_t nr_files, cap_files;
	struct manifest man;
	struct perfdata *pd;
	struct ptdec_images images;
	struct blks_map *maps;		/* strings owned by the snap */
	size_t nr_maps, cap_maps;
	struct snap_thread *threads;
	size_t nr_threads;
	struct ptdec_config cfg;	/* jobs, window, chunk left to the caller */
	struct blks_header hdr;
	unsigned nr_live, nr_missing;	/* images not from the archive */
	char first_live[256], first_missing[256];
};

/*
 * Loads the snapshot at dir.  Returns 0, or -ERR_NOTFOUND (not a
 * snapshot: no perf.data or manifest.json), -ERR_FORMAT / -ERR_TRUNCATED /
 * -ERR_UNSUPPORTED (a file of it is malformed; the message names it),
 * -ERR_IO, -ERR_NOMEM.  snap_free() in every case.
 */
int snap_load(struct snap *s, const char *dir, struct error *e);

/*
 * The trace of thread t: *buf (into the perf.data, or *owned when the
 * queue had to be joined; free *owned) and *len.  Returns 0 or -ERR_NOMEM.
 */
int snap_thread_trace(const struct snap *s, const struct snap_thread *t,
    const uint8_t **buf, size_t *len, uint8_t **owned, struct error *e);

/*
 * Which program of process pid ran at time: 0 its first, n after its nth
 * exec (a COMM record with the exec flag after the process had a name:
 * the first one names the program it started with).  Its maps, MAP
 * records and image sections are keyed by blks_space(pid, that).
 */
uint32_t snap_exec_index(const struct snap *s, uint32_t pid, uint64_t time);

/* The perf time of pid's exec'th exec (exec > 0); 0 if there is none. */
uint64_t snap_exec_time(const struct snap *s, uint32_t pid, uint32_t exec);

void snap_free(struct snap *s);

#endif
