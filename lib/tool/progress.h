/*
 * progress: a one-line progress display on stderr.
 *
 * Owns the rule that long work shows progress only when stderr is a
 * terminal (never in pipes, logs or CI), redraws at most every 100 ms, and
 * erases itself when done so the next message starts on a clean line;
 * and the one exception, for a program that runs the tool and reports
 * its progress itself (ptmcp): with PTKIT_PROGRESS=lines in the
 * environment, a stream that is not a terminal gets one line
 * "progress: LABEL DONE TOTAL" (TOTAL 0 when unknown) at most every
 * 250 ms instead of the drawn line.
 */
#ifndef PTKIT_PROGRESS_H
#define PTKIT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE *out;
	int enabled;
	int drawn;		/* a line is on screen */
	int lines;		/* PTKIT_PROGRESS=lines: whole lines, no drawing */
	uint64_t last_ms;	/* monotonic time of the last redraw */
};

/* The environment variable and value that ask for progress lines. */
#define PROGRESS_ENV "PTKIT_PROGRESS"
#define PROGRESS_ENV_LINES "lines"
#define PROGRESS_LINE_PREFIX "progress: "

/*
 * Enables the display when fileno(out) is a terminal, or progress lines
 * when it is not and PTKIT_PROGRESS=lines.  force: 1 enables, 0
 * disables, -1 decides by the terminal test and the environment.
 */
void progress_init(struct progress *p, FILE *out, int force);

/* Redraws "label: done/total (pct%)" if 100 ms have passed.  total may be 0. */
void progress_update(struct progress *p, const char *label, uint64_t done,
    uint64_t total);

/* As progress_update, but a progress line is written even within 250 ms
 * of the last: for the last word of a stage (its end, or the total found
 * at the end of a pipe) and the first of the next. */
void progress_update_now(struct progress *p, const char *label,
    uint64_t done, uint64_t total);

/* Redraws text (one line, no newline) as the line, at most every 100 ms. */
void progress_line(struct progress *p, const char *text);

/* Erases the line. */
void progress_done(struct progress *p);

#endif
