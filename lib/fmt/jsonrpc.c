/* jsonrpc: see jsonrpc.h. */
#include "fmt/jsonrpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (64u * 1024)

void
jsonrpc_reader_init(struct jsonrpc_reader *r, int fd, size_t max_line)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->max_line = max_line != 0 ? max_line : JSONRPC_LINE_MAX;
}

void
jsonrpc_reader_free(struct jsonrpc_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->start = r->len = r->cap = r->scan = 0;
}

/* Moves unconsumed bytes to the front and makes room for one chunk. */
static int
reader_make_room(struct jsonrpc_reader *r)
{
	size_t want, cap;
	char *grown;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->len - r->start);
		r->len -= r->start;
		r->start = 0;
	}
	if (r->cap - r->len >= READ_CHUNK)
		return 0;
	want = r->len + READ_CHUNK;
	cap = r->cap != 0 ? r->cap : READ_CHUNK;
	while (cap < want)
		cap *= 2;
	if ((grown = realloc(r->buf, cap)) == NULL)
		return -ERR_NOMEM;
	r->buf = grown;
	r->cap = cap;
	return 0;
}

long
jsonrpc_reader_fill(struct jsonrpc_reader *r, struct error *e)
{
	ssize_t n;

	if (r->eof)
		return 0;
	if (reader_make_room(r) < 0)
		return error_set(e, ERR_NOMEM, "input line buffer");
	n = read(r->fd, r->buf + r->len, r->cap - r->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n < 0)
		return error_set_errno(e, errno, "reading requests");
	if (n == 0) {
		r->eof = 1;
		return 0;
	}
	r->len += (size_t)n;
	return n;
}

/* Drops buffered bytes up to the newline that ends an oversize line. */
static int
reader_skip(struct jsonrpc_reader *r)
{
	char *nl = memchr(r->buf + r->start, '\n', r->len - r->start);

	r->scan = 0;
	if (nl == NULL) {
		r->start = r->len;
		if (!r->eof)
			return JSONRPC_LINE_NONE;
		r->skipping = 0;
		return JSONRPC_LINE_OVERSIZE;
	}
	r->start = (size_t)(nl - r->buf) + 1;
	r->skipping = 0;
	return JSONRPC_LINE_OVERSIZE;
}

int
jsonrpc_reader_next(struct jsonrpc_reader *r, const char **line,
    size_t *len)
{
	size_t avail, n;
	char *nl;

	if (r->skipping)
		return reader_skip(r);
	avail = r->len - r->start;
	nl = memchr(r->buf + r->start + r->scan, '\n', avail - r->scan);
	if (nl == NULL) {
		r->scan = avail;
		if (avail > r->max_line) {
			r->skipping = 1;
			return reader_skip(r);
		}
		if (!r->eof || avail == 0)
			return JSONRPC_LINE_NONE;
		n = avail;		/* last line, no newline */
	} else {
		n = (size_t)(nl - (r->buf + r->start));
	}
	*line = r->buf + r->start;
	*len = n;
	r->start += nl != NULL ? n + 1 : n;
	r->scan = 0;
	return n > r->max_line ? JSONRPC_LINE_OVERSIZE : JSONRPC_LINE_OK;
}

int
jsonrpc_reader_done(const struct jsonrpc_reader *r)
{
	return r->eof && r->start == r->len;
}

static int
is_blank(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

static int
msg_invalid(struct jsonrpc_msg *m, int code, json_t *id, const char *text)
{
	m->kind = JSONRPC_INVALID;
	m->code = code;
	m->id = id;
	snprintf(m->message, sizeof(m->message), "%s", text);
	return 0;
}

static int
id_usable(const json_t *id)
{
	return id != NULL && (json_is_string(id) || json_is_integer(id));
}

/* The root is an object: sort it into the four kinds.  Returns 0. */
static int
classify(struct jsonrpc_msg *m)
{
	json_t *root = m->root, *ver, *id, *method, *params;
	json_t *good_id;

	ver = json_object_get(root, "jsonrpc");
	id = json_object_get(root, "id");
	method = json_object_get(root, "method");
	params = json_object_get(root, "params");
	good_id = id_usable(id) ? id : NULL;
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
		return msg_invalid(m, JSONRPC_INVALID_REQUEST, good_id,
		    "Invalid Request: \"jsonrpc\" must be \"2.0\"");
	if (method == NULL) {
		if (good_id != NULL && (json_object_get(root, "result") ||
		    json_object_get(root, "error"))) {
			m->kind = JSONRPC_RESPONSE;
			m->id = good_id;
			return 0;
		}
		return msg_invalid(m, JSONRPC_INVALID_REQUEST, good_id,
		    "Invalid Request: no \"method\"");
	}
	if (!json_is_string(method))
		return msg_invalid(m, JSONRPC_INVALID_REQUEST, good_id,
		    "Invalid Request: \"method\" must be a string");
	if (id != NULL && good_id == NULL)
		return msg_invalid(m, JSONRPC_INVALID_REQUEST, NULL,
		    "Invalid Request: \"id\" must be a string or an integer");
	m->method = json_string_value(method);
	m->id = good_id;
	m->kind = good_id != NULL ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	if (params != NULL && !json_is_object(params)) {
		/* A notification is never answered: it is simply ignored. */
		if (m->kind == JSONRPC_NOTIFICATION)
			m->kind = JSONRPC_EMPTY;
		else
			msg_invalid(m, JSONRPC_INVALID_PARAMS, good_id,
			    "Invalid params: \"params\" must be an object");
		return 0;
	}
	m->params = params;
	return 0;
}

int
jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m)
{
	json_error_t jerr;

	memset(m, 0, sizeof(*m));
	if (is_blank(line, len)) {
		m->kind = JSONRPC_EMPTY;
		return 0;
	}
	m->root = json_loadb(line, len, JSON_DECODE_ANY, &jerr);
	if (m->root == NULL) {
		msg_invalid(m, JSONRPC_PARSE_ERROR, NULL, "Parse error");
		snprintf(m->message, sizeof(m->message),
		    "Parse error: column %d: %.100s", jerr.column, jerr.text);
		return 0;
	}
	if (json_is_array(m->root)) {
		msg_invalid(m, JSONRPC_INVALID_REQUEST, NULL,
		    "Invalid Request: batches are not supported; "
		    "send one message per line");
		return 0;
	}
	if (!json_is_object(m->root)) {
		msg_invalid(m, JSONRPC_INVALID_REQUEST, NULL,
		    "Invalid Request: a message must be a JSON object");
		return 0;
	}
	classify(m);
	if (m->params == NULL && (m->kind == JSONRPC_REQUEST ||
	    m->kind == JSONRPC_NOTIFICATION)) {
		/* Absent params mean {}; keep one so callers need no test. */
		m->params = json_object();
		if (m->params == NULL ||
		    json_object_set_new(m->root, "params", m->params) < 0) {
			msg_invalid(m, JSONRPC_INTERNAL_ERROR, m->id,
			    "Internal error: out of memory");
			return -ERR_NOMEM;
		}
	}
	return 0;
}

void
jsonrpc_msg_free(struct jsonrpc_msg *m)
{
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}

void
jsonrpc_write_json(struct jsonw *w, const json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (w->error != 0)
		return;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		jsonw_object_begin(w);
		json_object_foreach((json_t *)v, key, item) {
			jsonw_key(w, key);
			jsonrpc_write_json(w, item);
		}
		jsonw_object_end(w);
		break;
	case JSON_ARRAY:
		jsonw_array_begin(w);
		json_array_foreach(v, i, item)
			jsonrpc_write_json(w, item);
		jsonw_array_end(w);
		break;
	case JSON_STRING:
		jsonw_string_len(w, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		jsonw_i64(w, json_integer_value(v));
		break;
	case JSON_REAL:
		jsonw_double(w, json_real_value(v));
		break;
	case JSON_TRUE:
		jsonw_bool(w, 1);
		break;
	case JSON_FALSE:
		jsonw_bool(w, 0);
		break;
	case JSON_NULL:
		jsonw_null(w);
		break;
	}
}

static int
line_open(struct jsonrpc_line *l)
{
	memset(l, 0, sizeof(*l));
	l->mem = open_memstream(&l->buf, &l->len);
	if (l->mem == NULL)
		return -ERR_NOMEM;
	jsonw_init(&l->w, l->mem);
	jsonw_object_begin(&l->w);
	jsonw_kv_string(&l->w, "jsonrpc", "2.0");
	return 0;
}

int
jsonrpc_begin_result(struct jsonrpc_line *l, const json_t *id)
{
	if (line_open(l) < 0)
		return -ERR_NOMEM;
	if (id != NULL) {
		jsonw_key(&l->w, "id");
		jsonrpc_write_json(&l->w, id);
	}
	jsonw_key(&l->w, "result");
	return 0;
}

int
jsonrpc_begin_notification(struct jsonrpc_line *l, const char *method)
{
	if (line_open(l) < 0)
		return -ERR_NOMEM;
	jsonw_kv_string(&l->w, "method", method);
	jsonw_key(&l->w, "params");
	return 0;
}

void
jsonrpc_line_discard(struct jsonrpc_line *l)
{
	if (l->mem != NULL)
		fclose(l->mem);
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

static int
out_write(struct jsonrpc_out *out, const char *buf, size_t len,
    struct error *e)
{
	if (out->broken)
		return error_set(e, ERR_IO, "the client is gone");
	if (fwrite(buf, 1, len, out->f) != len || fflush(out->f) != 0) {
		out->broken = 1;
		return error_set_errno(e, errno, "writing a response");
	}
	return 0;
}

int
jsonrpc_send(struct jsonrpc_out *out, struct jsonrpc_line *l,
    const json_t *id, int error_id_ok, struct error *e)
{
	size_t max = out->max_line != 0 ? out->max_line : JSONRPC_OUT_MAX;
	int wrc, rc;

	jsonw_object_end(&l->w);
	jsonw_newline(&l->w);
	wrc = jsonw_finish(&l->w);
	if (fclose(l->mem) != 0 && wrc == 0)
		wrc = -ERR_NOMEM;
	l->mem = NULL;
	if (wrc == 0 && l->len <= max + 1) {
		rc = out_write(out, l->buf, l->len, e);
		jsonrpc_line_discard(l);
		return rc;
	}
	jsonrpc_line_discard(l);
	rc = wrc != 0 ? error_set(e, ERR_INTERNAL, "malformed response") :
	    error_set(e, ERR_RANGE, "response over %zu bytes", max);
	if (error_id_ok) {
		struct error e2;

		if (jsonrpc_send_error(out, id, JSONRPC_INTERNAL_ERROR,
		    rc == -ERR_RANGE ? "Internal error: the response is too "
		    "large; ask for less (a smaller limit)" :
		    "Internal error: the response could not be built",
		    &e2) < 0)
			return error_set(e, ERR_IO, "%s", e2.msg);
	}
	return rc;
}

int
jsonrpc_send_error(struct jsonrpc_out *out, const json_t *id, int code,
    const char *message, struct error *e)
{
	struct jsonrpc_line l;
	int rc;

	if (line_open(&l) < 0)
		return error_set(e, ERR_NOMEM, "out of memory");
	if (id != NULL) {
		jsonw_key(&l.w, "id");
		jsonrpc_write_json(&l.w, id);
	}
	jsonw_key(&l.w, "error");
	jsonw_object_begin(&l.w);
	jsonw_kv_i64(&l.w, "code", code);
	jsonw_kv_string(&l.w, "message", message);
	jsonw_object_end(&l.w);
	jsonw_object_end(&l.w);
	jsonw_newline(&l.w);
	rc = jsonw_finish(&l.w);
	if (fclose(l.mem) != 0 && rc == 0)
		rc = -ERR_NOMEM;
	l.mem = NULL;
	if (rc == 0)
		rc = out_write(out, l.buf, l.len, e);
	else
		rc = error_set(e, ERR_INTERNAL, "error reply not built");
	jsonrpc_line_discard(&l);
	return rc;
}
