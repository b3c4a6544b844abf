/*
 * fuzz_jsonrpc: libFuzzer target over ptmcp's input path.
 *
 * The input is what a client could write to `ptmcp serve`: it is read
 * through the line reader (with a small line bound, so the oversize path
 * runs too), each line is classified, every invalid message is answered
 * into memory, and the arguments of every tools/call are checked against
 * each tool's input schema, as the server does before running anything.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fmt/jsonrpc.h"
#include "schema.h"
#include "tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tool_set tools;
static int tools_ready;

static void
answer(const struct jsonrpc_msg *m)
{
	char *buf = NULL;
	size_t len = 0;
	struct jsonrpc_out out = { NULL, 0, 512 };
	struct jsonrpc_line l;

	if ((out.f = open_memstream(&buf, &len)) == NULL)
		return;
	if (m->kind == JSONRPC_INVALID)
		jsonrpc_send_error(&out, m->id, m->code, m->message, NULL);
	else if (m->kind == JSONRPC_REQUEST &&
	    jsonrpc_begin_result(&l, m->id) == 0) {
		jsonrpc_write_json(&l.w, m->params);
		jsonrpc_send(&out, &l, m->id, 1, NULL);
	}
	fclose(out.f);
	/* Whatever came in, what goes out is one line of valid JSON. */
	if (len > 0) {
		json_t *v = json_loadb(buf, len - 1, 0, NULL);

		if (v == NULL || buf[len - 1] != '\n' ||
		    memchr(buf, '\n', len - 1) != NULL)
			abort();
		json_decref(v);
	}
	free(buf);
}

static void
check_call(const struct jsonrpc_msg *m)
{
	const char *name;
	const struct tool_def *t;
	json_t *args;
	char msg[512];

	if (m->kind != JSONRPC_REQUEST || strcmp(m->method, "tools/call") != 0)
		return;
	name = json_string_value(json_object_get(m->params, "name"));
	args = json_object_get(m->params, "arguments");
	if (name == NULL || (t = tools_find(&tools, name)) == NULL ||
	    !json_is_object(args))
		return;
	schema_check(tools.input[t->id], args, msg, sizeof(msg));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_reader r;
	struct jsonrpc_msg m;
	const char *line;
	size_t len;
	int fd, k;

	if (!tools_ready) {
		if (tools_load(&tools, NULL) < 0)
			abort();
		tools_ready = 1;
	}
	if ((fd = memfd_create("fuzz", 0)) < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return 0;
	}
	jsonrpc_reader_init(&r, fd, 1024);
	while (!jsonrpc_reader_done(&r)) {
		if (jsonrpc_reader_fill(&r, NULL) < 0)
			break;
		while ((k = jsonrpc_reader_next(&r, &line, &len)) !=
		    JSONRPC_LINE_NONE) {
			if (k != JSONRPC_LINE_OK)
				continue;
			jsonrpc_parse(line, len, &m);
			answer(&m);
			check_call(&m);
			jsonrpc_msg_free(&m);
		}
	}
	jsonrpc_reader_free(&r);
	close(fd);
	return 0;
}
