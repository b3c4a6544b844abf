/*
 * ptquery --kind branches and --kind insns: decoded on demand.
 */
#include "query.h"
#include "report.h"

int
kind_decoded(const struct analysis *a, const struct query_options *o)
{
	(void)a;
	report(query_tool, o->kind == K_BRANCHES ? "--kind branches" :
	    "--kind insns", NULL, "not built yet (issue #7)");
	return EXIT_FAIL;
}
