/*
 * jsonrpc: newline-delimited JSON-RPC 2.0, as MCP speaks it over stdio.
 *
 * Owns three things and nothing else:
 *   - reading lines of any length from a descriptor, a chunk at a time (so
 *     a poll(2) loop never blocks on a partial line), bounded by a maximum:
 *     a longer line is skipped to its newline and reported once, never
 *     buffered whole;
 *   - classifying one line as a request, a notification, a response or an
 *     invalid message carrying the JSON-RPC error code to answer with
 *     (-32700 not JSON, -32600 not a request, -32602 params not an object);
 *   - writing one message per line: built in memory, checked, written with
 *     one write and flushed, so stdout only ever carries whole protocol
 *     lines.  Errors whose id could not be read carry no "id" member (the
 *     MCP schema makes it optional; the TS clients flag "id":null).
 *
 * Ids are jansson values (string or integer, 0 included) echoed with their
 * own type.  Integers jansson cannot hold (beyond 64 bits) make the line a
 * parse error.
 */
#ifndef PTKIT_JSONRPC_H
#define PTKIT_JSONRPC_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "base/error.h"
#include "base/jsonw.h"

/* JSON-RPC 2.0 error codes. */
enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603,
};

/* Default bound on one input line (bytes, newline excluded). */
#define JSONRPC_LINE_MAX (16u << 20)
/* Bound on one output line: the TS client drops lines over 10 MiB. */
#define JSONRPC_OUT_MAX (8u << 20)

struct jsonrpc_reader {
	int fd;
	size_t max_line;	/* longest line accepted */
	char *buf;		/* owned */
	size_t start;		/* first unconsumed byte */
	size_t len;		/* bytes in buf */
	size_t cap;
	size_t scan;		/* bytes after start known to hold no '\n' */
	int skipping;		/* dropping the rest of an oversize line */
	int eof;		/* read() returned 0 */
};

/* Sets r up to read fd; max_line 0 means JSONRPC_LINE_MAX. */
void jsonrpc_reader_init(struct jsonrpc_reader *r, int fd, size_t max_line);

/* Frees the buffer (the descriptor stays the caller's). */
void jsonrpc_reader_free(struct jsonrpc_reader *r);

/*
 * Reads once from the descriptor (it may block unless poll said it is
 * readable).  Returns the number of bytes read (> 0), 0 at end of file,
 * -ERR_IO on a read error (EAGAIN and EINTR return 1 with nothing read
 * so the caller polls again), -ERR_NOMEM.
 */
long jsonrpc_reader_fill(struct jsonrpc_reader *r, struct error *e);

enum {
	JSONRPC_LINE_NONE = 0,		/* no complete line buffered */
	JSONRPC_LINE_OK = 1,		/* *line, *len: a line, no '\n' */
	JSONRPC_LINE_OVERSIZE = 2,	/* a line over max_line was dropped */
};

/*
 * Takes the next line out of the buffer.  *line stays valid until the next
 * call of jsonrpc_reader_fill() or _next().  After end of file a last line
 * without a newline is returned as a line.  Returns one of the values
 * above; an oversize line is reported once, when its end is reached (or
 * at end of file).
 */
int jsonrpc_reader_next(struct jsonrpc_reader *r, const char **line,
    size_t *len) PTKIT_MUST_CHECK;

/* True once end of file was seen and every buffered line was taken. */
int jsonrpc_reader_done(const struct jsonrpc_reader *r);

enum jsonrpc_kind {
	JSONRPC_EMPTY,		/* blank line: ignore */
	JSONRPC_REQUEST,	/* method, id, params */
	JSONRPC_NOTIFICATION,	/* method, params; never answered */
	JSONRPC_RESPONSE,	/* has result or error and an id: ignored */
	JSONRPC_INVALID,	/* answer with code/message (and id if set) */
};

struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	json_t *root;		/* owned; NULL for EMPTY or unparsable */
	const char *method;	/* borrowed from root */
	json_t *id;		/* borrowed; NULL when absent or unusable */
	json_t *params;		/* borrowed; an object (absent = empty {}) */
	int code;		/* JSONRPC_INVALID: the error code */
	char message[160];	/* JSONRPC_INVALID: the error message */
};

/*
 * Classifies len bytes of line (which need not be NUL-terminated and may
 * hold any bytes).  Always fills m; returns 0, or -ERR_NOMEM (m->kind is
 * then JSONRPC_INVALID with code -32603, so a caller may go by m->kind
 * alone).  Release m with jsonrpc_msg_free().
 */
int jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m);

void jsonrpc_msg_free(struct jsonrpc_msg *m);

/* Where messages go.  broken: a write failed (EPIPE: the client left). */
struct jsonrpc_out {
	FILE *f;
	int broken;
	size_t max_line;	/* 0 means JSONRPC_OUT_MAX */
};

/* One message being built in memory. */
struct jsonrpc_line {
	struct jsonw w;
	FILE *mem;
	char *buf;
	size_t len;
};

/*
 * Starts {"jsonrpc":"2.0","id":ID,"result": and leaves the writer where
 * the result value goes.  id NULL writes no id.  Returns 0 or -ERR_NOMEM.
 */
int jsonrpc_begin_result(struct jsonrpc_line *l, const json_t *id)
    PTKIT_MUST_CHECK;

/* Starts {"jsonrpc":"2.0","method":METHOD,"params": likewise. */
int jsonrpc_begin_notification(struct jsonrpc_line *l, const char *method)
    PTKIT_MUST_CHECK;

/*
 * Closes the message and writes it as one line, then flushes.  A message
 * that is malformed (writer misuse) or longer than the output bound is not
 * written; an error reply (-32603, saying why) goes in its place when
 * error_id_ok is set.  Frees l.  Returns 0, -ERR_INTERNAL or -ERR_RANGE
 * (replaced), -ERR_IO (write failed; out->broken set).
 */
int jsonrpc_send(struct jsonrpc_out *out, struct jsonrpc_line *l,
    const json_t *id, int error_id_ok, struct error *e) PTKIT_MUST_CHECK;

/* Frees a message that will not be sent. */
void jsonrpc_line_discard(struct jsonrpc_line *l);

/*
 * Writes {"jsonrpc":"2.0","id":ID,"error":{"code":C,"message":M}} (no id
 * member when id is NULL).  Returns 0 or -ERR_IO / -ERR_NOMEM.
 */
int jsonrpc_send_error(struct jsonrpc_out *out, const json_t *id, int code,
    const char *message, struct error *e) PTKIT_MUST_CHECK;

/*
 * Writes any jansson value through w (objects keep jansson's key order).
 * Values nested deeper than the writer allows are recorded as writer
 * misuse (jsonw_finish fails).
 */
void jsonrpc_write_json(struct jsonw *w, const json_t *v);

#endif
