/* sessions: recordings started by trace_start (see server.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "server.h"
#include "sym/symtab.h"
#include "tool/report.h"

#define MAX_REC_ARGV 320

static const char *const state_names[] = { "running", "done", "failed",
	"cancelled" };

static struct session *
session_find(struct server *srv, const char *sid)
{
	struct session *s;

	for (s = srv->sessions; s != NULL; s = s->next)
		if (strcmp(s->id, sid) == 0)
			return s;
	return NULL;
}

/* sessions/<id>.json: what another ptmcp (and prune) can see. */
static void
session_save(struct server *srv, const struct session *s)
{
	char since[STORE_ID_SIZE], *text;
	struct error e;
	json_t *rec;

	/* Every snapshot from this second on may be this session's. */
	memcpy(since, s->id, STORE_ID_SIZE);
	memcpy(since + 17, "00000000", 8);
	rec = json_pack("{s:s,s:s,s:s,s:O,s:I,s:o}", "id", s->id, "state",
	    state_names[s->state], "since", since, "snapshots", s->snapshots,
	    "pid", (json_int_t)getpid(), "error", json_string_bytes(s->error));
	if (rec == NULL)
		return;
	if (s->state != SESSION_RUNNING)
		json_object_del(rec, "since");
	if ((text = json_dumps(rec, JSON_COMPACT)) != NULL &&
	    store_write_json(&srv->store, STORE_SESSIONS, s->id, text,
	    strlen(text), &e) < 0)
		report_error("ptmcp", s->id, &e, NULL);
	free(text);
	json_decref(rec);
}

/* Cancelled sessions end when their recorder does: till then, now. */
static int64_t
session_elapsed_ms(const struct session *s)
{
	int64_t end = s->state == SESSION_RUNNING || s->end_ms == 0 ?
	    now_ms() : s->end_ms;

	/* Never before its start, whatever order the ends came in. */
	return end > s->start_ms ? end - s->start_ms : 0;
}

/*
 * How the recorded program ended, as far as anyone knows: its newest
 * snapshot's manifest says whether it had exited (and with what) or
 * been killed by a signal; one still running then was ended by the
 * recorder when trace_stop or trace_cancel ended the session (the emu
 * and pt recorders kill it with SIGKILL).  ptrec's own exit status is
 * the recorder's, never the program's.
 */
struct program_end {
	const char *state;	/* "exited", "killed", "stopped", "cancelled",
				   "running" (a snapshot of it running and no
				   word since), "unknown" */
	int exit_code;		/* exited: its status; else -1 */
	int signal;		/* killed, stopped: the signal; else 0 */
};

static void
program_end(struct server *srv, const struct session *s,
    struct program_end *pe)
{
	size_t n = json_array_size(s->snapshots);
	char dir[PATH_MAX];
	struct manifest_brief b;
	struct error e;

	pe->state = "unknown";
	pe->exit_code = -1;
	pe->signal = 0;
	memset(&b, 0, sizeof(b));
	if (n > 0 && store_resolve(&srv->store, STORE_SNAPSHOTS,
	    json_string_value(json_array_get(s->snapshots, n - 1)), dir,
	    sizeof(dir), &e) == 0) {
		if (snapshot_read_manifest_brief(dir, &b, &e) < 0)
			memset(&b, 0, sizeof(b));
	}
	if (strcmp(b.target_state, "exited") == 0) {
		pe->state = "exited";
		pe->exit_code = b.exit_code;
	} else if (strcmp(b.target_state, "signaled") == 0) {
		pe->state = "killed";
		pe->signal = b.signal;
	} else if (s->stopped || s->state == SESSION_CANCELLED) {
		pe->state = s->stopped ? "stopped" : "cancelled";
		if (strcmp(b.recorder, "emu") == 0 ||
		    strcmp(b.recorder, "pt") == 0)
			pe->signal = SIGKILL;
	} else if (strcmp(b.target_state, "running") == 0) {
		pe->state = "running";
	}
}

/* "SIGKILL" for 9, "signal N" for one without a name here. */
static const char *
signal_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev != NULL)
		snprintf(buf, size, "SIG%s", abbrev);
	else
		snprintf(buf, size, "signal %d", sig);
	return buf;
}

/*
 * "Session ID is STATE after N ms; snapshots: A, B." (what an agent
 * needs to go on), then more, into buf.
 */
static void
status_line(struct server *srv, const struct session *s, char *buf,
    size_t size, const char *more)
{
	size_t len, i, n = json_array_size(s->snapshots);
	struct program_end pe;
	char sig[32];

	len = (size_t)snprintf(buf, size, "Session %s is %s after %lld ms; "
	    "snapshots: %s", s->id, state_names[s->state],
	    (long long)session_elapsed_ms(s), n == 0 ? "none yet" : "");
	for (i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " :
		    "", json_string_value(json_array_get(s->snapshots, i)));
	if (s->state != SESSION_RUNNING) {
		program_end(srv, s, &pe);
		if (len < size && pe.exit_code >= 0)
			len += (size_t)snprintf(buf + len, size - len, "; the "
			    "program exited with %d", pe.exit_code);
		else if (len < size && strcmp(pe.state, "killed") == 0)
			len += (size_t)snprintf(buf + len, size - len, "; the "
			    "program was killed by %s", signal_name(pe.signal,
			    sig, sizeof(sig)));
		else if (len < size && (strcmp(pe.state, "stopped") == 0 ||
		    strcmp(pe.state, "cancelled") == 0))
			len += (size_t)snprintf(buf + len, size - len, "; the "
			    "program was %s by trace_%s%s%s", pe.state,
			    strcmp(pe.state, "stopped") == 0 ? "stop" :
			    "cancel", pe.signal ? " with " : " (it did not "
			    "exit on its own)", pe.signal ? signal_name(
			    pe.signal, sig, sizeof(sig)) : "");
	}
	if (len < size && s->state != SESSION_RUNNING && s->exit_code >= 0)
		len += (size_t)snprintf(buf + len, size - len, "; the recorder "
		    "exited with %d", s->exit_code);
	if (len < size)
		snprintf(buf + len, size - len, ".%s%s", more[0] ? " " : "",
		    more);
}

static json_t *
status_result(struct server *srv, const struct session *s)
{
	json_t *r = json_pack("{s:s,s:s,s:I,s:O}", "session_id", s->id,
	    "state", state_names[s->state], "elapsed_ms",
	    (json_int_t)session_elapsed_ms(s), "snapshots", s->snapshots);
	struct program_end pe;
	char sig[32];

	if (r != NULL && s->error[0] != '\0')
		json_object_set_new(r, "error", json_string_bytes(s->error));
	if (r == NULL || s->state == SESSION_RUNNING)
		return r;
	program_end(srv, s, &pe);
	json_object_set_new(r, "program_state", json_string(pe.state));
	if (pe.exit_code >= 0)
		json_object_set_new(r, "exit_code", json_integer(pe.exit_code));
	if (pe.signal != 0) {
		json_object_set_new(r, "signal", json_integer(pe.signal));
		json_object_set_new(r, "signal_name", json_string(signal_name(
		    pe.signal, sig, sizeof(sig))));
	}
	if (s->exit_code >= 0)
		json_object_set_new(r, "recorder_exit_code",
		    json_integer(s->exit_code));
	return r;
}

/* A line ptrec printed on stdout: the path of a snapshot it wrote. */
static void
session_line(struct server *srv, struct job *j)
{
	struct session *s = j->session;
	const char *base = strrchr(j->line, '/');
	json_t *r;

	base = base != NULL ? base + 1 : j->line;
	if (s == NULL || !store_id_valid(base))
		return;
	json_array_append_new(s->snapshots, json_string(base));
	session_save(srv, s);
	if (s->wait_snapshot != NULL) {
		char said[256];

		r = json_pack("{s:s,s:s}", "session_id", s->id, "snapshot_id",
		    base);
		snprintf(said, sizeof(said), "Snapshot %s taken; session %s "
		    "keeps recording. Next: trace_decode it.", base, s->id);
		reply_tool(srv, s->wait_snapshot, said, r);
		json_decref(s->wait_snapshot);
		s->wait_snapshot = NULL;
	}
}

static void
session_release(struct server *srv, struct session *s)
{
	if (s->lock_fd >= 0)
		store_session_end(&srv->store, s->id, s->lock_fd);
	s->lock_fd = -1;
	if (s->fifo[0] != '\0')
		unlink(s->fifo);
	s->fifo[0] = '\0';
}

static void
session_done(struct server *srv, struct job *j)
{
	struct session *s = j->session;
	const struct child *c = &j->ch[0];
	char msg[512];

	if (s == NULL)
		return;
	s->job = NULL;
	s->end_ms = now_ms();
	s->exit_code = c->exit_code;
	if (s->state == SESSION_RUNNING) {
		if (c->exit_code == 0) {
			s->state = SESSION_DONE;
		} else {
			s->state = SESSION_FAILED;
			snprintf(s->error, sizeof(s->error), "%s",
			    job_child_words(srv, j, c, msg, sizeof(msg)));
		}
	}
	session_save(srv, s);
	session_release(srv, s);
	if (s->wait_snapshot != NULL) {
		reply_tool_error(srv, s->wait_snapshot, "The session ended "
		    "(%s) before a new snapshot was written%s%s.",
		    state_names[s->state], s->error[0] ? ": " : "", s->error);
		json_decref(s->wait_snapshot);
		s->wait_snapshot = NULL;
	}
	if (s->wait_stop != NULL) {
		if (s->stop_decode && json_array_size(s->snapshots) > 0)
			call_stop_decode(srv, s->wait_stop, s->wait_stop_token,
			    s);
		else if (s->state == SESSION_FAILED)
			reply_tool_error(srv, s->wait_stop, "The recorder "
			    "failed: %s", s->error);
		else {
			char said[2048];

			status_line(srv, s, said, sizeof(said), "Next: "
			    "trace_decode its last snapshot.");
			reply_tool(srv, s->wait_stop, said,
			    status_result(srv, s));
		}
		json_decref(s->wait_stop);
		json_decref(s->wait_stop_token);
		s->wait_stop = s->wait_stop_token = NULL;
	}
}

/* ptrec's argv for trace_start's arguments. */
struct rec_argv {
	char *v[MAX_REC_ARGV];
	int n;
	char nums[16][24];
	int nn;
};

static void
ra_add(struct rec_argv *a, const char *s)
{
	if (a->n < MAX_REC_ARGV - 1)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

static void
ra_opt(struct rec_argv *a, const json_t *args, const char *key,
    const char *opt)
{
	json_t *v = json_object_get(args, key);

	if (json_is_string(v)) {
		ra_add(a, opt);
		ra_add(a, json_string_value(v));
	} else if (json_is_integer(v) && a->nn < 16) {
		snprintf(a->nums[a->nn], sizeof(a->nums[0]), "%lld",
		    (long long)json_integer_value(v));
		ra_add(a, opt);
		ra_add(a, a->nums[a->nn++]);
	}
}

static void
rec_argv_build(struct rec_argv *a, const struct server *srv,
    const struct session *s, const json_t *args)
{
	static const char *const opts[][2] = {
		{ "recorder", "--recorder" }, { "aux_bytes", "--aux-bytes" },
		{ "budget_bytes", "--budget-bytes" }, { "timing", "--timing" },
		{ "cpus", "--cpus" }, { "after_ms", "--after-ms" },
		{ "max_capture_ms", "--max-capture-ms" },
		{ "min_capture_ms", "--min-capture-ms" },
		{ "tail_ms", "--tail-ms" },
		{ "trigger_symbol", "--trigger-symbol" },
		{ "trigger_hits", "--trigger-hits" },
		{ "trigger_line", "--trigger-line" }, { "repeat", "--repeat" },
		{ "pid", "--pid" },
	};
	json_t *v, *prog = json_object_get(args, "program");
	size_t i;

	a->n = a->nn = 0;
	ra_add(a, "ptrec");
	ra_add(a, "--store");
	ra_add(a, srv->store.root);
	ra_add(a, "--control");
	ra_add(a, s->fifo);
	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		ra_opt(a, args, opts[i][0], opts[i][1]);
	json_array_foreach(json_object_get(args, "filters"), i, v) {
		ra_add(a, "--filter");
		ra_add(a, json_string_value(v));
	}
	if (prog != NULL) {
		ra_add(a, "--");
		json_array_foreach(prog, i, v)
			ra_add(a, json_string_value(v));
	}
}

/* Rules between arguments that a schema cannot say. */
static const char *
start_args_problem(const json_t *args)
{
	int prog = json_object_get(args, "program") != NULL;
	int pid = json_object_get(args, "pid") != NULL;
	const char *rec;

	if (prog && pid)
		return "give either program (to launch) or pid (to attach), "
		    "not both";
	if (!prog && !pid)
		return "give program (the argv to launch, e.g. [\"./app\"]) "
		    "or pid (a running process to attach to)";
	if (json_object_get(args, "trigger_hits") != NULL &&
	    json_object_get(args, "trigger_symbol") == NULL)
		return "trigger_hits needs trigger_symbol";
	if (pid && (rec = json_string_value(json_object_get(args,
	    "recorder"))) != NULL && strcmp(rec, "emu") == 0)
		return "the emu recorder runs the program it launches under "
		    "emulation and cannot attach to a running process: give "
		    "program instead of pid, or recorder pt or perf";
	return NULL;
}

/* Finds argv0 as posix_spawnp would: a path with a slash, else $PATH. */
static int
find_program(const char *argv0, char *path, size_t size)
{
	const char *dirs = getenv("PATH"), *end;
	size_t n;

	if (strchr(argv0, '/') != NULL) {
		snprintf(path, size, "%s", argv0);
		return access(path, F_OK) == 0 ? 0 : -1;
	}
	for (dirs = dirs != NULL ? dirs : "/usr/bin:/bin"; *dirs; dirs = end) {
		end = strchr(dirs, ':');
		n = end != NULL ? (size_t)(end - dirs) : strlen(dirs);
		snprintf(path, size, "%.*s/%s", (int)n, n ? dirs : ".", argv0);
		if (access(path, X_OK) == 0)
			return 0;
		end = end != NULL ? end + 1 : dirs + n;
	}
	return -1;
}

/*
 * What can be known before the recorder starts, so that a call that
 * cannot record fails at once with the argument to fix: the program
 * exists and is executable, the process exists, the trigger function is
 * in the program (where every recorder looks for it), the ring fits the
 * budget.  Writes the problem into msg and returns -1, or returns 0.
 */
static int
start_check(const json_t *args, char *msg, size_t size)
{
	const char *argv0 = json_string_value(json_array_get(json_object_get(
	    args, "program"), 0));
	const char *sym = json_string_value(json_object_get(args,
	    "trigger_symbol"));
	json_t *pid = json_object_get(args, "pid");
	json_t *aux = json_object_get(args, "aux_bytes");
	json_t *budget = json_object_get(args, "budget_bytes");
	/* ptrec's default --budget-bytes (ptrec(1)). */
	json_int_t cap = budget != NULL ? json_integer_value(budget) :
	    (json_int_t)128 << 20;
	struct symtab_options so = { .flags = SYMTAB_NO_DWARF |
	    SYMTAB_NO_SYSTEM_DEBUG | SYMTAB_NO_DEBUGLINK };
	char path[PATH_MAX];
	struct symtab *st;
	struct stat sb;
	struct error e;
	int found;

	if (aux != NULL && json_integer_value(aux) > cap) {
		snprintf(msg, size, "aux_bytes %" JSON_INTEGER_FORMAT " is over "
		    "budget_bytes %" JSON_INTEGER_FORMAT "%s (the ring memory of "
		    "all threads): lower aux_bytes or raise budget_bytes",
		    json_integer_value(aux), cap, budget != NULL ? "" :
		    ", its default");
		return -1;
	}
	if (argv0 != NULL) {
		if (argv0[0] == '\0' || find_program(argv0, path,
		    sizeof(path)) < 0) {
			snprintf(msg, size, "program[0] '%.200s' %s", argv0,
			    strchr(argv0, '/') != NULL ? "does not exist" :
			    "is not found on PATH");
			return -1;
		}
		if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode) ||
		    access(path, X_OK) < 0) {
			snprintf(msg, size, "program[0] '%.200s' is not an "
			    "executable file", argv0);
			return -1;
		}
	} else if (pid != NULL) {
		if (kill((pid_t)json_integer_value(pid), 0) < 0 &&
		    errno == ESRCH) {
			snprintf(msg, size, "no process has pid %"
			    JSON_INTEGER_FORMAT, json_integer_value(pid));
			return -1;
		}
		snprintf(path, sizeof(path), "/proc/%" JSON_INTEGER_FORMAT
		    "/exe", json_integer_value(pid));
	}
	if (sym == NULL || symtab_open(path, &so, &st, &e) < 0)
		return 0;	/* not ELF, or unreadable: ptrec says */
	found = symtab_find(st, sym) != NULL;
	symtab_free(st);
	if (!found) {
		snprintf(msg, size, "trigger_symbol '%.200s' is not a function "
		    "of %.200s (the recorders look for it in the program's own "
		    "symbol tables)", sym, argv0 != NULL ? argv0 : path);
		return -1;
	}
	return 0;
}

static struct session *
session_new(struct server *srv, struct error *e)
{
	struct session *s = calloc(1, sizeof(*s));
	char name[64];

	if (s == NULL) {
		error_set(e, ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->lock_fd = -1;
	s->exit_code = -1;
	s->start_ms = now_ms();
	s->snapshots = json_array();
	if (store_id_new(s->id, e) < 0 ||
	    (s->lock_fd = store_session_begin(&srv->store, s->id, e)) < 0) {
		json_decref(s->snapshots);
		free(s);
		return NULL;
	}
	snprintf(name, sizeof(name), "%s.ctl", s->id);
	if (scratch_path(&srv->scratch, name, s->fifo, sizeof(s->fifo)) < 0 ||
	    mkfifo(s->fifo, 0600) < 0) {
		error_set_errno(e, errno, "control FIFO");
		s->fifo[0] = '\0';
		session_release(srv, s);
		json_decref(s->snapshots);
		free(s);
		return NULL;
	}
	return s;
}

static void
session_free(struct server *srv, struct session *s)
{
	session_release(srv, s);
	json_decref(s->snapshots);
	json_decref(s->wait_snapshot);
	json_decref(s->wait_stop);
	json_decref(s->wait_stop_token);
	free(s);
}

void
session_start(struct server *srv, const json_t *id, const json_t *args,
    const char *request_name)
{
	const char *problem = start_args_problem(args);
	const struct tool_def *tool = tools_find(&srv->tools, "trace_start");
	struct rec_argv *ra;
	struct session *s;
	struct job *j;
	struct error e;
	char msg[1024];
	json_t *r;

	if (problem != NULL) {
		reply_tool_error(srv, id, "trace_start: %s.", problem);
		return;
	}
	if (start_check(args, msg, sizeof(msg)) < 0) {
		reply_tool_error(srv, id, "trace_start: %s.", msg);
		return;
	}
	if (jobs_at_limit(srv, id, "trace_start"))
		return;
	if ((s = session_new(srv, &e)) == NULL) {
		reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		return;
	}
	ra = calloc(1, sizeof(*ra));
	j = job_new(srv, tool, NULL, NULL, args);
	if (ra == NULL || j == NULL) {
		free(ra);
		if (j != NULL)
			job_free(srv, j);
		session_free(srv, s);
		reply_tool_error(srv, id, "ptmcp: out of memory");
		return;
	}
	rec_argv_build(ra, srv, s, args);
	if (job_spawn(srv, j, ra->v, -1, 0, &e) < 0) {
		free(ra);
		job_free(srv, j);
		session_free(srv, s);
		reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		return;
	}
	free(ra);
	j->session = s;
	j->on_line = session_line;
	j->on_done = session_done;
	s->job = j;
	s->next = srv->sessions;
	srv->sessions = s;
	session_save(srv, s);
	job_start(srv, j);
	r = json_pack("{s:s,s:s}", "session_id", s->id, "state", "running");
	idem_save(srv, request_name, args, r);
	{
		char said[256];

		snprintf(said, sizeof(said), "Session %s is recording in the "
		    "background. Poll trace_status with session_id %s until "
		    "its state is done.", s->id, s->id);
		reply_tool(srv, id, said, r);
	}
}

/*
 * What the session's newest snapshot does not keep, from its manifest:
 * "untraced" (threads it has no trace of), "untraced_processes" (children
 * not followed, programs exec'd) and "warnings" (the recorder's
 * sentences: how many, why, the option that fixes it) into r, and the
 * same after text.  A manifest that cannot be read adds only the
 * sentence that says so.
 */
static void
status_losses(struct server *srv, const struct session *s, json_t *r,
    char *text, size_t size)
{
	size_t n = json_array_size(s->snapshots), len = strlen(text);
	char dir[PATH_MAX];
	struct manifest m;
	struct error e;
	json_t *w;

	if (r == NULL || n == 0 || store_resolve(&srv->store, STORE_SNAPSHOTS,
	    json_string_value(json_array_get(s->snapshots, n - 1)), dir,
	    sizeof(dir), &e) < 0)
		return;
	/* Beneath the snapshot: a manifest.json that is a link is refused,
	 * and its losses unknown, which the text says. */
	if (snapshot_read_manifest(dir, &m, &e) < 0) {
		if (len < size)
			snprintf(text + len, size - len, " Its newest "
			    "snapshot's losses are unknown: %s.", e.msg);
		manifest_free(&m);
		return;
	}
	json_object_set_new(r, "untraced", json_integer(
	    (json_int_t)manifest_untraced(&m)));
	if ((w = json_array()) != NULL) {
		for (size_t i = 0; i < m.nr_warnings; i++)
			json_array_append_new(w, json_string_bytes(
			    m.warnings[i]));
		json_object_set_new(r, "warnings", w);
	}
	json_object_set_new(r, "untraced_processes", json_integer(
	    (json_int_t)manifest_untraced_processes(&m)));
	if (manifest_untraced(&m) > 0 && len < size)
		len += (size_t)snprintf(text + len, size - len, " Its newest "
		    "snapshot: untraced %llu.",
		    (unsigned long long)manifest_untraced(&m));
	if (manifest_untraced_processes(&m) > 0 && len < size)
		len += (size_t)snprintf(text + len, size - len, " Its newest "
		    "snapshot: untraced processes %llu.",
		    (unsigned long long)manifest_untraced_processes(&m));
	for (size_t i = 0; i < m.nr_warnings && len < size; i++)
		len += (size_t)snprintf(text + len, size - len, " %s.",
		    m.warnings[i]);
	manifest_free(&m);
}

void
session_status(struct server *srv, const json_t *id, const char *sid)
{
	struct session *s = session_find(srv, sid);
	json_t *rec = NULL, *st, *r;
	char *text = NULL, said[2048];

	if (s != NULL) {
		status_line(srv, s, said, sizeof(said), s->state ==
		    SESSION_RUNNING ? "Poll again in a few seconds." :
		    s->state == SESSION_DONE ? "Next: trace_decode its "
		    "snapshots." : s->state == SESSION_FAILED ? s->error : "");
		r = status_result(srv, s);
		status_losses(srv, s, r, said, sizeof(said));
		reply_tool(srv, id, said, r);
		return;
	}
	/* Another ptmcp's session: its record in the store. */
	if (store_read_json(&srv->store, STORE_SESSIONS, sid, &text,
	    NULL) < 0 || (rec = json_loads(text, 0, NULL)) == NULL) {
		free(text);
		reply_tool_error(srv, id, "No session %s: session ids come "
		    "from trace_start.", sid);
		return;
	}
	free(text);
	st = json_object_get(rec, "state");
	if (json_is_string(st) && strcmp(json_string_value(st),
	    "running") == 0 && !store_session_live(&srv->store, sid)) {
		json_object_set_new(rec, "state", json_string("failed"));
		json_object_set_new(rec, "error", json_string("the ptmcp "
		    "process running this session ended"));
	}
	r = json_object_get(rec, "snapshots");
	snprintf(said, sizeof(said), "Session %s, of another ptmcp process, "
	    "is %s; snapshots: %zu%s%s.", sid, json_string_value(
	    json_object_get(rec, "state")) ? json_string_value(
	    json_object_get(rec, "state")) : "unknown", json_array_size(r),
	    json_array_size(r) > 0 ? ", the newest " : "", json_array_size(r) >
	    0 ? json_string_value(json_array_get(r, json_array_size(r) - 1)) :
	    "");
	reply_tool(srv, id, said,
	    json_pack("{s:s,s:O,s:O}", "session_id", sid, "state",
	    json_object_get(rec, "state"), "snapshots",
	    json_object_get(rec, "snapshots")));
	json_decref(rec);
}

/* Writes one command line to ptrec's control FIFO. */
static int
session_tell(const struct session *s, const char *cmd)
{
	char line[32];
	int fd, n, rc = 0;

	fd = open(s->fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;	/* ENXIO: ptrec is not reading it (yet) */
	n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (write(fd, line, (size_t)n) != n)
		rc = -1;
	close(fd);
	return rc;
}

static void
session_cancel(struct server *srv, const json_t *id, struct session *s)
{
	if (s->state == SESSION_RUNNING) {
		s->state = SESSION_CANCELLED;
		/* Without a listening recorder, end its process group. */
		if (session_tell(s, "cancel") < 0 && s->job != NULL)
			job_cancel(srv, s->job);
		session_save(srv, s);
	}
	{
		char said[256];

		snprintf(said, sizeof(said), "Session %s is %s; nothing more "
		    "is kept from it.", s->id, state_names[s->state]);
		reply_tool(srv, id, said, json_pack("{s:s,s:s}", "session_id",
		    s->id, "state", state_names[s->state]));
	}
}

void
session_command(struct server *srv, const json_t *id, const json_t *token,
    const struct tool_def *tool, const json_t *args)
{
	const char *sid = json_string_value(json_object_get(args,
	    "session_id"));
	struct session *s = session_find(srv, sid);

	if (s == NULL) {
		reply_tool_error(srv, id, "No session %s in this ptmcp "
		    "process: session ids come from trace_start, and only the "
		    "process that started a session controls it.", sid);
		return;
	}
	if (tool->id == TOOL_CANCEL) {
		session_cancel(srv, id, s);
		return;
	}
	if (s->state != SESSION_RUNNING) {
		if (tool->id == TOOL_STOP) {
			char said[2048];

			status_line(srv, s, said, sizeof(said), "It had "
			    "already ended.");
			reply_tool(srv, id, said, status_result(srv, s));
		}
		else
			reply_tool_error(srv, id, "Session %s is %s: nothing to "
			    "snapshot; start a new one with trace_start.", sid,
			    state_names[s->state]);
		return;
	}
	if ((tool->id == TOOL_SNAPSHOT ? s->wait_snapshot : s->wait_stop) !=
	    NULL) {
		reply_tool_error(srv, id, "A %s of session %s is already under "
		    "way; wait for its answer.", tool->name, sid);
		return;
	}
	if (session_tell(s, tool->id == TOOL_SNAPSHOT ? "snapshot" :
	    "stop") < 0) {
		reply_tool_error(srv, id, "The recorder of session %s does not "
		    "take commands yet; call %s again in a moment, or "
		    "trace_cancel to give up.", sid, tool->name);
		return;
	}
	if (tool->id == TOOL_SNAPSHOT) {
		s->wait_snapshot = json_incref((json_t *)id);
		return;
	}
	s->stopped = 1;
	s->wait_stop = json_incref((json_t *)id);
	s->wait_stop_token = json_incref((json_t *)token);
	s->stop_decode = json_is_true(json_object_get(args, "decode"));
}

void
session_forget_call(struct server *srv, const json_t *req_id)
{
	struct session *s;

	for (s = srv->sessions; s != NULL; s = s->next) {
		if (s->wait_snapshot != NULL &&
		    json_equal(s->wait_snapshot, req_id)) {
			json_decref(s->wait_snapshot);
			s->wait_snapshot = NULL;
		}
		if (s->wait_stop != NULL && json_equal(s->wait_stop, req_id)) {
			json_decref(s->wait_stop);
			json_decref(s->wait_stop_token);
			s->wait_stop = s->wait_stop_token = NULL;
		}
	}
}

void
sessions_end_all(struct server *srv)
{
	struct session *s;

	for (s = srv->sessions; s != NULL; s = s->next) {
		if (s->state != SESSION_RUNNING)
			continue;
		s->state = SESSION_CANCELLED;
		snprintf(s->error, sizeof(s->error), "ptmcp's input closed");
		session_tell(s, "cancel");
	}
	/* No one is left to answer. */
	for (s = srv->sessions; s != NULL; s = s->next) {
		json_decref(s->wait_snapshot);
		json_decref(s->wait_stop);
		json_decref(s->wait_stop_token);
		s->wait_snapshot = s->wait_stop = s->wait_stop_token = NULL;
	}
}

void
sessions_free(struct server *srv)
{
	struct session *s;

	while ((s = srv->sessions) != NULL) {
		srv->sessions = s->next;
		if (s->job != NULL) {	/* freed without its on_done */
			s->job = NULL;
			s->end_ms = now_ms();
			session_save(srv, s);
		}
		session_free(srv, s);
	}
}
