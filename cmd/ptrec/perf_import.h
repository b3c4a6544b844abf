/*
 * perf_import: a snapshot directory from a perf.data that `perf record`
 * wrote (the perf recorder's output).
 *
 * Owns what is the perf recorder's own in a snapshot, handed to the one
 * writer (snapwrite.h), which takes perf's file as it is (perf wrote the
 * AUXTRACE queues, sideband and TIME_CONV itself): pt.* from the file's
 * intel_pt attr and AUXTRACE_INFO, one thread row per AUXTRACE queue, and
 * the files its MMAP records name with the build-ids perf saw (the writer
 * archives them and warns when one differs).  Works on any perf.data, so
 * it is testable with a cpu-clock recording.
 */
#ifndef PTREC_PERF_IMPORT_H
#define PTREC_PERF_IMPORT_H

#include "base/error.h"
#include "options.h"
#include "rec/ptcaps.h"

struct perf_import_run {
	const struct rec_options *opt;
	const struct ptcaps *caps;	/* host identity */
	const char *perf_version;	/* "6.1.192", or NULL */
	int pid;
	const char *state;		/* "exited", "signaled", "running" */
	int exit_code, signal;
	const char *reason;		/* trigger kind */
	const char *detail;		/* the symbol or line regex, or NULL */
	const char *filter;		/* the address filter string, or NULL */
	const char *output_log;		/* a file to copy as output.log, or NULL */
	uint64_t start_wall_ns, fired_wall_ns;
};

/*
 * Writes the snapshot dest (which must not exist) from the perf.data at
 * perf_data.  Returns 0, or -ERR_IO/-ERR_NOTFOUND (cannot read it),
 * -ERR_FORMAT/-ERR_TRUNCATED (perfdata_read refused it), -ERR_EXISTS,
 * -ERR_NOMEM; nothing is left at dest on failure.
 */
int perf_import(const struct perf_import_run *run, const char *perf_data,
    const char *dest, struct error *e);

#endif
