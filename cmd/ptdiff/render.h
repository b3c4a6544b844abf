/*
 * render: a comparison in the four formats of ptdiff(1): text (stable
 * key=value lines, the name last), json (one object), csv (a fixed header)
 * and markdown (a summary and a table of changed rows, for a CI comment).
 */
#ifndef PTDIFF_RENDER_H
#define PTDIFF_RENDER_H

#include <stdio.h>

#include "compare.h"

enum diff_format { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_MARKDOWN };

/* Writes c to out.  Returns 0 or -ERR_IO. */
int render_comparison(FILE *out, const struct comparison *c,
    enum diff_format f);

#endif
