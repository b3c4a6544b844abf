/*
 * helper_mseal FILE: seals an analysis's manifest.json that a test edited
 * (with jq, say), as a forger would: its manifest_xxh64 member is dropped
 * and written again, last, over the bytes jansson writes for the rest
 * (span/spandir's checksum).  For the tests of what a reader does with a
 * hostile member the checksum would otherwise refuse before it is read.
 * Exit 0, or 1 with the reason on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "span/spandir.h"

int
main(int argc, char **argv)
{
	json_error_t je;
	json_t *doc;
	char *text, *out;
	size_t len;
	FILE *f;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: helper_mseal FILE\n");
		return 2;
	}
	if ((doc = json_load_file(argv[1], 0, &je)) == NULL ||
	    !json_is_object(doc)) {
		fprintf(stderr, "helper_mseal: %s: %s\n", argv[1],
		    doc == NULL ? je.text : "not an object");
		return 1;
	}
	json_object_del(doc, SPANDIR_M_MANIFEST_XXH64);
	text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (text == NULL || (len = strlen(text)) < 2 ||
	    (out = malloc(len + SPANDIR_MANIFEST_TAIL)) == NULL) {
		fprintf(stderr, "helper_mseal: out of memory\n");
		return 1;
	}
	/* "{...}" becomes "{...," (or "{" when empty) and the member. */
	memcpy(out, text, len - 1);
	len--;
	if (len > 1)
		out[len++] = ',';
	free(text);
	spandir_manifest_tail(out, len, out + len);
	len += SPANDIR_MANIFEST_TAIL;
	if ((f = fopen(argv[1], "w")) == NULL) {
		perror(argv[1]);
		free(out);
		return 1;
	}
	rc = fwrite(out, 1, len, f) != len;
	free(out);
	if (fclose(f) != 0 || rc) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
