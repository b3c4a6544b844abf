/*
 * server: the state of `ptmcp serve` shared by its parts.
 *
 *   serve.c    the poll(2) loop, the MCP methods, replies and shutdown
 *   jobs.c     jobs: child processes run for a tool call, their output,
 *              progress, cancellation and the end of each
 *   calls.c    what each tool does (argument checks, argv, results)
 *   sessions.c recording sessions started by trace_start
 *
 * JSON: the protocol lines go out through jsonw (fmt/jsonrpc.h); tool
 * results and the records ptmcp keeps in the store (sessions, jobs) are
 * jansson values, read back and edited as such, and their free-form
 * strings (paths, the recorder's messages) are made with
 * json_string_bytes so that a byte that is not UTF-8 cannot make jansson
 * drop a whole record.
 *
 * One thread.  Nothing blocks except poll: children run with their pipes
 * non-blocking and are reaped with WNOHANG, so a tool call never holds
 * up the protocol, and notifications/cancelled is seen at once.
 */
#ifndef PTMCP_SERVER_H
#define PTMCP_SERVER_H

#include <limits.h>
#include <poll.h>
#include <stdint.h>

#include <jansson.h>

#include "fmt/jsonrpc.h"
#include "base/scratch.h"
#include "base/spawn.h"
#include "fmt/store.h"
#include "tools.h"

#define JOB_MAX_CHILDREN 2
#define OUT_MAX (4u << 20)		/* stdout kept from a child */
#define ERR_KEEP (16u << 10)		/* tail of stderr kept */
#define ANSWER_BUDGET 8192		/* structuredContent sized for agents */
#define MAX_JOBS_DEFAULT 8		/* serve --max-jobs */
#define QUERY_BUDGET_S 60		/* trace_query's time_budget_s */

/* Bytes collected from a child's pipe. */
struct outbuf {
	char *data;		/* NUL-terminated when non-NULL */
	size_t len;
	size_t max;		/* beyond it: stdout stops, stderr keeps tail */
	int keep_tail;
	int overflow;		/* bytes were dropped */
};

struct child {
	struct spawn sp;
	char **argv;		/* owned strings, NULL-terminated */
	int out_fd, err_fd;	/* our ends; -1 once closed */
	struct outbuf out, err;
	int reaped;
	int exit_code;		/* -1 when killed */
	int term_signal;
	/* Its newest "progress: LABEL DONE TOTAL" line (PTKIT_PROGRESS). */
	char stage[32];		/* "" before the first */
	uint64_t done, total;	/* total 0: unknown */
	size_t err_seen;	/* bytes of err already looked at */
};

struct server;
struct session;
struct job;

typedef void (*job_fn)(struct server *, struct job *);

struct job {
	struct job *next;
	const struct tool_def *tool;
	json_t *req_id;		/* the call to answer; NULL: background */
	json_t *token;		/* progressToken, or NULL */
	json_t *args;		/* the call's arguments */
	int64_t start_ms, next_progress_ms;
	int progress;		/* the last progress sent, of PROGRESS_TOTAL */
	struct child ch[JOB_MAX_CHILDREN];
	int nch;
	int cancelled;
	int64_t kill_at_ms;	/* SIGKILL after this, once cancelled */
	int64_t budget_ms;	/* ended after this long; 0: no budget */
	int over_budget;	/* ended so: answered with an error */
	char tmp[PATH_MAX];	/* removed when the job ends, "" if none */
	int tmp_owner_fd;	/* tmp's owner lock (base/scratch), or -1 */
	char snap[STORE_ID_SIZE];	/* the snapshot worked on */
	char guard[STORE_ID_SIZE];	/* session id protecting it, "" */
	int guard_fd;
	char request_name[STORE_NAME_MAX + 1];	/* jobs/ name, "" */
	job_fn on_line;		/* stdout lines of child 0, as they come */
	job_fn on_done;		/* every child reaped, not cancelled */
	struct session *session;	/* the recorder of this session */
	struct session *stop_for;	/* decode answering a trace_stop */
	const char *line;	/* for on_line: the line (NUL-terminated) */
	size_t line_off;	/* bytes of ch[0].out already given as lines */
};

enum session_state { SESSION_RUNNING, SESSION_DONE, SESSION_FAILED,
	SESSION_CANCELLED };

struct session {
	struct session *next;
	char id[STORE_ID_SIZE];
	enum session_state state;
	int64_t start_ms, end_ms;
	json_t *snapshots;	/* array of snapshot ids */
	char error[512];
	int exit_code;
	char fifo[PATH_MAX];
	int lock_fd;
	struct job *job;	/* the recorder while it runs */
	json_t *wait_snapshot;	/* trace_snapshot call waiting, or NULL */
	size_t wait_snapshot_count;
	json_t *wait_stop;	/* trace_stop call waiting, or NULL */
	json_t *wait_stop_token;
	int stop_decode;
	int stopped;		/* trace_stop asked the recorder to end it */
};

struct server {
	struct store store;
	struct tool_set tools;
	struct jsonrpc_reader in;
	struct jsonrpc_out out;
	struct scratch scratch;
	char version[16];	/* negotiated protocol version */
	struct job *jobs;
	struct session *sessions;
	unsigned tmp_seq;
	unsigned max_jobs;	/* children's jobs at once (--max-jobs) */
};

/* serve.c: replies. */
int64_t now_ms(void);
/* Answers a tools/call with a summary and structured content (stolen). */
void reply_tool(struct server *srv, const json_t *id, const char *summary,
    json_t *structured);
/* Answers a tools/call with isError true and one message. */
void reply_tool_error(struct server *srv, const json_t *id,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void reply_error(struct server *srv, const json_t *id, int code,
    const char *message);

/* jobs.c */
struct job *job_new(struct server *srv, const struct tool_def *tool,
    const json_t *req_id, const json_t *token, const json_t *args);
/*
 * Builds the argv of a sibling tool (progpath_sibling_tool) from a NULL-terminated list of strings
 * and starts it as child n of the job, stdin from in_fd (or /dev/null
 * when -1), stdout and stderr to pipes (stdout to a pipe handed to the
 * next child when pass_out).  Returns 0 or a negative err_code with e.
 */
int job_spawn(struct server *srv, struct job *j, char **argv, int in_fd,
    int pass_out, struct error *e);
void job_start(struct server *srv, struct job *j);
void job_free(struct server *srv, struct job *j);
void job_cancel(struct server *srv, struct job *j);
/* The line a failed child said last ("ptrec: ..."), or a status. */
const char *job_child_message(const struct child *c, char *buf,
    size_t size);
/*
 * job_child_message in the words of j's call (answer_in_call_words): the
 * message every failed child's answer carries.
 */
const char *job_child_words(const struct server *srv, const struct job *j,
    const struct child *c, char *buf, size_t size);
/* poll(2) support. */
int jobs_fill_pollfds(struct server *srv, struct pollfd *fds, int max);
void jobs_on_poll(struct server *srv, struct pollfd *fds, int n);
void jobs_step(struct server *srv);	/* reap, kill, progress, finish */
int jobs_timeout_ms(const struct server *srv);
struct job *jobs_find(struct server *srv, const json_t *req_id);
void jobs_cancel_all(struct server *srv);
/*
 * 1 when srv->max_jobs jobs run already, after answering id with an error
 * naming the limit; else 0.
 */
int jobs_at_limit(struct server *srv, const json_t *id, const char *tool);

/* calls.c */
void call_tool(struct server *srv, const json_t *id, const json_t *token,
    const struct tool_def *tool, const json_t *args);
/* trace_stop with decode: decodes s's last snapshot, answering id. */
void call_stop_decode(struct server *srv, const json_t *id,
    const json_t *token, struct session *s);
int idem_lookup(struct server *srv, const struct tool_def *tool,
    const json_t *args, const json_t *id, char *name, size_t size);
void idem_save(struct server *srv, const char *name, const json_t *args,
    const json_t *result);

/* sessions.c */
/*
 * Every session and job record ptmcp writes is a jansson value, so that
 * it reads back as one; free-form strings in them go through
 * json_string_bytes (base/json.h).  A guard's record is the store's
 * (store_guard_begin).
 */
void session_start(struct server *srv, const json_t *id,
    const json_t *args, const char *request_name);
void session_status(struct server *srv, const json_t *id, const char *sid);
void session_command(struct server *srv, const json_t *id,
    const json_t *token, const struct tool_def *tool, const json_t *args);
void session_forget_call(struct server *srv, const json_t *req_id);
/* stdin closed: running sessions become cancelled (before jobs end). */
void sessions_end_all(struct server *srv);
/* Releases every session's lock and memory. */
void sessions_free(struct server *srv);

#endif
