/*
 * answer: what a tool result says to an agent.  Owns the answer budget
 * (ANSWER_BUDGET in server.h: the text block, summary line and
 * serialized result together), pages of rows cut to it without losing a
 * row (the next cursor continues at the first row not returned), and the
 * one-line summaries of the query and compare results: the numbers that
 * matter (top rows and their figures, the function that changed most and
 * by how much, how the times were kept, the cursor to the rest).
 */
#ifndef PTMCP_ANSWER_H
#define PTMCP_ANSWER_H

#include <stddef.h>

#include <jansson.h>

#define ANSWER_LINE_MAX 1024	/* the summary line, within the budget */

/*
 * Drops rows from the end of rows (an array held in out) until out,
 * serialized compactly, takes at most budget bytes; one row is always
 * kept, so that a cursor after it advances.  Returns the rows dropped.
 */
size_t answer_fit_rows(json_t *out, json_t *rows, size_t budget);

/* The cursor of the row after first + n rows ("o<row>", ptquery's). */
void answer_cursor(size_t next_row, char *buf, size_t size);

/* Parses such a cursor; -1 when it is not one. */
int answer_cursor_parse(const char *s, size_t *row);

/* The summary line of a trace_query result (its structured content). */
void answer_query_line(const json_t *out, char *buf, size_t size);

/*
 * The summary line of a trace_compare result: from the whole report
 * (the slower, faster, new and vanished functions, those within the
 * noise band) and its page out; whether bounds were crossed is said when
 * with_bounds (fail_on was given) or some were.
 */
void answer_compare_line(const json_t *report, const json_t *out,
    int with_bounds, char *buf, size_t size);

struct tool_word;

/*
 * Puts a message of a tool underneath (msg, rewritten in place, at most
 * size bytes) in the words of the call: the options it names become the
 * arguments they came from (words; "option '--span'" becomes "argument
 * 'span_id'"), and paths inside the store at root become what an agent
 * knows them by ("snapshot ID", "snapshot ID analysis AID"), so that no
 * answer shows a flag it cannot pass or a path it cannot use.
 */
void answer_in_call_words(char *msg, size_t size, const char *root,
    const struct tool_word *words);

#endif
