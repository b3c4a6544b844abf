/*
 * progress: a one-line progress display on stderr.
 *
 * Owns the rule that long work shows progress only when stderr is a
 * terminal (never in pipes, logs or CI), redraws at most every 100 ms, and
 * erases itself when done so the next message starts on a clean line.
 */
#ifndef PTKIT_PROGRESS_H
#define PTKIT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE *out;
	int enabled;
	int drawn;		/* a line is on screen */
	uint64_t last_ms;	/* monotonic time of the last redraw */
};

/*
 * Enables the display when fileno(out) is a terminal.  force: 1 enables,
 * 0 disables, -1 decides by the terminal test.
 */
void progress_init(struct progress *p, FILE *out, int force);

/* Redraws "label: done/total (pct%)" if 100 ms have passed.  total may be 0. */
void progress_update(struct progress *p, const char *label, uint64_t done,
    uint64_t total);

/* Redraws text (one line, no newline) as the line, at most every 100 ms. */
void progress_line(struct progress *p, const char *text);

/* Erases the line. */
void progress_done(struct progress *p);

#endif
