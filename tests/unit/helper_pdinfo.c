/*
 * helper_pdinfo: prints what lib/perfdata reads from a perf.data, one
 * "key value" per line, for tests.  Exit 0 when the file parsed, 1 with
 * the error message on stderr when it did not (never a crash: the
 * corruption test runs it on hundreds of damaged files).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmt/perfdata.h"

static void
print_summary(const struct perfdata *pd)
{
	printf("attrs %zu\n", pd->nr_attrs);
	for (size_t i = 0; i < pd->nr_attrs; i++)
		printf("attr %zu type %u config %#" PRIx64 " sample_type %#"
		    PRIx64 " ids %zu\n", i, pd->attrs[i].type,
		    pd->attrs[i].config, pd->attrs[i].sample_type,
		    pd->attrs[i].nr_ids);
	printf("records %" PRIu64 "\n", pd->nr_records);
	printf("samples %" PRIu64 "\n", pd->nr_samples);
	printf("compressed %" PRIu64 "\n", pd->nr_compressed);
	printf("mmaps %zu\n", pd->nr_mmaps);
	printf("comms %zu\n", pd->nr_comms);
	printf("tasks %zu\n", pd->nr_tasks);
	printf("itrace_starts %zu\n", pd->nr_itrace_starts);
	printf("auxs %zu\n", pd->nr_auxs);
	printf("auxtrace %zu\n", pd->nr_auxtrace);
	printf("queues %zu\n", pd->nr_queues);
	for (size_t i = 0; i < pd->nr_queues; i++)
		printf("queue %u tid %d cpu %d chunks %zu bytes %" PRIu64 "\n",
		    pd->queues[i].idx, (int)pd->queues[i].tid,
		    (int)pd->queues[i].cpu, pd->queues[i].nr_chunks,
		    pd->queues[i].total_size);
	printf("pt_info %d\n", pd->has_pt_info);
	if (pd->has_pt_info)
		for (unsigned i = 0; i < pd->pt.nr_priv; i++)
			printf("priv %u %#" PRIx64 "\n", i, pd->pt.priv[i]);
	printf("time_conv %d\n", pd->has_time_conv);
	printf("build_ids %zu\n", pd->nr_build_ids);
	printf("auxtrace_index %" PRIu64 "\n", pd->nr_auxtrace_index);
	printf("hostname %s\n", pd->hostname ? pd->hostname : "-");
	printf("unknown_records %" PRIu64 "\n", pd->nr_unknown_records);
	printf("unknown_features %" PRIu64 "\n", pd->nr_unknown_features);
	printf("warnings %" PRIu64 "\n", pd->nr_warnings);
	if (pd->first_warning[0])
		printf("first_warning %s\n", pd->first_warning);
}

int
main(int argc, char **argv)
{
	int quiet = 0, status = 0;

	if (argc > 1 && argv[1][0] == '-' && argv[1][1] == 'q') {
		quiet = 1;
		argc--, argv++;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: helper_pdinfo [-q] perf.data...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct perfdata *pd;
		struct error e;

		error_clear(&e);
		if (perfdata_read(&pd, argv[i], &e) < 0) {
			fprintf(stderr, "%s (%s)\n", e.msg, err_str(e.code));
			status = 1;
			continue;
		}
		if (!quiet)
			print_summary(pd);
		perfdata_free(pd);
	}
	return status;
}
