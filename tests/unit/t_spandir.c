/* Tests for lib/span/spandir: the analysis directory's words, both ways. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/jsonw.h"
#include "base/xxh64.h"
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

/* The three ways a manifest is refused for its checksum, and the end of
 * every such message. */
static int
refused_clearly(const char *msg)
{
	static const char *const starts[] = {
		"manifest.json does not match its checksum (manifest_xxh64 0x",
		"manifest.json does not end with its checksum (manifest_xxh64): "
		    "it was cut short, changed or damaged (run ptspans again)",
		"manifest.json: analysis version ",
	};
	size_t n = strlen(msg), tail = strlen("run ptspans again)");

	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
		if (strncmp(msg, starts[i], strlen(starts[i])) == 0)
			return n > tail && strcmp(msg + n - tail,
			    "run ptspans again)") == 0;
	return 0;
}

/* text[0..len) with its last member replaced by a checksum of the rest. */
static char *
sealed(const char *body)
{
	size_t len = strlen(body);
	char *t = malloc(len + SPANDIR_MANIFEST_TAIL + 1);

	if (t == NULL)
		return NULL;
	memcpy(t, body, len);
	spandir_manifest_tail(t, len, t + len);
	t[len + SPANDIR_MANIFEST_TAIL] = '\0';
	return t;
}

static void
test_manifest_checksum(void)
{
	struct spandir_quality q = { .spans = 3, .insns = 4567 };
	struct blks_header h = { .time_base_ns = 100 };
	struct spandir_coverage c = { .tid = 7, .last_ns = 10, .spans = 3 };
	struct spandir_manifest m = { .analysis_id = "default",
	    .tool = "t", .snapshot = "/s", .decoder = "fast", .time = &h,
	    .quality = &q, .threads = &c, .n_threads = 1, .spans_hashed = 1,
	    .spans_xxh64 = 0xfeed };
	char *text = NULL, *copy, *t, want[40], path[] = "/tmp/t_spandir.XXXXXX";
	const char *lit;
	size_t len = 0, flips = 0, refused = 0, unclear = 0, cuts = 0;
	struct error e;
	json_t *doc, *plain;
	FILE *f;
	int fd;

	if ((f = open_memstream(&text, &len)) == NULL)
		return;
	IS_INT(spandir_write_manifest(f, &m), 0, "a manifest with its checksum");
	fclose(f);
	OK(len > SPANDIR_MANIFEST_TAIL, "longer than its checksum member");
	if (len <= SPANDIR_MANIFEST_TAIL)
		return;
	snprintf(want, sizeof(want), "\"manifest_xxh64\":\"0x%016" PRIx64
	    "\"}\n", xxh64(text, len - SPANDIR_MANIFEST_TAIL, 0));
	IS_INT((int)SPANDIR_MANIFEST_TAIL, 39, "the member is 39 bytes");
	IS_STR(text + len - SPANDIR_MANIFEST_TAIL, want,
	    "it ends the file: the XXH64 of every byte before it");
	OK(text[len - SPANDIR_MANIFEST_TAIL - 1] == ',',
	    "the comma before it is hashed");
	OK(strncmp(text, "{\"v\":2,", 7) == 0, "of version 2");
	doc = spandir_manifest_parse(text, len, &e);
	plain = json_loads(text, 0, NULL);
	OK(doc != NULL && json_equal(doc, plain), "read back whole");
	IS_U64(spandir_manifest_u64(doc, SPANDIR_M_Q("insns"), 0), 4567,
	    "quality.insns");
	json_decref(doc);
	json_decref(plain);

	/* Every bit of every byte: refused, with one of the messages. */
	if ((copy = malloc(len)) == NULL)
		return;
	for (size_t i = 0; i < len; i++)
		for (int b = 0; b < 8; b++) {
			memcpy(copy, text, len);
			copy[i] ^= (char)(1 << b);
			flips++;
			error_clear(&e);
			if ((doc = spandir_manifest_parse(copy, len, &e)) != NULL) {
				json_decref(doc);
				DIAG("byte %zu bit %d answered", i, b);
				continue;
			}
			refused++;
			if (!refused_clearly(e.msg)) {
				unclear++;
				DIAG("byte %zu bit %d: %s", i, b, e.msg);
			}
		}
	IS_U64(refused, flips, "every flipped bit refused (%zu)", flips);
	IS_U64(unclear, 0, "each saying the manifest is damaged");
	/* Cut short anywhere, or one byte more. */
	for (size_t n = 0; n < len; n++) {
		doc = spandir_manifest_parse(text, n, &e);
		cuts += doc == NULL && refused_clearly(e.msg);
		json_decref(doc);
	}
	IS_U64(cuts, len, "every truncation refused");
	free(copy);
	if ((copy = malloc(len + 1)) != NULL) {
		memcpy(copy, text, len);
		copy[len] = '\n';
		OK(spandir_manifest_parse(copy, len + 1, &e) == NULL,
		    "a byte past the checksum refused");
		IS_STR(e.msg, "manifest.json does not end with its checksum "
		    "(manifest_xxh64): it was cut short, changed or damaged "
		    "(run ptspans again)", "as not ending with it");
		free(copy);
	}
	/* A changed digit: the message quotes the checksum the file holds. */
	copy = strdup(text);
	if (copy != NULL && (t = strstr(copy, "4567")) != NULL) {
		t[0] = '5';
		OK(spandir_manifest_parse(copy, len, &e) == NULL,
		    "quality.insns changed: refused");
		snprintf(want, sizeof(want), "%.18s", text + len - 21);
		OK(strstr(e.msg, want) != NULL && strncmp(e.msg, "manifest.json "
		    "does not match its checksum (manifest_xxh64 0x", 59) == 0,
		    "saying which checksum: %s", e.msg);
	}
	free(copy);

	/* Through a descriptor, as analysis_open reads it. */
	if ((fd = mkstemp(path)) >= 0) {
		OK(write(fd, text, len) == (ssize_t)len &&
		    lseek(fd, 0, SEEK_SET) == 0, "written to a file");
		doc = spandir_manifest_read_fd(fd, &e);
		OK(doc != NULL && spandir_manifest_u64(doc, SPANDIR_M_SPANS,
		    0) == 3, "read back from a descriptor");
		json_decref(doc);
		OK(ftruncate(fd, 0) == 0 && spandir_manifest_read_fd(fd, &e) ==
		    NULL, "an empty file refused");
		IS_STR(e.msg, "manifest.json does not end with its checksum "
		    "(manifest_xxh64): it was cut short, changed or damaged "
		    "(run ptspans again)", "as cut short");
		close(fd);
		unlink(path);
	}
	free(text);

	/* Written before the checksum: told to run ptspans again. */
	lit = "{\"v\":1,\"quality\":{\"spans\":3},\"files\":[]}\n";
	OK(spandir_manifest_parse(lit, strlen(lit), &e) == NULL,
	    "version 1, without the member: refused");
	IS_INT(e.code, ERR_UNSUPPORTED, "as of another version");
	IS_STR(e.msg, "manifest.json: analysis version 1, not 2 (written by "
	    "an older ptspans: run ptspans again)", "an older ptspans");
	/* Version 2 without it: its key or its end damaged. */
	lit = "{\"v\":2,\"quality\":{\"spans\":3},\"files\":[],"
	    "\"manifest_xxh46\":\"0x0000000000000000\"}\n";
	OK(spandir_manifest_parse(lit, strlen(lit), &e) == NULL,
	    "version 2 with a damaged key: refused");
	IS_INT(e.code, ERR_FORMAT, "as damaged");
	/* Sealed by a forger: checked for what it says. */
	t = sealed("{\"v\":3,");
	OK(t != NULL && spandir_manifest_parse(t, strlen(t), &e) == NULL,
	    "a sealed version 3 refused");
	IS_STR(e.msg, "manifest.json: analysis version 3, not 2 (written by "
	    "a newer ptspans: run ptspans again)", "a newer ptspans");
	free(t);
	t = sealed("{\"v\":2,,");
	OK(t != NULL && spandir_manifest_parse(t, strlen(t), &e) == NULL,
	    "sealed bytes that are not JSON refused");
	OK(strncmp(e.msg, "manifest.json: line 1 column ", 29) == 0,
	    "saying where: %s", e.msg);
	free(t);
	t = sealed("{\"v\":2,");
	doc = t != NULL ? spandir_manifest_parse(t, strlen(t), &e) : NULL;
	OK(doc != NULL && json_object_size(doc) == 2, "a sealed {v, checksum}"
	    " is a manifest");
	json_decref(doc);
	free(t);
}

/* gaps.jsonl, threads.jsonl and events.jsonl's checksums: written as
 * spans_xxh64 is when they are given, read back by their members. */
static void
test_file_checksums(void)
{
	struct spandir_quality q = { .spans = 3 };
	struct blks_header h = { .time_base_ns = 100 };
	struct spandir_manifest m = { .analysis_id = "default",
	    .tool = "t", .snapshot = "/s", .decoder = "fast", .time = &h,
	    .quality = &q, .files_hashed = 1 };
	char *text = NULL;
	size_t len = 0;
	struct error e;
	json_t *doc;
	uint64_t sum;
	FILE *f;

	m.files_xxh64[SPANDIR_GAPS] = 0x1;
	m.files_xxh64[SPANDIR_THREADS] = 0xfedcba9876543210ull;
	m.files_xxh64[SPANDIR_EVENTS] = 0xabc;
	m.files_xxh64[SPANDIR_SPANS] = 0x77;	/* not written: no member */
	IS_STR(spandir_xxh64_member(SPANDIR_GAPS), "gaps_xxh64", "gaps");
	IS_STR(spandir_xxh64_member(SPANDIR_THREADS), "threads_xxh64",
	    "threads");
	IS_STR(spandir_xxh64_member(SPANDIR_EVENTS), "events_xxh64",
	    "events");
	for (int hashed = 1; hashed >= 0; hashed--) {
		m.files_hashed = hashed;
		if ((f = open_memstream(&text, &len)) == NULL)
			return;
		IS_INT(spandir_write_manifest(f, &m), 0, "written");
		fclose(f);
		doc = spandir_manifest_parse(text, len, &e);
		OK(doc != NULL, "read back");
		if (hashed) {
			OK(strstr(text, "\"gaps_xxh64\":\"0x0000000000000001\","
			    "\"threads_xxh64\":\"0xfedcba9876543210\","
			    "\"events_xxh64\":\"0x0000000000000abc\"") != NULL,
			    "0x and 16 hex digits each, in file order");
			IS_INT(spandir_manifest_xxh64(doc,
			    SPANDIR_M_THREADS_XXH64, &sum), 1, "threads_xxh64");
			IS_U64(sum, 0xfedcba9876543210ull, "its value");
		} else {
			OK(strstr(text, "gaps_xxh64") == NULL &&
			    strstr(text, "threads_xxh64") == NULL &&
			    strstr(text, "events_xxh64") == NULL,
			    "not given: not written");
			IS_INT(spandir_manifest_xxh64(doc, SPANDIR_M_GAPS_XXH64,
			    &sum), 0, "absent");
		}
		OK(strstr(text, "0x0000000000000077") == NULL,
		    "spans.jsonl has none of these");
		json_decref(doc);
		free(text);
		text = NULL;
	}
}

int
main(void)
{
	test_names();
	test_span_row();
	test_records_and_manifest();
	test_manifest_checksum();
	test_file_checksums();
	return tap_done();
}
