/* perfconv: see perfconv.h. */
#include "perfconv.h"

#include <stdio.h>

#include "report.h"

int
run_perf(const char *snapshot, int format, uint32_t tid)
{
	(void)snapshot;
	(void)format;
	(void)tid;
	report("ptdecode", NULL, NULL,
	    "--decoder perf is not built yet (issue #5)");
	return EXIT_FAIL;
}
