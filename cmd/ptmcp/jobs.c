/* jobs: see server.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "tool/progress.h"
#include "base/progpath.h"
#include "answer.h"
#include "server.h"
#include "tool/report.h"

#define KILL_GRACE_MS 1000
#define PROGRESS_EVERY_MS 1000
/*
 * Progress is sent in thousandths of the whole call: stages whose tool
 * reports DONE of TOTAL move across their share by it; a stage with no
 * total (ptspans, a query) moves one thousandth per notification, never
 * reaching the end, so that progress always grows as MCP asks.
 */
#define PROGRESS_TOTAL 1000
#define DECODE_SHARE 900	/* decoding's share of a decode call */

struct job *
job_new(struct server *srv, const struct tool_def *tool,
    const json_t *req_id, const json_t *token, const json_t *args)
{
	struct job *j = calloc(1, sizeof(*j));
	int i;

	(void)srv;
	if (j == NULL)
		return NULL;
	j->tool = tool;
	j->req_id = json_incref((json_t *)req_id);
	j->token = json_incref((json_t *)token);
	j->args = json_incref((json_t *)args);
	j->start_ms = now_ms();
	j->next_progress_ms = j->start_ms + PROGRESS_EVERY_MS;
	j->guard_fd = -1;
	j->tmp_owner_fd = -1;
	for (i = 0; i < JOB_MAX_CHILDREN; i++)
		j->ch[i].out_fd = j->ch[i].err_fd = -1;
	return j;
}

static char *
tool_path(const char *name)
{
	char path[PATH_MAX];

	progpath_sibling_tool(name, path, sizeof(path));
	return strdup(path);
}

static void
argv_free(char **argv)
{
	size_t i;

	for (i = 0; argv != NULL && argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}

static char **
argv_copy(char **argv)
{
	size_t n = 0, i;
	char **v;

	while (argv[n] != NULL)
		n++;
	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		v[i] = i == 0 ? tool_path(argv[0]) : strdup(argv[i]);
		if (v[i] == NULL) {
			argv_free(v);
			return NULL;
		}
	}
	return v;
}

static void
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int
job_spawn(struct server *srv, struct job *j, char **argv, int in_fd,
    int pass_out, struct error *e)
{
	struct child *c;
	int rc;

	(void)srv;
	if (j->nch >= JOB_MAX_CHILDREN)
		return error_set(e, ERR_INTERNAL, "too many children");
	c = &j->ch[j->nch];
	memset(c, 0, sizeof(*c));
	c->out_fd = c->err_fd = -1;
	if ((c->argv = argv_copy(argv)) == NULL)
		return error_set(e, ERR_NOMEM, "out of memory");
	c->out.max = OUT_MAX;
	c->err.max = ERR_KEEP;
	c->err.keep_tail = 1;
	spawn_init(&c->sp, c->argv);
	c->sp.in = in_fd >= 0 ? spawn_fd(in_fd) : SPAWN_NULL;
	c->sp.out = SPAWN_PIPE;
	c->sp.err = SPAWN_PIPE;
	c->sp.new_pgroup = 1;	/* cancel ends the child and all it runs */
	c->sp.die_with_parent = 1;	/* and a killed ptmcp ends it too */
	if ((rc = spawn_start(&c->sp, e)) < 0) {
		argv_free(c->argv);
		c->argv = NULL;
		return rc;
	}
	j->nch++;
	c->out_fd = c->sp.out;
	c->err_fd = c->sp.err;
	c->sp.out = c->sp.err = -1;
	set_nonblock(c->err_fd);
	if (!pass_out)
		set_nonblock(c->out_fd);
	return 0;
}

void
job_start(struct server *srv, struct job *j)
{
	j->next = srv->jobs;
	srv->jobs = j;
}

static void
outbuf_add(struct outbuf *b, const char *data, size_t n)
{
	char *grown;
	size_t drop;

	if (!b->keep_tail && b->len + n > b->max) {
		b->overflow = 1;
		n = b->max > b->len ? b->max - b->len : 0;
	}
	if (b->keep_tail && b->len + n > b->max) {
		b->overflow = 1;
		if (n >= b->max) {
			data += n - b->max / 2;
			n = b->max / 2;
			b->len = 0;
		} else {
			drop = b->len + n - b->max / 2;
			drop = drop > b->len ? b->len : drop;
			memmove(b->data, b->data + drop, b->len - drop);
			b->len -= drop;
		}
	}
	if (n == 0)
		return;
	if ((grown = realloc(b->data, b->len + n + 1)) == NULL) {
		b->overflow = 1;
		return;
	}
	b->data = grown;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* Reads what a pipe holds now; closes it at end of file. */
static void
drain(int *fd, struct outbuf *b)
{
	char buf[65536];
	ssize_t n;

	while (*fd >= 0) {
		n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			outbuf_add(b, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(*fd);
		*fd = -1;
	}
}

/*
 * Takes the newest complete progress line in c's stderr since last
 * looked ("progress: LABEL DONE TOTAL"): what stage the child is at.
 */
static void
read_progress(struct child *c)
{
	const char *data = c->err.data, *p, *nl, *best = NULL;
	char label[32];
	unsigned long long done, total;

	if (data == NULL)
		return;
	if (c->err_seen > c->err.len)	/* the kept tail moved */
		c->err_seen = 0;
	for (p = data + c->err_seen; (nl = strchr(p, '\n')) != NULL;
	    p = nl + 1)
		if (strncmp(p, PROGRESS_LINE_PREFIX,
		    strlen(PROGRESS_LINE_PREFIX)) == 0)
			best = p;
	c->err_seen = (size_t)(p - data);
	if (best != NULL && sscanf(best + strlen(PROGRESS_LINE_PREFIX),
	    "%31s %llu %llu", label, &done, &total) == 3) {
		snprintf(c->stage, sizeof(c->stage), "%s", label);
		c->done = done;
		c->total = total;
	}
}

/* Hands each complete stdout line of child 0 to on_line. */
static void
feed_lines(struct server *srv, struct job *j)
{
	struct outbuf *b = &j->ch[0].out;
	char *nl;

	while (j->on_line != NULL && b->data != NULL && j->line_off < b->len &&
	    (nl = memchr(b->data + j->line_off, '\n', b->len - j->line_off))) {
		*nl = '\0';
		j->line = b->data + j->line_off;
		j->line_off = (size_t)(nl - b->data) + 1;
		j->on_line(srv, j);
		*nl = '\n';
	}
}

int
jobs_fill_pollfds(struct server *srv, struct pollfd *fds, int max)
{
	struct job *j;
	int n = 0, i;

	for (j = srv->jobs; j != NULL; j = j->next) {
		for (i = 0; i < j->nch; i++) {
			if (j->ch[i].out_fd >= 0 && n < max)
				fds[n++] = (struct pollfd){ j->ch[i].out_fd,
				    POLLIN, 0 };
			if (j->ch[i].err_fd >= 0 && n < max)
				fds[n++] = (struct pollfd){ j->ch[i].err_fd,
				    POLLIN, 0 };
		}
	}
	return n;
}

void
jobs_on_poll(struct server *srv, struct pollfd *fds, int n)
{
	struct job *j;
	int i;

	(void)fds;
	(void)n;
	/* Every pipe is non-blocking: reading them all is cheap. */
	for (j = srv->jobs; j != NULL; j = j->next) {
		for (i = 0; i < j->nch; i++) {
			drain(&j->ch[i].out_fd, &j->ch[i].out);
			drain(&j->ch[i].err_fd, &j->ch[i].err);
			read_progress(&j->ch[i]);
		}
		feed_lines(srv, j);
	}
}

static void
reap(struct child *c)
{
	int status;
	pid_t r;

	if (c->reaped || c->sp.pid <= 0)
		return;
	r = waitpid(c->sp.pid, &status, WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return;
	c->reaped = 1;
	c->sp.pid = 0;
	if (r > 0 && WIFEXITED(status)) {
		c->exit_code = WEXITSTATUS(status);
	} else {
		c->exit_code = -1;
		c->term_signal = r > 0 && WIFSIGNALED(status) ?
		    WTERMSIG(status) : 0;
	}
	/* What it wrote before exiting is in the pipes now. */
	drain(&c->out_fd, &c->out);
	drain(&c->err_fd, &c->err);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->out_fd = c->err_fd = -1;
}

static int
all_reaped(const struct job *j)
{
	int i;

	for (i = 0; i < j->nch; i++)
		if (!j->ch[i].reaped)
			return 0;
	return 1;
}

static void
kill_children(struct job *j, int sig)
{
	int i;

	for (i = 0; i < j->nch; i++)
		if (!j->ch[i].reaped && j->ch[i].sp.pid > 0)
			kill(-j->ch[i].sp.pid, sig);
}

void
job_cancel(struct server *srv, struct job *j)
{
	(void)srv;
	if (j->cancelled)
		return;
	j->cancelled = 1;
	j->kill_at_ms = now_ms() + KILL_GRACE_MS;
	kill_children(j, SIGTERM);
}

void
job_free(struct server *srv, struct job *j)
{
	int i;

	kill_children(j, SIGKILL);
	for (i = 0; i < j->nch; i++) {
		struct child *c = &j->ch[i];

		if (!c->reaped && c->sp.pid > 0)
			waitpid(c->sp.pid, NULL, 0);
		if (c->out_fd >= 0)
			close(c->out_fd);
		if (c->err_fd >= 0)
			close(c->err_fd);
		argv_free(c->argv);
		free(c->out.data);
		free(c->err.data);
	}
	if (j->tmp[0] != '\0' && cleanup_remove_tree(j->tmp) < 0)
		report_warning("ptmcp", j->tmp, "could not remove it");
	if (j->tmp_owner_fd >= 0)
		close(j->tmp_owner_fd);	/* after: no sweeper races the removal */
	if (j->guard[0] != '\0')
		store_guard_end(&srv->store, j->guard, j->guard_fd);
	json_decref(j->req_id);
	json_decref(j->token);
	json_decref(j->args);
	free(j);
}

const char *
job_child_message(const struct child *c, char *buf, size_t size)
{
	const char *name, *s, *end, *best = NULL, *last = NULL;
	size_t nlen, best_len = 0, last_len = 0;

	name = strrchr(c->argv[0], '/');
	name = name != NULL ? name + 1 : c->argv[0];
	nlen = strlen(name);
	for (s = c->err.data; s != NULL && *s != '\0'; s = *end ? end + 1 :
	    end) {
		end = strchr(s, '\n');
		if (end == NULL)
			end = s + strlen(s);
		if (end == s || strncmp(s, PROGRESS_LINE_PREFIX,
		    strlen(PROGRESS_LINE_PREFIX)) == 0)
			continue;	/* progress is no message */
		last = s;
		last_len = (size_t)(end - s);
		if (strncmp(s, name, nlen) == 0 && s[nlen] == ':') {
			best = s;
			best_len = last_len;
		}
	}
	if (best == NULL) {
		best = last;
		best_len = last_len;
	}
	if (best != NULL)
		snprintf(buf, size, "%.*s", (int)best_len, best);
	else if (c->term_signal != 0)
		snprintf(buf, size, "%s: killed by signal %d", name,
		    c->term_signal);
	else
		snprintf(buf, size, "%s: exited with status %d", name,
		    c->exit_code);
	return buf;
}

const char *
job_child_words(const struct server *srv, const struct job *j,
    const struct child *c, char *buf, size_t size)
{
	job_child_message(c, buf, size);
	answer_in_call_words(buf, size, srv->store.root, j->tool != NULL ?
	    tools_words(j->tool->id) : NULL);
	return buf;
}

/*
 * A decode call once ptdecode is done: ptspans's own progress lines say
 * how much of the block stream it has read (of a total it knows only at
 * the pipe's end) and when it is writing the index; the rest of the
 * call's share goes half to each.
 */
static int
spans_stage(const struct child *sp, long long secs, char *msg, size_t size)
{
	const int share = (PROGRESS_TOTAL - DECODE_SHARE) / 2;

	if (strcmp(sp->stage, "indexing") == 0) {
		snprintf(msg, size, "trace_decode: indexing: ptspans is "
		    "writing the index of %llu calls (%lld s)",
		    (unsigned long long)sp->total, secs);
		return DECODE_SHARE + share;
	}
	if (strcmp(sp->stage, "reading") == 0 && sp->total > 0) {
		snprintf(msg, size, "trace_decode: spans: the trace is "
		    "decoded; ptspans has read %llu of %llu bytes of blocks "
		    "(%d%%)", (unsigned long long)sp->done,
		    (unsigned long long)sp->total,
		    (int)(sp->done * 100 / sp->total));
		return DECODE_SHARE + (int)(sp->done * share / sp->total);
	}
	if (strcmp(sp->stage, "reading") == 0) {
		snprintf(msg, size, "trace_decode: spans: the trace is "
		    "decoded; ptspans has read %llu bytes of blocks (%lld s)",
		    (unsigned long long)sp->done, secs);
		return DECODE_SHARE;
	}
	snprintf(msg, size, "trace_decode: spans: the trace is decoded; "
	    "ptspans is building the calls and their index (%lld s)", secs);
	return DECODE_SHARE;
}

/* The stage a job is at, its share of PROGRESS_TOTAL and its words. */
static int
job_stage(const struct job *j, int64_t now, char *msg, size_t size)
{
	const struct child *dec = &j->ch[0];
	long long secs = (long long)((now - j->start_ms) / 1000);
	const char *what = j->tool->id == TOOL_QUERY ? "querying" :
	    j->tool->id == TOOL_COMPARE ? "comparing" :
	    j->tool->id == TOOL_DOCTOR ? "checking the recorders" : "working";
	int at;

	if (j->session != NULL) {
		snprintf(msg, size, "trace_stop: recording: the recorder is "
		    "writing the final snapshot (%lld s)", secs);
		return -1;
	}
	if (j->tool->id == TOOL_DECODE && j->nch == 2 && !dec->reaped) {
		at = dec->total > 0 ? (int)(dec->done * DECODE_SHARE /
		    dec->total) : -1;
		if (dec->total > 0)
			snprintf(msg, size, "trace_decode: decoding: %llu of "
			    "%llu bytes of trace (%d%%)", (unsigned long long)
			    dec->done, (unsigned long long)dec->total,
			    (int)(dec->done * 100 / dec->total));
		else
			snprintf(msg, size, "trace_decode: decoding (%lld s)",
			    secs);
		return at;
	}
	if (j->tool->id == TOOL_DECODE && j->nch == 2)
		return spans_stage(&j->ch[1], secs, msg, size);
	snprintf(msg, size, "%s: %s (%lld s)", j->tool->name, what, secs);
	return -1;
}

static void
send_progress(struct server *srv, struct job *j, const json_t *token,
    int64_t now)
{
	struct jsonrpc_line l;
	char msg[256];
	int at;

	j->next_progress_ms = now + PROGRESS_EVERY_MS;
	at = job_stage(j, now, msg, sizeof(msg));
	/* Always more than the last, never the whole before the answer. */
	if (at <= j->progress)
		at = j->progress + 1;
	if (at >= PROGRESS_TOTAL)
		return;
	j->progress = at;
	if (jsonrpc_begin_notification(&l, "notifications/progress") < 0)
		return;
	jsonw_object_begin(&l.w);
	jsonw_key(&l.w, "progressToken");
	jsonrpc_write_json(&l.w, token);
	jsonw_kv_i64(&l.w, "progress", j->progress);
	jsonw_kv_i64(&l.w, "total", PROGRESS_TOTAL);
	jsonw_kv_string(&l.w, "message", msg);
	jsonw_object_end(&l.w);
	/* A failed write sets srv->out.broken, which ends the loop. */
	PTKIT_DROP(jsonrpc_send(&srv->out, &l, NULL, 0, NULL));
}

/* Whom a job's progress goes to: its call's token, or trace_stop's. */
static const json_t *
progress_token(const struct job *j)
{
	if (j->token != NULL && j->req_id != NULL)
		return j->token;
	if (j->session != NULL && j->session->wait_stop != NULL)
		return j->session->wait_stop_token;
	return NULL;
}

void
jobs_step(struct server *srv)
{
	struct job **pp = &srv->jobs, *j, *done = NULL;
	int64_t now = now_ms();
	int i;

	while ((j = *pp) != NULL) {
		for (i = 0; i < j->nch; i++)
			reap(&j->ch[i]);
		feed_lines(srv, j);
		if (all_reaped(j)) {
			*pp = j->next;		/* finish after the walk */
			j->next = done;
			done = j;
			continue;
		}
		if (!j->cancelled && !j->over_budget && j->budget_ms > 0 &&
		    now - j->start_ms >= j->budget_ms) {
			j->over_budget = 1;
			j->kill_at_ms = now + KILL_GRACE_MS;
			kill_children(j, SIGTERM);
		}
		if ((j->cancelled || j->over_budget) && now >= j->kill_at_ms)
			kill_children(j, SIGKILL);
		if (!j->cancelled && progress_token(j) != NULL &&
		    now >= j->next_progress_ms)
			send_progress(srv, j, progress_token(j), now);
		pp = &j->next;
	}
	while ((j = done) != NULL) {
		done = j->next;
		/* A cancelled call gets no answer; a session still ends. */
		if (j->over_budget && !j->cancelled && j->req_id != NULL)
			reply_tool_error(srv, j->req_id, "%s: stopped after its "
			    "time budget of %lld s: narrow it (from_ns, to_ns, "
			    "tid, function) or raise time_budget_s.",
			    j->tool->name, (long long)(j->budget_ms / 1000));
		else if ((!j->cancelled || j->session != NULL) &&
		    j->on_done != NULL)
			j->on_done(srv, j);
		job_free(srv, j);
	}
}

int
jobs_timeout_ms(const struct server *srv)
{
	/* Children are reaped by polling waitpid: look again soon. */
	return srv->jobs != NULL ? 50 : -1;
}

struct job *
jobs_find(struct server *srv, const json_t *req_id)
{
	struct job *j;

	for (j = srv->jobs; j != NULL; j = j->next)
		if (j->req_id != NULL && json_equal(j->req_id, req_id))
			return j;
	return NULL;
}

void
jobs_cancel_all(struct server *srv)
{
	struct job *j;

	for (j = srv->jobs; j != NULL; j = j->next)
		job_cancel(srv, j);
}

int
jobs_at_limit(struct server *srv, const json_t *id, const char *tool)
{
	const struct job *j;
	unsigned n = 0;

	for (j = srv->jobs; j != NULL; j = j->next)
		n++;
	if (srv->max_jobs == 0 || n < srv->max_jobs)
		return 0;
	reply_tool_error(srv, id, "%s: refused: %u jobs are running, the most "
	    "this server runs at once (ptmcp serve --max-jobs %u); call again "
	    "when one has ended, or cancel one.", tool, n, srv->max_jobs);
	return 1;
}
