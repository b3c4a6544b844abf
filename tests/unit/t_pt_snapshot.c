/*
 * t_pt_snapshot: the pt recorder's translation of captured rings and
 * sideband into a snapshot directory, with fake rings and records (no
 * Intel PT here) and the fake Skylake tree's caps and config.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "pt_snapshot.h"
#include "snapwrite.h"
#include "rec/ptcaps.h"
#include "rec/ptconfig.h"
#include "tap.h"

static char tmp[] = "/tmp/t_pt_snapshot.XXXXXX";
static char self[PATH_MAX];

static struct ptsb_record
rec(uint32_t type, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct ptsb_record r;

	memset(&r, 0, sizeof(r));
	r.type = type;
	r.sid.pid = pid;
	r.sid.tid = tid;
	r.sid.time = time;
	r.sid.cpu = PERFDATA_NO_CPU;
	return r;
}

/* Records a thread's ring drain could give, with strings that vanish. */
static void
fill_sideband(struct pt_sideband *sb)
{
	struct ptsb_record r;
	char name[32];

	r = rec(PERF_RECORD_COMM, 100, 100, 10);
	r.u.comm.pid = r.u.comm.tid = 100;
	r.u.comm.exec = 1;
	snprintf(name, sizeof(name), "prog");
	r.u.comm.comm = name;
	IS_INT(pt_sideband_add(&r, sb), 0, "COMM added");
	memset(name, 'x', 4);		/* the ring's bytes move on */
	r = rec(PERF_RECORD_MMAP2, 100, 100, 20);
	r.u.mmap.pid = r.u.mmap.tid = 100;
	r.u.mmap.addr = 0x400000;
	r.u.mmap.len = 0x1000;
	r.u.mmap.prot = PROT_READ | PROT_EXEC;
	r.u.mmap.flags = 2;
	r.u.mmap.filename = self;
	IS_INT(pt_sideband_add(&r, sb), 0, "MMAP2 (code) added");
	r.u.mmap.prot = PROT_READ | PROT_WRITE;
	r.u.mmap.addr = 0x600000;
	r.sid.time = 21;
	IS_INT(pt_sideband_add(&r, sb), 0, "MMAP2 (data) added");
	r.u.mmap.prot = PROT_READ | PROT_EXEC;
	r.u.mmap.addr = 0x7fff0000;
	r.u.mmap.filename = "[vdso]";
	r.sid.time = 21;
	IS_INT(pt_sideband_add(&r, sb), 0, "MMAP2 (vdso) added");
	/* drained later from the second thread's ring, but earlier in time */
	r = rec(PERF_RECORD_FORK, 100, 101, 15);
	r.u.task.pid = r.u.task.ppid = 100;
	r.u.task.tid = 101;
	r.u.task.ptid = 100;
	r.u.task.time = 15;
	IS_INT(pt_sideband_add(&r, sb), 0, "FORK added");
	r = rec(PERF_RECORD_COMM, 100, 101, 16);
	r.u.comm.pid = 100;
	r.u.comm.tid = 101;
	r.u.comm.comm = "worker";
	IS_INT(pt_sideband_add(&r, sb), 0, "second COMM added");
	r = rec(PERF_RECORD_ITRACE_START, 100, 101, 17);
	r.u.itrace.pid = 100;
	r.u.itrace.tid = 101;
	IS_INT(pt_sideband_add(&r, sb), 0, "ITRACE_START added");
	r = rec(PERF_RECORD_LOST, 100, 101, 30);
	r.u.lost.lost = 3;
	IS_INT(pt_sideband_add(&r, sb), 0, "LOST counted");
	IS_U64(sb->n, 7, "LOST is counted, not kept");
	IS_U64(sb->lost, 3, "3 records lost");
	IS_STR(sb->rec[0].u.comm.comm, "prog", "COMM string is a copy");
}

static void
check_manifest(const char *dir)
{
	char path[PATH_MAX + 32];
	struct manifest m;
	struct error e;
	size_t i;
	int found;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	if (manifest_read(path, &m, &e) < 0) {
		OK(0, "manifest: %s", e.msg);
		return;
	}
	IS_STR(m.recorder.backend, "pt", "recorder.backend");
	IS_U64(m.pt.config, 0x3082603ULL, "pt.config: normal on Skylake");
	IS_STR(m.pt.timing_profile, "normal", "pt.timing_profile");
	IS_INT(m.pt.cyc, 1, "pt.cyc");
	IS_INT(m.pt.noretcomp, 0, "pt.noretcomp");
	IS_INT(m.pt.cyc_threshold, 1, "pt.cyc_threshold");
	IS_INT(m.pt.psb_period, 3, "pt.psb_period");
	IS_STR(m.pt.clock, "tsc", "pt.clock");
	IS_U64(m.pt.time_mult, 500, "pt.time_mult from TIME_CONV");
	IS_INT(m.pt.pmu_type, 8, "pt.pmu_type from the PMU");
	IS_STR(m.host.cpu_vendor, "GenuineIntel", "host.cpu_vendor");
	IS_INT(m.host.cpu_model, 94, "host.cpu_model");
	IS_INT(m.host.emulated, 0, "host.emulated");
	IS_STR(m.trigger.kind, "exit", "trigger.kind");
	for (i = 0, found = 0; i < m.recorder.nr_settings; i++)
		if (strcmp(m.recorder.settings[i].key, "trigger_mode") == 0 &&
		    strcmp(m.recorder.settings[i].value, "park") == 0)
			found++;
	IS_INT(found, 1, "settings.trigger_mode says how the trigger was "
	    "armed");
	IS_STR(m.target.state, "exited", "target.state");
	IS_INT(m.target.exit_code, 7, "target.exit_code");
	IS_U64(m.nr_threads, 2, "two thread rows");
	if (m.nr_threads == 2) {
		IS_INT(m.threads[0].tid, 100, "thread 0 tid");
		IS_STR(m.threads[0].name, "prog", "thread 0 comm");
		IS_U64(m.threads[0].bytes_kept, 5, "thread 0 bytes kept");
		IS_INT(m.threads[0].wrapped, 0, "thread 0 not wrapped");
		IS_INT(m.threads[1].wrapped, 1, "thread 1 wrapped");
		IS_U64(m.threads[1].ring_size, 8, "thread 1 ring size");
		IS_STR(m.threads[1].name, "worker", "thread 1 comm");
		IS_INT(m.threads[1].exited, 1, "thread 1 exited");
	}
	IS_U64(m.capture.start_ns, 10, "capture starts at the first record");
	IS_U64(m.capture.end_ns, 21, "capture ends at the last record");
	for (i = 0, found = 0; i < m.nr_warnings; i++)
		found += strstr(m.warnings[i], "thread 101: its 8-byte ring "
		    "wrapped") != NULL || strstr(m.warnings[i],
		    "lost 3 sideband records") != NULL;
	IS_INT(found, 2, "warnings: the wrap and the lost records");
	OK(manifest_find_image(&m, self) != NULL, "the code image archived");
	OK(manifest_find_image(&m, "[vdso]") != NULL &&
	    manifest_find_image(&m, "[vdso]")->is_vdso,
	    "the vDSO archived from memory");
	manifest_free(&m);
}

static void
check_perf_data(const char *dir, const uint8_t *ring0, const uint8_t *ring1)
{
	char path[PATH_MAX + 32];
	struct perfdata *pd;
	struct error e;
	uint8_t *buf;
	size_t len;

	snprintf(path, sizeof(path), "%s/perf.data", dir);
	if (perfdata_read(&pd, path, &e) < 0) {
		OK(0, "perf.data: %s", e.msg);
		return;
	}
	IS_U64(pd->nr_queues, 2, "two AUXTRACE queues");
	if (pd->nr_queues == 2 && perfdata_queue_data(pd, &pd->queues[0],
	    &buf, &len, &e) == 0) {
		IS_MEM(buf, ring0, 5, "queue 0 holds ring 0");
		IS_U64(len, 8, "queue 0 length: 5 bytes padded to 8");
		if (len == 8)
			OK(buf[5] == 0 && buf[6] == 0 && buf[7] == 0,
			    "padding is zero (PAD packets)");
		IS_INT(pd->queues[0].tid, 100, "queue 0 tid");
		free(buf);
	}
	if (pd->nr_queues == 2 && perfdata_queue_data(pd, &pd->queues[1],
	    &buf, &len, &e) == 0) {
		IS_MEM(buf, ring1, 8, "queue 1 holds ring 1, oldest first");
		IS_INT(pd->queues[1].tid, 101, "queue 1 tid");
		free(buf);
	}
	IS_U64(pd->nr_mmaps, 2, "only the code mappings are written");
	if (pd->nr_mmaps == 2)
		OK(pd->mmaps[0].build_id_size > 0 &&
		    pd->mmaps[1].build_id_size > 0, "each MMAP2 carries a "
		    "build-id");
	IS_U64(pd->nr_comms, 2, "two COMMs");
	IS_U64(pd->nr_tasks, 1, "one FORK");
	IS_U64(pd->nr_itrace_starts, 1, "one ITRACE_START");
	IS_U64(pd->attrs[0].config, 0x3082603ULL, "attr config");
	IS_U64(pd->pt.priv[PERFDATA_PT_SNAPSHOT_MODE], 1, "snapshot mode");
	IS_U64(pd->pt.priv[PERFDATA_PT_PMU_TYPE], 8, "priv pmu type");
	IS_U64(pd->pt.priv[PERFDATA_PT_MAX_NONTURBO_RATIO], 34,
	    "priv max_nonturbo_ratio");
	IS_U64(pd->time_conv.time_mult, 500, "TIME_CONV mult");
	if (pd->nr_tasks == 1 && pd->nr_mmaps == 2)
		OK(pd->tasks[0].file_offset < pd->mmaps[0].file_offset,
		    "records in time order: the FORK drained later comes "
		    "before the MMAP2");
	perfdata_free(pd);
}

/* A JIT map of the traced pid is archived (jit_archive.h). */
static void
check_jit_map(struct pt_run *run, const struct pt_sideband *sb,
    const struct pt_ring *rings)
{
	char map[64], dest[PATH_MAX], path[PATH_MAX + 32];
	struct manifest m;
	struct error e;
	FILE *f;

	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	if ((f = fopen(map, "w")) == NULL) {
		OK(0, "%s: cannot write", map);
		return;
	}
	fputs("7f0000001000 10 jitted\n", f);
	fclose(f);
	run->pid = (int)getpid();
	snprintf(dest, sizeof(dest), "%s/jit", tmp);
	IS_INT(pt_snapshot_write(run, sb, rings, 2, dest, &e), 0,
	    "snapshot with a JIT map written");
	unlink(map);
	snprintf(path, sizeof(path), "%s/manifest.json", dest);
	if (manifest_read(path, &m, &e) < 0) {
		OK(0, "manifest: %s", e.msg);
		return;
	}
	OK(m.nr_jit_maps == 1 && m.jit_maps[0].pid == (uint32_t)getpid() &&
	    strcmp(m.jit_maps[0].path, map) == 0, "jit_maps row");
	snprintf(path, sizeof(path), "%s/%s", dest,
	    m.nr_jit_maps == 1 ? m.jit_maps[0].archived : "-");
	OK(access(path, R_OK) == 0, "the map archived");
	manifest_free(&m);
}

static void
test_write(const struct ptcaps *caps)
{
	static const uint8_t ring0[5] = { 1, 2, 3, 4, 5 };
	static const uint8_t ring1[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };
	struct pt_ring rings[2] = {
		{ .tid = 100, .pid = 100, .ring_size = 16, .data = ring0,
		  .kept = 5 },
		{ .tid = 101, .pid = 100, .ring_size = 8, .data = ring1,
		  .kept = 8, .wrapped = 1, .exited = 1 },
	};
	char *argv[] = { "prog", NULL };
	struct rec_options o;
	struct perfdata_time_conv tc;
	struct pt_sideband sb;
	struct ptconfig cfg;
	struct pt_run run;
	struct error e;
	char dest[PATH_MAX], out[PATH_MAX];
	int rc;

	memset(&o, 0, sizeof(o));
	o.aux_bytes = 16;
	o.budget_bytes = 64;
	o.program = argv;
	memset(&sb, 0, sizeof(sb));
	fill_sideband(&sb);
	if (ptconfig_build(caps, PTCONFIG_NORMAL, 0, &cfg, &e) < 0) {
		OK(0, "ptconfig_build: %s", e.msg);
		pt_sideband_free(&sb);
		return;
	}
	memset(&tc, 0, sizeof(tc));
	tc.time_shift = 10;
	tc.time_mult = 500;
	tc.cap_user_time_zero = 1;
	memset(&run, 0, sizeof(run));
	run.opt = &o;
	run.caps = caps;
	run.cfg = &cfg;
	run.tc = &tc;
	run.pid = 100;
	run.state = "exited";
	run.exit_code = 7;
	run.reason = "exit";
	run.trigger_mode = "park";
	snprintf(out, sizeof(out), "%s/snap", tmp);
	o.out_dir = out;
	rc = snapwrite_dest(&o, 1, dest, sizeof(dest), &e);
	IS_INT(rc, 0, "dest for -o");
	rc = pt_snapshot_write(&run, &sb, rings, 2, dest, &e);
	IS_INT(rc, 0, "snapshot written%s%s", rc < 0 ? ": " : "",
	    rc < 0 ? e.msg : "");
	if (rc == 0) {
		check_manifest(dest);
		check_perf_data(dest, ring0, ring1);
	}
	rc = pt_snapshot_write(&run, &sb, rings, 2, dest, &e);
	IS_INT(rc, -ERR_EXISTS, "an existing snapshot is not overwritten");
	check_jit_map(&run, &sb, rings);
	pt_sideband_free(&sb);
}

static void
test_dest(void)
{
	struct rec_options o;
	struct error e;
	char out[64];

	memset(&o, 0, sizeof(o));
	o.out_dir = "out/s";
	IS_INT(snapwrite_dest(&o, 3, out, sizeof(out), &e), 0, "-o, 3rd");
	IS_STR(out, "out/s.3", "-o DIR gets .3 for the third snapshot");
	IS_INT(snapwrite_dest(&o, 1, out, 4, &e), -ERR_RANGE,
	    "a path too long is refused");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char root[4200];
	struct ptcaps *caps;
	struct error e;
	ssize_t n;

	if (mkdtemp(tmp) == NULL || (n = readlink("/proc/self/exe", self,
	    sizeof(self) - 1)) < 0) {
		OK(0, "setup");
		return tap_done();
	}
	self[n] = '\0';
	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/skylake",
	    src != NULL ? src : ".");
	if ((caps = malloc(sizeof(*caps))) == NULL ||
	    ptcaps_probe(caps, root, PTCAPS_NO_TOOLS, &e) < 0) {
		OK(0, "probe %s", root);
		free(caps);
		return tap_done();
	}
	test_dest();
	test_write(caps);
	free(caps);
	STEP(cleanup_remove_tree(tmp));
	return tap_done();
}
