/*
 * schema: checking tool arguments against the tools' JSON Schemas.
 *
 * Owns the subset of JSON Schema the tools use: type (object, array,
 * string, integer, number, boolean), properties, required,
 * additionalProperties false, enum (strings), minimum/maximum,
 * minLength/maxLength, pattern (as a POSIX extended regex), items,
 * minItems/maxItems.  A schema keyword outside the subset is ignored.
 * The message for a violation names the argument and says the fix.
 */
#ifndef PTMCP_SCHEMA_H
#define PTMCP_SCHEMA_H

#include <stddef.h>

#include <jansson.h>

/*
 * Checks value against schema.  Returns 0 when it conforms, else -1 with
 * msg holding one sentence such as "argument 'limit' must be at most 500
 * (got 5000)".
 */
int schema_check(const json_t *schema, const json_t *value, char *msg,
    size_t size);

#endif
