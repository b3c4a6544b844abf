/*
 * ptenc: a test-side Intel PT stream builder.
 *
 * Turns a known executed path (one struct ptenc_step per instruction, with
 * its branch kind and the address executed next) into the packet stream a
 * PT-capable CPU would write for it, with libipt's encoder, and writes the
 * branch list `perf script --itrace=b` must print for that stream.
 *
 * A run starts tracing at steps[0].ip (TIP.PGE) and ends at the run's
 * final return (the RET at call depth 0: TIP.PGD to its target).  Between
 * runs tracing is off; several runs can go into one stream (one thread's
 * queue).  The encoding follows shared/design/notes/perfdata.md section 4:
 * conditional branches are TNT bits (flushed before every other packet),
 * indirect branches and (with noretcomp, or when the CALL precedes the
 * last PSB) returns are TIPs, direct branches emit nothing, and every
 * tsc_every instructions a TSC packet carries the time (one tick per
 * instruction).  With psb_every, a PSB+ (PSB, TSC, MODE.exec, FUP, PSBEND)
 * is inserted whenever that many bytes have been written since the last.
 */
#ifndef PTKIT_TESTS_PTENC_H
#define PTKIT_TESTS_PTENC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum ptenc_kind {
	PTENC_OTHER,		/* not a branch */
	PTENC_JCC,		/* conditional, incl. jrcxz and loop */
	PTENC_JMP,		/* direct unconditional jump */
	PTENC_JMP_IND,
	PTENC_CALL,
	PTENC_CALL_IND,
	PTENC_RET,
	PTENC_FAR		/* syscall, int, far jump: not encodable here */
};

struct ptenc_step {
	uint64_t ip;
	uint64_t next;		/* the instruction executed after it */
	uint8_t len;
	uint8_t kind;		/* enum ptenc_kind */
};

struct ptenc_opts {
	int noretcomp;		/* every RET as a TIP */
	unsigned psb_every;	/* bytes between PSB+; 0: only the first */
	unsigned tsc_every;	/* instructions between TSC packets (>0) */
};

struct ptenc;

/* Returns 0 and *out, or -1 (allocation failed). */
int ptenc_new(struct ptenc **out, const struct ptenc_opts *o);
void ptenc_free(struct ptenc *pe);

/*
 * Encodes one run.  *tsc is the time of the first instruction and is
 * advanced by one per instruction.  When expected is not NULL, one line
 * per branch perf reports is written: "<tid> <kind> <from hex> <to hex>",
 * kind one of strt, jcc, jmp, call, ret, end.  Returns 0, or -1 with a
 * message in err (the path has a far branch, or ends without its final
 * return, or libipt failed).
 */
int ptenc_run(struct ptenc *pe, const struct ptenc_step *steps, size_t n,
    uint64_t *tsc, uint32_t tid, FILE *expected, char *err, size_t errsize);

/* The stream so far. */
const uint8_t *ptenc_data(const struct ptenc *pe, size_t *len);

/*
 * The packet boundary closest to (and not after) off: where the stream may
 * be split into two AUXTRACE records.
 */
size_t ptenc_boundary(const struct ptenc *pe, size_t off);

/*
 * The first PSB at or after off: its offset, and how many expected-branch
 * lines had been written before it.  Returns 0, or -1 when there is none.
 * This is where a decoder of a wrapped ring (which holds only the data
 * from some point on) first synchronises.
 */
int ptenc_psb_from(const struct ptenc *pe, size_t off, size_t *psb_off,
    size_t *lines_before);

/* The TSC of the last TSC packet written. */
uint64_t ptenc_last_tsc(const struct ptenc *pe);

#endif
