/*
 * options: ptrec's command line, parsed and checked.
 *
 * Owns struct rec_options and the rules between options (one of PROGRAM,
 * --pid or --doctor; --trigger-hits only with --trigger-symbol; ...).
 */
#ifndef PTREC_OPTIONS_H
#define PTREC_OPTIONS_H

#include <stdint.h>

#include "tool/cli.h"

enum rec_recorder { REC_AUTO, REC_PT, REC_PERF, REC_EMU };
enum rec_timing { TIMING_LOW, TIMING_NORMAL, TIMING_HIGH, TIMING_CONFIG };

#define REC_MAX_FILTERS 16

struct rec_options {
	const char *out_dir;		/* -o */
	const char *store;		/* --store */
	enum rec_recorder recorder;
	int has_recorder;		/* --recorder given (else PTKIT_RECORDER) */
	uint64_t aux_bytes, budget_bytes;
	enum rec_timing timing;
	uint64_t timing_config;		/* with TIMING_CONFIG */
	const char *cpus;
	const char *filters[REC_MAX_FILTERS];
	int n_filters;
	uint64_t after_ms, max_capture_ms, min_capture_ms, tail_ms;
	int has_after_ms, has_max_capture_ms, has_tail_ms;
	const char *trigger_symbol;
	uint64_t trigger_hits;
	const char *trigger_line;
	uint64_t repeat;
	const char *control_fifo;	/* --control */
	const char *emu_truth;		/* --emu-truth */
	int no_follow;			/* --no-follow: not the children */
	uint64_t pid;			/* --pid, 0 when launching */
	int doctor;
	int doctor_json;
	const char *sysroot;		/* --sysroot: where sysfs/procfs are */
	char **program;			/* argv of the program to launch */
};

extern const struct tool_info ptrec_tool;

/*
 * Fills o from argv.  Returns CLI_RUN to go on, CLI_DONE after --help or
 * --version, CLI_USAGE after a usage error it reported.
 */
enum cli_parse rec_options_parse(int argc, char *argv[],
    struct rec_options *o);

#endif
