/* calls: what each tool does (see server.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "base/cleanup.h"
#include "base/json.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "server.h"
#include "tool/report.h"

#define MAX_ARGV 96

/* Short names for the jobs/ files of request_id bookkeeping. */
static const char *
idem_prefix(const struct tool_def *tool)
{
	switch (tool->id) {
	case TOOL_START: return "start";
	case TOOL_DECODE: return "decode";
	case TOOL_COMPARE: return "compare";
	default: return NULL;
	}
}

/*
 * jobs/<tool>-<request_id>.json: {"args":..., "result":...}, the
 * arguments of the first call and its result.  A repeat with the same
 * arguments gets that result; with others, an error (the request_id
 * names a different question).  A record without "args" (written before
 * they were kept) is the result alone.
 */
int
idem_lookup(struct server *srv, const struct tool_def *tool,
    const json_t *args, const json_t *id, char *name, size_t size)
{
	const char *rid = json_string_value(json_object_get(args,
	    "request_id"));
	const char *prefix = idem_prefix(tool);
	json_t *rec, *result, *was;
	char *text;

	name[0] = '\0';
	if (rid == NULL || prefix == NULL)
		return 0;
	snprintf(name, size, "%s-%s", prefix, rid);
	if (store_read_json(&srv->store, STORE_JOBS, name, &text, NULL) < 0)
		return 0;
	rec = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_object(rec)) {
		json_decref(rec);
		return 0;
	}
	was = json_object_get(rec, "args");
	result = was != NULL ? json_object_get(rec, "result") : rec;
	if (was != NULL && !json_equal(was, args)) {
		json_decref(rec);
		reply_tool_error(srv, id, "%s: request_id '%s' was used before "
		    "with other arguments; a request_id names one call: choose "
		    "a new one for this call.", tool->name, rid);
		return 1;
	}
	if (!json_is_object(result)) {
		json_decref(rec);
		return 0;
	}
	json_incref(result);
	json_decref(rec);
	reply_tool(srv, id, "This request_id was used before: the result of "
	    "that call (nothing was done again).", result);
	return 1;
}

void
idem_save(struct server *srv, const char *name, const json_t *args,
    const json_t *result)
{
	struct error e;
	json_t *rec;
	char *text;

	if (name == NULL || name[0] == '\0')
		return;
	rec = json_pack("{s:O,s:O}", "args", args, "result", result);
	text = rec != NULL ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	if (text == NULL)
		return;
	if (store_write_json(&srv->store, STORE_JOBS, name, text,
	    strlen(text), &e) < 0)
		report_error("ptmcp", name, &e, "a retry of this call runs it "
		    "again");
	free(text);
}

/* Resolves a snapshot id from a request, answering the call on failure. */
static int
snapshot_dir(struct server *srv, const json_t *id, const char *arg,
    const char *sid, char *dir, size_t size)
{
	struct error e;
	int rc = store_resolve(&srv->store, STORE_SNAPSHOTS, sid, dir, size,
	    &e);

	if (rc == -ERR_INVALID)
		reply_tool_error(srv, id, "%s '%.80s' is not a snapshot id; ids "
		    "look like 20261129T101500Z-0123abcd (trace_status lists "
		    "a session's snapshots).", arg, sid);
	else if (rc == -ERR_NOTFOUND)
		reply_tool_error(srv, id, "No snapshot %s in the store: check "
		    "the id (trace_status lists a session's snapshots).", sid);
	else if (rc < 0)
		reply_tool_error(srv, id, "Snapshot %s: %s.", sid, e.msg);
	return rc;
}

/* The analysis directory of sid, which must exist. */
static int
analysis_dir(struct server *srv, const json_t *id, const char *sid,
    const char *aid, char *dir, size_t size)
{
	char snap[PATH_MAX];
	struct error e;
	int rc;

	if (snapshot_dir(srv, id, "snapshot_id", sid, snap, sizeof(snap)) < 0)
		return -1;
	rc = store_resolve_analysis(&srv->store, sid, aid, dir, size, &e);
	if (rc == -ERR_INVALID)
		reply_tool_error(srv, id, "%s.", e.msg);
	else if (rc == -ERR_PERM)
		reply_tool_error(srv, id, "Analysis %s of %s resolves outside "
		    "the store; refused.", aid, sid);
	else if (rc < 0)
		reply_tool_error(srv, id, "Snapshot %s has no analysis '%s' "
		    "yet: call trace_decode with snapshot_id %s first.", sid,
		    aid, sid);
	return rc < 0 ? -1 : 0;
}

/* The child that failed first, in pipeline order, or NULL. */
static const struct child *
failed_child(const struct job *j)
{
	int i;

	for (i = 0; i < j->nch; i++)
		if (j->ch[i].exit_code != 0)
			return &j->ch[i];
	return NULL;
}

/* Replies with the failing child's own words; returns 1 if one failed. */
static int
reply_if_failed(struct server *srv, struct job *j)
{
	const struct child *c = failed_child(j);
	char msg[600];

	if (c == NULL)
		return 0;
	reply_tool_error(srv, j->req_id, "%s",
	    job_child_words(srv, j, c, msg, sizeof(msg)));
	return 1;
}

/* Starts a job of one or two children; answers the call on failure. */
static struct job *
start_job(struct server *srv, const json_t *id, const json_t *token,
    const char *tool_name, char **argv1, char **argv2, job_fn done)
{
	const struct tool_def *tool = tools_find(&srv->tools, tool_name);
	struct job *j = job_new(srv, tool, id, token, NULL);
	struct error e;
	int rc, fd;

	if (j == NULL) {
		reply_tool_error(srv, id, "ptmcp: out of memory");
		return NULL;
	}
	if (jobs_at_limit(srv, id, tool_name)) {
		job_free(srv, j);
		return NULL;
	}
	rc = job_spawn(srv, j, argv1, -1, argv2 != NULL, &e);
	if (rc == 0 && argv2 != NULL) {
		fd = j->ch[0].out_fd;
		j->ch[0].out_fd = -1;
		rc = job_spawn(srv, j, argv2, fd, 0, &e);
		close(fd);
	}
	if (rc < 0) {
		reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		job_free(srv, j);
		return NULL;
	}
	j->on_done = done;
	return j;
}

/*
 * "Recorders that work here: emu. Not usable: pt (why), perf (why)." from
 * ptrec --doctor's report.
 */
static void
doctor_line(const json_t *rep, char *buf, size_t size)
{
	const json_t *recs = json_object_get(rep, "recorders"), *r;
	size_t i, n = 0, len = 0, ok = 0, pass;
	const char *keys[16], *key;
	json_t *v;

	/* An array of {"name":...}, or an object keyed by name. */
	buf[0] = '\0';
	if (json_is_array(recs))
		n = json_array_size(recs);
	else
		json_object_foreach((json_t *)recs, key, v)
			if (n < 16)
				keys[n++] = key;
	for (pass = 0; pass < 2; pass++) {
		size_t k = 0;

		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s",
			    pass == 0 ? "Recorders that work here:" :
			    " Not usable:");
		for (i = 0; i < n; i++) {
			const char *name = json_is_object(recs) ? keys[i] :
			    NULL, *what;

			r = name != NULL ? json_object_get(recs, name) :
			    json_array_get(recs, i);
			what = json_string_value(json_object_get(
			    json_array_get(json_object_get(r, "problems"), 0),
			    "what"));
			if (name == NULL)
				name = json_string_value(json_object_get(r,
				    "name"));
			if (json_is_true(json_object_get(r, "usable")) !=
			    (pass == 0) || len >= size || name == NULL)
				continue;
			len += (size_t)snprintf(buf + len, size - len, "%s %s",
			    k++ ? "," : "", name);
			if (pass == 1 && what != NULL && len < size)
				len += (size_t)snprintf(buf + len, size - len,
				    " (%.160s)", what);
		}
		if (pass == 0)
			ok = k;
		if (k == 0 && len < size)
			len += (size_t)snprintf(buf + len, size - len, " none");
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, ".");
	}
	if (ok > 0 && len < size)
		snprintf(buf + len, size - len, " trace_start picks one with "
		    "recorder auto.");
}

static void
doctor_done(struct server *srv, struct job *j)
{
	const struct child *c = &j->ch[0];
	struct store_entry *v = NULL;
	uint64_t bytes = 0;
	json_t *rep, *out;
	struct error e;
	size_t n = 0, i, len;
	char msg[600], summary[ANSWER_LINE_MAX];

	rep = c->out.data != NULL ? json_loads(c->out.data, 0, NULL) : NULL;
	if (!json_is_object(rep) || (c->exit_code != 0 && c->exit_code != 1)) {
		json_decref(rep);
		reply_tool_error(srv, j->req_id, "%s",
		    job_child_words(srv, j, c, msg, sizeof(msg)));
		return;
	}
	if (store_list(&srv->store, STORE_SNAPSHOTS, &v, &n, &e) < 0) {
		json_decref(rep);
		reply_tool_error(srv, j->req_id, "%s: %s", srv->store.root,
		    e.msg[0] != '\0' ? e.msg : err_str(e.code));
		return;
	}
	for (i = 0; i < n; i++)
		bytes += v[i].bytes;
	free(v);
	out = json_pack("{s:{s:o,s:I,s:I},s:o}", "store", "path",
	    json_string_bytes(srv->store.root), "snapshots", (json_int_t)n, "bytes",
	    (json_int_t)bytes, "report", rep);
	doctor_line(rep, summary, sizeof(summary));
	len = strlen(summary);
	snprintf(summary + len, sizeof(summary) - len, " The store at %s holds "
	    "%zu snapshots (%llu bytes).", srv->store.root, n,
	    (unsigned long long)bytes);
	reply_tool(srv, j->req_id, summary, out);
}

static void
call_doctor(struct server *srv, const json_t *id, const json_t *token)
{
	char *argv[] = { "ptrec", "--doctor", "--format", "json", NULL };
	struct job *j = start_job(srv, id, token, "trace_doctor", argv, NULL,
	    doctor_done);

	if (j != NULL)
		job_start(srv, j);
}

static json_t *
stop_result(const struct session *s, const char *aid)
{
	static const char *const states[] = { "running", "done", "failed",
		"cancelled" };
	json_t *r = json_pack("{s:s,s:s,s:O}", "session_id", s->id, "state",
	    states[s->state], "snapshots", s->snapshots);

	if (r != NULL && aid != NULL)
		json_object_set_new(r, "analysis_id", json_string(aid));
	return r;
}

static void
decode_done(struct server *srv, struct job *j)
{
	char snap[PATH_MAX], dest[PATH_MAX], made[PATH_MAX + 8];
	json_t *r;
	int already = 0;

	if (reply_if_failed(srv, j))
		return;
	snprintf(made, sizeof(made), "%s/a", j->tmp);
	if (store_path(&srv->store, STORE_SNAPSHOTS, j->snap, snap,
	    sizeof(snap), NULL) < 0 ||
	    store_analysis_path(&srv->store, j->snap, STORE_DEFAULT_ANALYSIS,
	    dest, sizeof(dest), NULL) < 0) {
		reply_tool_error(srv, j->req_id, "ptmcp: bad snapshot id");
		return;
	}
	if (renameat2(AT_FDCWD, made, AT_FDCWD, dest, RENAME_NOREPLACE) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY) {
			reply_tool_error(srv, j->req_id, "ptmcp: %s: %s "
			    "(ptspans wrote no analysis there?)", made,
			    strerror(errno));
			return;
		}
		already = 1;	/* decoded meanwhile by another process */
	}
	if (j->stop_for != NULL) {
		reply_tool(srv, j->req_id, "Stopped; the final snapshot is "
		    "decoded: trace_query it.", stop_result(j->stop_for,
		    STORE_DEFAULT_ANALYSIS));
		return;
	}
	r = json_pack("{s:s,s:s,s:b}", "snapshot_id", j->snap, "analysis_id",
	    STORE_DEFAULT_ANALYSIS, "already_decoded", already);
	if (j->request_name[0] != '\0') {
		json_t *args = json_pack("{s:s,s:s}", "snapshot_id", j->snap,
		    "request_id", j->request_name + strlen("decode-"));

		idem_save(srv, j->request_name, args, r);
		json_decref(args);
	}
	snprintf(made, sizeof(made), "Snapshot %s decoded (analysis %s). "
	    "Next: trace_query it with kind summary, then hotpaths.", j->snap,
	    STORE_DEFAULT_ANALYSIS);
	reply_tool(srv, j->req_id, made, r);
}

static struct job *
decode_job(struct server *srv, const json_t *id, const json_t *token,
    const char *sid, const char *snap)
{
	char derived[PATH_MAX], tmp[PATH_MAX], out[PATH_MAX + 8];
	char *argv1[] = { "ptdecode", (char *)snap, NULL };
	char *argv2[] = { "ptspans", "-o", out, NULL };
	char gid[STORE_ID_SIZE];
	struct error e;
	struct job *j;
	int guard, owner;

	/* Guarded before anything runs: no prune removes sid under it. */
	if ((guard = store_id_new(gid, &e)) < 0 ||
	    (guard = store_guard_begin(&srv->store, gid, sid, "job",
	    &e)) < 0) {
		if (guard == -ERR_NOTFOUND)
			reply_tool_error(srv, id, "No snapshot %s in the store: "
			    "it was removed before its decode could start.",
			    sid);
		else
			reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		return NULL;
	}
	if (store_derived_make(snap, derived, sizeof(derived), &e) < 0) {
		reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		store_guard_end(&srv->store, gid, guard);
		return NULL;
	}
	/* What a killed ptmcp left here goes first: its owner is dead. */
	(void)scratch_sweep_dead(derived, ".tmp-");
	if (store_analysis_tmp(snap, tmp, sizeof(tmp), NULL) < 0)
		errno = ENAMETOOLONG;
	else if (mkdtemp(tmp) != NULL)
		errno = 0;
	if (errno != 0) {
		reply_tool_error(srv, id, "ptmcp: %s: %s", derived,
		    strerror(errno));
		store_guard_end(&srv->store, gid, guard);
		return NULL;
	}
	if (scratch_own(tmp, &owner, &e) < 0) {
		reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* failed already */
		store_guard_end(&srv->store, gid, guard);
		return NULL;
	}
	snprintf(out, sizeof(out), "%s/a", tmp);
	j = start_job(srv, id, token, "trace_decode", argv1, argv2,
	    decode_done);
	if (j == NULL) {
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* failed already */
		close(owner);
		store_guard_end(&srv->store, gid, guard);
		return NULL;
	}
	snprintf(j->tmp, sizeof(j->tmp), "%s", tmp);
	j->tmp_owner_fd = owner;
	snprintf(j->snap, sizeof(j->snap), "%s", sid);
	memcpy(j->guard, gid, sizeof(j->guard));
	j->guard_fd = guard;
	return j;
}

static void
decode_call(struct server *srv, const json_t *id, const json_t *token,
    const char *sid, const char *request_name, struct session *stop_for)
{
	char snap[PATH_MAX], dest[PATH_MAX];
	struct stat st;
	struct job *j;
	json_t *r;

	if (snapshot_dir(srv, id, "snapshot_id", sid, snap, sizeof(snap)) < 0)
		return;
	if (store_analysis_path(&srv->store, sid, STORE_DEFAULT_ANALYSIS, dest,
	    sizeof(dest), NULL) == 0 && stat(dest, &st) == 0) {
		if (stop_for != NULL) {
			reply_tool(srv, id, "Stopped; the final snapshot was "
			    "already decoded.", stop_result(stop_for,
			    STORE_DEFAULT_ANALYSIS));
			return;
		}
		r = json_pack("{s:s,s:s,s:b}", "snapshot_id", sid,
		    "analysis_id", STORE_DEFAULT_ANALYSIS, "already_decoded", 1);
		snprintf(dest, sizeof(dest), "Snapshot %s was already decoded "
		    "(analysis %s). Next: trace_query it.", sid,
		    STORE_DEFAULT_ANALYSIS);
		reply_tool(srv, id, dest, r);
		return;
	}
	if ((j = decode_job(srv, id, token, sid, snap)) == NULL)
		return;
	snprintf(j->request_name, sizeof(j->request_name), "%s",
	    request_name != NULL ? request_name : "");
	j->stop_for = stop_for;
	job_start(srv, j);
}

/* Shrinks the longest array in v until v fits in budget bytes. */
static int
fit_budget(json_t *v, size_t budget)
{
	json_t *arr, *item;
	const char *key;
	size_t n, drop, best;
	char *text;
	int cut = 0;

	for (;;) {
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		n = text != NULL ? strlen(text) : 0;
		free(text);
		if (n <= budget)
			return cut;
		arr = json_is_array(v) ? v : NULL;
		best = 0;
		if (arr == NULL)
			json_object_foreach(v, key, item)
				if (json_is_array(item) &&
				    json_array_size(item) > best) {
					best = json_array_size(item);
					arr = item;
				}
		if (arr == NULL || json_array_size(arr) == 0)
			return cut;
		drop = json_array_size(arr) / 4 + 1;
		while (drop-- > 0 && json_array_size(arr) > 0)
			json_array_remove(arr, json_array_size(arr) - 1);
		cut = 1;
	}
}

/* The structured content a text block of the budget can carry. */
#define RESULT_BUDGET (ANSWER_BUDGET - ANSWER_LINE_MAX)
/* What ptquery may print: the rest is the result's wrapper. */
#define QUERY_BYTES "6656"

static void
query_done(struct server *srv, struct job *j)
{
	json_t *res, *out, *rows, *clock;
	const char *kind = json_string_value(json_object_get(j->args, "kind"));
	const char *aid = json_string_value(json_object_get(j->args,
	    "analysis_id"));
	char line[ANSWER_LINE_MAX], next[32];
	size_t first;
	int cut;

	if (reply_if_failed(srv, j))
		return;
	res = json_loads(j->ch[0].out.data != NULL ? j->ch[0].out.data : "",
	    JSON_DECODE_ANY, NULL);
	if (res == NULL) {
		reply_tool_error(srv, j->req_id, "ptquery printed no JSON "
		    "(ptmcp expects --format json output)");
		return;
	}
	out = json_pack("{s:s,s:s,s:s,s:O}", "snapshot_id", j->snap,
	    "analysis_id", aid != NULL ? aid : STORE_DEFAULT_ANALYSIS, "kind",
	    kind, "result", res);
	if (out == NULL) {
		json_decref(res);
		reply_tool(srv, j->req_id, "", NULL);
		return;
	}
	if ((clock = json_object_get(res, "clock")) != NULL)
		json_object_set(out, "clock", clock);
	if (json_is_string(json_object_get(res, "next_cursor")))
		json_object_set(out, "next_cursor", json_object_get(res,
		    "next_cursor"));
	rows = json_object_get(res, "rows");
	if (json_is_array(rows)) {
		/*
		 * ptquery fitted its page to QUERY_BYTES; should the wrapper
		 * still not fit, the page ends earlier and its cursor says
		 * where the next begins, so that no row is lost.
		 */
		cut = answer_fit_rows(out, rows, RESULT_BUDGET) > 0;
		if (cut) {
			first = (size_t)json_integer_value(json_object_get(res,
			    "first_row"));
			answer_cursor(first + json_array_size(rows), next,
			    sizeof(next));
			json_object_set_new(res, "next_cursor",
			    json_string(next));
			json_object_set_new(out, "next_cursor",
			    json_string(next));
		}
		/* A page the byte budget made shorter than its limit. */
		cut |= json_is_string(json_object_get(out, "next_cursor")) &&
		    json_array_size(rows) < (size_t)(json_is_integer(
		    json_object_get(j->args, "limit")) ? json_integer_value(
		    json_object_get(j->args, "limit")) : 20);
	} else {
		cut = fit_budget(res, RESULT_BUDGET - 512);
	}
	json_decref(res);
	json_object_set_new(out, "truncated", json_boolean(cut));
	answer_query_line(out, line, sizeof(line));
	reply_tool(srv, j->req_id, line, out);
}

/* argv under construction, with room for the numbers it formats. */
struct argv_build {
	char *v[MAX_ARGV];
	int n;
	char nums[24][24];
	int nn;
};

static void
av_add(struct argv_build *a, const char *s)
{
	if (a->n < MAX_ARGV - 1)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

/* Adds "opt value" for a string or integer argument that is present. */
static void
av_opt(struct argv_build *a, const json_t *args, const char *key,
    const char *opt)
{
	json_t *v = json_object_get(args, key);

	if (json_is_string(v)) {
		av_add(a, opt);
		av_add(a, json_string_value(v));
	} else if (json_is_integer(v) && a->nn < 24) {
		snprintf(a->nums[a->nn], sizeof(a->nums[0]), "%lld",
		    (long long)json_integer_value(v));
		av_add(a, opt);
		av_add(a, a->nums[a->nn++]);
	}
}

/* Adds "opt value" for one string of an array argument. */
static void
av_opt_value(struct argv_build *a, const char *opt, const json_t *v)
{
	if (json_is_string(v)) {
		av_add(a, opt);
		av_add(a, json_string_value(v));
	}
}

static void
call_query(struct server *srv, const json_t *id, const json_t *token,
    const json_t *args)
{
	const char *sid = json_string_value(json_object_get(args,
	    "snapshot_id"));
	const char *aid = json_string_value(json_object_get(args,
	    "analysis_id"));
	char dir[PATH_MAX], gid[STORE_ID_SIZE];
	struct argv_build a = { .n = 0 };
	const json_t *budget = json_object_get(args, "time_budget_s");
	struct error e;
	struct job *j;
	int guard;

	if (analysis_dir(srv, id, sid, aid != NULL ? aid :
	    STORE_DEFAULT_ANALYSIS, dir, sizeof(dir)) < 0)
		return;
	/* Guarded while it runs: no prune removes what it reads. */
	if ((guard = store_id_new(gid, &e)) < 0 ||
	    (guard = store_guard_begin(&srv->store, gid, sid, "query",
	    &e)) < 0) {
		if (guard == -ERR_NOTFOUND)
			reply_tool_error(srv, id, "No snapshot %s in the store: "
			    "it was removed before the query could start.",
			    sid);
		else
			reply_tool_error(srv, id, "ptmcp: %s", e.msg);
		return;
	}
	av_add(&a, "ptquery");
	av_add(&a, dir);
	av_opt(&a, args, "kind", "--kind");
	av_add(&a, "--format");
	av_add(&a, "json");
	av_add(&a, "--max-bytes");
	av_add(&a, QUERY_BYTES);
	if (json_object_get(args, "limit") == NULL) {
		av_add(&a, "--limit");
		av_add(&a, "20");
	}
	av_opt(&a, args, "limit", "--limit");
	av_opt(&a, args, "group", "--group");
	av_opt(&a, args, "sort", "--sort");
	av_opt(&a, args, "function", "--function");
	av_opt(&a, args, "module", "--module");
	{
		const json_t *ex = json_object_get(args, "exclude_module"), *m;
		size_t i;

		json_array_foreach(ex, i, m)
			av_opt_value(&a, "--exclude-module", m);
	}
	if (json_is_number(json_object_get(args, "min_share")) && a.nn < 24) {
		snprintf(a.nums[a.nn], sizeof(a.nums[0]), "%.6g",
		    json_number_value(json_object_get(args, "min_share")));
		av_add(&a, "--min-share");
		av_add(&a, a.nums[a.nn++]);
	}
	av_opt(&a, args, "address", "--address");
	if (json_is_true(json_object_get(args, "inline")))
		av_add(&a, "--inline");
	av_opt(&a, args, "depth", "--depth");
	av_opt(&a, args, "tid", "--tid");
	av_opt(&a, args, "pid", "--pid");
	av_opt(&a, args, "from_ns", "--from");
	av_opt(&a, args, "to_ns", "--to");
	av_opt(&a, args, "at_ns", "--at");
	av_opt(&a, args, "span_id", "--span");
	av_opt(&a, args, "cursor", "--cursor");
	av_opt(&a, args, "max_insns", "--max-insns");
	if ((j = start_job(srv, id, token, "trace_query", a.v, NULL,
	    query_done)) == NULL) {
		store_guard_end(&srv->store, gid, guard);
		return;
	}
	j->args = json_incref((json_t *)args);
	snprintf(j->snap, sizeof(j->snap), "%s", sid);
	memcpy(j->guard, gid, sizeof(j->guard));
	j->guard_fd = guard;
	j->budget_ms = 1000 * (json_is_integer(budget) ?
	    json_integer_value(budget) : QUERY_BUDGET_S);
	job_start(srv, j);
}

/* The snapshot id in an analysis path of the store, or "". */
static void
path_snapshot_id(const char *path, char *id, size_t size)
{
	const char *p = path != NULL ? strstr(path, "/snapshots/") : NULL;

	id[0] = '\0';
	if (p == NULL || size < STORE_ID_SIZE)
		return;
	p += strlen("/snapshots/");
	snprintf(id, size, "%.*s", STORE_ID_SIZE - 1, p);
	if (!store_id_valid(id))
		id[0] = '\0';
}

/*
 * Answers with one page of report (ptdiff's JSON, as kept under
 * report_id, of snapshots a and b): the rows from args' cursor, at most
 * its limit (default 20), only the changed ones with changed_only, cut
 * to the budget with a cursor to the next row.  crossed: a fail_on bound
 * was crossed (the report's count; crossed_status when it has none).
 */
static void
compare_page(struct server *srv, const json_t *id, const char *rid,
    json_t *report, const json_t *args, const char *a, const char *b,
    int crossed_status, const char *request_name)
{
	const json_t *all = json_object_get(report, "rows"), *row;
	int changed_only = json_is_true(json_object_get(args,
	    "changed_only"));
	size_t limit = json_is_integer(json_object_get(args, "limit")) ?
	    (size_t)json_integer_value(json_object_get(args, "limit")) : 20;
	size_t first = 0, total = 0, i;
	const json_t *sum = json_object_get(report, "summary");
	json_t *page = json_array(), *cmp, *out;
	char next[32], line[ANSWER_LINE_MAX], path[PATH_MAX], *clock = NULL;
	const char *cursor = json_string_value(json_object_get(args,
	    "cursor"));
	struct manifest m;
	struct error e;
	int cut;

	if (cursor != NULL && answer_cursor_parse(cursor, &first) < 0) {
		json_decref(page);
		json_decref(report);
		reply_tool_error(srv, id, "trace_compare: cursor '%.80s' is not "
		    "one of this report's: pass next_cursor as it came.",
		    cursor);
		return;
	}
	json_array_foreach(all, i, row) {
		const char *cls = json_string_value(json_object_get(row,
		    "class"));

		if (changed_only && cls != NULL && strcmp(cls, "same") == 0)
			continue;
		if (total >= first && json_array_size(page) < limit)
			json_array_append(page, (json_t *)row);
		total++;
	}
	/* The comparison without its rows and the store's paths. */
	cmp = json_deep_copy(report);
	json_object_del(cmp, "a");
	json_object_del(cmp, "b");
	json_object_set_new(cmp, "rows", page);
	out = json_pack("{s:s,s:s,s:s,s:b,s:I,s:o,s:I,s:I}", "report_id", rid,
	    "a", a, "b", b, "crossed", json_is_object(sum) ?
	    json_integer_value(json_object_get(sum, "crossed")) > 0 :
	    crossed_status, "changed", json_integer_value(json_object_get(sum,
	    "changed")), "comparison", cmp, "total_rows",
	    (json_int_t)total, "first_row", (json_int_t)first);
	if (out == NULL) {
		json_decref(report);
		reply_tool(srv, id, "", NULL);
		return;
	}
	/* How the times were kept: the baseline's clock (ptdiff's check
	 * "recorder" says whether b's is the same). */
	if (store_resolve(&srv->store, STORE_SNAPSHOTS, a, path, sizeof(path),
	    &e) == 0) {
		if (snapshot_read_manifest(path, &m, &e) == 0 &&
		    manifest_clock_note(&m) != NULL)
			clock = strdup(manifest_clock_note(&m));
		manifest_free(&m);
	}
	if (clock != NULL)
		json_object_set_new(out, "clock", json_string(clock));
	free(clock);
	cut = answer_fit_rows(out, page, RESULT_BUDGET) > 0;
	if (first + json_array_size(page) < total) {
		answer_cursor(first + json_array_size(page), next,
		    sizeof(next));
		json_object_set_new(out, "next_cursor", json_string(next));
	}
	json_object_set_new(out, "truncated", json_boolean(cut));
	answer_compare_line(report, out, json_array_size(json_object_get(args,
	    "fail_on")) > 0, line, sizeof(line));
	json_decref(report);
	idem_save(srv, request_name, args, out);
	reply_tool(srv, id, line, out);
}

static void
compare_done(struct server *srv, struct job *j)
{
	const struct child *c = &j->ch[0];
	char rid[STORE_ID_SIZE], msg[600];
	json_t *res;
	struct error e;

	if (c->exit_code != 0 && c->exit_code != 1) {
		reply_tool_error(srv, j->req_id, "%s",
		    job_child_words(srv, j, c, msg, sizeof(msg)));
		return;
	}
	res = json_loads(c->out.data != NULL ? c->out.data : "",
	    JSON_DECODE_ANY, NULL);
	if (res == NULL && c->exit_code != 0) {
		/* Status 1 without a report is a failure, not "crossed". */
		reply_tool_error(srv, j->req_id, "%s",
		    job_child_words(srv, j, c, msg, sizeof(msg)));
		return;
	}
	if (res == NULL) {
		reply_tool_error(srv, j->req_id, "ptdiff printed no JSON "
		    "(ptmcp expects --format json output)");
		return;
	}
	if (store_id_new(rid, &e) < 0 || store_write_json(&srv->store,
	    STORE_REPORTS, rid, c->out.data, c->out.len, &e) < 0) {
		json_decref(res);
		reply_tool_error(srv, j->req_id, "ptmcp: saving the report: %s",
		    e.msg);
		return;
	}
	compare_page(srv, j->req_id, rid, res, j->args, json_string_value(
	    json_object_get(j->args, "a")), json_string_value(json_object_get(
	    j->args, "b")), c->exit_code == 1 && json_array_size(
	    json_object_get(j->args, "fail_on")) > 0, j->request_name);
}

/* trace_compare with report_id: a page of a report kept before. */
static void
compare_read(struct server *srv, const json_t *id, const json_t *args)
{
	const char *rid = json_string_value(json_object_get(args,
	    "report_id"));
	char a[STORE_ID_SIZE], b[STORE_ID_SIZE], *text;
	json_t *report;

	if (store_read_json(&srv->store, STORE_REPORTS, rid, &text,
	    NULL) < 0) {
		reply_tool_error(srv, id, "trace_compare: no report %s in the "
		    "store: report_id comes from an earlier trace_compare.",
		    rid);
		return;
	}
	report = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_object(report)) {
		json_decref(report);
		reply_tool_error(srv, id, "trace_compare: report %s is not a "
		    "comparison ptkit wrote.", rid);
		return;
	}
	path_snapshot_id(json_string_value(json_object_get(report, "a")), a,
	    sizeof(a));
	path_snapshot_id(json_string_value(json_object_get(report, "b")), b,
	    sizeof(b));
	compare_page(srv, id, rid, report, args, a, b, 0, NULL);
}

static void
call_compare(struct server *srv, const json_t *id, const json_t *token,
    const json_t *args, const char *request_name)
{
	const char *sa = json_string_value(json_object_get(args, "a"));
	const char *sb = json_string_value(json_object_get(args, "b"));
	json_t *bounds = json_object_get(args, "fail_on"), *v;
	char da[PATH_MAX], db[PATH_MAX];
	struct argv_build a = { .n = 0 };
	struct job *j;
	size_t i;

	if (json_object_get(args, "report_id") != NULL) {
		if (sa != NULL || sb != NULL)
			reply_tool_error(srv, id, "trace_compare: give a and b "
			    "to compare two snapshots, or report_id to read a "
			    "report back, not both.");
		else
			compare_read(srv, id, args);
		return;
	}
	if (sa == NULL || sb == NULL) {
		reply_tool_error(srv, id, "trace_compare: give a (the baseline "
		    "snapshot_id) and b (the one to compare with it), or "
		    "report_id to read a report back.");
		return;
	}
	if (analysis_dir(srv, id, sa, STORE_DEFAULT_ANALYSIS, da,
	    sizeof(da)) < 0 ||
	    analysis_dir(srv, id, sb, STORE_DEFAULT_ANALYSIS, db,
	    sizeof(db)) < 0)
		return;
	av_add(&a, "ptdiff");
	av_add(&a, "--format");
	av_add(&a, "json");
	av_opt(&a, args, "group", "--group");
	av_opt(&a, args, "min_ns", "--min-ns");
	av_opt(&a, args, "noise_insns", "--noise-insns");
	json_array_foreach(json_object_get(args, "modules"), i, v) {
		av_add(&a, "--module");
		av_add(&a, json_string_value(v));
	}
	json_array_foreach(json_object_get(args, "exclude_modules"), i, v) {
		av_add(&a, "--exclude-module");
		av_add(&a, json_string_value(v));
	}
	json_array_foreach(bounds, i, v) {
		av_add(&a, "--fail-on");
		av_add(&a, json_string_value(v));
	}
	av_add(&a, da);
	av_add(&a, db);
	if ((j = start_job(srv, id, token, "trace_compare", a.v, NULL,
	    compare_done)) == NULL)
		return;
	j->args = json_incref((json_t *)args);
	snprintf(j->request_name, sizeof(j->request_name), "%s",
	    request_name);
	job_start(srv, j);
}

/* A snapshot of the store as trace_list and trace_prune show it. */
static json_t *
entry_json(const struct server *srv, const struct store_entry *ent,
    int full)
{
	char when[STORE_TIME_SIZE];
	struct store_analysis *an = NULL;
	struct error e;
	size_t n = 0, i;
	json_t *r, *list;

	store_time_iso(ent->created_ns, when, sizeof(when));
	r = json_pack("{s:s,s:o,s:s,s:I}", "snapshot_id", ent->id, "program",
	    ent->brief.program[0] != '\0' ? json_string_bytes(
	    ent->brief.program) : json_null(), "created", when, "bytes",
	    (json_int_t)ent->bytes);
	if (r == NULL || !full)
		return r;
	json_object_set_new(r, "trigger", ent->brief.trigger[0] != '\0' ?
	    json_string_bytes(ent->brief.trigger) : json_null());
	list = json_array();
	if (store_list_analyses(&srv->store, ent->id, &an, &n, &e) < 0)
		n = 0;	/* listed as not decoded */
	for (i = 0; i < n; i++)
		json_array_append_new(list, json_pack("{s:s,s:I}", "analysis_id",
		    an[i].id, "bytes", (json_int_t)an[i].bytes));
	free(an);
	json_object_set_new(r, "decoded", json_boolean(n > 0));
	json_object_set_new(r, "analyses", list);
	json_object_set_new(r, "in_use", json_boolean(ent->in_use));
	return r;
}

/* A program argument matches the recorded argv[0] or its file name. */
static int
program_matches(const char *want, const char *recorded)
{
	const char *base = strrchr(recorded, '/');

	return strcmp(want, recorded) == 0 ||
	    (base != NULL && strcmp(want, base + 1) == 0);
}

static void
call_list(struct server *srv, const json_t *id, const json_t *args)
{
	const char *want = json_string_value(json_object_get(args, "program"));
	const char *cursor = json_string_value(json_object_get(args,
	    "cursor"));
	size_t limit = json_is_integer(json_object_get(args, "limit")) ?
	    (size_t)json_integer_value(json_object_get(args, "limit")) : 20;
	size_t n = 0, i, first = 0, total = 0, len;
	struct store_entry *v = NULL;
	uint64_t bytes = 0;
	json_t *page, *out;
	struct error e;
	char line[ANSWER_LINE_MAX], next[32];
	int cut;

	if (cursor != NULL && answer_cursor_parse(cursor, &first) < 0) {
		reply_tool_error(srv, id, "trace_list: cursor '%.80s' is not one "
		    "trace_list gave: pass next_cursor as it came.", cursor);
		return;
	}
	if (store_list(&srv->store, STORE_SNAPSHOTS, &v, &n, &e) < 0) {
		reply_tool_error(srv, id, "trace_list: the store cannot be read "
		    "(%s).", err_str(e.code));
		return;
	}
	page = json_array();
	for (i = 0; i < n; i++) {
		json_t *row;

		if (want != NULL && !program_matches(want, v[i].brief.program))
			continue;
		bytes += v[i].bytes;
		if (total >= first && json_array_size(page) < limit &&
		    (row = entry_json(srv, &v[i], 1)) != NULL)
			json_array_append_new(page, row);
		total++;
	}
	free(v);
	out = json_pack("{s:o,s:I,s:I,s:I}", "snapshots", page, "total_rows",
	    (json_int_t)total, "first_row", (json_int_t)first, "total_bytes",
	    (json_int_t)bytes);
	if (out == NULL) {
		reply_tool(srv, id, "", NULL);
		return;
	}
	cut = answer_fit_rows(out, page, RESULT_BUDGET) > 0;
	if (first + json_array_size(page) < total) {
		answer_cursor(first + json_array_size(page), next, sizeof(next));
		json_object_set_new(out, "next_cursor", json_string(next));
	}
	json_object_set_new(out, "truncated", json_boolean(cut));
	/* "The store holds N snapshots (B bytes)[ of PROGRAM]. Rows a-b:
	 * ID PROGRAM CREATED, decoded|not decoded; ..." */
	len = (size_t)snprintf(line, sizeof(line), "The store holds %zu "
	    "snapshots%s%.200s (%llu bytes).", total, want != NULL ?
	    " of " : "", want != NULL ? want : "", (unsigned long long)bytes);
	if (json_array_size(page) > 0 && len < sizeof(line))
		len += (size_t)snprintf(line + len, sizeof(line) - len,
		    " Rows %zu-%zu, oldest first:", first + 1, first +
		    json_array_size(page));
	for (i = 0; i < json_array_size(page) && len + 160 < sizeof(line);
	    i++) {
		const json_t *row = json_array_get(page, i);
		const char *prog = json_string_value(json_object_get(row,
		    "program"));

		len += (size_t)snprintf(line + len, sizeof(line) - len,
		    "%s %s %.80s %s %" JSON_INTEGER_FORMAT " bytes, %s",
		    i ? ";" : "", json_string_value(json_object_get(row,
		    "snapshot_id")), prog != NULL ? prog : "(no program)",
		    json_string_value(json_object_get(row, "created")),
		    json_integer_value(json_object_get(row, "bytes")),
		    json_is_true(json_object_get(row, "decoded")) ? "decoded" :
		    "not decoded");
	}
	if (len < sizeof(line) && json_array_size(page) > 0)
		len += (size_t)snprintf(line + len, sizeof(line) - len, ".");
	if (len < sizeof(line) && json_is_string(json_object_get(out,
	    "next_cursor")))
		snprintf(line + len, sizeof(line) - len, " More rows: call "
		    "again with cursor %s.", next);
	reply_tool(srv, id, line, out);
}

struct prune_acc {
	const struct server *srv;
	json_t *removed, *kept;
	uint64_t bytes;
};

static void
prune_seen(const struct store_entry *ent, enum store_pruned what,
    void *arg)
{
	struct prune_acc *acc = arg;

	if (what == STORE_PRUNE_IN_USE) {
		json_array_append_new(acc->kept, json_string(ent->id));
		return;
	}
	json_array_append_new(acc->removed, entry_json(acc->srv, ent, 0));
	acc->bytes += ent->bytes;
}

static int64_t
limit_arg(const json_t *args, const char *key)
{
	json_t *v = json_object_get(args, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static void
call_prune(struct server *srv, const json_t *id, const json_t *args)
{
	const json_t *idv = json_object_get(args, "ids");
	struct store_prune p = { .now = time(NULL) };
	struct prune_acc acc = { srv, json_array(), json_array(), 0 };
	const char **ids = NULL;
	struct error e;
	char summary[ANSWER_LINE_MAX];
	size_t i, len;
	int n;

	p.max_age_s = limit_arg(args, "max_age_s");
	p.max_count = limit_arg(args, "max_count");
	p.max_bytes = limit_arg(args, "max_bytes");
	p.keep_newest = limit_arg(args, "keep_newest");
	p.dry_run = json_is_true(json_object_get(args, "dry_run"));
	p.nr_ids = json_array_size(idv);
	if (p.nr_ids > 0 && (ids = calloc(p.nr_ids, sizeof(*ids))) == NULL) {
		reply_tool_error(srv, id, "ptmcp: out of memory");
		goto out;
	}
	for (i = 0; i < p.nr_ids; i++)
		ids[i] = json_string_value(json_array_get(idv, i));
	p.ids = ids;
	if (p.max_age_s < 0 && p.max_count < 0 && p.max_bytes < 0 &&
	    p.keep_newest < 0 && p.nr_ids == 0) {
		reply_tool_error(srv, id, "trace_prune: give ids (snapshots to "
		    "delete, from trace_list) or at least one of keep_newest, "
		    "max_age_s, max_count or max_bytes.");
		goto out;
	}
	if ((n = store_prune(&srv->store, &p, prune_seen, &acc, &e)) < 0) {
		if (e.code == ERR_NOTFOUND)
			reply_tool_error(srv, id, "trace_prune: ids: %s "
			    "(trace_list shows the snapshots); nothing was "
			    "deleted.", e.msg);
		else
			reply_tool_error(srv, id, "trace_prune: %s.",
			    e.code == ERR_INVALID ? e.msg : err_str(e.code));
		goto out;
	}
	len = (size_t)snprintf(summary, sizeof(summary), "%s %d snapshots "
	    "(%llu bytes)", p.dry_run ? "Would remove" : "Removed", n,
	    (unsigned long long)acc.bytes);
	for (i = 0; i < json_array_size(acc.removed) && len + 40 <
	    sizeof(summary); i++)
		len += (size_t)snprintf(summary + len, sizeof(summary) - len,
		    "%s%s", i ? ", " : ": ", json_string_value(json_object_get(
		    json_array_get(acc.removed, i), "snapshot_id")));
	if (len < sizeof(summary))
		len += (size_t)snprintf(summary + len, sizeof(summary) - len,
		    ".");
	if (json_array_size(acc.kept) > 0 && len < sizeof(summary))
		snprintf(summary + len, sizeof(summary) - len, " Kept %zu in "
		    "use by a live session or job.", json_array_size(acc.kept));
	reply_tool(srv, id, summary, json_pack("{s:O,s:O,s:I,s:b}", "removed",
	    acc.removed, "kept_in_use", acc.kept, "freed_bytes",
	    (json_int_t)acc.bytes, "dry_run", p.dry_run));
out:
	json_decref(acc.removed);
	json_decref(acc.kept);
	free(ids);
}

void
call_tool(struct server *srv, const json_t *id, const json_t *token,
    const struct tool_def *tool, const json_t *args)
{
	char name[STORE_NAME_MAX + 1];

	if (idem_lookup(srv, tool, args, id, name, sizeof(name)))
		return;
	switch (tool->id) {
	case TOOL_DOCTOR:
		call_doctor(srv, id, token);
		break;
	case TOOL_START:
		session_start(srv, id, args, name);
		break;
	case TOOL_STATUS:
		session_status(srv, id, json_string_value(json_object_get(args,
		    "session_id")));
		break;
	case TOOL_SNAPSHOT:
	case TOOL_STOP:
	case TOOL_CANCEL:
		session_command(srv, id, token, tool, args);
		break;
	case TOOL_DECODE:
		decode_call(srv, id, token, json_string_value(
		    json_object_get(args, "snapshot_id")), name, NULL);
		break;
	case TOOL_QUERY:
		call_query(srv, id, token, args);
		break;
	case TOOL_COMPARE:
		call_compare(srv, id, token, args, name);
		break;
	case TOOL_PRUNE:
		call_prune(srv, id, args);
		break;
	case TOOL_LIST:
		call_list(srv, id, args);
		break;
	case TOOL_COUNT:
		break;
	}
}

void
call_stop_decode(struct server *srv, const json_t *id, const json_t *token,
    struct session *s)
{
	size_t n = json_array_size(s->snapshots);

	decode_call(srv, id, token, json_string_value(json_array_get(
	    s->snapshots, n - 1)), NULL, s);
}
