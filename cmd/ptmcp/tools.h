/*
 * tools: the eleven MCP tools ptmcp offers, as data.
 *
 * Owns each tool's name, title, description (written for an agent: when
 * to use it, what comes back), input and output JSON Schemas, and
 * annotations; writing them as a tools/list result; and finding a tool by
 * name.  What a tool does lives in calls.c.
 */
#ifndef PTMCP_TOOLS_H
#define PTMCP_TOOLS_H

#include <jansson.h>

#include "base/error.h"
#include "base/jsonw.h"

enum tool_id {
	TOOL_DOCTOR, TOOL_START, TOOL_STATUS, TOOL_SNAPSHOT, TOOL_STOP,
	TOOL_CANCEL, TOOL_DECODE, TOOL_QUERY, TOOL_COMPARE, TOOL_PRUNE,
	TOOL_LIST, TOOL_COUNT
};

struct tool_def {
	enum tool_id id;
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema;	/* JSON text */
	const char *output_schema;	/* JSON text */
	int read_only, destructive, idempotent, open_world;
};

/* The parsed schemas of every tool, loaded once. */
struct tool_set {
	const struct tool_def *defs;	/* TOOL_COUNT entries, list order */
	json_t *input[TOOL_COUNT];
	json_t *output[TOOL_COUNT];
};

/*
 * Parses every schema.  Returns 0, or -ERR_INTERNAL naming the tool whose
 * schema is not a JSON object of type "object" (a bug).
 */
int tools_load(struct tool_set *ts, struct error *e);
void tools_free(struct tool_set *ts);

/* The tool called name, or NULL. */
const struct tool_def *tools_find(const struct tool_set *ts,
    const char *name);

/* A command-line option of the tool underneath and the argument it is. */
struct tool_word {
	const char *cli;		/* "--span" */
	const char *arg;		/* "span_id" */
};

/*
 * The options of the tool a tool runs, with the arguments they come
 * from, ending with { NULL, NULL }: how its messages are put in the
 * words of the call.  Every tool has a table (maybe empty).
 */
const struct tool_word *tools_words(enum tool_id id);

/* Writes the tools/list result object {"tools":[...]}. */
void tools_write_list(const struct tool_set *ts, struct jsonw *w);

#endif
