/* Tests for lib/jsonrpc: line reading, classification, replies. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/jsonrpc.h"
#include "tap.h"

/* A reader over a pipe holding data, the write end closed. */
static int
pipe_with(const char *data, size_t len)
{
	int fds[2];

	if (pipe(fds) < 0)
		return -1;
	if (write(fds[1], data, len) != (ssize_t)len)
		return -1;
	close(fds[1]);
	return fds[0];
}

/* Reads every line; writes them '|'-joined into out, oversize as '!'. */
static void
read_all(int fd, size_t max, char *out, size_t size)
{
	struct jsonrpc_reader r;
	const char *line;
	size_t len, used = 0;
	int k;

	out[0] = '\0';
	jsonrpc_reader_init(&r, fd, max);
	while (!jsonrpc_reader_done(&r)) {
		if (jsonrpc_reader_fill(&r, NULL) < 0)
			break;
		while ((k = jsonrpc_reader_next(&r, &line, &len)) !=
		    JSONRPC_LINE_NONE) {
			if (k == JSONRPC_LINE_OVERSIZE)
				used += (size_t)snprintf(out + used,
				    size - used, "!|");
			else
				used += (size_t)snprintf(out + used,
				    size - used, "%.*s|", (int)len, line);
		}
	}
	jsonrpc_reader_free(&r);
	close(fd);
}

static void
test_reader(void)
{
	char out[256], *big;
	size_t n = 300000;

	read_all(pipe_with("a\nbb\n\nccc", 9), 0, out, sizeof(out));
	IS_STR(out, "a|bb||ccc|", "lines, a blank one and a last unterminated");
	read_all(pipe_with("12345\n123456\n1234567\nx\n", 23), 6, out,
	    sizeof(out));
	IS_STR(out, "12345|123456|!|x|",
	    "a line over the bound is dropped and reported once");
	read_all(pipe_with("12345678", 8), 6, out, sizeof(out));
	IS_STR(out, "!|", "an oversize last line without newline");

	/* Longer than one read chunk, over the bound: skipped across reads. */
	big = malloc(n + 16);
	memset(big, 'x', n);
	memcpy(big + n, "\nok\n", 4);
	{
		int fds[2];
		pid_t pid;

		if (pipe(fds) == 0 && (pid = fork()) == 0) {
			close(fds[0]);
			if (write(fds[1], big, n + 4) != (ssize_t)(n + 4))
				_exit(1);
			_exit(0);
		}
		close(fds[1]);
		read_all(fds[0], 1000, out, sizeof(out));
	}
	IS_STR(out, "!|ok|", "a 300 kB line over a 1000-byte bound");
	free(big);
}

static enum jsonrpc_kind
kind_of(const char *line, int *code, char *id, size_t idsize)
{
	struct jsonrpc_msg m;
	enum jsonrpc_kind k;
	char *s;

	jsonrpc_parse(line, strlen(line), &m);
	k = m.kind;
	*code = m.code;
	id[0] = '\0';
	if (m.id != NULL) {
		s = json_dumps(m.id, JSON_ENCODE_ANY);
		snprintf(id, idsize, "%s", s);
		free(s);
	}
	jsonrpc_msg_free(&m);
	return k;
}

static void
test_classify(void)
{
	char id[64];
	int code;

	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}",
	    &code, id, sizeof(id)), JSONRPC_REQUEST, "id 0 is a request");
	IS_STR(id, "0", "id 0 kept");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"method\":\"x\"}",
	    &code, id, sizeof(id)), JSONRPC_REQUEST, "string id");
	IS_STR(id, "\"7\"", "string id stays a string");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", &code, id,
	    sizeof(id)), JSONRPC_NOTIFICATION, "no id: notification");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &code,
	    id, sizeof(id)), JSONRPC_RESPONSE, "a response");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"",
	    &code, id, sizeof(id)), JSONRPC_INVALID, "truncated JSON");
	IS_INT(code, JSONRPC_PARSE_ERROR, "is a parse error");
	IS_STR(id, "", "with no id");
	IS_INT(kind_of("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]",
	    &code, id, sizeof(id)), JSONRPC_INVALID, "a batch");
	IS_INT(code, JSONRPC_INVALID_REQUEST, "a batch is -32600");
	IS_INT(kind_of("{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"x\"}",
	    &code, id, sizeof(id)), JSONRPC_INVALID, "jsonrpc 1.0");
	IS_INT(code, JSONRPC_INVALID_REQUEST, "jsonrpc 1.0 is -32600");
	IS_STR(id, "4", "the usable id is kept");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}",
	    &code, id, sizeof(id)), JSONRPC_INVALID, "id null");
	IS_STR(id, "", "id null is not echoed");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
	    &code, id, sizeof(id)), JSONRPC_INVALID, "fractional id");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":7}", &code,
	    id, sizeof(id)), JSONRPC_INVALID, "method not a string");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\","
	    "\"params\":[1]}", &code, id, sizeof(id)), JSONRPC_INVALID,
	    "params an array");
	IS_INT(code, JSONRPC_INVALID_PARAMS, "params not an object: -32602");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":3}",
	    &code, id, sizeof(id)), JSONRPC_EMPTY,
	    "a notification with bad params is ignored, not answered");
	IS_INT(kind_of("42", &code, id, sizeof(id)), JSONRPC_INVALID,
	    "a bare number");
	IS_INT(code, JSONRPC_INVALID_REQUEST, "a bare number is -32600");
	IS_INT(kind_of("  \r", &code, id, sizeof(id)), JSONRPC_EMPTY,
	    "blank line");
	IS_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999999,"
	    "\"method\":\"x\"}", &code, id, sizeof(id)), JSONRPC_INVALID,
	    "an id beyond 64 bits");
	IS_INT(code, JSONRPC_PARSE_ERROR, "is a parse error");
}

static void
test_params_default(void)
{
	struct jsonrpc_msg m;
	const char *line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}";

	jsonrpc_parse(line, strlen(line), &m);
	OK(json_is_object(m.params) && json_object_size(m.params) == 0,
	    "absent params read as {}");
	jsonrpc_msg_free(&m);
}

/* Runs fn's output through a memstream and returns it (caller frees). */
static char *
capture(int (*fn)(struct jsonrpc_out *), int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	struct jsonrpc_out out = { NULL, 0, 64 };

	out.f = open_memstream(&buf, &len);
	*rc = fn(&out);
	fclose(out.f);
	return buf;
}

static int
send_error_noid(struct jsonrpc_out *out)
{
	return jsonrpc_send_error(out, NULL, -32700, "Parse error", NULL);
}

static int
send_result_id0(struct jsonrpc_out *out)
{
	struct jsonrpc_line l;
	json_t *id = json_integer(0);
	int rc;

	STEP(jsonrpc_begin_result(&l, id));
	jsonw_object_begin(&l.w);
	jsonw_kv_string(&l.w, "t", "a\nb");
	jsonw_object_end(&l.w);
	rc = jsonrpc_send(out, &l, id, 1, NULL);
	json_decref(id);
	return rc;
}

static int
send_too_big(struct jsonrpc_out *out)
{
	struct jsonrpc_line l;
	json_t *id = json_string("big");
	int rc;

	STEP(jsonrpc_begin_result(&l, id));
	jsonw_string(&l.w, "0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789");
	rc = jsonrpc_send(out, &l, id, 1, NULL);
	json_decref(id);
	return rc;
}

static void
test_write(void)
{
	char *s;
	int rc;

	s = capture(send_error_noid, &rc);
	IS_INT(rc, 0, "error sent");
	IS_STR(s, "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,"
	    "\"message\":\"Parse error\"}}\n", "error with no id member");
	free(s);
	s = capture(send_result_id0, &rc);
	IS_STR(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"t\":\"a\\nb\"}}\n",
	    "result for id 0, newline escaped, one line");
	free(s);
	s = capture(send_too_big, &rc);
	IS_INT(rc, -ERR_RANGE, "oversize response refused");
	IS_STR(s, "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"error\":{\"code\":"
	    "-32603,\"message\":\"Internal error: the response is too large; "
	    "ask for less (a smaller limit)\"}}\n",
	    "and replaced by an error for the same id");
	free(s);
}

int
main(void)
{
	test_reader();
	test_classify();
	test_params_default();
	test_write();
	return tap_done();
}
