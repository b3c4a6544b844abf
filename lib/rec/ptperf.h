/*
 * ptperf: the perf record command line of the perf recorder.
 *
 * Owns the translation of a checked Intel PT config into perf's event
 * syntax, with every format/ field given as a term so that perf's own
 * default terms (tsc, mtc, mtc_period, psb_period, pt, branch) change
 * nothing and perf programs exactly the config the pt recorder would
 * (parity by construction), and the argv of `perf record` in snapshot
 * mode controlled through a FIFO (perf 5.10+: --control fifo:, the
 * 'snapshot' command).  Builds strings only; running perf is spawn's.
 */
#ifndef PTKIT_PTPERF_H
#define PTKIT_PTPERF_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "rec/ptcaps.h"

/*
 * Writes "intel_pt/pt=1,cyc=1,...,notnt=0/u" for config (user space only)
 * into buf.  Returns its length, or -ERR_UNSUPPORTED (no intel_pt, or a
 * config ptconfig_validate refuses; e says why), -ERR_RANGE (buf too
 * small).
 */
int ptperf_event(const struct ptcaps *c, uint64_t config, char *buf,
    size_t size, struct error *e) PTKIT_MUST_CHECK;

struct ptperf_opts {
	const char *perf;	/* perf's path ("perf": looked up in PATH) */
	uint64_t config;	/* checked against caps by ptperf_event */
	uint64_t aux_bytes;	/* AUX ring: a power of two, >= 1 page */
	uint64_t data_bytes;	/* sideband ring: a power of two, >= 1 page */
	/*
	 * 1: --per-thread, a ring per thread, but perf then disables
	 * inheritance, so threads created later are not traced; 0: perf's
	 * per-CPU rings with inheritance, which follow every thread.
	 */
	int per_thread;
	const char *filter;	/* ptfilter_string() output, or NULL */
	const char *ctl_fifo;	/* --control fifo:CTL,ACK */
	const char *ack_fifo;
	const char *output;	/* the perf.data to write */
	uint64_t pid;		/* attach to this process, or 0 */
	char *const *program;	/* launch: argv, NULL-terminated */
};

/* A NULL-terminated argv and the strings it points to; one owner. */
struct ptperf_argv {
	char **argv;
	size_t argc;
};

/*
 * Builds
 *   perf record -e EVENT [--filter F] [--per-thread] -m DATA,AUX -Se
 *       --control fifo:CTL,ACK -o OUTPUT -q (-p PID | -- PROGRAM ARG...)
 * with -m in pages.  Returns 0, or -ERR_INVALID (sizes not powers of two,
 * neither or both of pid and program, missing FIFO or output),
 * -ERR_UNSUPPORTED (from ptperf_event), -ERR_NOMEM.  On failure out is
 * empty.
 */
int ptperf_argv_build(const struct ptcaps *c, const struct ptperf_opts *o,
    struct ptperf_argv *out, struct error *e) PTKIT_MUST_CHECK;

/* Frees what ptperf_argv_build allocated; out becomes empty. */
void ptperf_argv_free(struct ptperf_argv *out);

#endif
