/*
 * json: reading JSON documents (manifests, requests) through jansson.
 *
 * Owns the mapping from jansson's errors to struct error, and typed member
 * access that says which member was missing or of the wrong type.  Values
 * returned are borrowed from the json_t they came from.
 */
#ifndef PTKIT_JSON_H
#define PTKIT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/error.h"

/*
 * Loads a JSON document from path.  Returns a new reference (the caller
 * json_decref()s it) or NULL with e saying "line L column C: reason".
 */
json_t *json_read_file(const char *path, struct error *e);

/* As json_read_file, from the open file fd (left open). */
json_t *json_read_fd(int fd, struct error *e);

/* Parses len bytes of buf as one JSON document, as json_read_file. */
json_t *json_read_buffer(const char *buf, size_t len, struct error *e);

/*
 * A new jansson string of s's bytes whatever they are (paths, messages):
 * each byte that is not part of well-formed UTF-8 becomes U+FFFD, as
 * jsonw writes it, where json_string() would refuse the whole string
 * (NULL) and json_pack("s") the whole value.  NULL only when out of
 * memory.
 */
json_t *json_string_bytes(const char *s);

/*
 * Typed members of an object.  Each returns 0, -ERR_NOTFOUND (no such
 * member) or -ERR_FORMAT (wrong type or out of range), with e naming key.
 * *out is untouched on failure.
 */
int json_get_string(const json_t *obj, const char *key, const char **out,
    struct error *e) PTKIT_MUST_CHECK;
int json_get_u64(const json_t *obj, const char *key, uint64_t *out,
    struct error *e) PTKIT_MUST_CHECK;
int json_get_i64(const json_t *obj, const char *key, int64_t *out,
    struct error *e) PTKIT_MUST_CHECK;
int json_get_bool(const json_t *obj, const char *key, int *out,
    struct error *e) PTKIT_MUST_CHECK;

#endif
