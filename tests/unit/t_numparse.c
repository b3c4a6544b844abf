/* Tests for lib/numparse: bounds, suffixes, rejection of junk. */
#include <stdint.h>

#include "base/error.h"
#include "base/numparse.h"
#include "tap.h"

static void
test_u64(void)
{
	struct error e;
	uint64_t v = 7;

	IS_INT(parse_u64("0", 0, 10, &v, &e), 0, "0 parses");
	IS_U64(v, 0, "0 is 0");
	IS_INT(parse_u64("0x10", 0, 100, &v, &e), 0, "hex parses");
	IS_U64(v, 16, "0x10 is 16");
	IS_INT(parse_u64("18446744073709551615", 0, UINT64_MAX, &v, &e), 0,
	    "UINT64_MAX parses");
	IS_U64(v, UINT64_MAX, "UINT64_MAX exact");
	v = 7;
	IS_INT(parse_u64("18446744073709551616", 0, UINT64_MAX, &v, &e),
	    -ERR_RANGE, "2^64 overflows");
	IS_STR(e.msg, "'18446744073709551616' is too large", "overflow message");
	IS_U64(v, 7, "output untouched on failure");
	IS_INT(parse_u64("11", 0, 10, &v, &e), -ERR_RANGE, "above max");
	IS_STR(e.msg, "'11' is above the maximum 10", "above-max message");
	IS_INT(parse_u64("10", 0, 10, &v, &e), 0, "max itself is allowed");
	IS_INT(parse_u64("4", 5, 10, &v, &e), -ERR_RANGE, "below min");
	IS_STR(e.msg, "'4' is below the minimum 5", "below-min message");
	IS_INT(parse_u64("-1", 0, UINT64_MAX, &v, &e), -ERR_INVALID,
	    "a sign is rejected, not wrapped");
	IS_INT(parse_u64(" 1", 0, 10, &v, &e), -ERR_INVALID,
	    "leading space rejected");
	IS_INT(parse_u64("1 ", 0, 10, &v, &e), -ERR_INVALID,
	    "trailing space rejected");
	IS_INT(parse_u64("", 0, 10, &v, &e), -ERR_INVALID, "empty rejected");
	IS_STR(e.msg, "empty number", "empty message");
	IS_INT(parse_u64("12abc", 0, 100, &v, &e), -ERR_INVALID,
	    "trailing junk rejected");
	IS_STR(e.msg, "'12abc' is not a number", "junk message");
	IS_INT(parse_u64(NULL, 0, 10, &v, &e), -ERR_INVALID, "NULL rejected");
}

static void
test_i64(void)
{
	struct error e;
	int64_t v = 0;

	IS_INT(parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v, &e),
	    0, "INT64_MIN parses");
	OK(v == INT64_MIN, "INT64_MIN exact");
	IS_INT(parse_i64("9223372036854775807", INT64_MIN, INT64_MAX, &v, &e),
	    0, "INT64_MAX parses");
	OK(v == INT64_MAX, "INT64_MAX exact");
	IS_INT(parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v, &e),
	    -ERR_RANGE, "INT64_MAX + 1 rejected");
	IS_INT(parse_i64("-9223372036854775809", INT64_MIN, INT64_MAX, &v, &e),
	    -ERR_RANGE, "INT64_MIN - 1 rejected");
	IS_INT(parse_i64("-5", -4, 4, &v, &e), -ERR_RANGE, "below min");
	IS_STR(e.msg, "'-5' is below the minimum -4", "i64 below-min message");
	IS_INT(parse_i64("--5", -10, 10, &v, &e), -ERR_INVALID,
	    "double sign rejected");
	IS_INT(parse_i64("-", -10, 10, &v, &e), -ERR_INVALID,
	    "lone sign rejected");
}

static void
test_size(void)
{
	struct error e;
	uint64_t v = 0;

	IS_INT(parse_size("4K", 0, UINT64_MAX, &v, &e), 0, "4K parses");
	IS_U64(v, 4096, "4K is 4096");
	IS_INT(parse_size("32M", 0, UINT64_MAX, &v, &e), 0, "32M parses");
	IS_U64(v, 32ULL << 20, "32M is 32 MiB");
	IS_INT(parse_size("2g", 0, UINT64_MAX, &v, &e), 0, "lower-case g");
	IS_U64(v, 2ULL << 30, "2g is 2 GiB");
	IS_INT(parse_size("3MiB", 0, UINT64_MAX, &v, &e), 0, "MiB spelled out");
	IS_U64(v, 3ULL << 20, "3MiB");
	IS_INT(parse_size("100", 0, UINT64_MAX, &v, &e), 0, "no suffix");
	IS_U64(v, 100, "plain bytes");
	IS_INT(parse_size("1Q", 0, UINT64_MAX, &v, &e), -ERR_INVALID,
	    "unknown suffix");
	IS_STR(e.msg, "'1Q': unknown size suffix 'Q' (use K, M or G)",
	    "unknown suffix message");
	IS_INT(parse_size("17179869184G", 0, UINT64_MAX, &v, &e), -ERR_RANGE,
	    "2^64 via suffix overflows");
	IS_INT(parse_size("1G", 0, 1ULL << 29, &v, &e), -ERR_RANGE,
	    "bound applies after the suffix");
	IS_STR(e.msg, "'1G' is above the maximum 536870912",
	    "bound message names bytes");
	IS_INT(parse_size("K", 0, UINT64_MAX, &v, &e), -ERR_INVALID,
	    "suffix alone rejected");
}

int
main(void)
{
	test_u64();
	test_i64();
	test_size();
	return tap_done();
}
