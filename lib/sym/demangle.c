/* demangle: see demangle.h. */
#include "sym/demangle.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

size_t
demangle_unversioned_len(const char *raw)
{
	const char *at = strchr(raw, '@');

	return at != NULL ? (size_t)(at - raw) : strlen(raw);
}

char *
demangle(const char *raw)
{
	size_t len = demangle_unversioned_len(raw);
	char *plain, *out;

	if (len < 3 || raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return NULL;
	plain = strndup(raw, len);
	if (plain == NULL)
		return NULL;
	out = cplus_demangle(plain, DMGL_PARAMS | DMGL_ANSI);
	free(plain);
	return out;
}
