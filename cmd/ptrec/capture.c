/* capture: see capture.h. */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/progpath.h"
#include "elfsym.h"
#include "rec/pttrace.h"
#include "tool/report.h"

/* ---- filters ------------------------------------------------------------ */

int
capture_filter_parse(const char *program, const char *spec,
    struct ptfilter *f, char *path, size_t size, struct error *e)
{
	char file[PATH_MAX];
	uint64_t off, len;
	int rc;

	memset(f, 0, sizeof(*f));
	if (sscanf(spec, "%" SCNi64 "/%" SCNi64 "@%4095s", &off, &len,
	    file) == 3) {
		if (size < PATH_MAX)
			return error_set(e, ERR_RANGE, "path buffer too small");
		if (realpath(file, path) == NULL)
			return error_set(e, ERR_INVALID, "%s: %s", file,
			    strerror(errno));
	} else {
		if ((rc = elfsym_lookup(program, spec, &off, &len, e)) < 0)
			return rc;
		if ((size_t)snprintf(path, size, "%s", program) >= size)
			return error_set(e, ERR_RANGE, "%s: path too long",
			    program);
	}
	f->offset = off;
	f->size = len;
	f->path = path;
	return 0;
}

int
capture_filters_resolve(const char *program, const char *const *specs,
    int n, struct capture_filters *out, struct error *e)
{
	int i, rc;

	out->n = 0;
	if (n > REC_MAX_FILTERS)
		return error_set(e, ERR_INVALID, "more than %d --filter options",
		    REC_MAX_FILTERS);
	for (i = 0; i < n; i++) {
		if ((rc = capture_filter_parse(program, specs[i], &out->f[i],
		    out->path[i], sizeof(out->path[i]), e)) < 0) {
			error_prefix(e, "--filter %s", specs[i]);
			return rc;
		}
		out->n++;
	}
	return 0;
}

/* ---- the program -------------------------------------------------------- */

int
capture_program_path(const struct rec_options *o, char *out, size_t size,
    struct error *e)
{
	char found[PATH_MAX], real[PATH_MAX];

	if (o->pid != 0)
		snprintf(found, sizeof(found), "/proc/%" PRIu64 "/exe", o->pid);
	else if (progpath_search(o->program[0], NULL, found, sizeof(found),
	    e) < 0)
		return -ERR_NOTFOUND;	/* e: not found, or not executable */
	if (realpath(found, real) == NULL)
		return error_set(e, ERR_NOTFOUND, "%s: %s", found,
		    strerror(errno));
	if ((size_t)snprintf(out, size, "%s", real) >= size)
		return error_set(e, ERR_RANGE, "%s: path too long", real);
	return 0;
}

int
capture_spawn_pinned(struct spawn *sp, const char *cpus, struct error *e)
{
	cpu_set_t want, saved;
	int rc;

	if (cpus == NULL)
		return spawn_start(sp, e);
	if ((rc = pttrace_parse_cpus(cpus, &want, e)) < 0)
		return rc;
	if (sched_getaffinity(0, sizeof(saved), &saved) < 0 ||
	    sched_setaffinity(0, sizeof(want), &want) < 0)
		return error_set_errno(e, errno, "--cpus %s", cpus);
	rc = spawn_start(sp, e);
	/* ours again: only the child and what it starts keep the set */
	if (sched_setaffinity(0, sizeof(saved), &saved) < 0 && rc == 0)
		return error_set_errno(e, errno, "--cpus %s: restoring ours",
		    cpus);
	return rc;
}

void
capture_scratch_close(struct scratch *s)
{
	if (s->path[0] == '\0')
		return;
	if (cleanup_keep_waste())
		report("ptrec", NULL, NULL, "PTKIT_KEEP_WASTE=1: "
		    "scratch kept in %s", s->path);
	if (scratch_close(s) < 0)
		report_warning("ptrec", s->path,
		    "could not remove all of the scratch directory");
}

/* ---- addresses ---------------------------------------------------------- */

uint64_t
capture_runtime_addr(const struct procmaps *m, const char *path, uint64_t off)
{
	const struct procmaps_entry *en;
	size_t i;

	for (i = 0; i < m->n; i++) {
		en = &m->v[i];
		if (strcmp(en->path, path) != 0 || off < en->pgoff ||
		    off - en->pgoff >= en->end - en->start)
			continue;
		return en->start + (off - en->pgoff);
	}
	return 0;
}

/* ---- the program's output ---------------------------------------------- */

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A terminal that hands on bytes as written, the size of the one we show
 * the output on. */
static int
open_pty(struct capture_output *co, struct error *e)
{
	char name[128];
	struct termios t;
	struct winsize ws;
	int m, s;

	if ((m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "posix_openpt");
	if (grantpt(m) < 0 || unlockpt(m) < 0 ||
	    ptsname_r(m, name, sizeof(name)) != 0 ||
	    (s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		close(m);
		return error_set_errno(e, errno, "pseudo-terminal");
	}
	/* no "\n" to "\r\n": output.log holds what the program wrote */
	if (tcgetattr(s, &t) == 0) {
		t.c_oflag &= ~(tcflag_t)OPOST;
		PTKIT_DROP(tcsetattr(s, TCSANOW, &t));	/* cosmetic */
	}
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0)
		PTKIT_DROP(ioctl(s, TIOCSWINSZ, &ws));	/* cosmetic */
	co->read_fd[0] = m;
	co->write_fd[0] = s;
	co->write_fd[1] = dup(s);	/* ours to close, as with pipes */
	if (co->write_fd[1] < 0 || fcntl(co->write_fd[1], F_SETFD,
	    FD_CLOEXEC) < 0) {
		capture_output_close(co);
		return error_set_errno(e, errno, "pseudo-terminal");
	}
	co->pty = 1;
	return 0;
}

int
capture_output_open(struct capture_output *co, struct error *e)
{
	int p[2], i;

	co->read_fd[0] = co->read_fd[1] = -1;
	co->write_fd[0] = co->write_fd[1] = -1;
	co->pty = 0;
	if (isatty(STDERR_FILENO))
		return open_pty(co, e);
	for (i = 0; i < 2; i++) {
		if (pipe2(p, O_CLOEXEC) < 0) {
			capture_output_close(co);
			return error_set_errno(e, errno, "pipe");
		}
		co->read_fd[i] = p[0];
		co->write_fd[i] = p[1];
	}
	return 0;
}

void
capture_output_started(struct capture_output *co)
{
	close_fd(&co->write_fd[0]);
	close_fd(&co->write_fd[1]);
}

void
capture_output_close(struct capture_output *co)
{
	int i;

	for (i = 0; i < 2; i++) {
		close_fd(&co->read_fd[i]);
		close_fd(&co->write_fd[i]);
	}
}

int
capture_lines_init(struct capture_lines *l, const char *regex,
    struct error *e)
{
	char why[256];
	int rc;

	memset(l, 0, sizeof(*l));
	if (regex == NULL)
		return 0;
	if ((rc = regcomp(&l->re, regex, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, &l->re, why, sizeof(why));
		return error_set(e, ERR_INVALID, "--trigger-line '%s': %s",
		    regex, why);
	}
	l->has_re = 1;
	return 0;
}

unsigned
capture_lines_feed(struct capture_lines *l, int stream, const char *p,
    size_t n)
{
	char *buf;
	size_t *len, i;
	unsigned matched = 0;

	if (stream < 0 || stream > 1)
		return 0;
	buf = l->buf[stream];
	len = &l->n[stream];
	for (i = 0; i < n; i++) {
		if (p[i] != '\n') {
			if (*len < CAPTURE_LINE_MAX - 1)
				buf[(*len)++] = p[i];
			continue;
		}
		buf[*len] = '\0';
		*len = 0;
		if (l->has_re && regexec(&l->re, buf, 0, NULL, 0) == 0)
			matched++;
	}
	return matched;
}

void
capture_lines_free(struct capture_lines *l)
{
	if (l->has_re)
		regfree(&l->re);
	l->has_re = 0;
}

int
capture_relay(int *fd, int stream, int log_fd, struct capture_lines *lines,
    unsigned *matched)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));

	*matched = 0;
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return -1;
	}
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		(void)0;	/* our stderr is gone: the log still has it */
	if (lines != NULL)
		*matched = capture_lines_feed(lines, stream, buf, (size_t)n);
	if (log_fd >= 0 && write(log_fd, buf, (size_t)n) != n)
		return -2;
	return (int)n;
}

/* ---- the trigger policy ------------------------------------------------- */

void
capture_policy_init(struct capture_policy *p, const struct rec_options *o,
    uint64_t start_ms)
{
	memset(p, 0, sizeof(*p));
	p->start_ms = start_ms;
	p->min_ms = o->min_capture_ms;
	p->tail_ms = o->tail_ms;
	p->has_tail = o->has_tail_ms && o->tail_ms > 0;
	p->after_ms = o->has_after_ms ? o->after_ms : 0;
	p->deadline = o->has_after_ms ? start_ms + o->after_ms : UINT64_MAX;
	p->max_deadline = o->has_max_capture_ms ? start_ms + o->max_capture_ms :
	    UINT64_MAX;
	p->tail_deadline = UINT64_MAX;
	p->repeat = o->repeat > 0 ? o->repeat : 1;
}

enum capture_action
capture_on_trigger(struct capture_policy *p, uint64_t now_ms)
{
	if (p->done || now_ms < p->start_ms + p->min_ms ||
	    p->tail_deadline != UINT64_MAX)
		return CAPTURE_NONE;
	if (p->has_tail) {
		p->tail_deadline = now_ms + p->tail_ms;
		return CAPTURE_TAIL;
	}
	return CAPTURE_SNAPSHOT;
}

const char *
capture_due(struct capture_policy *p, uint64_t now_ms)
{
	if (p->done)
		return NULL;
	if (now_ms >= p->tail_deadline) {
		p->tail_deadline = UINT64_MAX;
		return "tail";
	}
	if (now_ms >= p->max_deadline) {
		p->max_deadline = UINT64_MAX;
		return "max-capture";
	}
	if (now_ms >= p->deadline) {
		p->deadline = p->after_ms > 0 ? now_ms + p->after_ms :
		    UINT64_MAX;
		return "after-ms";
	}
	return NULL;
}

int
capture_taken(struct capture_policy *p, const char *reason)
{
	p->taken++;
	if (strcmp(reason, "control") != 0)
		p->counted++;
	if (p->counted >= p->repeat || strcmp(reason, "max-capture") == 0 ||
	    strcmp(reason, "exit") == 0 || strcmp(reason, "signal") == 0 ||
	    strcmp(reason, "sigint") == 0 || strcmp(reason, "sigterm") == 0)
		p->done = 1;
	return p->done;
}

uint64_t
capture_wait_ms(const struct capture_policy *p, uint64_t now_ms)
{
	uint64_t next = p->tail_deadline;

	if (p->done)
		return UINT64_MAX;
	if (p->max_deadline < next)
		next = p->max_deadline;
	if (p->deadline < next)
		next = p->deadline;
	if (next == UINT64_MAX)
		return UINT64_MAX;
	return next > now_ms ? next - now_ms : 0;
}

/* ---- the symbol trigger on hardware ------------------------------------ */

enum capture_bp_mode
capture_bp_mode(const struct rec_options *o, int aux_pause)
{
	if (o->trigger_symbol == NULL)
		return CAPTURE_BP_NONE;
	if (o->has_tail_ms && o->tail_ms > 0)
		return CAPTURE_BP_TAIL;
	if (aux_pause == 1 && o->repeat <= 1)
		return CAPTURE_BP_PAUSE;
	return CAPTURE_BP_PARK;
}

const char *
capture_bp_mode_name(enum capture_bp_mode m)
{
	switch (m) {
	case CAPTURE_BP_PAUSE: return "aux_pause";
	case CAPTURE_BP_PARK: return "park";
	case CAPTURE_BP_TAIL: return "tail";
	default: return NULL;
	}
}

const char *
capture_bp_mode_text(enum capture_bp_mode m)
{
	switch (m) {
	case CAPTURE_BP_PAUSE:
		return "aux_pause: the trace ends at the trigger, the thread "
		    "runs on";
	case CAPTURE_BP_PARK:
		return "the thread is parked at the trigger until the snapshot "
		    "is written";
	case CAPTURE_BP_TAIL:
		return "the thread runs on for --tail-ms after the trigger";
	default:
		return "no symbol trigger";
	}
}
