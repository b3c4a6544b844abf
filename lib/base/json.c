/* json: see json.h. */
#include "base/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

/*
 * jansson's reason without its " near '<token>'": the token is the
 * document's own bytes, and an error about a file never quotes its
 * contents (a link planted to /etc/passwd would show its first word).
 */
static json_t *
json_check_loaded(json_t *doc, const json_error_t *je, struct error *e)
{
	const char *near;
	int len;

	if (doc != NULL)
		return doc;
	near = strstr(je->text, " near ");
	len = near != NULL ? (int)(near - je->text) : (int)strlen(je->text);
	error_set(e, ERR_FORMAT, "line %d column %d: %.*s", je->line,
	    je->column, len, je->text);
	return NULL;
}

json_t *
json_read_file(const char *path, struct error *e)
{
	json_error_t je;

	return json_check_loaded(json_load_file(path, JSON_REJECT_DUPLICATES,
	    &je), &je, e);
}

json_t *
json_read_fd(int fd, struct error *e)
{
	json_error_t je;

	return json_check_loaded(json_loadfd(fd, JSON_REJECT_DUPLICATES,
	    &je), &je, e);
}

json_t *
json_read_buffer(const char *buf, size_t len, struct error *e)
{
	json_error_t je;

	return json_check_loaded(json_loadb(buf, len, JSON_REJECT_DUPLICATES,
	    &je), &je, e);
}

static int
json_member(const json_t *obj, const char *key, json_t **out, struct error *e)
{
	json_t *v = NULL;

	if (!json_is_object(obj))
		return error_set(e, ERR_FORMAT, "'%s': parent is not an object",
		    key);
	v = json_object_get(obj, key);
	if (v == NULL)
		return error_set(e, ERR_NOTFOUND, "missing member '%s'", key);
	*out = v;
	return 0;
}

int
json_get_string(const json_t *obj, const char *key, const char **out,
    struct error *e)
{
	json_t *v = NULL;
	int rc;

	if ((rc = json_member(obj, key, &v, e)) < 0)
		return rc;
	if (!json_is_string(v))
		return error_set(e, ERR_FORMAT, "'%s' is not a string", key);
	*out = json_string_value(v);
	return 0;
}

int
json_get_i64(const json_t *obj, const char *key, int64_t *out,
    struct error *e)
{
	json_t *v = NULL;
	int rc;

	if ((rc = json_member(obj, key, &v, e)) < 0)
		return rc;
	if (!json_is_integer(v))
		return error_set(e, ERR_FORMAT, "'%s' is not an integer", key);
	*out = (int64_t)json_integer_value(v);
	return 0;
}

/*
 * jansson stores integers as long long, so values above INT64_MAX cannot
 * come through it; the manifest writer keeps u64 fields below 2^63.
 */
int
json_get_u64(const json_t *obj, const char *key, uint64_t *out,
    struct error *e)
{
	int64_t v;
	int rc;

	if ((rc = json_get_i64(obj, key, &v, e)) < 0)
		return rc;
	if (v < 0)
		return error_set(e, ERR_FORMAT, "'%s' is negative", key);
	*out = (uint64_t)v;
	return 0;
}

int
json_get_bool(const json_t *obj, const char *key, int *out, struct error *e)
{
	json_t *v = NULL;
	int rc;

	if ((rc = json_member(obj, key, &v, e)) < 0)
		return rc;
	if (!json_is_boolean(v))
		return error_set(e, ERR_FORMAT, "'%s' is not a boolean", key);
	*out = json_is_true(v);
	return 0;
}

json_t *
json_string_bytes(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, o = 0, n;
	json_t *v;
	char *buf;

	if ((v = json_stringn(s, len)) != NULL)
		return v;	/* well-formed UTF-8 as it is */
	/* every byte becomes at most the three of U+FFFD */
	if (len > (SIZE_MAX - 1) / 3 || (buf = malloc(3 * len + 1)) == NULL)
		return NULL;
	while (i < len) {
		if (u[i] < 0x80)
			n = 1;
		else
			n = json_utf8_len(u + i, len - i);
		if (n > 0) {
			memcpy(buf + o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	v = json_stringn(buf, o);
	free(buf);
	return v;
}
