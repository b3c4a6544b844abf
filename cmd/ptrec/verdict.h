/*
 * verdict: can each recorder (pt, perf, emu) run on this machine, and if
 * not, what would fix it.
 *
 * Owns the rules that turn ptcaps facts into a verdict per recorder with
 * its problems and their remedies (notes/recorder.md §1), shared by
 * `ptrec --doctor` and by the check that makes `--recorder pt|perf` fail
 * at once, before anything is launched, with the doctor's own words.
 */
#ifndef PTREC_VERDICT_H
#define PTREC_VERDICT_H

#include "options.h"
#include "rec/ptcaps.h"
#include "rec/ptconfig.h"
#include "rec/ptprobe.h"

enum { VERDICT_PT, VERDICT_PERF, VERDICT_EMU, VERDICT_COUNT };

#define VERDICT_MAX_PROBLEMS 6
#define VERDICT_TEXT_MAX 640

struct verdict_problem {
	char what[VERDICT_TEXT_MAX];	/* "Intel PT is absent: ..." */
	char remedy[VERDICT_TEXT_MAX];	/* "use --recorder emu ..." */
};

struct verdict {
	const char *name;		/* "pt", "perf", "emu" */
	int usable;			/* no problems: the machine allows it */
	int n_problems;
	struct verdict_problem problems[VERDICT_MAX_PROBLEMS];
};

/* What the doctor and the check compute from one probe. */
struct assessment {
	struct ptcaps caps;
	struct ptring_allowance allowance;
	int plan_ok;			/* rings planned (pmu present) */
	struct ptring_plan plan;
	struct error plan_error;	/* when !plan_ok and the pmu is there */
	int timing_ok;			/* the asked timing builds */
	struct ptconfig timing;		/* for o->timing */
	struct error timing_error;
	int filters_ok;			/* the --filter count fits */
	struct error filters_error;
	int probed;			/* live probes ran (real root only) */
	struct ptprobe bp_probe;	/* hardware breakpoint test open */
	int pt_probed;			/* and an intel_pt test open */
	struct ptprobe pt_probe;
	int aux_pause;			/* kernel >= 6.13; -1 unknown */
	struct verdict v[VERDICT_COUNT];
};

/* perf must be this new for `perf record --control fifo:...`. */
#define VERDICT_PERF_MIN_MAJOR 5
#define VERDICT_PERF_MIN_MINOR 10

/*
 * Probes the root (o->sysroot, else $PTKIT_SYSROOT, else "/") and fills
 * a (heap-sized: allocate it, it is large).  Returns 0, or the probe's
 * negative error with e set.
 */
int assess(const struct rec_options *o, struct assessment *a,
    struct error *e);

/* The root assess() reads. */
const char *assess_root(const struct rec_options *o);

/*
 * For --recorder pt and perf: when the machine cannot run the recorder
 * (or the asked timing config is refused), reports each problem with its
 * remedy on stderr and returns -1; otherwise returns 0 (go on).  Other
 * recorders return 0 at once, without probing.
 */
int rec_hardware_check(const struct rec_options *o);

#endif
