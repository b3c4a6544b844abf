/* calls: what each tool does (see server.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
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

int
idem_lookup(struct server *srv, const struct tool_def *tool,
    const json_t *args, const json_t *id, char *name, size_t size)
{
	const char *rid = json_string_value(json_object_get(args,
	    "request_id"));
	const char *prefix = idem_prefix(tool);
	char *text;
	json_t *result;

	name[0] = '\0';
	if (rid == NULL || prefix == NULL)
		return 0;
	snprintf(name, size, "%s-%s", prefix, rid);
	if (store_read_json(&srv->store, STORE_JOBS, name, &text, NULL) < 0)
		return 0;
	result = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_object(result)) {
		json_decref(result);
		return 0;
	}
	reply_tool(srv, id, "This request_id was used before: the result of "
	    "that call (nothing was done again).", result);
	return 1;
}

void
idem_save(struct server *srv, const char *name, const json_t *result)
{
	struct error e;
	char *text;

	if (name == NULL || name[0] == '\0')
		return;
	if ((text = json_dumps(result, JSON_COMPACT)) == NULL)
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
	reply_tool_error(srv, j->req_id, "%s", job_child_message(c, msg,
	    sizeof(msg)));
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

static void
doctor_done(struct server *srv, struct job *j)
{
	const struct child *c = &j->ch[0];
	struct store_entry *v = NULL;
	uint64_t bytes = 0;
	json_t *rep, *out;
	struct error e;
	size_t n = 0, i;
	char msg[600], summary[1024];

	rep = c->out.data != NULL ? json_loads(c->out.data, 0, NULL) : NULL;
	if (!json_is_object(rep) || (c->exit_code != 0 && c->exit_code != 1)) {
		json_decref(rep);
		reply_tool_error(srv, j->req_id, "%s", job_child_message(c,
		    msg, sizeof(msg)));
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
	snprintf(summary, sizeof(summary), "%s The store at %s holds %zu "
	    "snapshots (%llu bytes).", c->exit_code == 0 ?
	    "At least one recorder works here; report says which, and why "
	    "the others do not." : "No recorder works on this machine yet: "
	    "report gives each one's reason and fix.", srv->store.root, n,
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
	idem_save(srv, j->request_name, r);
	reply_tool(srv, j->req_id, "Decoded. Next: trace_query with kind "
	    "summary, then hotpaths.", r);
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
	int guard;

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
	snprintf(out, sizeof(out), "%s/a", tmp);
	j = start_job(srv, id, token, "trace_decode", argv1, argv2,
	    decode_done);
	if (j == NULL) {
		rmdir(tmp);
		store_guard_end(&srv->store, gid, guard);
		return NULL;
	}
	snprintf(j->tmp, sizeof(j->tmp), "%s", tmp);
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
		reply_tool(srv, id, "Already decoded. Next: trace_query.", r);
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

static void
query_done(struct server *srv, struct job *j)
{
	json_t *res, *out, *cursor;
	const char *kind = json_string_value(json_object_get(j->args, "kind"));
	const char *aid = json_string_value(json_object_get(j->args,
	    "analysis_id"));
	char summary[512];
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
	cut = fit_budget(res, ANSWER_BUDGET);
	cursor = json_object_get(res, "next_cursor");
	snprintf(summary, sizeof(summary), "%s of %s%s%s%s", kind, j->snap,
	    cut ? "; cut to fit 8 KB: ask again with a smaller limit" : "",
	    json_is_string(cursor) ? "; more rows: pass cursor " : "",
	    json_is_string(cursor) ? json_string_value(cursor) : "");
	out = json_pack("{s:s,s:s,s:s,s:o,s:b}", "snapshot_id", j->snap,
	    "analysis_id", aid != NULL ? aid : STORE_DEFAULT_ANALYSIS, "kind",
	    kind, "result", res, "truncated", cut);
	if (json_is_string(cursor))
		json_object_set(out, "next_cursor", cursor);
	reply_tool(srv, j->req_id, summary, out);
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

static void
call_query(struct server *srv, const json_t *id, const json_t *token,
    const json_t *args)
{
	const char *sid = json_string_value(json_object_get(args,
	    "snapshot_id"));
	const char *aid = json_string_value(json_object_get(args,
	    "analysis_id"));
	char dir[PATH_MAX];
	struct argv_build a = { .n = 0 };
	struct job *j;

	if (analysis_dir(srv, id, sid, aid != NULL ? aid :
	    STORE_DEFAULT_ANALYSIS, dir, sizeof(dir)) < 0)
		return;
	av_add(&a, "ptquery");
	av_add(&a, dir);
	av_opt(&a, args, "kind", "--kind");
	av_add(&a, "--format");
	av_add(&a, "json");
	if (json_object_get(args, "limit") == NULL) {
		av_add(&a, "--limit");
		av_add(&a, "20");
	}
	av_opt(&a, args, "limit", "--limit");
	av_opt(&a, args, "group", "--group");
	av_opt(&a, args, "sort", "--sort");
	av_opt(&a, args, "function", "--function");
	av_opt(&a, args, "tid", "--tid");
	av_opt(&a, args, "pid", "--pid");
	av_opt(&a, args, "from_ns", "--from");
	av_opt(&a, args, "to_ns", "--to");
	av_opt(&a, args, "at_ns", "--at");
	av_opt(&a, args, "cursor", "--cursor");
	if ((j = start_job(srv, id, token, "trace_query", a.v, NULL,
	    query_done)) == NULL)
		return;
	j->args = json_incref((json_t *)args);
	snprintf(j->snap, sizeof(j->snap), "%s", sid);
	job_start(srv, j);
}

static void
compare_done(struct server *srv, struct job *j)
{
	const struct child *c = &j->ch[0];
	char rid[STORE_ID_SIZE], msg[600], summary[512];
	json_t *res, *out;
	struct error e;
	int cut;

	if (c->exit_code != 0 && c->exit_code != 1) {
		reply_tool_error(srv, j->req_id, "%s", job_child_message(c, msg,
		    sizeof(msg)));
		return;
	}
	res = json_loads(c->out.data != NULL ? c->out.data : "",
	    JSON_DECODE_ANY, NULL);
	if (res == NULL && c->exit_code != 0) {
		/* Status 1 without a report is a failure, not "crossed". */
		reply_tool_error(srv, j->req_id, "%s", job_child_message(c, msg,
		    sizeof(msg)));
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
	cut = fit_budget(res, ANSWER_BUDGET);
	out = json_pack("{s:s,s:s,s:s,s:b,s:o,s:b}", "report_id", rid, "a",
	    json_string_value(json_object_get(j->args, "a")), "b",
	    json_string_value(json_object_get(j->args, "b")), "crossed",
	    c->exit_code == 1, "comparison", res, "truncated", cut);
	idem_save(srv, j->request_name, out);
	snprintf(summary, sizeof(summary), "%s; the full report is kept as "
	    "report %s%s.", c->exit_code == 1 ? "Differences found (or a "
	    "fail_on bound crossed)" : "No difference beyond the bounds",
	    rid, cut ? " (cut here to fit 8 KB)" : "");
	reply_tool(srv, j->req_id, summary, out);
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

struct prune_acc {
	json_t *removed;
	uint64_t bytes;
};

static void
prune_one(const char *id, uint64_t bytes, void *arg)
{
	struct prune_acc *acc = arg;

	json_array_append_new(acc->removed, json_string(id));
	acc->bytes += bytes;
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
	struct store_prune p;
	struct prune_acc acc = { json_array(), 0 };
	struct error e;
	char summary[256];
	int n;

	p.max_age_s = limit_arg(args, "max_age_s");
	p.max_count = limit_arg(args, "max_count");
	p.max_bytes = limit_arg(args, "max_bytes");
	p.dry_run = json_is_true(json_object_get(args, "dry_run"));
	p.now = time(NULL);
	if (p.max_age_s < 0 && p.max_count < 0 && p.max_bytes < 0) {
		json_decref(acc.removed);
		reply_tool_error(srv, id, "trace_prune: give at least one of "
		    "max_age_s, max_count or max_bytes.");
		return;
	}
	if ((n = store_prune(&srv->store, &p, prune_one, &acc, &e)) < 0) {
		json_decref(acc.removed);
		reply_tool_error(srv, id, "trace_prune: %s", e.msg);
		return;
	}
	snprintf(summary, sizeof(summary), "%s %d snapshots (%llu bytes).",
	    p.dry_run ? "Would remove" : "Removed", n,
	    (unsigned long long)acc.bytes);
	reply_tool(srv, id, summary, json_pack("{s:o,s:I,s:b}", "removed",
	    acc.removed, "freed_bytes", (json_int_t)acc.bytes, "dry_run",
	    p.dry_run));
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
