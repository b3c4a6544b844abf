/*
 * rec_perf: the perf fallback recorder (ptrec --recorder perf).
 *
 * Owns running `perf record ... -Se` (the command line is ptperf's, the
 * same config and address filters the pt recorder would program) through
 * spawn (argv, no shell), relaying the program's output (perf's) to
 * stderr and output.log and matching --trigger-line; at the trigger
 * (a line, its tail, --after-ms, --max-capture-ms, SIGINT/SIGTERM) it
 * stops perf with SIGINT, whose 'e' snapshot at exit is the capture (as
 * when the program exits first), and takes its perf.data into a snapshot
 * (perf_import).  One snapshot per run: --repeat, --control and
 * --trigger-symbol are refused.  main calls it only once the doctor's
 * verdict said perf is usable here.
 */
#ifndef PTREC_REC_PERF_H
#define PTREC_REC_PERF_H

#include "options.h"

#include "rec/ptcaps.h"

/* Records as o says; returns the tool's exit status (reports errors). */
int rec_perf_run(const struct rec_options *o);

/*
 * rec_perf_run after its checks, with caps already probed: the perf run
 * is caps->tools.perf_path (tests give a fake).  Returns 0, or -1 after
 * reporting what failed.
 */
int rec_perf_record(const struct rec_options *o, const struct ptcaps *caps);

#endif
