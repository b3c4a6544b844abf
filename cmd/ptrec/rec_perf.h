/*
 * rec_perf: the perf fallback recorder (ptrec --recorder perf).
 *
 * Owns running `perf record` in snapshot mode (the command line is
 * ptperf's, the same config the pt recorder would program) through spawn
 * (argv, no shell) with its --control fifo in ptrec's scratch directory:
 * at the trigger (--after-ms, --max-capture-ms, SIGINT/SIGTERM) it writes
 * "snapshot" and waits for perf's "ack", then stops perf with SIGINT and
 * takes its perf.data into a snapshot (perf_import).  main calls it only
 * once the doctor's verdict said perf is usable here.
 */
#ifndef PTREC_REC_PERF_H
#define PTREC_REC_PERF_H

#include "options.h"

/* Records as o says; returns the tool's exit status (reports errors). */
int rec_perf_run(const struct rec_options *o);

#endif
