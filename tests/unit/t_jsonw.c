/* Tests for lib/jsonw: escaping, nesting, misuse. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/jsonw.h"
#include "tap.h"

/* Output of one writer session, as a malloc'd string. */
struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static void
capture_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
}

static char *
capture_close(struct capture *c)
{
	fclose(c->f);
	return c->buf;
}

/* Escapes len bytes of s as one JSON string; returns it (caller frees). */
static char *
escaped(const char *s, size_t len)
{
	struct capture c;
	struct jsonw w;

	capture_open(&c);
	jsonw_init(&w, c.f);
	jsonw_string_len(&w, s, len);
	if (jsonw_finish(&w) != 0)
		DIAG("jsonw_finish failed");
	return capture_close(&c);
}

static void
check_escape(const char *in, size_t len, const char *want, const char *name)
{
	char *got = escaped(in, len);

	IS_STR(got, want, "%s", name);
	free(got);
}

static void
test_escaping(void)
{
	check_escape("plain", 5, "\"plain\"", "plain ASCII unchanged");
	check_escape("a\"b\\c", 5, "\"a\\\"b\\\\c\"", "quote and backslash");
	check_escape("\n\t\r\b\f", 5, "\"\\n\\t\\r\\b\\f\"",
	    "short escapes for common control bytes");
	check_escape("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"",
	    "other control bytes and DEL as \\u00XX");
	check_escape("a\0b", 3, "\"a\\u0000b\"", "NUL inside a string");
	check_escape("\xe2\x82\xac", 3, "\"\xe2\x82\xac\"",
	    "valid 3-byte UTF-8 passes through");
	check_escape("\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"",
	    "valid 4-byte UTF-8 passes through");
	check_escape("\xff", 1, "\"\\ufffd\"", "0xff is replaced");
	check_escape("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"",
	    "overlong 2-byte form is replaced byte by byte");
	check_escape("\xe0\x80\xaf", 3, "\"\\ufffd\\ufffd\\ufffd\"",
	    "overlong 3-byte form is replaced");
	check_escape("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"",
	    "UTF-16 surrogate is replaced");
	check_escape("\xf4\x90\x80\x80", 4,
	    "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", "code point past U+10FFFF");
	check_escape("\xe2\x82", 2, "\"\\ufffd\\ufffd\"",
	    "truncated sequence at the end");
	check_escape("\xe2(x", 3, "\"\\ufffd(x\"",
	    "bad continuation byte keeps what follows");
	check_escape("\x80", 1, "\"\\ufffd\"", "lone continuation byte");
}

/* Every byte value in every position: the output always parses. */
static void
test_all_bytes_parse(void)
{
	char in[256 * 2];
	json_error_t je;
	json_t *doc;
	char *out;
	int i;

	for (i = 0; i < 256; i++) {
		in[2 * i] = (char)i;
		in[2 * i + 1] = (char)(255 - i);
	}
	out = escaped(in, sizeof(in));
	doc = json_loads(out, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	OK(doc != NULL && json_is_string(doc),
	    "all 256 byte values give a string jansson parses");
	if (doc == NULL)
		DIAG("jansson: %s", je.text);
	json_decref(doc);
	free(out);
}

static void
test_structure(void)
{
	struct capture c;
	struct jsonw w;
	char *out;

	capture_open(&c);
	jsonw_init(&w, c.f);
	jsonw_object_begin(&w);
	jsonw_kv_string(&w, "fn", "main");
	jsonw_kv_u64(&w, "big", UINT64_MAX);
	jsonw_kv_i64(&w, "neg", INT64_MIN);
	jsonw_kv_bool(&w, "ok", 1);
	jsonw_key(&w, "nan");
	jsonw_double(&w, NAN);
	jsonw_key(&w, "half");
	jsonw_double(&w, 0.5);
	jsonw_key(&w, "list");
	jsonw_array_begin(&w);
	jsonw_u64(&w, 1);
	jsonw_null(&w);
	jsonw_array_begin(&w);
	jsonw_array_end(&w);
	jsonw_object_begin(&w);
	jsonw_object_end(&w);
	jsonw_array_end(&w);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	IS_INT(jsonw_finish(&w), 0, "well-nested document finishes clean");
	out = capture_close(&c);
	IS_STR(out, "{\"fn\":\"main\",\"big\":18446744073709551615,"
	    "\"neg\":-9223372036854775808,\"ok\":true,\"nan\":null,"
	    "\"half\":0.5,\"list\":[1,null,[],{}]}\n",
	    "members, commas, nesting and numbers");
	free(out);
}

static int
misuse(void (*fn)(struct jsonw *))
{
	struct capture c;
	struct jsonw w;
	int rc;

	capture_open(&c);
	jsonw_init(&w, c.f);
	fn(&w);
	rc = jsonw_finish(&w);
	free(capture_close(&c));
	return rc;
}

static void
value_without_key(struct jsonw *w)
{
	jsonw_object_begin(w);
	jsonw_u64(w, 1);
	jsonw_object_end(w);
}

static void
unclosed(struct jsonw *w)
{
	jsonw_array_begin(w);
}

static void
wrong_close(struct jsonw *w)
{
	jsonw_array_begin(w);
	jsonw_object_end(w);
}

static void
key_without_value(struct jsonw *w)
{
	jsonw_object_begin(w);
	jsonw_key(w, "k");
	jsonw_object_end(w);
}

static void
too_deep(struct jsonw *w)
{
	int i;

	for (i = 0; i <= JSONW_MAX_DEPTH; i++)
		jsonw_array_begin(w);
}

static void
test_misuse(void)
{
	IS_INT(misuse(value_without_key), -ERR_INTERNAL,
	    "a value where a key is due is an error");
	IS_INT(misuse(unclosed), -ERR_INTERNAL, "unclosed array is an error");
	IS_INT(misuse(wrong_close), -ERR_INTERNAL,
	    "closing an object that is an array is an error");
	IS_INT(misuse(key_without_value), -ERR_INTERNAL,
	    "a key without its value is an error");
	IS_INT(misuse(too_deep), -ERR_INTERNAL,
	    "nesting past JSONW_MAX_DEPTH is an error");
}

static void
test_write_error(void)
{
	struct jsonw w;
	FILE *full = fopen("/dev/full", "w");

	if (full == NULL) {
		OK(1, "no /dev/full here # SKIP");
		return;
	}
	setvbuf(full, NULL, _IONBF, 0);
	jsonw_init(&w, full);
	jsonw_string(&w, "x");
	IS_INT(jsonw_finish(&w), -ERR_IO, "a failed write is reported");
	fclose(full);
}

/*
 * json_escape (into memory) against json_write_escaped (to a FILE): the
 * same bytes for every fixed case above and for many random strings
 * mixing ASCII, control bytes, quotes and UTF-8 lead and tail bytes.
 */
static void
test_escape_into_memory(void)
{
	static const unsigned char pool[] = { 'a', 'Z', ' ', '"', '\\', '\n',
	    0x01, 0x1f, 0x7f, 0x80, 0xbf, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0,
	    0xf4, 0xff, 0xa0, 0x90, 0x8f, 0 };
	char in[64], *want, *got;
	size_t n, len, bad = 0, cases = 0, longest = 0;
	unsigned seed = 12345;

	got = malloc(JSON_ESCAPED_MAX(sizeof(in)) + 1);
	for (int k = 0; k < 20000 && got != NULL; k++) {
		seed = seed * 1103515245u + 12345u;
		len = (seed >> 16) % sizeof(in);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			in[i] = (char)pool[(seed >> 16) % sizeof(pool)];
		}
		want = escaped(in, len);
		n = json_escape(got, in, len);
		if (n > longest)
			longest = n;
		got[n] = '\0';
		if (n > JSON_ESCAPED_MAX(len) || strcmp(got, want) != 0) {
			if (bad++ == 0)
				DIAG("differ on case %d: %s vs %s", k, got,
				    want);
		}
		cases++;
		free(want);
	}
	OK(got != NULL && cases == 20000 && bad == 0,
	    "json_escape writes what json_write_escaped writes (20000 "
	    "random strings)");
	n = json_escape(got, "\x01\xff", 2);
	IS_MEM(got, "\"\\u0001\\ufffd\"", n, "escapes written in memory");
	IS_INT((int)n, 14, "and their length");
	free(got);
}

static void
test_format_u64(void)
{
	static const uint64_t v[] = { 0, 9, 10, 99, 100, 999, 1000, 9999,
	    10000, 99999, 100000, 12345678, 100000000, 4294967295u,
	    10000000000000000000u, UINT64_MAX };
	char want[32], got[32];
	size_t n, bad = 0;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(want, sizeof(want), "%" PRIu64, v[i]);
		n = json_format_u64(got, v[i]);
		got[n] = '\0';
		if (strcmp(got, want) != 0 && bad++ == 0)
			DIAG("%s vs %s", got, want);
	}
	/* Every power of ten and of two, and their neighbours: where the
	 * digit count changes. */
	for (uint64_t p = 1, q = 1; q != 0; p = p <= UINT64_MAX / 10 ?
	    p * 10 : p, q <<= 1) {
		uint64_t near[] = { p - 1, p, p + 1, q - 1, q, q + 1 };

		for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
			snprintf(want, sizeof(want), "%" PRIu64, near[i]);
			n = json_format_u64(got, near[i]);
			got[n] = '\0';
			if (strcmp(got, want) != 0 && bad++ == 0)
				DIAG("%s vs %s", got, want);
		}
	}
	/* Pseudo-random values of every magnitude (digits are made in
	 * lanes of 8: any digit of any lane may go wrong). */
	for (uint64_t i = 0, r = 1; i < 200000; i++) {
		uint64_t x;

		r = r * 6364136223846793005ull + 1442695040888963407ull;
		x = r >> (i % 64);
		snprintf(want, sizeof(want), "%" PRIu64, x);
		n = json_format_u64(got, x);
		got[n] = '\0';
		if (strcmp(got, want) != 0 && bad++ == 0)
			DIAG("%s vs %s", got, want);
	}
	for (uint64_t x = 1; x < UINT64_MAX / 3; x = x * 3 + 1) {
		snprintf(want, sizeof(want), "%" PRIu64, x);
		n = json_format_u64(got, x);
		got[n] = '\0';
		if (strcmp(got, want) != 0 && bad++ == 0)
			DIAG("%s vs %s", got, want);
	}
	IS_INT((int)bad, 0, "json_format_u64 agrees with printf at every "
	    "digit count");
}

int
main(void)
{
	test_escaping();
	test_escape_into_memory();
	test_format_u64();
	test_all_bytes_parse();
	test_structure();
	test_misuse();
	test_write_error();
	return tap_done();
}
