/*
 * t_perf_import: a perf.data written by `perf record -e cpu-clock` (perf
 * 6.1, tests/data/perf-record) taken into a snapshot directory the way the
 * perf recorder takes perf's intel_pt file: copied byte for byte, the
 * images its MMAP records name archived, the manifest added.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fmt/manifest.h"
#include "perf_import.h"
#include "fmt/perfdata.h"
#include "rec/ptcaps.h"
#include "tap.h"

static char tmp[] = "/tmp/t_perf_import.XXXXXX";

static int
same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int ca, cb, same = fa != NULL && fb != NULL;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		if (ca != cb)
			same = 0;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa != NULL)
		fclose(fa);
	if (fb != NULL)
		fclose(fb);
	return same;
}

/* Distinct absolute MMAP paths of code that exist on this machine. */
static size_t
local_images(const struct perfdata *pd)
{
	size_t i, j, n = 0;
	int dup;

	for (i = 0; i < pd->nr_mmaps; i++) {
		const char *f = pd->mmaps[i].filename;

		if (f == NULL || f[0] != '/' || access(f, R_OK) != 0 ||
		    (pd->mmaps[i].is_mmap2 && !(pd->mmaps[i].prot & 4)))
			continue;
		for (j = 0, dup = 0; j < i; j++)
			dup |= pd->mmaps[j].filename != NULL &&
			    strcmp(pd->mmaps[j].filename, f) == 0;
		n += !dup;
	}
	return n;
}

static void
test_import(const char *data, const struct ptcaps *caps)
{
	char *argv[] = { "sh", "-c", "loop", NULL };
	struct perf_import_run run;
	struct rec_options o;
	struct manifest m;
	struct perfdata *pd;
	struct error e;
	char dest[PATH_MAX], path[PATH_MAX + 32];
	size_t i, want, counted = 0;
	int rc;

	if (perfdata_read(&pd, data, &e) < 0) {
		OK(0, "read %s: %s", data, e.msg);
		return;
	}
	want = local_images(pd);
	DIAG("%zu of the recorded images exist here", want);
	memset(&o, 0, sizeof(o));
	o.aux_bytes = 4 << 20;
	o.program = argv;
	memset(&run, 0, sizeof(run));
	run.opt = &o;
	run.caps = caps;
	run.perf_version = "6.1.192";
	run.pid = 4242;
	run.state = "exited";
	run.reason = "exit";
	snprintf(dest, sizeof(dest), "%s/snap", tmp);
	rc = perf_import(&run, data, dest, &e);
	IS_INT(rc, 0, "imported%s%s", rc < 0 ? ": " : "", rc < 0 ? e.msg : "");
	snprintf(path, sizeof(path), "%s/perf.data", dest);
	OK(same_file(data, path), "perf.data is perf's, byte for byte");
	snprintf(path, sizeof(path), "%s/manifest.json", dest);
	if (manifest_read(path, &m, &e) < 0) {
		OK(0, "manifest: %s", e.msg);
		perfdata_free(pd);
		return;
	}
	IS_STR(m.recorder.backend, "perf", "recorder.backend");
	IS_STR(m.host.cpu_vendor, "GenuineIntel", "host from the caps");
	IS_INT(m.target.pid, 4242, "target.pid");
	IS_U64(m.target.argc, 3, "target.argv");
	IS_STR(m.trigger.kind, "exit", "trigger.kind");
	IS_U64(m.nr_threads, 0, "cpu-clock has no AUXTRACE queue: no thread");
	IS_U64(m.pt.config, 0, "no intel_pt attr: pt.config 0");
	OK(m.nr_warnings >= 1 && strstr(m.warnings[0], "the perf.data has no "
	    "intel_pt trace") == m.warnings[0], "a warning says there is no "
	    "intel_pt trace");
	IS_U64(m.nr_images, want, "every local code image archived once");
	for (i = 0; i < m.nr_counters; i++)
		if (strcmp(m.counters[i].name, "images_archived") == 0)
			counted = m.counters[i].value;
	IS_U64(counted, want, "images_archived counter");
	for (i = 0; i < m.nr_images; i++) {
		snprintf(path, sizeof(path), "%s/%s", dest, m.images[i].archived);
		OK(same_file(m.images[i].path, path), "%s archived as is",
		    m.images[i].path);
	}
	manifest_free(&m);
	rc = perf_import(&run, data, dest, &e);
	IS_INT(rc, -ERR_EXISTS, "an existing snapshot is not overwritten");
	snprintf(dest, sizeof(dest), "%s/bad", tmp);
	rc = perf_import(&run, "/nonexistent/perf.data", dest, &e);
	OK(rc < 0 && access(dest, F_OK) != 0, "a missing perf.data: %s, "
	    "nothing left behind", e.msg);
	perfdata_free(pd);
}

/* The JIT map of the recorded pid is archived (jit_archive.h). */
static void
test_jit_map(const char *data, const struct ptcaps *caps)
{
	char *argv[] = { "jit", NULL };
	struct perf_import_run run;
	struct rec_options o;
	struct manifest m;
	struct error e;
	char map[64], dest[PATH_MAX], path[PATH_MAX + 96], want[64];
	FILE *f;

	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	if ((f = fopen(map, "w")) == NULL) {
		OK(0, "%s: cannot write", map);
		return;
	}
	fputs("7f0000001000 10 jitted\n", f);
	fclose(f);
	memset(&o, 0, sizeof(o));
	o.aux_bytes = 4 << 20;
	o.program = argv;
	memset(&run, 0, sizeof(run));
	run.opt = &o;
	run.caps = caps;
	run.pid = (int)getpid();
	run.state = "exited";
	run.reason = "exit";
	snprintf(dest, sizeof(dest), "%s/jit", tmp);
	IS_INT(perf_import(&run, data, dest, &e), 0, "imported with a JIT map");
	unlink(map);
	snprintf(path, sizeof(path), "%s/manifest.json", dest);
	if (manifest_read(path, &m, &e) < 0) {
		OK(0, "manifest: %s", e.msg);
		return;
	}
	snprintf(want, sizeof(want), "jit/perf-%d.map", (int)getpid());
	OK(m.nr_jit_maps == 1 && m.jit_maps[0].pid == (uint32_t)getpid() &&
	    strcmp(m.jit_maps[0].path, map) == 0 &&
	    strcmp(m.jit_maps[0].archived, want) == 0, "jit_maps row");
	snprintf(path, sizeof(path), "%s/%s", dest, want);
	f = fopen(path, "r");
	OK(f != NULL && fgets(want, sizeof(want), f) != NULL &&
	    strcmp(want, "7f0000001000 10 jitted\n") == 0,
	    "the map archived as it was");
	if (f != NULL)
		fclose(f);
	manifest_free(&m);
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char root[4200], data[4200];
	struct ptcaps *caps;
	struct error e;

	if (src == NULL)
		src = ".";
	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/skylake", src);
	snprintf(data, sizeof(data), "%s/tests/data/perf-record/cpu-clock.data",
	    src);
	if (mkdtemp(tmp) == NULL || (caps = malloc(sizeof(*caps))) == NULL) {
		OK(0, "setup");
		return tap_done();
	}
	if (ptcaps_probe(caps, root, PTCAPS_NO_TOOLS, &e) < 0)
		OK(0, "probe %s: %s", root, e.msg);
	else {
		test_import(data, caps);
		test_jit_map(data, caps);
	}
	free(caps);
	STEP(cleanup_remove_tree(tmp));
	return tap_done();
}
