/*
 * helper_jsonl DIR FILE: copies the JSON Lines file FILE of the analysis
 * DIR (gaps.jsonl, events.jsonl, ...) to stdout through the reader every
 * query uses (span/analysis's analysis_open_jsonl, which checks it
 * against the checksum the manifest holds of it), for the tests of a
 * file that no ptquery kind reads.  Exit 0, or 1 with the reason on
 * stderr.
 */
#include <stdio.h>
#include <string.h>

#include "span/analysis.h"

int
main(int argc, char **argv)
{
	struct analysis a;
	struct error e;
	const char *name;
	char buf[65536];
	size_t n;
	int f, rc = 0;
	FILE *in;

	if (argc != 3) {
		fprintf(stderr, "usage: helper_jsonl DIR FILE\n");
		return 2;
	}
	for (f = 0; f < SPANDIR_JSONL_NR; f++)
		if (strcmp(spandir_file_name(f), argv[2]) == 0)
			break;
	if (f == SPANDIR_JSONL_NR) {
		fprintf(stderr, "helper_jsonl: %s: not a JSON Lines file of an "
		    "analysis\n", argv[2]);
		return 2;
	}
	if (analysis_open(&a, argv[1], &e) < 0) {
		fprintf(stderr, "helper_jsonl: %s: %s\n", argv[1], e.msg);
		return 1;
	}
	if ((in = analysis_open_jsonl(&a, (enum spandir_file)f, &name,
	    &e)) == NULL) {
		fprintf(stderr, "helper_jsonl: %s: %s\n", argv[1], e.msg);
		analysis_close(&a);
		return 1;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, stdout) != n)
			rc = 1;
	if (ferror(in)) {
		fprintf(stderr, "helper_jsonl: %s: %s: read error\n", argv[1],
		    name);
		rc = 1;
	}
	fclose(in);
	analysis_close(&a);
	return fclose(stdout) != 0 ? 1 : rc;
}
