/* verbs: the store verbs of the ptmcp command line (see verbs.h). */
#include "verbs.h"

#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/json.h"
#include "fmt/jsonrpc.h"
#include "base/jsonw.h"
#include "base/numparse.h"
#include "base/progpath.h"
#include "tool/report.h"
#include "server.h"
#include "base/spawn.h"
#include "fmt/snapshot.h"
#include "fmt/store.h"

#define T "ptmcp"

static int
open_store(struct store *s, const char *path, int create)
{
	struct error e;

	int rc;

	if ((rc = store_open(s, path, create, &e)) < 0) {
		/* absent is "empty"; another user's is theirs, not empty */
		report_error(T, "store", &e, !create && rc == -ERR_NOTFOUND ?
		    "nothing was recorded into it yet" : NULL);
		return -1;
	}
	return 0;
}

/* Writes the analyses of snapshot sid as a JSON array. */
static void
write_analyses(const struct store *s, const char *sid, struct jsonw *w)
{
	char dir[PATH_MAX];
	struct dirent **names;
	int n, i;

	jsonw_array_begin(w);
	if (store_derived_path(s, sid, dir, sizeof(dir), NULL) == 0 &&
	    (n = scandir(dir, &names, NULL, alphasort)) >= 0) {
		for (i = 0; i < n; i++) {
			if (store_analysis_id_valid(names[i]->d_name))
				jsonw_string(w, names[i]->d_name);
			free(names[i]);
		}
		free(names);
	}
	jsonw_array_end(w);
}

/* When it was made, what ran, what took it: null when not known. */
static void
write_brief(struct jsonw *w, const struct store_entry *ent)
{
	char when[STORE_TIME_SIZE];

	store_time_iso(ent->created_ns, when, sizeof(when));
	jsonw_kv_string(w, "created", when);
	jsonw_key(w, "program");
	if (ent->brief.program[0] != '\0')
		jsonw_string(w, ent->brief.program);
	else
		jsonw_null(w);
	jsonw_key(w, "trigger");
	if (ent->brief.trigger[0] != '\0')
		jsonw_string(w, ent->brief.trigger);
	else
		jsonw_null(w);
}

int
verb_list(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	struct store s;
	struct store_entry *v;
	struct jsonw w;
	struct error e;
	size_t n, i;

	(void)argv;
	if (argc > 1) {
		cli_usage_error(t, "list takes no arguments");
		return EXIT_USAGE;
	}
	if (open_store(&s, store_path, 0) < 0)
		return EXIT_FAIL;
	if (store_list(&s, STORE_SNAPSHOTS, &v, &n, &e) < 0) {
		report_error(T, s.root, &e, NULL);
		return EXIT_FAIL;
	}
	/* One JSON object per snapshot, oldest first (JSON Lines). */
	jsonw_init(&w, stdout);
	for (i = 0; i < n; i++) {
		jsonw_object_begin(&w);
		jsonw_kv_string(&w, "id", v[i].id);
		jsonw_kv_u64(&w, "bytes", v[i].bytes);
		jsonw_kv_bool(&w, "in_use", v[i].in_use);
		jsonw_key(&w, "analyses");
		write_analyses(&s, v[i].id, &w);
		write_brief(&w, &v[i]);
		jsonw_object_end(&w);
		jsonw_newline(&w);
	}
	free(v);
	return report_close_stdout(T, jsonw_finish(&w) < 0 ? EXIT_FAIL :
	    EXIT_OK);
}

static int
show_report(const struct store *s, const char *id)
{
	char *text;
	struct error e;

	if (store_read_json(s, STORE_REPORTS, id, &text, &e) < 0) {
		report(T, id, "list shows the snapshots", "not in the store");
		return EXIT_FAIL;
	}
	fputs(text, stdout);
	fputc('\n', stdout);
	free(text);
	return report_close_stdout(T, EXIT_OK);
}

/* Whether id, a snapshot id given on the command line, is one; says so. */
static int
id_argument_ok(const char *id)
{
	if (store_id_valid(id))
		return 1;
	report(T, id, "ids look like 20261129T101500Z-0123abcd",
	    "not a valid id");
	return 0;
}

int
verb_show(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char dir[PATH_MAX];
	struct store s;
	struct jsonw w;
	struct error e;
	uint64_t bytes = 0;
	json_t *manifest;
	int rc, fd;

	if (argc != 2) {
		cli_usage_error(t, "show takes one ID");
		return EXIT_USAGE;
	}
	if (!id_argument_ok(argv[1]))
		return EXIT_FAIL;
	if (open_store(&s, store_path, 0) < 0)
		return EXIT_FAIL;
	rc = store_resolve(&s, STORE_SNAPSHOTS, argv[1], dir, sizeof(dir), &e);
	if (rc == -ERR_NOTFOUND)
		return show_report(&s, argv[1]);
	if (rc < 0) {
		report_error(T, argv[1], &e, NULL);
		return EXIT_FAIL;
	}
	if (store_du(dir, &bytes, &e) < 0)
		report_error(T, dir, &e, "its size shows as 0");
	/*
	 * Shown only when it is the snapshot's own, not a link out: read
	 * from the descriptor the check opened, never opened again by its
	 * name (a link swapped in between would be followed).
	 */
	manifest = NULL;
	if ((rc = fd = snapshot_member_open(dir, SNAPSHOT_MANIFEST, &e)) >= 0) {
		manifest = json_read_fd(fd, &e);
		close(fd);
		rc = manifest != NULL ? 0 : error_prefix(&e, "%s",
		    SNAPSHOT_MANIFEST);
	}
	if (rc < 0 && rc != -ERR_NOTFOUND)
		report_error(T, argv[1], &e, "its manifest shows as null");
	jsonw_init(&w, stdout);
	jsonw_object_begin(&w);
	jsonw_kv_string(&w, "id", argv[1]);
	jsonw_kv_string(&w, "path", dir);
	jsonw_kv_u64(&w, "bytes", bytes);
	jsonw_key(&w, "analyses");
	write_analyses(&s, argv[1], &w);
	jsonw_key(&w, "manifest");
	if (manifest != NULL)
		jsonrpc_write_json(&w, manifest);
	else
		jsonw_null(&w);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	json_decref(manifest);
	return report_close_stdout(T, jsonw_finish(&w) < 0 ? EXIT_FAIL :
	    EXIT_OK);
}

int
verb_import(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char id[STORE_ID_SIZE];
	struct store s;
	struct error e;
	int new_id = argc == 3 && strcmp(argv[1], "--new-id") == 0;

	if (argc != 2 + new_id || (!new_id && argv[1][0] == '-')) {
		cli_usage_error(t, "import takes one DIR (and --new-id before "
		    "it to import a snapshot already in the store again)");
		return EXIT_USAGE;
	}
	if (open_store(&s, store_path, 1) < 0)
		return EXIT_FAIL;
	if (store_import(&s, argv[1 + new_id], new_id, id, &e) < 0) {
		report_error(T, argv[1 + new_id], &e, e.code == ERR_EXISTS ?
		    "ptmcp show it, or import --new-id to keep both" : NULL);
		return EXIT_FAIL;
	}
	printf("%s\n", id);
	return report_close_stdout(T, EXIT_OK);
}

int
verb_export(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char gid[STORE_ID_SIZE], out[PATH_MAX];
	struct store s;
	struct error e;

	if (argc != 3) {
		cli_usage_error(t, "export takes an ID and a DIR");
		return EXIT_USAGE;
	}
	if (!id_argument_ok(argv[1]))
		return EXIT_FAIL;
	if (open_store(&s, store_path, 0) < 0)
		return EXIT_FAIL;
	if (store_id_new(gid, &e) < 0 || store_export(&s, argv[1], gid,
	    argv[2], out, sizeof(out), &e) < 0) {
		report_error(T, argv[1], &e, e.code == ERR_NOTFOUND ?
		    "list shows the snapshots" : NULL);
		return EXIT_FAIL;
	}
	printf("%s\n", out);
	return report_close_stdout(T, EXIT_OK);
}

/* "90", "90s", "15m", "12h", "7d" as seconds. */
static int
parse_age(const char *arg, int64_t *out)
{
	static const struct { char c; int64_t mul; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	char num[32];
	size_t n = strlen(arg), i;
	int64_t mul = 1, v;

	if (n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, arg, n + 1);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (num[n - 1] == units[i].c) {
			mul = units[i].mul;
			num[n - 1] = '\0';
		}
	if (parse_i64(num, 0, INT64_MAX / 86400, &v, NULL) < 0)
		return -1;
	*out = v * mul;
	return 0;
}

static void
print_removed(const struct store_entry *ent, enum store_pruned what,
    void *arg)
{
	(void)arg;
	/* Kept in use is the rule working, as before: not said here. */
	if (what == STORE_PRUNE_REMOVED)
		printf("%s\t%llu\n", ent->id, (unsigned long long)ent->bytes);
}

enum { OPT_MAX_AGE = 300, OPT_MAX_COUNT, OPT_MAX_BYTES, OPT_DRY_RUN,
	OPT_KEEP_NEWEST };

static enum cli_parse
parse_prune_options(const struct tool_info *t, int argc, char **argv,
    struct store_prune *p)
{
	static const struct option opts[] = {
		{ "max-age", required_argument, NULL, OPT_MAX_AGE },
		{ "max-count", required_argument, NULL, OPT_MAX_COUNT },
		{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "keep-newest", required_argument, NULL, OPT_KEEP_NEWEST },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t u;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case OPT_MAX_AGE:
			if (parse_age(optarg, &p->max_age_s) < 0)
				return cli_usage_error(t, "option '--max-age': "
				    "'%s' is not a duration like 3600, 90m, "
				    "12h or 7d", optarg);
			break;
		case OPT_MAX_COUNT:
			if (cli_opt_u64(t, "--max-count", optarg, 0, 1000000,
			    &u) < 0)
				return CLI_USAGE;
			p->max_count = (int64_t)u;
			break;
		case OPT_MAX_BYTES:
			if (cli_opt_size(t, "--max-bytes", optarg, 0,
			    INT64_MAX, &u) < 0)
				return CLI_USAGE;
			p->max_bytes = (int64_t)u;
			break;
		case OPT_DRY_RUN:
			p->dry_run = 1;
			break;
		case OPT_KEEP_NEWEST:
			if (cli_opt_u64(t, "--keep-newest", optarg, 0, 1000000,
			    &u) < 0)
				return CLI_USAGE;
			p->keep_newest = (int64_t)u;
			break;
		default:
			return cli_bad_option(t, c, argv);
		}
	}
	/* Operands: the ids to remove. */
	p->ids = (const char *const *)argv + optind;
	p->nr_ids = (size_t)(argc - optind);
	if (p->max_age_s < 0 && p->max_count < 0 && p->max_bytes < 0 &&
	    p->keep_newest < 0 && p->nr_ids == 0)
		return cli_usage_error(t, "prune needs snapshot ids, "
		    "--max-age, --max-count, --max-bytes or --keep-newest");
	return CLI_RUN;
}

int
verb_prune(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	struct store_prune p = { .max_age_s = -1, .max_count = -1,
		.max_bytes = -1, .keep_newest = -1, .now = time(NULL) };
	struct store s;
	struct error e;

	if (parse_prune_options(t, argc, argv, &p) != CLI_RUN)
		return EXIT_USAGE;	/* prune has no --help of its own */
	if (open_store(&s, store_path, 0) < 0)
		return EXIT_FAIL;
	if (store_prune(&s, &p, print_removed, NULL, &e) < 0) {
		report_error(T, s.root, &e, NULL);
		return report_close_stdout(T, EXIT_FAIL);
	}
	return report_close_stdout(T, EXIT_OK);
}

int
verb_doctor(const struct tool_info *t, const char *store_path, int argc,
    char **argv)
{
	char prog[PATH_MAX];
	char *rec_argv[] = { prog, "--doctor", NULL };
	struct store_entry *v = NULL;
	struct store s;
	struct spawn sp;
	struct error e;
	uint64_t bytes = 0;
	size_t n = 0, i;
	int ok = 1;

	(void)argv;
	if (argc > 1) {
		cli_usage_error(t, "doctor takes no arguments");
		return EXIT_USAGE;
	}
	if (open_store(&s, store_path, 1) < 0) {
		ok = 0;
	} else if (store_list(&s, STORE_SNAPSHOTS, &v, &n, &e) < 0) {
		report_error(T, s.root, &e, NULL);
		ok = 0;
	} else {
		for (i = 0; i < n; i++)
			bytes += v[i].bytes;
		free(v);
		printf("store: %s: usable, 0700, %zu snapshots, %llu bytes\n",
		    s.root, n, (unsigned long long)bytes);
	}
	fflush(stdout);
	progpath_sibling_tool("ptrec", prog, sizeof(prog));
	spawn_init(&sp, rec_argv);
	sp.die_with_parent = 1;
	sp.in = SPAWN_NULL;
	if (spawn_start(&sp, &e) < 0 || spawn_finish(&sp, &e) < 0) {
		report_error(T, "ptrec --doctor", &e, NULL);
		ok = 0;
	}
	return report_close_stdout(T, ok ? EXIT_OK : EXIT_FAIL);
}
