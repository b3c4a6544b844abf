/* ptperf: see ptperf.h. */
#include "rec/ptperf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/ptconfig.h"

#define PAGE ((uint64_t)4096)

int
ptperf_event(const struct ptcaps *c, uint64_t config, char *buf, size_t size,
    struct error *e)
{
	size_t len;
	int i, rc, first = 1;

	if ((rc = ptconfig_validate(c, config, e)) < 0)
		return rc;
	rc = snprintf(buf, size, "intel_pt/");
	len = rc > 0 ? (size_t)rc : 0;
	for (i = 0; i < PTF_COUNT && len < size; i++) {
		if (!c->pmu.fmt[i].present)
			continue;
		rc = snprintf(buf + len, size - len, "%s%s=%" PRIu64,
		    first ? "" : ",", ptcaps_fmt_name(i),
		    ptconfig_get(&c->pmu, i, config));
		len += rc > 0 ? (size_t)rc : 0;
		first = 0;
	}
	if (len < size) {
		rc = snprintf(buf + len, size - len, "/u");
		len += rc > 0 ? (size_t)rc : 0;
	}
	if (len >= size)
		return error_set(e, ERR_RANGE, "perf event string longer than "
		    "%zu bytes", size);
	return (int)len;
}

static int
is_pow2_pages(uint64_t bytes)
{
	return bytes >= PAGE && (bytes & (bytes - 1)) == 0;
}

static int
check_opts(const struct ptperf_opts *o, struct error *e)
{
	if (!is_pow2_pages(o->aux_bytes) || !is_pow2_pages(o->data_bytes))
		return error_set(e, ERR_INVALID, "perf rings must be powers of "
		    "two of at least one page (AUX %" PRIu64 ", data %" PRIu64
		    " bytes)", o->aux_bytes, o->data_bytes);
	if ((o->pid != 0) == (o->program != NULL && o->program[0] != NULL))
		return error_set(e, ERR_INVALID, "perf record needs a pid or a "
		    "program, not %s", o->pid != 0 ? "both" : "neither");
	if (o->ctl_fifo == NULL || o->ack_fifo == NULL || o->output == NULL)
		return error_set(e, ERR_INVALID, "perf record needs its control "
		    "FIFOs and an output file");
	return 0;
}

/* Appends a copy of s; argv keeps room for the NULL. */
static int
push(struct ptperf_argv *a, size_t cap, const char *s)
{
	if (a->argc + 1 >= cap || (a->argv[a->argc] = strdup(s)) == NULL)
		return -ERR_NOMEM;
	a->argv[++a->argc] = NULL;
	return 0;
}

static int
pushf(struct ptperf_argv *a, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
pushf(struct ptperf_argv *a, size_t cap, const char *fmt, ...)
{
	char buf[4096 + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ERR_NOMEM;
	return push(a, cap, buf);
}

static int
push_all(struct ptperf_argv *a, size_t cap, const struct ptperf_opts *o,
    const char *event)
{
	size_t i;
	int rc = 0;

	rc |= push(a, cap, o->perf != NULL ? o->perf : "perf");
	rc |= push(a, cap, "record");
	rc |= push(a, cap, "-e");
	rc |= push(a, cap, event);
	if (o->filter != NULL) {
		rc |= push(a, cap, "--filter");
		rc |= push(a, cap, o->filter);
	}
	if (o->per_thread)
		rc |= push(a, cap, "--per-thread");
	rc |= push(a, cap, "-m");
	rc |= pushf(a, cap, "%" PRIu64 ",%" PRIu64, o->data_bytes / PAGE,
	    o->aux_bytes / PAGE);
	/*
	 * -Se: "e" takes one last snapshot when perf exits, so a program
	 * that ends before any trigger still leaves its trace (perf-record(1),
	 * --snapshot; an optional argument, so it must be attached).
	 */
	rc |= push(a, cap, "-Se");
	rc |= push(a, cap, "--control");
	rc |= pushf(a, cap, "fifo:%s,%s", o->ctl_fifo, o->ack_fifo);
	rc |= push(a, cap, "-o");
	rc |= push(a, cap, o->output);
	rc |= push(a, cap, "-q");
	if (o->pid != 0) {
		rc |= push(a, cap, "-p");
		rc |= pushf(a, cap, "%" PRIu64, o->pid);
		return rc;
	}
	rc |= push(a, cap, "--");
	for (i = 0; o->program[i] != NULL; i++)
		rc |= push(a, cap, o->program[i]);
	return rc;
}

int
ptperf_argv_build(const struct ptcaps *c, const struct ptperf_opts *o,
    struct ptperf_argv *out, struct error *e)
{
	char event[1024];
	size_t cap = 32;
	int rc;

	out->argv = NULL;
	out->argc = 0;
	if ((rc = check_opts(o, e)) < 0 ||
	    (rc = ptperf_event(c, o->config, event, sizeof(event), e)) < 0)
		return rc;
	while (o->program != NULL && o->program[cap - 32] != NULL)
		cap++;
	if ((out->argv = calloc(cap, sizeof(*out->argv))) == NULL)
		return error_set(e, ERR_NOMEM, "perf record argv");
	if (push_all(out, cap, o, event) != 0) {
		ptperf_argv_free(out);
		return error_set(e, ERR_NOMEM, "perf record argv");
	}
	return 0;
}

void
ptperf_argv_free(struct ptperf_argv *out)
{
	size_t i;

	if (out->argv != NULL)
		for (i = 0; i < out->argc; i++)
			free(out->argv[i]);
	free(out->argv);
	out->argv = NULL;
	out->argc = 0;
}
