/*
 * fuzz_perfdata: libFuzzer target for the perf.data reader
 * (lib/fmt/perfdata.c).  Every input must either parse, after which the
 * consumer-facing data (queues, strings) must be readable, or be rejected
 * with one of the errors a damaged file may give and a message that names
 * the offset.  Anything else traps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/perfdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
touch(const struct perfdata *pd)
{
	struct perfdata_pt_timing t;
	struct error e;

	for (size_t i = 0; i < pd->nr_queues; i++) {
		uint8_t *buf;
		size_t len;

		if (perfdata_queue_data(pd, &pd->queues[i], &buf, &len, &e) == 0)
			free(buf);
	}
	for (size_t i = 0; i < pd->nr_mmaps; i++)
		if (strlen(pd->mmaps[i].filename) > 1 << 20)
			__builtin_trap();
	for (size_t i = 0; i < pd->nr_comms; i++)
		if (strlen(pd->comms[i].comm) > 1 << 20)
			__builtin_trap();
	(void)perfdata_pt_timing(pd, &t, &e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfdata *pd = NULL;
	struct error e;
	int rc;

	error_clear(&e);
	rc = perfdata_read_buffer(&pd, data, size, "fuzz", &e);
	if (rc == 0) {
		touch(pd);
		perfdata_free(pd);
		return 0;
	}
	if (pd != NULL)
		__builtin_trap();
	if (rc == -ERR_NOMEM)
		return 0;
	if ((rc != -ERR_FORMAT && rc != -ERR_TRUNCATED &&
	    rc != -ERR_UNSUPPORTED) || strstr(e.msg, "offset ") == NULL)
		__builtin_trap();
	return 0;
}
