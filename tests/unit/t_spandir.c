/* Tests for lib/span/spandir: the analysis directory's words, both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jsonw.h"
#include "span/spandir.h"
#include "tap.h"

static void
test_names(void)
{
	char buf[64];
	struct error e;

	IS_STR(spandir_file_name(SPANDIR_SPANS), "spans.jsonl", "spans file");
	IS_STR(spandir_file_name(SPANDIR_INDEX), "index.bin", "index file");
	IS_STR(spandir_file_name(SPANDIR_AGGREGATES), "aggregates.bin",
	    "aggregates file");
	IS_STR(spandir_file_name(SPANDIR_MANIFEST), "manifest.json",
	    "manifest file");
	IS_INT(spandir_path("/a", SPANDIR_GAPS, buf, sizeof(buf), &e), 0,
	    "a path");
	IS_STR(buf, "/a/gaps.jsonl", "dir/name");
	IS_INT(spandir_path("/a", SPANDIR_GAPS, buf, 4, &e), -ERR_RANGE,
	    "too long");
	/* index.bin stores these numbers: the order is the format's. */
	IS_STR(spandir_start_name(CS_START_RING_START), "ring_start",
	    "start ring_start");
	IS_STR(spandir_end_name(CS_END_SNAPSHOT_END), "snapshot_end",
	    "end snapshot_end");
	IS_STR(spandir_start_name(CS_START_NR), "unknown", "past the table");
	IS_STR(spandir_gap_cause_name(CS_GAP_LOST), "lost", "gap lost");
	IS_STR(spandir_event_name(CS_EV_SIGRETURN), "sigreturn",
	    "event sigreturn");
	for (unsigned i = 0; i < CS_START_NR; i++)
		IS_INT(spandir_start_of(spandir_start_name(i)), (int)i,
		    "start %s round trip", spandir_start_name(i));
	for (unsigned i = 0; i < CS_END_NR; i++)
		IS_INT(spandir_end_of(spandir_end_name(i)), (int)i,
		    "end %s round trip", spandir_end_name(i));
	IS_INT(spandir_start_of("nonsense"), -1, "an unknown name");
}

static void
test_span_row(void)
{
	static const char line[] = "{\"v\":1,\"id\":7,\"tid\":3,\"pid\":2,"
	    "\"fn\":\"main\",\"raw\":\"main\",\"module\":\"/bin/x\","
	    "\"depth\":-1,\"parent\":null,\"call_site\":\"0x401000\","
	    "\"entry\":null,\"start_ns\":10,\"end_ns\":30,\"dur_ns\":20,"
	    "\"self_ns\":5,\"insns\":9,\"self_insns\":4,\"inline_insns\":0,"
	    "\"start\":\"gap\",\"end\":\"unwound\",\"tail_call\":true,"
	    "\"async\":false}";
	struct spanidx_row r;
	json_t *o = json_loads(line, 0, NULL);

	if (!OK(o != NULL, "the line parses"))
		return;
	IS_INT(spandir_span_row(o, &r), 0, "a span record");
	IS_U64(r.id, 7, "id");
	IS_U64(r.parent, 0, "parent null is 0");
	IS_INT(r.depth, -1, "depth");
	IS_U64(r.call_site, 0x401000, "call_site from hex");
	IS_U64(r.entry, 0, "entry null is 0");
	IS_INT(r.start, CS_START_GAP, "start");
	IS_INT(r.end, CS_END_UNWOUND, "end");
	IS_INT(r.flags, SPANIDX_F_TAIL_CALL, "flags");
	IS_STR(r.module, "/bin/x", "module");
	json_object_set_new(o, SPANDIR_SPAN_END, json_string("later"));
	IS_INT(spandir_span_row(o, &r), -1, "an unknown end is refused");
	json_decref(o);
}

static void
test_records_and_manifest(void)
{
	struct cs_gap g = { .tid = 5, .cause = CS_GAP_OVERFLOW, .ip = 0x10,
	    .start_ns = 1, .end_ns = 4, .frames_cut = 2 };
	struct spandir_quality q = { .spans = 12, .min_depth = -2 };
	struct blks_header h = { .time_base_ns = 100 };
	struct spandir_coverage c = { .tid = 5, .first_ns = 0, .last_ns = 10,
	    .gap_ns = 5, .spans = 12 };
	struct spandir_manifest m = { .analysis_id = "default",
	    .tool = "t", .snapshot = "", .decoder = "native", .inline_on = 1,
	    .time = &h, .quality = &q, .threads = &c, .n_threads = 1 };
	char *text = NULL;
	size_t len = 0;
	struct jsonw w;
	json_t *doc;
	FILE *f;

	if ((f = open_memstream(&text, &len)) == NULL)
		return;
	jsonw_init(&w, f);
	spandir_write_gap(&w, &g);
	STEP(jsonw_finish(&w));
	fclose(f);
	IS_STR(text, "{\"v\":1,\"tid\":5,\"cause\":\"overflow\",\"ip\":\"0x10\","
	    "\"resume_ip\":null,\"start_ns\":1,\"end_ns\":4,\"dur_ns\":3,"
	    "\"frames_cut\":2}\n", "a gap record");
	free(text);

	if ((f = open_memstream(&text, &len)) == NULL)
		return;
	IS_INT(spandir_write_manifest(f, &m), 0, "a manifest");
	fclose(f);
	doc = json_loads(text, 0, NULL);
	OK(doc != NULL, "it is JSON");
	IS_U64(spandir_manifest_u64(doc, SPANDIR_M_SPANS, 0), 12,
	    "quality.spans reads back");
	IS_U64(spandir_manifest_u64(doc, SPANDIR_M_Q("min_depth"), 99), 99,
	    "a negative number is not a u64");
	IS_STR(spandir_manifest_str(doc, SPANDIR_M_ANALYSIS_ID, ""),
	    "default", "analysis_id");
	OK(json_is_null(json_object_get(doc, SPANDIR_M_SNAPSHOT_ID)),
	    "no snapshot: snapshot_id null");
	OK(json_object_get(doc, SPANDIR_M_CAPTURE) == NULL,
	    "and no capture");
	IS_U64(json_array_size(spandir_manifest_member(doc, "files")), 7,
	    "seven files listed");
	IS_STR(json_string_value(json_array_get(spandir_manifest_member(doc,
	    "files"), 6)), "aggregates.bin", "the kept aggregates last");
	IS_STR(spandir_manifest_str(doc, "nothing.here", "d"), "d",
	    "absent paths give the default");
	json_decref(doc);
	free(text);
}

int
main(void)
{
	test_names();
	test_span_row();
	test_records_and_manifest();
	return tap_done();
}
