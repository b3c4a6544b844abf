/*
 * rec_pt: the direct Intel PT recorder (ptrec --recorder pt).
 *
 * Owns the run of notes/recorder.md §2-§4 and §6 on top of the library's
 * parts: the config (ptconfig) and rings (ptring_plan) for this machine
 * (ptcaps), the program launched (its output on pipes) or attached to
 * under pttrace with one ptevent per thread opened, given the address
 * filter and the symbol trigger's breakpoint (aux_pause in its group, or
 * a sigtrap breakpoint whose stop parks the thread), and enabled before
 * the thread's first instruction, the sideband drained continuously, the
 * initial maps from /proc (procmaps), and at each snapshot (the trigger
 * policy of capture: symbol, line, tail, --after-ms, --max-capture-ms,
 * the program's exit, SIGINT/SIGTERM) every event disabled, its AUX ring
 * copied oldest to newest into a numbered snapshot (pt_snapshot) with
 * output.log, then enabled again for --repeat or closed after the last.
 * main calls it only once the doctor's verdict said pt is usable here.
 */
#ifndef PTREC_REC_PT_H
#define PTREC_REC_PT_H

#include "options.h"
#include "rec/ptcaps.h"
#include "rec/ptevent.h"

/* Records as o says; returns the tool's exit status (reports errors). */
int rec_pt_run(const struct rec_options *o);

/*
 * The kernel side of the recorder: lib/ptevent's functions, or a test's
 * fake rings.  Each has the signature and the returns of the ptevent
 * function it is named after; a breakpoint's fd is closed with close(2).
 */
struct rec_pt_events {
	int (*open)(struct ptevent *ev, pid_t tid,
	    const struct ptevent_spec *s, struct error *e);
	int (*enable)(struct ptevent *ev, struct error *e);
	int (*disable)(struct ptevent *ev, struct error *e);
	int (*drain)(struct ptevent *ev, ptsb_fn fn, void *arg,
	    struct error *e);
	uint64_t (*snapshot)(struct ptevent *ev, uint8_t *out, int *truncated);
	int (*time_conv)(const struct ptevent *ev,
	    struct perfdata_time_conv *tc, struct error *e);
	void (*close)(struct ptevent *ev);
	int (*breakpoint)(pid_t tid, uint64_t addr, uint64_t hits,
	    uint64_t cookie, struct error *e);
	int (*breakpoint_pause)(pid_t tid, uint64_t addr, uint64_t hits,
	    int group_fd, struct error *e);
	int64_t (*breakpoint_count)(int fd, struct error *e);
};

/* sig_data of the recorder's breakpoints, back in si_perf_data. */
#define REC_PT_BP_COOKIE 0x70746b6974ULL	/* "ptkit" */

/*
 * rec_pt_run after its checks: records with caps (already probed) and
 * the events ev.  Returns 0 when it took a snapshot and nothing failed,
 * else -1 (what failed is reported).  Tests call it with fake rings;
 * rec_pt_run with lib/ptevent.
 */
int rec_pt_record(const struct rec_options *o, const struct ptcaps *caps,
    const struct rec_pt_events *ev);

#endif
