/* numparse: see numparse.h. */
#include "base/numparse.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <strings.h>

/*
 * strtoull accepts leading space and a sign (and negates "-1" into a huge
 * value); we reject both before calling it.  Returns the end of the digits.
 */
static int
scan_u64(const char *s, uint64_t *out, const char **end, struct error *e)
{
	char *stop;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return error_set(e, ERR_INVALID, "empty number");
	if (!isdigit((unsigned char)*s))
		return error_set(e, ERR_INVALID, "'%s' is not a number", s);
	errno = 0;
	v = strtoull(s, &stop, 0);
	if (errno == ERANGE)
		return error_set(e, ERR_RANGE, "'%s' is too large", s);
	if (stop == s)
		return error_set(e, ERR_INVALID, "'%s' is not a number", s);
	*out = v;
	*end = stop;
	return 0;
}

static int
check_range_u64(const char *s, uint64_t v, uint64_t min, uint64_t max,
    struct error *e)
{
	if (v < min)
		return error_set(e, ERR_RANGE, "'%s' is below the minimum %" PRIu64,
		    s, min);
	if (v > max)
		return error_set(e, ERR_RANGE, "'%s' is above the maximum %" PRIu64,
		    s, max);
	return 0;
}

int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out,
    struct error *e)
{
	const char *end;
	uint64_t v;
	int rc;

	if ((rc = scan_u64(s, &v, &end, e)) < 0)
		return rc;
	if (*end != '\0')
		return error_set(e, ERR_INVALID, "'%s' is not a number", s);
	if ((rc = check_range_u64(s, v, min, max, e)) < 0)
		return rc;
	*out = v;
	return 0;
}

int
parse_i64(const char *s, int64_t min, int64_t max, int64_t *out,
    struct error *e)
{
	const char *end;
	uint64_t mag;
	int64_t v;
	int neg = s != NULL && *s == '-';
	int rc;

	if ((rc = scan_u64(neg ? s + 1 : s, &mag, &end, e)) < 0)
		return rc == -ERR_RANGE ? error_set(e, ERR_RANGE,
		    "'%s' is out of range", s) : error_set(e, ERR_INVALID,
		    "'%s' is not a number", s);
	if (*end != '\0')
		return error_set(e, ERR_INVALID, "'%s' is not a number", s);
	if (!neg && mag > (uint64_t)INT64_MAX)
		return error_set(e, ERR_RANGE, "'%s' is above the maximum %"
		    PRId64, s, max);
	if (neg && mag > (uint64_t)INT64_MAX + 1)
		return error_set(e, ERR_RANGE, "'%s' is below the minimum %"
		    PRId64, s, min);
	v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	if (v < min)
		return error_set(e, ERR_RANGE, "'%s' is below the minimum %"
		    PRId64, s, min);
	if (v > max)
		return error_set(e, ERR_RANGE, "'%s' is above the maximum %"
		    PRId64, s, max);
	*out = v;
	return 0;
}

static int
size_shift(const char *suffix, unsigned *shift)
{
	static const struct {
		const char *name;
		unsigned shift;
	} units[] = {
		{ "", 0 }, { "k", 10 }, { "m", 20 }, { "g", 30 },
		{ "kib", 10 }, { "mib", 20 }, { "gib", 30 },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(suffix, units[i].name) == 0) {
			*shift = units[i].shift;
			return 0;
		}
	}
	return -ERR_INVALID;
}

int
parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out,
    struct error *e)
{
	const char *end;
	unsigned shift;
	uint64_t v;
	int rc;

	if ((rc = scan_u64(s, &v, &end, e)) < 0)
		return rc;
	if (size_shift(end, &shift) < 0)
		return error_set(e, ERR_INVALID,
		    "'%s': unknown size suffix '%s' (use K, M or G)", s, end);
	if (shift != 0 && v > (UINT64_MAX >> shift))
		return error_set(e, ERR_RANGE, "'%s' is too large", s);
	v <<= shift;
	if ((rc = check_range_u64(s, v, min, max, e)) < 0)
		return rc;
	*out = v;
	return 0;
}
