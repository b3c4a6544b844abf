/* jsonw: see jsonw.h. */
#include "base/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "base/error.h"

void
jsonw_init(struct jsonw *w, FILE *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

static void
jsonw_fail(struct jsonw *w, int code)
{
	if (w->error == 0)
		w->error = -code;
}

/* Writes the comma a new array element or object member needs. */
static int
jsonw_before_value(struct jsonw *w)
{
	int d = w->depth;

	if (w->error != 0)
		return -1;
	if (w->want_value) {
		w->want_value = 0;
		return 0;
	}
	if (d > 0 && w->is_obj[d - 1]) {
		jsonw_fail(w, ERR_INTERNAL);	/* value without a key */
		return -1;
	}
	if (d > 0 && !w->first[d - 1])
		fputc(',', w->out);
	if (d > 0)
		w->first[d - 1] = 0;
	return 0;
}

static void
jsonw_open(struct jsonw *w, int is_obj)
{
	if (jsonw_before_value(w) < 0)
		return;
	if (w->depth >= JSONW_MAX_DEPTH) {
		jsonw_fail(w, ERR_INTERNAL);
		return;
	}
	fputc(is_obj ? '{' : '[', w->out);
	w->first[w->depth] = 1;
	w->is_obj[w->depth] = (unsigned char)is_obj;
	w->depth++;
}

static void
jsonw_close(struct jsonw *w, int is_obj)
{
	if (w->error != 0)
		return;
	if (w->depth == 0 || w->is_obj[w->depth - 1] != is_obj ||
	    w->want_value) {
		jsonw_fail(w, ERR_INTERNAL);
		return;
	}
	w->depth--;
	fputc(is_obj ? '}' : ']', w->out);
}

void
jsonw_object_begin(struct jsonw *w)
{
	jsonw_open(w, 1);
}

void
jsonw_object_end(struct jsonw *w)
{
	jsonw_close(w, 1);
}

void
jsonw_array_begin(struct jsonw *w)
{
	jsonw_open(w, 0);
}

void
jsonw_array_end(struct jsonw *w)
{
	jsonw_close(w, 0);
}

void
jsonw_key(struct jsonw *w, const char *key)
{
	int d = w->depth;

	if (w->error != 0)
		return;
	if (d == 0 || !w->is_obj[d - 1] || w->want_value) {
		jsonw_fail(w, ERR_INTERNAL);
		return;
	}
	if (!w->first[d - 1])
		fputc(',', w->out);
	w->first[d - 1] = 0;
	if (json_write_escaped(w->out, key, strlen(key)) < 0)
		jsonw_fail(w, ERR_IO);
	fputc(':', w->out);
	w->want_value = 1;
}

/*
 * Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0 if there is none.
 */
static size_t
utf8_sequence_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (avail < n)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

size_t
json_utf8_len(const unsigned char *s, size_t avail)
{
	return avail > 0 ? utf8_sequence_len(s, avail) : 0;
}

static void
write_escaped_byte(FILE *out, unsigned char c)
{
	switch (c) {
	case '"': fputs("\\\"", out); break;
	case '\\': fputs("\\\\", out); break;
	case '\b': fputs("\\b", out); break;
	case '\f': fputs("\\f", out); break;
	case '\n': fputs("\\n", out); break;
	case '\r': fputs("\\r", out); break;
	case '\t': fputs("\\t", out); break;
	default:
		if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
}

int
json_write_escaped(FILE *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;

	fputc('"', out);
	while (i < len) {
		/* Most names are plain ASCII: write each run in one go. */
		n = 0;
		while (i + n < len && s[i + n] >= 0x20 && s[i + n] < 0x7f &&
		    s[i + n] != '"' && s[i + n] != '\\')
			n++;
		if (n > 0) {
			fwrite(s + i, 1, n, out);
			i += n;
			continue;
		}
		if (s[i] < 0x80) {
			write_escaped_byte(out, s[i]);
			i++;
		} else if ((n = utf8_sequence_len(s + i, len - i)) > 0) {
			fwrite(s + i, 1, n, out);
			i += n;
		} else {
			fputs("\\ufffd", out);
			i++;
		}
	}
	fputc('"', out);
	return ferror(out) ? -ERR_IO : 0;
}

/* One byte below 0x80 that must be escaped, as json_write_escaped does. */
static size_t
escape_byte(char *dst, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char e = 0;

	switch (c) {
	case '"': e = '"'; break;
	case '\\': e = '\\'; break;
	case '\b': e = 'b'; break;
	case '\f': e = 'f'; break;
	case '\n': e = 'n'; break;
	case '\r': e = 'r'; break;
	case '\t': e = 't'; break;
	default:
		break;
	}
	if (e != 0) {
		dst[0] = '\\';
		dst[1] = e;
		return 2;
	}
	if (c < 0x20 || c == 0x7f) {
		memcpy(dst, "\\u00", 4);
		dst[4] = hex[c >> 4];
		dst[5] = hex[c & 0xf];
		return 6;
	}
	dst[0] = (char)c;
	return 1;
}

size_t
json_escape(char *dst, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	char *p = dst;
	size_t i = 0, n;

	*p++ = '"';
	while (i < len) {
		n = 0;
		while (i + n < len && s[i + n] >= 0x20 && s[i + n] < 0x7f &&
		    s[i + n] != '"' && s[i + n] != '\\')
			n++;
		if (n > 0) {
			memcpy(p, s + i, n);
			p += n;
			i += n;
			continue;
		}
		if (s[i] < 0x80) {
			p += escape_byte(p, s[i]);
			i++;
		} else if ((n = utf8_sequence_len(s + i, len - i)) > 0) {
			memcpy(p, s + i, n);
			p += n;
			i += n;
		} else {
			memcpy(p, "\\ufffd", 6);
			p += 6;
			i++;
		}
	}
	*p++ = '"';
	return (size_t)(p - dst);
}

const char json_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

const uint64_t json_pow10[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
	10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
	100000000000ull, 1000000000000ull, 10000000000000ull,
	100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	100000000000000000ull, 1000000000000000000ull,
	10000000000000000000ull,
};

void
jsonw_string_len(struct jsonw *w, const char *s, size_t len)
{
	if (jsonw_before_value(w) < 0)
		return;
	if (json_write_escaped(w->out, s, len) < 0)
		jsonw_fail(w, ERR_IO);
}

void
jsonw_string(struct jsonw *w, const char *s)
{
	if (s == NULL)
		jsonw_null(w);
	else
		jsonw_string_len(w, s, strlen(s));
}

void
jsonw_u64(struct jsonw *w, uint64_t v)
{
	char d[20];

	if (jsonw_before_value(w) == 0)
		fwrite(d, 1, json_format_u64(d, v), w->out);
}

void
jsonw_i64(struct jsonw *w, int64_t v)
{
	if (jsonw_before_value(w) == 0)
		fprintf(w->out, "%" PRId64, v);
}

void
jsonw_double(struct jsonw *w, double v)
{
	if (!isfinite(v)) {
		jsonw_null(w);
		return;
	}
	if (jsonw_before_value(w) == 0)
		fprintf(w->out, "%.17g", v);
}

void
jsonw_bool(struct jsonw *w, int v)
{
	if (jsonw_before_value(w) == 0)
		fputs(v ? "true" : "false", w->out);
}

void
jsonw_null(struct jsonw *w)
{
	if (jsonw_before_value(w) == 0)
		fputs("null", w->out);
}

void
jsonw_kv_string(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	jsonw_string(w, s);
}

void
jsonw_kv_u64(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_u64(w, v);
}

void
jsonw_kv_i64(struct jsonw *w, const char *key, int64_t v)
{
	jsonw_key(w, key);
	jsonw_i64(w, v);
}

void
jsonw_kv_bool(struct jsonw *w, const char *key, int v)
{
	jsonw_key(w, key);
	jsonw_bool(w, v);
}

void
jsonw_newline(struct jsonw *w)
{
	if (w->error != 0)
		return;
	if (w->depth != 0) {
		jsonw_fail(w, ERR_INTERNAL);
		return;
	}
	fputc('\n', w->out);
}

int
jsonw_finish(struct jsonw *w)
{
	if (w->error == 0 && (w->depth != 0 || w->want_value))
		jsonw_fail(w, ERR_INTERNAL);
	if (w->error == 0 && (fflush(w->out) != 0 || ferror(w->out)))
		jsonw_fail(w, ERR_IO);
	return w->error;
}
