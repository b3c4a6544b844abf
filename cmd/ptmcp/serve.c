/* serve: `ptmcp serve`, the MCP server loop (see server.h). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/signals.h"
#include "tool/cli.h"
#include "tool/progress.h"
#include "tool/report.h"
#include "schema.h"
#include "serve.h"
#include "answer.h"
#include "server.h"

#define MAX_POLLFDS 256
#define SHUTDOWN_GRACE_MS 1500
#define NEWEST_VERSION "2025-11-25"

static const char *const versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
};

static const char instructions[] =
	"ptkit records what a program did, branch by branch (Intel PT, or "
	"an emulator that works anywhere), and turns it into function calls "
	"with timestamps. Typical session: trace_doctor once; trace_start "
	"with the program; trace_status until done; trace_decode the "
	"snapshot; trace_query kind summary, then hotpaths or calls; "
	"trace_compare two snapshots to see what a change did.";

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
reply_error(struct server *srv, const json_t *id, int code,
    const char *message)
{
	struct error e;

	if (jsonrpc_send_error(&srv->out, id, code, message, &e) < 0 &&
	    !srv->out.broken)
		report_error("ptmcp", "stdout", &e, NULL);
}

static void
send_line(struct server *srv, struct jsonrpc_line *l, const json_t *id)
{
	struct error e;

	if (jsonrpc_send(&srv->out, l, id, 1, &e) < 0 && !srv->out.broken)
		report_error("ptmcp", "response", &e, NULL);
}

void
reply_tool(struct server *srv, const json_t *id, const char *summary,
    json_t *structured)
{
	struct jsonrpc_line l;
	char *json, *text = NULL;

	if (structured == NULL) {	/* json_pack failed: out of memory */
		reply_tool_error(srv, id, "ptmcp: could not build the result "
		    "(out of memory or a malformed record)");
		return;
	}
	/*
	 * The text block is the answer for a client that shows the model
	 * only content[].text: the summary line, then the structured
	 * result serialized (as MCP asks of a tool with structured
	 * content; clients before 2025-06-18 know no other).
	 */
	json = json_dumps(structured, JSON_COMPACT);
	if (json == NULL || asprintf(&text, "%s\n%s", summary, json) < 0)
		text = NULL;
	free(json);
	if (text == NULL || jsonrpc_begin_result(&l, id) < 0) {
		free(text);
		json_decref(structured);
		if (text == NULL)
			reply_tool_error(srv, id, "ptmcp: out of memory");
		return;
	}
	jsonw_object_begin(&l.w);
	jsonw_key(&l.w, "content");
	jsonw_array_begin(&l.w);
	jsonw_object_begin(&l.w);
	jsonw_kv_string(&l.w, "type", "text");
	jsonw_kv_string(&l.w, "text", text);
	jsonw_object_end(&l.w);
	jsonw_array_end(&l.w);
	free(text);
	jsonw_key(&l.w, "structuredContent");
	jsonrpc_write_json(&l.w, structured);
	jsonw_kv_bool(&l.w, "isError", 0);
	jsonw_object_end(&l.w);
	json_decref(structured);
	send_line(srv, &l, id);
}

void
reply_tool_error(struct server *srv, const json_t *id, const char *fmt, ...)
{
	struct jsonrpc_line l;
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* No error names a path inside the store: ids are what is known. */
	answer_in_call_words(msg, sizeof(msg), srv->store.root, NULL);
	if (jsonrpc_begin_result(&l, id) < 0)
		return;
	jsonw_object_begin(&l.w);
	jsonw_key(&l.w, "content");
	jsonw_array_begin(&l.w);
	jsonw_object_begin(&l.w);
	jsonw_kv_string(&l.w, "type", "text");
	jsonw_kv_string(&l.w, "text", msg);
	jsonw_object_end(&l.w);
	jsonw_array_end(&l.w);
	jsonw_kv_bool(&l.w, "isError", 1);
	jsonw_object_end(&l.w);
	send_line(srv, &l, id);
}

static void
on_initialize(struct server *srv, const json_t *id, const json_t *params)
{
	const char *want = json_string_value(json_object_get(params,
	    "protocolVersion"));
	struct jsonrpc_line l;
	size_t i;

	snprintf(srv->version, sizeof(srv->version), "%s", NEWEST_VERSION);
	for (i = 0; want != NULL && i < sizeof(versions) / sizeof(*versions);
	    i++)
		if (strcmp(want, versions[i]) == 0)
			snprintf(srv->version, sizeof(srv->version), "%s",
			    versions[i]);
	if (jsonrpc_begin_result(&l, id) < 0)
		return;
	jsonw_object_begin(&l.w);
	jsonw_kv_string(&l.w, "protocolVersion", srv->version);
	jsonw_key(&l.w, "capabilities");
	jsonw_object_begin(&l.w);
	jsonw_key(&l.w, "tools");
	jsonw_object_begin(&l.w);
	jsonw_kv_bool(&l.w, "listChanged", 0);
	jsonw_object_end(&l.w);
	jsonw_object_end(&l.w);
	jsonw_key(&l.w, "serverInfo");
	jsonw_object_begin(&l.w);
	jsonw_kv_string(&l.w, "name", "ptmcp");
	jsonw_kv_string(&l.w, "title", "ptkit execution traces");
	jsonw_kv_string(&l.w, "version", PTKIT_VERSION);
	jsonw_object_end(&l.w);
	jsonw_kv_string(&l.w, "instructions", instructions);
	jsonw_object_end(&l.w);
	send_line(srv, &l, id);
}

static void
on_empty_result(struct server *srv, const json_t *id)
{
	struct jsonrpc_line l;

	if (jsonrpc_begin_result(&l, id) < 0)
		return;
	jsonw_object_begin(&l.w);
	jsonw_object_end(&l.w);
	send_line(srv, &l, id);
}

static void
on_tools_list(struct server *srv, const json_t *id, const json_t *params)
{
	struct jsonrpc_line l;
	json_t *cursor = json_object_get(params, "cursor");

	/* One page: any cursor is one we never gave out. */
	if (cursor != NULL) {
		reply_error(srv, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "unknown cursor (tools/list has a single page)");
		return;
	}
	if (jsonrpc_begin_result(&l, id) < 0)
		return;
	tools_write_list(&srv->tools, &l.w);
	send_line(srv, &l, id);
}

static void
on_tools_call(struct server *srv, const json_t *id, const json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *meta, *token;
	const struct tool_def *tool;
	char msg[512], text[600];

	if (name == NULL) {
		reply_error(srv, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "tools/call needs \"name\", a string");
		return;
	}
	if ((tool = tools_find(&srv->tools, name)) == NULL) {
		snprintf(text, sizeof(text), "Unknown tool: %.200s "
		    "(tools/list names the tools)", name);
		reply_error(srv, id, JSONRPC_INVALID_PARAMS, text);
		return;
	}
	if (args != NULL && !json_is_object(args)) {
		reply_error(srv, id, JSONRPC_INVALID_PARAMS, "Invalid params: "
		    "\"arguments\" must be an object");
		return;
	}
	if (jobs_find(srv, id) != NULL) {
		reply_error(srv, id, JSONRPC_INVALID_REQUEST, "Invalid "
		    "Request: this id is already in use by a running call");
		return;
	}
	meta = json_object_get(params, "_meta");
	token = json_object_get(meta, "progressToken");
	if (!json_is_string(token) && !json_is_integer(token))
		token = NULL;
	args = args != NULL ? json_incref(args) : json_object();
	if (schema_check(srv->tools.input[tool->id], args, msg,
	    sizeof(msg)) < 0)
		reply_tool_error(srv, id, "%s: %s. Fix the arguments and call "
		    "%s again.", tool->name, msg, tool->name);
	else
		call_tool(srv, id, token, tool, args);
	json_decref(args);
}

static void
on_request(struct server *srv, const struct jsonrpc_msg *m)
{
	char text[300];

	if (strcmp(m->method, "initialize") == 0)
		on_initialize(srv, m->id, m->params);
	else if (strcmp(m->method, "ping") == 0)
		on_empty_result(srv, m->id);
	else if (strcmp(m->method, "tools/list") == 0)
		on_tools_list(srv, m->id, m->params);
	else if (strcmp(m->method, "tools/call") == 0)
		on_tools_call(srv, m->id, m->params);
	else {
		/* server/discover too: a legacy-era server says so at once. */
		snprintf(text, sizeof(text), "Method not found: %.200s",
		    m->method);
		reply_error(srv, m->id, JSONRPC_METHOD_NOT_FOUND, text);
	}
}

static void
on_notification(struct server *srv, const struct jsonrpc_msg *m)
{
	json_t *rid;
	struct job *j;

	if (strcmp(m->method, "notifications/cancelled") != 0)
		return;		/* initialized and the rest need nothing */
	rid = json_object_get(m->params, "requestId");
	if (!json_is_string(rid) && !json_is_integer(rid))
		return;
	if ((j = jobs_find(srv, rid)) != NULL)
		job_cancel(srv, j);
	session_forget_call(srv, rid);
}

static void
handle_line(struct server *srv, const char *line, size_t len)
{
	struct jsonrpc_msg m;

	jsonrpc_parse(line, len, &m);
	switch (m.kind) {
	case JSONRPC_REQUEST:
		on_request(srv, &m);
		break;
	case JSONRPC_NOTIFICATION:
		on_notification(srv, &m);
		break;
	case JSONRPC_INVALID:
		reply_error(srv, m.id, m.code, m.message);
		break;
	case JSONRPC_EMPTY:
	case JSONRPC_RESPONSE:
		break;
	}
	jsonrpc_msg_free(&m);
}

/* Handles every complete line buffered; returns -1 on a read error. */
static int
read_requests(struct server *srv)
{
	const char *line;
	size_t len;
	struct error e;
	char text[128];
	int k;

	if (jsonrpc_reader_fill(&srv->in, &e) < 0) {
		report_error("ptmcp", "stdin", &e, NULL);
		return -1;
	}
	while ((k = jsonrpc_reader_next(&srv->in, &line, &len)) !=
	    JSONRPC_LINE_NONE && !srv->out.broken) {
		if (k == JSONRPC_LINE_OK) {
			handle_line(srv, line, len);
			continue;
		}
		snprintf(text, sizeof(text), "Invalid Request: a line longer "
		    "than %zu bytes was dropped", srv->in.max_line);
		reply_error(srv, NULL, JSONRPC_INVALID_REQUEST, text);
	}
	return 0;
}

/* stdin closed: end every job (children killed, scratch removed). */
static void
shut_down(struct server *srv)
{
	int64_t deadline = now_ms() + SHUTDOWN_GRACE_MS;
	struct job *j;

	sessions_end_all(srv);
	jobs_cancel_all(srv);
	while (srv->jobs != NULL && now_ms() < deadline) {
		poll(NULL, 0, 10);
		jobs_on_poll(srv, NULL, 0);
		jobs_step(srv);
	}
	while ((j = srv->jobs) != NULL) {
		srv->jobs = j->next;
		job_free(srv, j);	/* SIGKILL and reap what is left */
	}
	sessions_free(srv);
}

static int
serve_loop(struct server *srv)
{
	struct pollfd fds[MAX_POLLFDS];
	int n, rc = EXIT_OK;

	for (;;) {
		n = 0;
		if (!srv->in.eof)
			fds[n++] = (struct pollfd){ srv->in.fd, POLLIN, 0 };
		n += jobs_fill_pollfds(srv, fds + n, MAX_POLLFDS - n);
		if (poll(fds, (nfds_t)n, jobs_timeout_ms(srv)) < 0 &&
		    errno != EINTR) {
			report("ptmcp", "poll", NULL, "%s", strerror(errno));
			rc = EXIT_FAIL;
			break;
		}
		if (!srv->in.eof && fds[0].revents != 0 &&
		    read_requests(srv) < 0) {
			rc = EXIT_FAIL;
			break;
		}
		jobs_on_poll(srv, fds, n);
		jobs_step(srv);
		if (jsonrpc_reader_done(&srv->in) || srv->out.broken)
			break;
	}
	shut_down(srv);
	return rc;
}

/* "swept what killed processes left: 1 temporary directory, ...". */
static void
report_swept(const char *root, const struct store_swept *w)
{
	const struct {
		unsigned n;
		const char *one, *many;
	} what[] = {
		{ w->tmp_dirs, "temporary directory", "temporary directories" },
		{ w->records, "job record", "job records" },
		{ w->locks, "lock file", "lock files" },
		{ w->sessions, "session marked failed", "sessions marked failed" },
	};
	char text[256];
	size_t i, len = 0;

	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++)
		if (what[i].n > 0 && len < sizeof(text))
			len += (size_t)snprintf(text + len, sizeof(text) - len,
			    "%s%u %s", len > 0 ? ", " : "", what[i].n,
			    what[i].n == 1 ? what[i].one : what[i].many);
	if (len > 0)
		report("ptmcp", root, NULL, "swept what killed processes "
		    "left: %s", text);
}

static int
serve_open(struct server *srv, const char *store_path)
{
	struct store_swept swept;
	struct error e;

	if (store_open(&srv->store, store_path, 1, &e) < 0) {
		report_error("ptmcp", "store", &e, "set --store or PTKIT_STORE");
		return -1;
	}
	if (tools_load(&srv->tools, &e) < 0) {
		report_error("ptmcp", "tools", &e, NULL);
		return -1;
	}
	/* What a killed ptmcp left in the store goes now. */
	if (store_sweep(&srv->store, &swept, &e) < 0)
		report_error("ptmcp", "store", &e, NULL);
	else
		report_swept(srv->store.root, &swept);
	if (scratch_open(&srv->scratch, "ptmcp", &e) < 0) {
		report_error("ptmcp", "scratch", &e, NULL);
		tools_free(&srv->tools);
		return -1;
	}
	/* A client that leaves is EPIPE, not death: we still clean up. */
	if (signals_ignore_pipe(&e) < 0) {
		report_error("ptmcp", NULL, &e, NULL);
		PTKIT_DROP(scratch_close(&srv->scratch));	/* failed already */
		tools_free(&srv->tools);
		return -1;
	}
	return 0;
}

int
serve_main(const char *store_path, unsigned max_jobs)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int rc;

	if (srv == NULL) {
		report("ptmcp", NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	snprintf(srv->version, sizeof(srv->version), "%s", NEWEST_VERSION);
	/* The tools it runs report their progress as lines it reads. */
	if (setenv(PROGRESS_ENV, PROGRESS_ENV_LINES, 1) < 0)
		report_warning("ptmcp", PROGRESS_ENV, "not set: progress "
		    "notifications say the time only");
	srv->max_jobs = max_jobs;
	if (serve_open(srv, store_path) < 0) {
		free(srv);
		return EXIT_FAIL;
	}
	jsonrpc_reader_init(&srv->in, 0, 0);
	srv->out.f = stdout;
	rc = serve_loop(srv);
	jsonrpc_reader_free(&srv->in);
	tools_free(&srv->tools);
	if (scratch_close(&srv->scratch) < 0)
		report_warning("ptmcp", "scratch", "could not remove all of it");
	free(srv);
	return rc;
}
