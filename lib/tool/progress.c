/* progress: see progress.h. */
#include "tool/progress.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
progress_init(struct progress *p, FILE *out, int force)
{
	const char *env = getenv(PROGRESS_ENV);

	p->out = out;
	p->enabled = force >= 0 ? force : isatty(fileno(out));
	p->lines = force < 0 && !p->enabled && env != NULL &&
	    strcmp(env, PROGRESS_ENV_LINES) == 0;
	p->enabled |= p->lines;
	p->drawn = 0;
	p->last_ms = 0;
}

static void
update(struct progress *p, const char *label, uint64_t done, uint64_t total,
    int now)
{
	char text[256];

	if (!p->enabled)
		return;
	if (p->lines) {
		uint64_t t = now_ms();

		if (!now && p->last_ms != 0 && t - p->last_ms < 250)
			return;
		p->last_ms = t;
		fprintf(p->out, PROGRESS_LINE_PREFIX "%s %" PRIu64 " %" PRIu64
		    "\n", label, done, total);
		fflush(p->out);
		return;
	}
	if (total > 0)
		snprintf(text, sizeof(text), "%s: %" PRIu64 "/%" PRIu64
		    " (%u%%)", label, done, total,
		    (unsigned)(done * 100 / total));
	else
		snprintf(text, sizeof(text), "%s: %" PRIu64, label, done);
	progress_line(p, text);
}

void
progress_update(struct progress *p, const char *label, uint64_t done,
    uint64_t total)
{
	update(p, label, done, total, 0);
}

void
progress_update_now(struct progress *p, const char *label, uint64_t done,
    uint64_t total)
{
	update(p, label, done, total, 1);
}

void
progress_line(struct progress *p, const char *text)
{
	uint64_t t;

	if (!p->enabled || p->lines)	/* lines carry numbers only */
		return;
	t = now_ms();
	if (p->drawn && t - p->last_ms < 100)
		return;
	p->last_ms = t;
	p->drawn = 1;
	fprintf(p->out, "\r\033[K%s", text);
	fflush(p->out);
}

void
progress_done(struct progress *p)
{
	if (p->enabled && p->drawn && !p->lines) {
		fputs("\r\033[K", p->out);
		fflush(p->out);
	}
	p->drawn = 0;
}
