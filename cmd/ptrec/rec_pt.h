/*
 * rec_pt: the direct Intel PT recorder (ptrec --recorder pt).
 *
 * Owns the run of notes/recorder.md §2-§3 on top of the library's parts:
 * the config (ptconfig) and rings (ptring_plan) for this machine (ptcaps),
 * the program launched (or attached to) under pttrace with one ptevent per
 * thread opened and enabled before the thread's first instruction, the
 * sideband drained continuously, the initial maps from /proc (procmaps),
 * and at the trigger (the program's exit, --after-ms, --max-capture-ms,
 * SIGINT/SIGTERM) every event disabled and its AUX ring copied oldest to
 * newest (ptaux) into one snapshot (pt_snapshot).  main calls it only once
 * the doctor's verdict said pt is usable here.
 */
#ifndef PTREC_REC_PT_H
#define PTREC_REC_PT_H

#include "options.h"

/* Records as o says; returns the tool's exit status (reports errors). */
int rec_pt_run(const struct rec_options *o);

#endif
