/* Tests for lib/json (typed reads) and lib/error (messages, prefixes). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "tap.h"

static void
test_reads(void)
{
	static const char doc_text[] =
	    "{\"s\":\"x\",\"n\":42,\"neg\":-1,\"b\":true,\"f\":1.5}";
	struct error e;
	const char *s = NULL;
	uint64_t u = 0;
	int64_t i = 0;
	int b = 0;
	json_t *doc = json_read_buffer(doc_text, strlen(doc_text), &e);

	OK(doc != NULL, "document parses");
	IS_INT(json_get_string(doc, "s", &s, &e), 0, "string member");
	IS_STR(s, "x", "string value");
	IS_INT(json_get_u64(doc, "n", &u, &e), 0, "u64 member");
	IS_U64(u, 42, "u64 value");
	IS_INT(json_get_i64(doc, "neg", &i, &e), 0, "i64 member");
	IS_INT(i, -1, "i64 value");
	IS_INT(json_get_u64(doc, "neg", &u, &e), -ERR_FORMAT,
	    "negative where u64 is due");
	IS_STR(e.msg, "'neg' is negative", "negative message");
	IS_INT(json_get_bool(doc, "b", &b, &e), 0, "bool member");
	IS_INT(b, 1, "bool value");
	IS_INT(json_get_u64(doc, "f", &u, &e), -ERR_FORMAT,
	    "a real is not an integer");
	IS_STR(e.msg, "'f' is not an integer", "wrong type message");
	IS_INT(json_get_string(doc, "missing", &s, &e), -ERR_NOTFOUND,
	    "missing member");
	IS_STR(e.msg, "missing member 'missing'", "missing member message");
	json_decref(doc);
}

static void
test_parse_errors(void)
{
	struct error e;

	OK(json_read_buffer("{\"a\":", 5, &e) == NULL, "truncated document");
	IS_INT(e.code, ERR_FORMAT, "truncated is ERR_FORMAT");
	OK(strncmp(e.msg, "line 1 column 5: ", 17) == 0,
	    "message names line and column (%s)", e.msg);
	OK(json_read_buffer("{\"a\":1,\"a\":2}", 13, &e) == NULL,
	    "duplicate keys are rejected");
	OK(json_read_file("/nonexistent/x.json", &e) == NULL, "missing file");
}

static void
test_errors(void)
{
	struct error e;

	IS_STR(err_str(ERR_TRUNCATED), "truncated", "err_str by code");
	IS_STR(err_str(-ERR_TRUNCATED), "truncated", "err_str by -code");
	IS_STR(err_str(9999), "unknown error", "err_str out of range");
	IS_INT(error_set(&e, ERR_FORMAT, "record %d bad", 7), -ERR_FORMAT,
	    "error_set returns -code");
	error_prefix(&e, "%s", "perf.data");
	IS_STR(e.msg, "perf.data: record 7 bad", "error_prefix");
	IS_INT(error_set_errno(&e, 2, "open %s", "f"), -ERR_IO,
	    "error_set_errno is ERR_IO");
	IS_STR(e.msg, "open f: No such file or directory",
	    "error_set_errno appends strerror");
	IS_INT(error_set(NULL, ERR_RANGE, "x"), -ERR_RANGE,
	    "error_set with no struct still returns the code");
	{
		char big[ERROR_MSG_MAX + 100];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		error_set(&e, ERR_FORMAT, "%s", big);
		error_prefix(&e, "%s", "perf.data");
		OK(strncmp(e.msg, "perf.data: xxx", 14) == 0 &&
		    strlen(e.msg) == ERROR_MSG_MAX - 1,
		    "a prefix survives; the long old message is cut");
	}
}

/* Strings of any bytes become jansson strings, bad bytes as U+FFFD. */
static void
test_string_bytes(void)
{
	static const struct {
		const char *in, *want, *name;
	} cases[] = {
		{ "plain /tmp/x", "plain /tmp/x", "ASCII as it is" },
		{ "caf\xc3\xa9", "caf\xc3\xa9", "UTF-8 as it is" },
		{ "/tmp/d\xff/app", "/tmp/d\xef\xbf\xbd/app",
		    "a byte that starts nothing" },
		{ "a\xc3", "a\xef\xbf\xbd", "a sequence cut at the end" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd",
		    "an overlong '/', byte by byte" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		    "a surrogate, byte by byte" },
		{ "", "", "empty" },
	};
	char *text;
	json_t *v, *back;

	OK(json_string("/tmp/d\xff/app") == NULL,
	    "(jansson alone refuses such a string)");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = json_string_bytes(cases[i].in);
		IS_STR(json_string_value(v), cases[i].want, "%s", cases[i].name);
		json_decref(v);
	}
	/* as in a session record: packed, dumped, read back */
	v = json_pack("{s:s,s:o}", "state", "failed", "error",
	    json_string_bytes("ptrec: /tmp/d\xff/app: not an ELF"));
	text = v != NULL ? json_dumps(v, JSON_COMPACT) : NULL;
	OK(text != NULL, "a record with such an error is written");
	back = text != NULL ? json_loads(text, 0, NULL) : NULL;
	IS_STR(json_string_value(json_object_get(back, "error")),
	    "ptrec: /tmp/d\xef\xbf\xbd/app: not an ELF", "and reads back");
	free(text);
	json_decref(back);
	json_decref(v);
}

int
main(void)
{
	test_reads();
	test_parse_errors();
	test_errors();
	test_string_bytes();
	return tap_done();
}
