/* schema: see schema.h. */
#include "schema.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Where in the arguments a value sits: "argument 'filters[2]'". */
struct where {
	char path[128];
};

static int
fail(char *msg, size_t size, const struct where *w, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
fail(char *msg, size_t size, const struct where *w, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (w->path[0] == '\0')
		snprintf(msg, size, "the arguments %s", what);
	else
		snprintf(msg, size, "argument '%s' %s", w->path, what);
	return -1;
}

static const char *
type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

static int
type_ok(const char *type, const json_t *v)
{
	if (strcmp(type, "object") == 0)
		return json_is_object(v);
	if (strcmp(type, "array") == 0)
		return json_is_array(v);
	if (strcmp(type, "string") == 0)
		return json_is_string(v);
	if (strcmp(type, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(type, "number") == 0)
		return json_is_number(v);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(v);
	return 1;
}

static int check(const json_t *s, const json_t *v, struct where *w,
    char *msg, size_t size);

static int
check_string(const json_t *s, const json_t *v, struct where *w, char *msg,
    size_t size)
{
	const char *str = json_string_value(v);
	json_t *k, *item, *ex;
	size_t len = json_string_length(v), i;
	regex_t re;
	int match, found = 0;

	if ((k = json_object_get(s, "maxLength")) && json_is_integer(k) &&
	    (long long)len > json_integer_value(k))
		return fail(msg, size, w, "is longer than %lld characters; "
		    "shorten it", json_integer_value(k));
	if ((k = json_object_get(s, "minLength")) && json_is_integer(k) &&
	    (long long)len < json_integer_value(k))
		return fail(msg, size, w, "must have at least %lld "
		    "characters", json_integer_value(k));
	if ((k = json_object_get(s, "enum")) && json_is_array(k)) {
		json_array_foreach(k, i, item)
			if (json_is_string(item) &&
			    strcmp(json_string_value(item), str) == 0)
				found = 1;
		if (!found) {
			char list[200] = "";

			json_array_foreach(k, i, item) {
				if (i > 0)
					strncat(list, ", ", sizeof(list) -
					    strlen(list) - 1);
				strncat(list, json_string_value(item),
				    sizeof(list) - strlen(list) - 1);
			}
			return fail(msg, size, w, "must be one of: %s", list);
		}
	}
	if ((k = json_object_get(s, "pattern")) && json_is_string(k)) {
		if (strlen(str) != len)
			return fail(msg, size, w, "must not contain NUL "
			    "characters");
		if (regcomp(&re, json_string_value(k), REG_EXTENDED |
		    REG_NOSUB) != 0)
			return 0;	/* the schema's problem, not the caller's */
		match = regexec(&re, str, 0, NULL, 0) == 0;
		regfree(&re);
		ex = json_array_get(json_object_get(s, "examples"), 0);
		if (!match && json_is_string(ex))
			return fail(msg, size, w, "must look like %s (it must "
			    "match %s)", json_string_value(ex),
			    json_string_value(k));
		if (!match)
			return fail(msg, size, w, "must match %s",
			    json_string_value(k));
	}
	return 0;
}

static int
check_integer(const json_t *s, const json_t *v, struct where *w, char *msg,
    size_t size)
{
	long long n = json_integer_value(v);
	json_t *k;

	if ((k = json_object_get(s, "minimum")) && json_is_integer(k) &&
	    n < json_integer_value(k))
		return fail(msg, size, w, "must be at least %lld (got %lld)",
		    json_integer_value(k), n);
	if ((k = json_object_get(s, "maximum")) && json_is_integer(k) &&
	    n > json_integer_value(k))
		return fail(msg, size, w, "must be at most %lld (got %lld)",
		    json_integer_value(k), n);
	return 0;
}

static int
check_array(const json_t *s, const json_t *v, struct where *w, char *msg,
    size_t size)
{
	json_t *k, *items = json_object_get(s, "items"), *item;
	size_t i, base = strlen(w->path);
	long long n = (long long)json_array_size(v);

	if ((k = json_object_get(s, "maxItems")) && json_is_integer(k) &&
	    n > json_integer_value(k))
		return fail(msg, size, w, "has more than %lld items",
		    json_integer_value(k));
	if ((k = json_object_get(s, "minItems")) && json_is_integer(k) &&
	    n < json_integer_value(k))
		return fail(msg, size, w, "needs at least %lld items",
		    json_integer_value(k));
	if (!json_is_object(items))
		return 0;
	json_array_foreach(v, i, item) {
		snprintf(w->path + base, sizeof(w->path) - base, "[%zu]", i);
		if (check(items, item, w, msg, size) < 0)
			return -1;
	}
	w->path[base] = '\0';
	return 0;
}

static int
check_object(const json_t *s, const json_t *v, struct where *w, char *msg,
    size_t size)
{
	json_t *props = json_object_get(s, "properties"), *req, *sub, *item;
	json_t *extra = json_object_get(s, "additionalProperties");
	size_t base = strlen(w->path), i;
	const char *key;

	req = json_object_get(s, "required");
	json_array_foreach(req, i, item) {
		if (json_is_string(item) &&
		    json_object_get(v, json_string_value(item)) == NULL) {
			snprintf(msg, size, "argument '%s' is required; add "
			    "it", json_string_value(item));
			return -1;
		}
	}
	json_object_foreach((json_t *)v, key, item) {
		sub = json_object_get(props, key);
		snprintf(w->path + base, sizeof(w->path) - base, "%s%s",
		    base > 0 ? "." : "", key);
		if (sub == NULL) {
			if (json_is_false(extra))
				return fail(msg, size, w, "is not an argument "
				    "of this tool; remove it (tools/list shows "
				    "the arguments)");
			continue;
		}
		if (check(sub, item, w, msg, size) < 0)
			return -1;
	}
	w->path[base] = '\0';
	return 0;
}

static int
check(const json_t *s, const json_t *v, struct where *w, char *msg,
    size_t size)
{
	json_t *type = json_object_get(s, "type");

	if (json_is_string(type) && !type_ok(json_string_value(type), v))
		return fail(msg, size, w, "must be %s %s (got %s)",
		    strchr("aeiou", json_string_value(type)[0]) ? "an" : "a",
		    json_string_value(type), type_name(v));
	if (json_is_string(v))
		return check_string(s, v, w, msg, size);
	if (json_is_integer(v))
		return check_integer(s, v, w, msg, size);
	if (json_is_array(v))
		return check_array(s, v, w, msg, size);
	if (json_is_object(v))
		return check_object(s, v, w, msg, size);
	return 0;
}

int
schema_check(const json_t *schema, const json_t *value, char *msg,
    size_t size)
{
	struct where w = { "" };

	msg[0] = '\0';
	return check(schema, value, &w, msg, size);
}
