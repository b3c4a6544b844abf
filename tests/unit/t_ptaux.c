/*
 * Tests for lib/ptaux: a simulated hardware writer fills a zeroed ring
 * round and round; each snapshot must be exactly the newest bytes written,
 * oldest first, and say whether older ones were lost.
 */
#include <stdlib.h>
#include <string.h>

#include "rec/ptaux.h"
#include "tap.h"

#define SIZE (16 * 1024)

static uint8_t ring[SIZE];
static uint64_t written;	/* bytes the "hardware" wrote in all */

static uint8_t
stream_byte(uint64_t i)
{
	return (uint8_t)(i % 251 + 1);	/* never 0, like PT without PADs */
}

static void
hw_write(uint64_t n)
{
	while (n-- > 0) {
		ring[written % SIZE] = stream_byte(written);
		written++;
	}
}

/* The snapshot must equal stream bytes [from, written). */
static void
check(struct ptaux_ring *r, uint64_t want_len, int want_trunc,
    const char *name)
{
	static uint8_t out[SIZE];
	uint64_t n, i, from = written - want_len;
	int trunc = -1, same = 1;

	n = ptaux_copy(r, written, out, &trunc);
	IS_U64(n, want_len, "%s: length", name);
	IS_INT(trunc, want_trunc, "%s: truncated flag", name);
	for (i = 0; i < n && i < want_len; i++)
		if (out[i] != stream_byte(from + i)) {
			same = 0;
			DIAG("first difference at %llu", (unsigned long long)i);
			break;
		}
	OK(same, "%s: oldest to newest, byte for byte", name);
}

int
main(void)
{
	struct ptaux_ring r = { ring, SIZE, 0 };

	check(&r, 0, 0, "empty ring");
	hw_write(5000);
	check(&r, 5000, 0, "part filled");
	hw_write(SIZE - 5000 - 100);
	/* perf's test (last 4 KiB non-zero) would call this wrapped. */
	check(&r, SIZE - 100, 0, "head inside the last 4 KiB, not wrapped");
	hw_write(100);
	check(&r, SIZE, 1, "exactly full: head back at 0");
	hw_write(3000);
	check(&r, SIZE, 1, "wrapped once");
	hw_write(2 * SIZE + 7);
	check(&r, SIZE, 1, "wrapped three times");
	OK(r.wrapped, "the flag is sticky");
	IS_INT(ptaux_wrapped(&r, written), 1, "and stays");
	{
		struct ptaux_ring fresh = { ring, SIZE, 0 };

		IS_INT(ptaux_wrapped(&fresh, written), 1,
		    "a new reader of a wrapped ring sees it wrapped");
	}
	return tap_done();
}
