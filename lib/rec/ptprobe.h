/*
 * ptprobe: asking the running kernel, by trying, what a recorder needs.
 *
 * Owns the doctor's test opens on the calling process itself
 * (notes/recorder.md §1.6): a hardware execute breakpoint (what
 * --trigger-symbol uses), which must count three calls of a function of
 * ours, since some hypervisors let it open but never fire it; and an intel_pt event with the config a recorder
 * would use, with its base mapping (1 + 1 pages) and a 2-page AUX area, to
 * see EBUSY, EACCES, EINVAL, EPERM or a failed mmap before a recording
 * does, and cap_user_time_zero from its control page.  Each probe closes
 * and unmaps everything it opened.  Facts that a file can tell (caps,
 * limits) are ptcaps' business; this module only does system calls.
 */
#ifndef PTKIT_PTPROBE_H
#define PTKIT_PTPROBE_H

#include <stdint.h>

struct ptprobe {
	int ok;			/* the probe succeeded */
	int err;		/* errno of the failing call, else 0 */
	int cap_user_time_zero;	/* intel_pt probe: from the control page */
	char what[320];		/* why it failed, a sentence; "" when ok */
	char remedy[320];	/* what would fix it; "" when ok */
};

/*
 * Opens an execute breakpoint on a function of ours, calls it three times
 * and reads the count.  Returns 0 when the probe ran (p->ok says how it
 * went).
 */
int ptprobe_breakpoint(struct ptprobe *p);

/*
 * Opens an intel_pt event of PMU type `type` with `config` on the calling
 * thread (pid 0, cpu -1, exclude_kernel), maps it and a 2-page AUX area
 * read-only, reads cap_user_time_zero, and undoes all of it.  Returns 0
 * when the probe ran (p->ok says how it went).
 */
int ptprobe_intel_pt(int type, uint64_t config, struct ptprobe *p);

/*
 * The sentence and remedy for errno err from perf_event_open of an
 * intel_pt event (EBUSY, EACCES, EINVAL, EPERM, ENOENT, ...) or, with
 * in_mmap, from mapping its AUX area.  Exposed for tests: the probe itself
 * cannot fail on a machine without Intel PT.
 */
void ptprobe_explain(int err, int in_mmap, uint64_t config,
    struct ptprobe *p);

#endif
