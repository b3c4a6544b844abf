/*
 * jsonw: a streaming JSON writer.
 *
 * Owns JSON output for every tool: commas, nesting, number formatting and
 * string escaping.  Strings are taken as bytes: '"', '\\' and every control
 * byte are escaped (\n, \t, ... or \u00XX), DEL as \u007f, and every byte
 * that is not part of a well-formed UTF-8 sequence (overlong forms,
 * surrogates and code points past U+10FFFF included) becomes \ufffd, so the
 * output is always valid JSON and valid UTF-8 whatever the input.
 *
 * Two writers do not go through struct jsonw, on purpose:
 *   - ptspans' span line writer (cmd/ptspans/write.c) builds its lines in
 *     memory with json_escape and json_format_u64 below: a measured hot
 *     path (gigabytes of lines), where a call per member costs too much;
 *   - ptmcp's store records and tool results are jansson values
 *     (lib/base/json.h), because ptmcp reads them back, edits and echoes
 *     them; json_string_bytes gives their free-form strings the same
 *     U+FFFD policy as here.
 *
 * The writer does not own its FILE; errors are sticky and reported by
 * jsonw_finish().  Nesting is bounded by JSONW_MAX_DEPTH; misuse (a value
 * where a key is due, closing what is not open, too deep) is recorded as
 * ERR_INTERNAL rather than producing bad JSON.
 */
#ifndef PTKIT_JSONW_H
#define PTKIT_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

#define JSONW_MAX_DEPTH 64

struct jsonw {
	FILE *out;
	int depth;
	int error;			/* 0 or a negative err_code */
	unsigned char first[JSONW_MAX_DEPTH];	/* no member written yet */
	unsigned char is_obj[JSONW_MAX_DEPTH];
	unsigned char want_value;	/* a key was written, value due */
};

void jsonw_init(struct jsonw *w, FILE *out);

void jsonw_object_begin(struct jsonw *w);
void jsonw_object_end(struct jsonw *w);
void jsonw_array_begin(struct jsonw *w);
void jsonw_array_end(struct jsonw *w);

/* Writes an object key; the next call must write its value. */
void jsonw_key(struct jsonw *w, const char *key);

void jsonw_string(struct jsonw *w, const char *s);
/* A string of len bytes; NUL bytes inside are escaped as \u0000. */
void jsonw_string_len(struct jsonw *w, const char *s, size_t len);
void jsonw_u64(struct jsonw *w, uint64_t v);
void jsonw_i64(struct jsonw *w, int64_t v);
/* Non-finite values are written as null (JSON has no NaN). */
void jsonw_double(struct jsonw *w, double v);
void jsonw_bool(struct jsonw *w, int v);
void jsonw_null(struct jsonw *w);

/* Key and value in one call, for the common object member. */
void jsonw_kv_string(struct jsonw *w, const char *key, const char *s);
void jsonw_kv_u64(struct jsonw *w, const char *key, uint64_t v);
void jsonw_kv_i64(struct jsonw *w, const char *key, int64_t v);
void jsonw_kv_bool(struct jsonw *w, const char *key, int v);

/* Ends a line (for JSON Lines), only valid at depth 0. */
void jsonw_newline(struct jsonw *w);

/*
 * Returns 0 if everything so far was written and well nested (depth 0),
 * else a negative err_code: -ERR_IO for a failed write, -ERR_INTERNAL for
 * misuse.
 */
int jsonw_finish(struct jsonw *w) PTKIT_MUST_CHECK;

/*
 * Writes s as a JSON string (with quotes) to out with the escaping above.
 * Returns 0 or -ERR_IO.
 */
int json_write_escaped(FILE *out, const char *s, size_t len) PTKIT_MUST_CHECK;

/*
 * The same JSON string (quotes included, the same escaping) written into
 * dst, which must have room for JSON_ESCAPED_MAX(len) bytes (no NUL is
 * added).  Returns the number of bytes written.  For writers that build
 * their lines in memory.
 */
#define JSON_ESCAPED_MAX(len) (6 * (size_t)(len) + 2)
size_t json_escape(char *dst, const char *s, size_t len);

/*
 * Length of the well-formed UTF-8 sequence at s (avail bytes there) that
 * starts with a byte of 0x80 or more, or 0 when there is none: the test
 * by which the escaping above replaces bytes with \ufffd.
 */
size_t json_utf8_len(const unsigned char *s, size_t avail);

/*
 * The decimal digits of v written at dst (at most 20 bytes; no NUL).
 * Returns the number of bytes written.  Inline, with its tables: span
 * lines format a dozen numbers each, gigabytes of them, and a call per
 * number cost a tenth of the formatting.
 */
extern const char json_digit_pairs[201];	/* "00" "01" ... "99" */
extern const uint64_t json_pow10[20];		/* 10^0 .. 10^19 */

static inline size_t
json_format_u64(char *dst, uint64_t v)
{
	unsigned n, t;
	uint32_t v32;
	char *q;

	if (v < 10) {
		dst[0] = (char)('0' + v);
		return 1;
	}
	/* Digits from the bit length (1233/4096 ~ log10 2), corrected. */
	t = ((unsigned)(64 - __builtin_clzll(v)) * 1233) >> 12;
	n = t + 1 - (v < json_pow10[t]);
	q = dst + n;
	/* Eight digits at a time in 32 bits, then pairs from the end. */
	while (v >= 100000000) {
		uint64_t hi = v / 100000000;

		v32 = (uint32_t)(v - hi * 100000000);
		v = hi;
		for (int i = 0; i < 4; i++, v32 /= 100) {
			q -= 2;
			memcpy(q, json_digit_pairs + 2 * (v32 % 100), 2);
		}
	}
	for (v32 = (uint32_t)v; v32 >= 100; v32 /= 100) {
		q -= 2;
		memcpy(q, json_digit_pairs + 2 * (v32 % 100), 2);
	}
	if (v32 >= 10)
		memcpy(q - 2, json_digit_pairs + 2 * v32, 2);
	else
		q[-1] = (char)('0' + v32);
	return n;
}

#endif
