/*
 * drive: the verbs that run the other ptkit tools on the store for people
 * and scripts (run, attach, decode, query, compare): the same operations
 * as the MCP tools, done in the foreground with the tools' own stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/scratch.h"
#include "base/cleanup.h"
#include "base/progpath.h"
#include "tool/report.h"
#include "server.h"
#include "base/spawn.h"
#include "fmt/store.h"
#include "verbs.h"

#define T "ptmcp"
#define MAX_ARGS 512

static int
open_store(struct store *s, const char *path, int create)
{
	struct error e;

	if (store_open(s, path, create, &e) < 0) {
		report_error(T, "store", &e, NULL);
		return -1;
	}
	return 0;
}

/* Runs argv with our stdio; returns its exit status, or -1. */
static int
run_tool(char **argv)
{
	struct spawn sp;
	struct error e;

	spawn_init(&sp, argv);
	sp.die_with_parent = 1;
	sp.in = SPAWN_NULL;
	if (spawn_start(&sp, &e) < 0) {
		report_error(T, argv[0], &e, NULL);
		return -1;
	}
	/* A child's own failure is its exit code; only the wait is ours. */
	if (spawn_finish(&sp, &e) < 0 && e.code != ERR_CHILD) {
		report_error(T, argv[0], &e, NULL);
		return -1;
	}
	return sp.exit_code;
}

static int decode_pipeline(const struct store *s, const char *sid,
    char *out, size_t size);

static int
decode_snapshot(const struct store *s, const char *sid, char *out,
    size_t size)
{
	char gid[STORE_ID_SIZE];
	struct error e;
	int fd, rc;

	/* Prune keeps off sid from here on, or sid is gone and we say so. */
	if ((rc = store_id_new(gid, &e)) < 0 ||
	    (fd = rc = store_guard_begin(s, gid, sid, "decode", &e)) < 0) {
		if (rc == -ERR_NOTFOUND)
			report(T, sid, NULL, "not in the store (removed before "
			    "its decode could start)");
		else
			report_error(T, sid, &e, NULL);
		return -1;
	}
	rc = decode_pipeline(s, sid, out, size);
	store_guard_end(s, gid, fd);
	return rc;
}

/* ptdecode SNAP | ptspans -o TMP/a, then TMP/a renamed to derived/default. */
static int
decode_pipeline(const struct store *s, const char *sid, char *out,
    size_t size)
{
	char snap[PATH_MAX], derived[PATH_MAX], tmp[PATH_MAX];
	char made[PATH_MAX + 40], dec[PATH_MAX], spans[PATH_MAX];
	char *argv1[] = { dec, snap, NULL };
	char *argv2[] = { spans, "-o", made, NULL };
	struct spawn sp1, sp2;
	struct error e;
	struct stat st;
	int rc1, rc2, owner;

	if (store_resolve(s, STORE_SNAPSHOTS, sid, snap, sizeof(snap), &e) < 0 ||
	    store_analysis_path(s, sid, STORE_DEFAULT_ANALYSIS, out, size,
	    &e) < 0 ||
	    store_analysis_tmp(snap, tmp, sizeof(tmp), &e) < 0) {
		report_error(T, sid, &e, NULL);
		return -1;
	}
	if (stat(out, &st) == 0)
		return 0;	/* decoded before */
	if (store_derived_make(snap, derived, sizeof(derived), &e) < 0) {
		report_error(T, sid, &e, NULL);
		return -1;
	}
	(void)scratch_sweep_dead(derived, ".tmp-");	/* killed runs' */
	if (mkdtemp(tmp) == NULL) {
		report(T, derived, NULL, "%s", strerror(errno));
		return -1;
	}
	if (scratch_own(tmp, &owner, &e) < 0) {
		report_error(T, tmp, &e, NULL);
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* failed already */
		return -1;
	}
	snprintf(made, sizeof(made), "%s/a", tmp);
	progpath_sibling_tool("ptdecode", dec, sizeof(dec));
	progpath_sibling_tool("ptspans", spans, sizeof(spans));
	spawn_init(&sp1, argv1);
	sp1.die_with_parent = 1;
	sp1.in = SPAWN_NULL;
	sp1.out = SPAWN_PIPE;
	if (spawn_start(&sp1, &e) < 0) {
		report_error(T, "ptdecode", &e, NULL);
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* failed already */
		close(owner);
		return -1;
	}
	spawn_init(&sp2, argv2);
	sp2.die_with_parent = 1;
	sp2.in = spawn_fd(sp1.out);
	sp2.out = SPAWN_NULL;
	rc2 = spawn_start(&sp2, &e);
	close(sp1.out);
	sp1.out = -1;
	if (rc2 < 0)
		report_error(T, "ptspans", &e, NULL);
	rc1 = spawn_finish(&sp1, NULL);
	if (rc2 == 0)
		rc2 = spawn_finish(&sp2, NULL);
	if (rc1 == 0 && rc2 == 0 && renameat2(AT_FDCWD, made, AT_FDCWD, out,
	    RENAME_NOREPLACE) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
		report(T, made, NULL, "%s", strerror(errno));
		rc1 = -1;
	}
	if (cleanup_remove_tree(tmp) < 0)
		report_warning(T, tmp, "could not remove it");
	close(owner);		/* after: no sweeper races the removal */
	return rc1 == 0 && rc2 == 0 ? 0 : -1;
}

int
verb_decode(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char out[PATH_MAX];
	struct store s;

	if (argc != 2) {
		cli_usage_error(t, "decode takes one SNAPSHOT_ID");
		return EXIT_USAGE;
	}
	if (open_store(&s, store_path, 0) < 0 ||
	    decode_snapshot(&s, argv[1], out, sizeof(out)) < 0)
		return EXIT_FAIL;
	printf("%s\n", out);
	return report_close_stdout(T, EXIT_OK);
}

/* The default analysis of sid, which must exist, into dir[PATH_MAX]. */
static int
analysis_of(const struct store *s, const char *sid, char *dir)
{
	char snap[PATH_MAX];
	struct error e;
	int rc;

	if (store_resolve(s, STORE_SNAPSHOTS, sid, snap, sizeof(snap), &e) < 0) {
		report_error(T, sid, &e, NULL);
		return -1;
	}
	rc = store_resolve_analysis(s, sid, STORE_DEFAULT_ANALYSIS, dir,
	    PATH_MAX, &e);
	if (rc == -ERR_NOTFOUND || rc == -ERR_PERM) {
		report(T, sid, "run: ptmcp decode ID", "not decoded yet");
		return -1;
	}
	if (rc < 0) {
		report_error(T, sid, &e, NULL);
		return -1;
	}
	return 0;
}

int
verb_query(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char dir[PATH_MAX], prog[PATH_MAX];
	char *args[MAX_ARGS];
	struct store s;
	int i, n = 0, rc;

	if (argc < 2 || argc > MAX_ARGS - 3) {
		cli_usage_error(t, "query takes SNAPSHOT_ID and "
		    "ptquery options");
		return EXIT_USAGE;
	}
	if (open_store(&s, store_path, 0) < 0 ||
	    analysis_of(&s, argv[1], dir) < 0)
		return EXIT_FAIL;
	progpath_sibling_tool("ptquery", prog, sizeof(prog));
	args[n++] = prog;
	args[n++] = dir;
	for (i = 2; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	fflush(stdout);
	rc = run_tool(args);
	return rc < 0 ? EXIT_FAIL : rc;
}

int
verb_compare(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char da[PATH_MAX], db[PATH_MAX], prog[PATH_MAX];
	char *args[MAX_ARGS];
	struct store s;
	int i, n = 0, rc;

	if (argc < 3 || argc > MAX_ARGS - 4) {
		cli_usage_error(t, "compare takes ID_A ID_B and ptdiff "
		    "options");
		return EXIT_USAGE;
	}
	if (open_store(&s, store_path, 0) < 0 ||
	    analysis_of(&s, argv[1], da) < 0 ||
	    analysis_of(&s, argv[2], db) < 0)
		return EXIT_USAGE;	/* ptdiff's status for trouble */
	progpath_sibling_tool("ptdiff", prog, sizeof(prog));
	args[n++] = prog;
	for (i = 3; i < argc; i++)
		args[n++] = argv[i];
	args[n++] = da;
	args[n++] = db;
	args[n] = NULL;
	fflush(stdout);
	rc = run_tool(args);
	return rc < 0 ? EXIT_USAGE : rc;
}

/* Records with ptrec, then decodes and summarises every snapshot. */
static int
record(const char *store_path, char **rec_args, int nrec)
{
	char prog[PATH_MAX], out[PATH_MAX], qprog[PATH_MAX];
	char *args[MAX_ARGS], *text = NULL, *line, *save = NULL, *base;
	char *qargs[] = { qprog, out, "--kind", "summary", NULL };
	struct store s;
	struct error e;
	size_t len;
	int i, n = 0, rc, ok = 1, count = 0;

	if (open_store(&s, store_path, 1) < 0)
		return EXIT_FAIL;
	progpath_sibling_tool("ptrec", prog, sizeof(prog));
	args[n++] = prog;
	args[n++] = "--store";
	args[n++] = s.root;
	for (i = 0; i < nrec && n < MAX_ARGS - 1; i++)
		args[n++] = rec_args[i];
	args[n] = NULL;
	rc = spawn_capture(args, &text, &len, &e);
	if (rc < 0 && text == NULL) {
		report_error(T, "ptrec", &e, NULL);
		return EXIT_FAIL;
	}
	progpath_sibling_tool("ptquery", qprog, sizeof(qprog));
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		base = strrchr(line, '/') != NULL ? strrchr(line, '/') + 1 :
		    line;
		if (!store_id_valid(base))
			continue;
		count++;
		printf("snapshot %s\n", base);
		fflush(stdout);
		if (decode_snapshot(&s, base, out, sizeof(out)) < 0) {
			ok = 0;
			continue;
		}
		printf("analysis %s/default\n", base);
		fflush(stdout);
		if (run_tool(qargs) != 0)
			ok = 0;
	}
	free(text);
	if (rc < 0 && count == 0)
		ok = 0;		/* ptrec said why on stderr */
	return report_close_stdout(T, ok ? EXIT_OK : EXIT_FAIL);
}

int
verb_run(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	int i, dashes = 0;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			dashes = 1;
	if (!dashes || argc < 3) {
		cli_usage_error(t, "run needs -- PROGRAM [ARG ...]");
		return EXIT_USAGE;
	}
	return record(store_path, argv + 1, argc - 1);
}

int
verb_attach(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	int i, pid = 0;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--pid") == 0 ||
		    strncmp(argv[i], "--pid=", 6) == 0)
			pid = 1;
	if (!pid) {
		cli_usage_error(t, "attach needs --pid PID");
		return EXIT_USAGE;
	}
	return record(store_path, argv + 1, argc - 1);
}
