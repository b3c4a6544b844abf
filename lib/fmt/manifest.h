/*
 * manifest: the snapshot's manifest.json, as a C structure, written with
 * jsonw and read back with json (jansson).
 *
 * Owns the manifest's fields, their JSON names and types, and the format
 * version.  man/ptkit-snapshot.5 documents every field; keep the two in
 * step.  All strings in a struct manifest are owned by it (the add/set
 * helpers copy) and freed by manifest_free().
 *
 * Times: *_ns fields named "perf time" are in the perf clock of perf.data
 * (what TIME_CONV converts TSC to); *_wall_ns are nanoseconds since the
 * Unix epoch.  Under emu, the TSC is virtual (1 GHz, see DECISIONS.md) and
 * pt.clock says so.
 */
#ifndef PTKIT_MANIFEST_H
#define PTKIT_MANIFEST_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

#define MANIFEST_FORMAT_VERSION 1
#define MANIFEST_ID_MAX 32		/* "YYYYmmddTHHMMSSZ-xxxxxxxx" + NUL */

struct manifest_kv {
	char *key;
	char *value;
};

struct manifest_counter {
	char *name;
	uint64_t value;
};

struct manifest_thread {
	uint32_t tid;
	uint32_t pid;
	char *name;			/* comm, or NULL */
	uint32_t auxtrace_idx;		/* its AUXTRACE queue in perf.data */
	uint64_t ring_size;		/* bytes of the AUX ring */
	uint64_t bytes_kept;		/* bytes of trace in perf.data */
	int wrapped;			/* the ring overwrote older data */
	int exited;			/* the thread ended before the snapshot */
	uint64_t start_ns, end_ns;	/* perf time; 0 when unknown */
};

struct manifest_image {
	char *path;			/* as the program mapped it; "[vdso]" */
	char *build_id;			/* lower-case hex, or NULL */
	char *sha256;			/* lower-case hex of the file content */
	char *archived;			/* relative to the snapshot directory */
	char *debug;			/* separate debuginfo, relative, or NULL */
	uint64_t size;			/* bytes */
	int is_vdso;
};

/* A JIT map (perf's /tmp/perf-PID.map format) the recorder archived. */
struct manifest_jit_map {
	uint32_t pid;
	char *path;			/* where the program wrote it */
	char *archived;			/* relative to the snapshot directory */
};

struct manifest {
	int format_version;		/* MANIFEST_FORMAT_VERSION */
	char id[MANIFEST_ID_MAX];
	char *created;			/* ISO 8601 UTC, "2026-11-29T08:42:02Z" */
	uint64_t created_wall_ns;

	struct {
		char *hostname, *kernel;	/* uname nodename, release */
		char *cpu_vendor, *cpu_model_name;
		uint32_t cpu_family, cpu_model, cpu_stepping;
		uint32_t nr_cpus;
		int emulated;			/* the CPU identity is emu's */
	} host;

	struct {
		char *backend;			/* "pt", "perf" or "emu" */
		char *version;			/* ptkit version that recorded */
		size_t nr_settings;
		struct manifest_kv *settings;	/* backend options, as strings */
	} recorder;

	struct {
		uint64_t config;		/* intel_pt attr.config */
		uint32_t pmu_type;
		int branch, tsc, mtc, cyc, noretcomp;
		uint32_t mtc_period;		/* MTC frequency exponent */
		uint32_t cyc_threshold;
		uint32_t psb_period;
		char *clock;			/* "tsc" or "virtual" */
		uint64_t tsc_hz;		/* TSC frequency; 0 unknown */
		uint32_t nom_freq;		/* max non-turbo ratio */
		uint32_t tsc_ctc_n, tsc_ctc_d;	/* CPUID 0x15 EBX/EAX */
		uint64_t time_shift, time_mult, time_zero;
		char *timing_profile;		/* "low", "normal", "high", ... */
	} pt;

	struct {
		size_t argc;
		char **argv;
		uint32_t pid;
		char *cwd;
		char *state;		/* "exited", "signaled", "running" */
		int exit_code;		/* when exited */
		int signal;		/* when signaled: the number */
	} target;

	struct {
		char *kind;		/* "exit", "after-ms", "symbol", ... */
		char *detail;		/* what matched, or NULL */
		uint64_t fired_ns;	/* perf time */
		uint64_t fired_wall_ns;
		int64_t output_offset;	/* output.log bytes before it; -1
					   unknown (written as null) */
	} trigger;

	struct {
		uint64_t start_ns, end_ns;		/* perf time */
		uint64_t start_wall_ns, end_wall_ns;
		uint64_t start_tsc, end_tsc;
	} capture;

	size_t nr_threads;
	struct manifest_thread *threads;
	size_t nr_images;
	struct manifest_image *images;
	size_t nr_jit_maps;
	struct manifest_jit_map *jit_maps;	/* absent before ptkit 0.2:
						   read as none */
	size_t nr_warnings;
	char **warnings;
	size_t nr_counters;
	struct manifest_counter *counters;
};

/* Zeroes m and sets format_version.  */
void manifest_init(struct manifest *m);

/* Frees everything m owns and zeroes it. */
void manifest_free(struct manifest *m);

/*
 * Setters and adders (all copy their strings).  Each returns 0 or
 * -ERR_NOMEM.  manifest_set_string replaces *field (a char * inside m).
 */
int manifest_set_string(char **field, const char *value, struct error *e)
    PTKIT_MUST_CHECK;
int manifest_set_argv(struct manifest *m, size_t argc,
    const char *const *argv, struct error *e) PTKIT_MUST_CHECK;
int manifest_set_setting(struct manifest *m, const char *key,
    const char *value, struct error *e) PTKIT_MUST_CHECK;
/* Adds a row (copying name); returns its index or -ERR_NOMEM. */
int manifest_add_thread(struct manifest *m, const struct manifest_thread *t,
    struct error *e) PTKIT_MUST_CHECK;
int manifest_add_image(struct manifest *m, const struct manifest_image *im,
    struct error *e) PTKIT_MUST_CHECK;
int manifest_add_warning(struct manifest *m, struct error *e,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)))
    PTKIT_MUST_CHECK;
/* Sets (adding or replacing) a named counter. */
int manifest_set_counter(struct manifest *m, const char *name,
    uint64_t value, struct error *e) PTKIT_MUST_CHECK;

/* Adds a JIT map row (copying its strings): its index, or -ERR_NOMEM. */
int manifest_add_jit_map(struct manifest *m, const struct manifest_jit_map *j,
    struct error *e) PTKIT_MUST_CHECK;

/* The JIT map of pid, or NULL. */
const struct manifest_jit_map *manifest_find_jit_map(const struct manifest *m,
    uint32_t pid);

/* The image whose path is path, or NULL. */
const struct manifest_image *manifest_find_image(const struct manifest *m,
    const char *path);

/* A counter's value; 0 when the recorder did not count it. */
uint64_t manifest_counter(const struct manifest *m, const char *name);

/*
 * Threads of the run with no trace in the snapshot: those given no ring
 * (counters.untraced_threads) and those that gave all their history back
 * for the ring budget after they ended (counters.budget_dropped_threads).
 * What every summary calls "untraced".
 */
#define MANIFEST_C_UNTRACED "untraced_threads"
#define MANIFEST_C_DROPPED "budget_dropped_threads"
uint64_t manifest_untraced(const struct manifest *m);

/*
 * Processes of the run with no trace: children not followed
 * (counters.fork_untraced, with --no-follow) and programs a process
 * exec'd that the emulator could not follow (counters.exec_untraced).
 * What the summaries call a process's "untraced".
 */
#define MANIFEST_C_FORK_UNTRACED "fork_untraced"
#define MANIFEST_C_EXEC_UNTRACED "exec_untraced"
uint64_t manifest_untraced_processes(const struct manifest *m);

/*
 * How the snapshot's times were kept, for every answer that shows them:
 * under the emu recorder (pt.clock "virtual") the sentence "emulated,
 * shared by all threads (host time under emulation)"; NULL for a
 * hardware clock.  Instruction counts are exact under either.
 */
const char *manifest_clock_note(const struct manifest *m);

/* Writes m as a JSON document (with a final newline).  0 or -ERR_IO. */
int manifest_write(FILE *out, const struct manifest *m, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Checks only that every member naming a file of the snapshot
 * (images[].archived, images[].debug, jit_maps[].archived) is a path
 * inside it, as manifest_read does: for a copy (an import) that must not
 * take in a manifest sending readers elsewhere.  Returns 0, or
 * -ERR_FORMAT ("PATH: images[2].archived: not a path inside the snapshot
 * directory (absolute, empty or through ..)"), -ERR_IO, -ERR_NOTFOUND.
 */
int manifest_check_paths(const char *path, struct error *e) PTKIT_MUST_CHECK;

/* As manifest_check_paths, from the open file fd (left open), named path. */
int manifest_check_paths_fd(int fd, const char *path, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Reads path into m (manifest_init'ed by it; manifest_free it after).
 * By path, for a file a user named: a snapshot's own manifest is read
 * beneath its directory by snapshot_read_manifest (fmt/snapshot.h).
 * Returns 0, -ERR_IO/-ERR_NOTFOUND, -ERR_FORMAT (not JSON, a member
 * missing or of the wrong type: the message names it), -ERR_UNSUPPORTED
 * (a newer format_version), -ERR_NOMEM.
 */
int manifest_read(const char *path, struct manifest *m, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * What a listing of the store shows of a snapshot: when it was made, what
 * ran and what took it.  Members absent or of another type are left as
 * manifest_read_brief found them (0 and ""), so that a listing shows
 * what it can of a manifest manifest_read would refuse.
 */
struct manifest_brief {
	uint64_t created_wall_ns;	/* 0: not said */
	char created[40];		/* ISO 8601 UTC, "" */
	char program[PATH_MAX];		/* target.argv[0], "" */
	char trigger[40];		/* trigger.kind, "" */
	uint32_t pid;			/* target.pid, 0 */
	char target_state[16];		/* target.state, "" */
	int exit_code, signal;		/* target's, when its state says */
	char recorder[16];		/* recorder.backend, "" */
};

/*
 * Reads the members of struct manifest_brief from path, zeroing b first.
 * Returns 0, -ERR_IO/-ERR_NOTFOUND, -ERR_FORMAT (not a JSON object).
 */
int manifest_read_brief(const char *path, struct manifest_brief *b,
    struct error *e) PTKIT_MUST_CHECK;

/* As manifest_read_brief, from the open file fd (left open), named path. */
int manifest_read_brief_fd(int fd, const char *path,
    struct manifest_brief *b, struct error *e) PTKIT_MUST_CHECK;

/* As manifest_read, from the open file fd (left open), named path. */
int manifest_read_fd(int fd, const char *path, struct manifest *m,
    struct error *e) PTKIT_MUST_CHECK;

#endif
