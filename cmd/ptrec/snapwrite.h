/*
 * snapwrite: ptrec's one snapshot writer; every recorder (emu, pt, perf)
 * hands it what it captured through struct snapwrite_source.
 *
 * Owns, for all of them: where a snapshot goes (-o, --store, or
 * ./ptkit-snapshots) and that the path fits; archiving images (files the
 * MMAP2 records name, the vDSO, dumped JIT code and the JIT map);
 * writing perf.data (TIME_CONV, AUXTRACE_INFO, the sideband in time
 * order, one AUXTRACE queue per thread, build-ids) or taking in one perf
 * wrote; and the manifest's host, recorder, pt, target, threads and
 * capture sections.  It is ptrec's only user of lib/fmt/snapshot,
 * lib/fmt/perfdata's writer and lib/fmt/manifest.
 *
 * A recorder keeps only what is its own: how it reads its rings and
 * sideband, and the facts below (its perf.data config, its pt.* values,
 * its settings, counters and warnings).
 */
#ifndef PTREC_SNAPWRITE_H
#define PTREC_SNAPWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "fmt/perfdata.h"
#include "options.h"
#include "rec/ptcaps.h"
#include "rec/ptsb.h"

/*
 * Where snapshot number index goes: -o DIR (".<index>" added when index
 * > 1), else <store>/snapshots/<id>, else ./ptkit-snapshots/<id>; the
 * parents are made.  Returns 0, -ERR_RANGE (a path that would not fit:
 * the message names it), -ERR_IO (a parent not creatable).
 */
int snapwrite_dest(const struct rec_options *o, uint64_t index, char *out,
    size_t size, struct error *e);

/*
 * Before the program runs: that -o DIR, and DIR.2 ... DIR.N for --repeat
 * N, do not exist, and that the directory holding them exists (made as
 * snapwrite_dest makes it) and is writable, so that no recording is lost
 * at its end.  Returns 0, -ERR_EXISTS ("DIR: already exists"), or the
 * error making or writing the parent ("DIR: PARENT: reason").
 */
int snapwrite_dest_check(const struct rec_options *o, struct error *e)
    PTKIT_MUST_CHECK;

/* One thread: its manifest row and, when written here, its trace. */
struct snapwrite_thread {
	int tid, pid;
	const char *name;	/* its comm, or NULL */
	uint32_t auxtrace_idx;	/* the AUXTRACE queue holding its trace */
	uint64_t ring_size;	/* bytes of its ring */
	const uint8_t *data;	/* its trace, oldest to newest */
	uint64_t kept;		/* bytes in data (or in the queue) */
	/*
	 * Or, when file is not NULL, its trace is in that file: range[0]
	 * then range[1] (a wrapped ring's two parts), kept bytes in all,
	 * copied into perf.data by the kernel, not through memory.
	 */
	const char *file;
	struct snapwrite_range {
		uint64_t off, len;
	} range[2];
	uint64_t offset;	/* AUXTRACE offset: bytes the ring lost before
				   data */
	uint64_t reference;	/* AUXTRACE reference; 0 is written as 1 */
	uint64_t start_ns, end_ns;	/* its first and last trace; 0 unknown */
	int wrapped;		/* older trace was overwritten */
	int exited;		/* it had ended at the snapshot */
};

/* Bytes of an anonymous executable mapping, to archive as an image. */
struct snapwrite_code {
	uint64_t start, len;
	uint8_t *data;
};

/* An image perf's file maps, and the build-id perf saw for it. */
struct snapwrite_image {
	const char *path;
	const uint8_t *build_id;	/* NULL: perf recorded none */
	size_t build_id_size;
};

/* A recorder setting: text, or a number when numeric. */
struct snapwrite_setting {
	const char *key;
	const char *text;	/* NULL (and not numeric): not given, left out */
	uint64_t num;
	int numeric;
};

struct snapwrite_counter {
	const char *name;
	uint64_t value;
};

/* The manifest's pt.* as the recorder knows them. */
struct snapwrite_pt {
	uint64_t config;
	uint32_t pmu_type;
	int branch, tsc, mtc, cyc, noretcomp;
	uint32_t mtc_period, cyc_threshold, psb_period;
	const char *clock;		/* NULL: left out */
	uint64_t tsc_hz;
	uint32_t nom_freq, tsc_ctc_n, tsc_ctc_d;
	uint64_t time_shift, time_mult, time_zero;
	const char *timing_profile;	/* NULL: left out */
};

/* Everything a recorder gives for one snapshot. */
struct snapwrite_source {
	const struct rec_options *opt;

	/* recorder.*: backend, then aux_bytes and settings in order, then
	   warnings about the configuration */
	const char *backend;		/* "emu", "pt", "perf" */
	const struct snapwrite_setting *settings;
	size_t n_settings;
	const char *const *notes;
	size_t n_notes;

	/* host.*: the CPU the trace describes */
	const struct ptcaps_cpu *cpu;
	int emulated;			/* that CPU is emu's */

	struct snapwrite_pt pt;

	/* target.* */
	int pid;
	const char *state;		/* "exited", "signaled", "running" */
	int exit_code, signal;

	/* images beyond what the sideband maps */
	int host_vdso;			/* "[vdso]" is archived from ptrec's
					   own: the same in every process */
	const char *jit_map;		/* a copy of the JIT map, or NULL:
					   /tmp/perf-PID.map as it is */
	const struct snapwrite_code *jit;
	size_t n_jit;

	/*
	 * perf.data: written from wconfig, tc, sideband and the threads'
	 * traces, or, when perf_data is not NULL, that file taken as it is
	 * and the images it maps archived (counted in images_archived).
	 */
	const struct perfdata_writer_config *wconfig;
	const struct perfdata_time_conv *tc;
	const struct ptsb_record *sideband;	/* any order: written in time
						   order, equal times as given */
	size_t n_sideband;
	const char *perf_data;
	const struct snapwrite_image *images;
	size_t n_images;

	const struct snapwrite_thread *threads;
	size_t n_threads;
	int warn_wrapped;		/* a warning for each wrapped ring */

	/* capture.* and trigger.* */
	const char *reason;		/* trigger kind */
	const char *detail;		/* or NULL */
	uint64_t start_ns, end_ns, fired_ns;	/* perf time */
	uint64_t output_offset;		/* output.log bytes the program wrote
					   before the trigger, when known */
	int has_output_offset;
	uint64_t output_log_max;	/* of output_log, the first bytes only,
					   when has_output_log_max */
	int has_output_log_max;
	uint64_t start_tsc, end_tsc;
	uint64_t start_wall_ns, end_wall_ns, fired_wall_ns;
	const struct snapwrite_counter *counters;
	size_t n_counters;
	const char *const *warnings;
	size_t n_warnings;

	const char *output_log;		/* a file to copy as output.log, or
					   NULL */
};

/* The earliest and latest time of n sideband records (0, 0 if none). */
void snapwrite_sideband_span(const struct ptsb_record *r, size_t n,
    uint64_t *start, uint64_t *end);

/*
 * Writes the snapshot directory dest (which must not exist) from src.
 * Returns 0 or a negative ERR_* with e filled (nothing is left at dest
 * then).
 */
int snapwrite(const struct snapwrite_source *src, const char *dest,
    struct error *e);

#endif
