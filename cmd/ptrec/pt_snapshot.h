/*
 * pt_snapshot: one snapshot directory from what the pt recorder captured
 * on hardware: each thread's AUX ring copied oldest to newest (ptaux), the
 * sideband records drained from its data ring (ptsb), the config that was
 * used (ptconfig) and the machine's identity (ptcaps).
 *
 * Owns what is the pt recorder's own in a snapshot, handed to the one
 * writer (snapwrite.h): the sideband kept with its strings, the perf.data
 * config perf would have written (AUXTRACE_INFO from the PMU's format/
 * fields), pt.* from the real config and TIME_CONV, the settings (cpus,
 * filter, how the trigger was armed), and the warnings it owes: a ring
 * that wrapped, sideband the kernel lost.  Nothing here touches a perf event, so
 * the whole path to a snapshot is testable with fake rings and sideband.
 */
#ifndef PTREC_PT_SNAPSHOT_H
#define PTREC_PT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "options.h"
#include "fmt/perfdata.h"
#include "rec/ptcaps.h"
#include "rec/ptconfig.h"
#include "rec/ptsb.h"

/* Sideband records in the order drained, with their strings owned. */
struct pt_sideband {
	struct ptsb_record *rec;
	size_t n, cap;
	uint64_t lost;		/* records the kernel said it dropped */
};

/*
 * Appends a copy of r (its filename or comm copied).  Returns 0 or
 * -ERR_NOMEM.  Has the ptsb_fn shape when arg is a struct pt_sideband.
 */
int pt_sideband_add(const struct ptsb_record *r, void *sb);
void pt_sideband_free(struct pt_sideband *sb);

/* One thread's trace as copied at the snapshot. */
struct pt_ring {
	pid_t tid, pid;
	uint64_t ring_size;	/* bytes of its AUX ring */
	const uint8_t *data;	/* oldest to newest */
	uint64_t kept;		/* bytes in data */
	int wrapped;		/* older trace was overwritten */
	int exited;		/* the thread ended before the snapshot */
};

/* What the recorder knows about the run when it writes a snapshot. */
struct pt_run {
	const struct rec_options *opt;
	const struct ptcaps *caps;
	const struct ptconfig *cfg;
	const struct perfdata_time_conv *tc;	/* from a control page */
	const char *filter;	/* the kernel filter string, or NULL */
	/* how --trigger-symbol was armed: "aux_pause", "park", "tail" */
	const char *trigger_mode;
	int pid;
	const char *state;	/* "exited", "signaled", "running" */
	int exit_code, signal;
	const char *reason;	/* trigger kind: "exit", "after-ms", ... */
	const char *detail;	/* or NULL */
	uint64_t start_wall_ns, fired_wall_ns;
	const char *output_log;	/* a file to copy as output.log, or NULL */
};

/*
 * Writes the snapshot directory dest (which must not exist) from run,
 * the sideband sb and n rings.  Returns 0 or a negative ERR_* with e
 * filled (nothing is left at dest then).
 */
int pt_snapshot_write(const struct pt_run *run, const struct pt_sideband *sb,
    const struct pt_ring *rings, size_t n, const char *dest,
    struct error *e);

#endif
