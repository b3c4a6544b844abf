/*
 * emu_snapshot: one snapshot directory from what the emu plugin left in
 * the scratch directory (emu_handoff.h): ring copies, sideband, output.
 *
 * Owns reading those files, and what is emu's own in its snapshots,
 * handed to the one writer (snapwrite.h): the plugin's records in perf's
 * form (MMAP2, FORK, COMM, ITRACE_START, EXIT), one thread per ring copy,
 * the dumped JIT code, the emulated CPU and clock, and the manifest
 * settings and counters that say how the capture was made under
 * emulation.
 */
#ifndef PTREC_EMU_SNAPSHOT_H
#define PTREC_EMU_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "emu_handoff.h"
#include "base/error.h"
#include "options.h"
#include "snapwrite.h"

enum emu_sb_type { SB_MAP, SB_UNMAP, SB_PROT, SB_THREAD, SB_EXIT, SB_COMM,
	SB_PROCESS, SB_EXEC, SB_EXECFAIL, SB_PROGRAM };

struct emu_sb_rec {
	enum emu_sb_type type;
	uint64_t time;
	int pid, tid, ptid;
	int ppid;		/* SB_PROCESS: the parent process */
	int exec_index;		/* SB_PROGRAM: programs the process ran
				   before this one */
	uint64_t addr, len, pgoff;
	unsigned prot;
	char *text;		/* path or comm, owned */
};

struct emu_sideband {
	struct emu_sb_rec *rec;
	size_t n, cap;
	struct emu_counter {
		char name[48];
		uint64_t value;
	} counter[32];		/* "counter NAME VALUE" lines, last wins */
	size_t n_counters;
};

/*
 * Reads every process's sideband in SCRATCH: "sideband" (the first
 * process's) then each "sideband.<pid>", records in that order, counters
 * summed over the processes.  Returns 0, -ERR_IO, -ERR_FORMAT (a line the
 * plugin cannot have written: the message quotes it), -ERR_NOMEM.
 */
int emu_sideband_read(struct emu_sideband *sb, const char *scratch,
    struct error *e);

/*
 * What was not traced because of processes, one line each for ptrec's
 * stderr and the manifest's warnings: a program exec'd that the plugin
 * could not follow (it then runs natively), children not followed
 * (--no-follow).  Returns the
 * number of lines put in out[0..max), each malloc'd (free them).
 */
size_t emu_process_warnings(const struct emu_sideband *sb, char **out,
    size_t max);
void emu_sideband_free(struct emu_sideband *sb);

/* What the recorder knows about the run when it writes a snapshot. */
struct emu_run {
	const struct rec_options *opt;
	const char *program;		/* resolved path of PROGRAM */
	int pid;
	const char *state;		/* "exited", "signaled", "running" */
	int exit_code, signal;
	const char *output_log;		/* scratch copy of the output */
	uint64_t start_wall_ns;
	uint64_t clock_wall_ns;		/* wall time at virtual TSC 0, or 0 */
	uint64_t psb_period;
	const char *jit_map_removed;	/* copy of the JIT map the plugin took
					   when the program removed it */
};

/* One snapshot's worth of rings and why it was taken. */
struct emu_capture {
	uint64_t seq;
	const char *reason;		/* trigger kind */
	const char *detail;		/* or NULL */
	uint64_t fired_time;		/* virtual TSC, 0 unknown */
	uint64_t output_offset;		/* output.log bytes before the
					   trigger, when has_output_offset */
	int has_output_offset;
	uint64_t output_end;		/* bytes the program had written when
					   it was taken, when has_output_end */
	int has_output_end;
	struct emu_ring_copy *rings;
	size_t n_rings;
	struct snapwrite_code *jit;	/* snap.<seq>/jit.*, data malloc'd */
	size_t n_jit;
	char *jit_map;			/* snap.<seq>/perf.map, or NULL */
};

/*
 * Reads SCRATCH/snap.<seq>/ (the rings the plugin copied, and its dumps
 * of JIT code and map).  Returns 0,
 * -ERR_IO, -ERR_FORMAT, -ERR_NOMEM.  Free with emu_capture_free.
 */
int emu_capture_read(struct emu_capture *c, const char *scratch,
    uint64_t seq, struct error *e);

/*
 * Reads the live rings SCRATCH/ring.* (after a crash, or when the plugin
 * did not answer): the pending TNT bits in each header are encoded into
 * the ring first, as hardware would have written them.  emu_capture_read
 * takes the other processes' rings this way too: only the first process
 * copies rings into snap.<seq>/.
 */
int emu_capture_from_rings(struct emu_capture *c, const char *scratch,
    struct error *e);
void emu_capture_free(struct emu_capture *c);

/*
 * What a snapshot does not keep, one sentence each (how many, why, the
 * option that fixes it): threads given no ring, history that ended
 * threads gave back for the budget, rings that wrapped.  The same
 * sentences are the manifest's warnings and ptrec's last words.
 */
#define EMU_LOSS_MAX 6
#define EMU_LOSS_LINE 320

struct emu_losses {
	char line[EMU_LOSS_MAX][EMU_LOSS_LINE];
	size_t n;
};

void emu_losses(const struct emu_run *run, const struct emu_sideband *sb,
    const struct emu_capture *c, struct emu_losses *out);

/*
 * Writes the snapshot to its destination (-o, --store or ./ptkit-snapshots;
 * index > 1 adds ".<index>" to -o DIR) and puts its path in out.
 * Returns 0 or a negative ERR_* with e filled.
 */
int emu_snapshot_write(const struct emu_run *run,
    const struct emu_sideband *sb, const struct emu_capture *c,
    uint64_t index, char *out, size_t out_size, struct error *e);

#endif
