/*
 * t_perfdata: the perf.data writer and reader.  The reader must give back
 * every field the writer wrote, parse files from `perf record` (with and
 * without -z) and real hardware (quipper's Skylake trace) with the record
 * counts `perf report -D` prints, and reject damaged files with an error
 * naming the offset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt/perfdata.h"
#include "tap.h"

static char tmpdir[] = "/tmp/t_perfdata.XXXXXX";

static const uint8_t bid_a[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
	7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t bid_b[8] = { 0xca, 0xfe, 0xba, 0xbe, 0, 1, 2, 3 };
static const uint8_t trace_a[13] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
	2, 0x82, 2, 0x82, 0x99 };
static const uint8_t trace_b[8] = { 0x19, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t trace_c[3] = { 0x71, 0x25, 0x16 };

static struct perfdata_sid
sid(uint32_t pid, uint32_t tid, uint64_t time)
{
	struct perfdata_sid s = { pid, tid, time, PERFDATA_NO_CPU, 0 };

	return s;
}

static void
fill_config(struct perfdata_writer_config *cfg)
{
	perfdata_writer_config_default(cfg, 1);
	cfg->pt_config |= PERFDATA_PT_CFG_MTC | (3ULL << 14) | PERFDATA_PT_CFG_CYC;
	for (int i = 0; i < PERFDATA_PT_PRIV_NR; i++)
		if (cfg->pt.priv[i] == 0)
			cfg->pt.priv[i] = 100 + (uint64_t)i;
	cfg->pt.priv[PERFDATA_PT_PMU_TYPE] = 42;
	cfg->pt.priv[PERFDATA_PT_TIME_ZERO] = 0xfffffff86343cb91ULL;
	cfg->pt.filter = "filter 0x1000/0x40@/bin/true";
	cfg->host.hostname = "host-a";
	cfg->host.osrelease = "6.1.0-test";
	cfg->host.version = "0.1.0";
	cfg->host.arch = "x86_64";
	cfg->host.cpudesc = "Test CPU";
	cfg->host.cpuid = "GenuineIntel,6,85,4";
	cfg->host.nr_cpus_avail = 8;
	cfg->host.nr_cpus_online = 6;
}

static int
write_file(const char *path)
{
	struct perfdata_writer_config cfg;
	struct perfdata_writer *w;
	struct perfdata_time_conv tc = { 31, 858993459, 500000000000ULL, 77,
		0xffffff, 1, 0 };
	struct perfdata_comm c = { sid(10, 11, 900), 10, 11, 1, "prog", 0 };
	struct perfdata_mmap m1 = { .sid = sid(10, 10, 901), .pid = 10,
	    .tid = 10, .addr = 0x400000, .len = 0x2000, .pgoff = 0x1000,
	    .build_id_size = 20, .prot = 5, .flags = 2,
	    .filename = "/usr/bin/prog" };
	struct perfdata_mmap m2 = { .sid = sid(10, 10, 902), .pid = 10,
	    .tid = 10, .addr = 0x7f0000000000ULL, .len = 0x10000,
	    .pgoff = 0x3000, .maj = 8, .min = 1, .ino = 1234,
	    .ino_generation = 5, .prot = 5, .flags = 2,
	    .filename = "/lib/libsomething-with-a-long-name.so.1" };
	struct perfdata_itrace_start it = { sid(10, 11, 903), 10, 11, 0 };
	struct perfdata_aux aux = { sid(10, 11, 2000), 4096, 13,
		PERFDATA_AUX_FLAG_TRUNCATED, 0 };
	struct perfdata_task fork = { sid(10, 11, 899), 10, 10, 11, 10, 899,
		1, 0 };
	struct perfdata_task ex = { sid(10, 11, 3000), 10, 10, 11, 10, 3000,
		0, 0 };
	struct perfdata_auxtrace a0 = { .offset = 0, .reference = 0x1234,
	    .idx = 0, .tid = 11, .cpu = PERFDATA_NO_CPU };
	struct perfdata_auxtrace a3 = { .offset = 64, .reference = 0x5678,
	    .idx = 3, .tid = 10, .cpu = PERFDATA_NO_CPU };
	struct error e;
	int rc;

	memcpy(m1.build_id, bid_a, 20);
	error_clear(&e);
	fill_config(&cfg);
	if ((rc = perfdata_writer_open(&w, path, &cfg, &e)) < 0)
		return rc;
	if (perfdata_write_time_conv(w, &tc, &e) < 0 ||
	    perfdata_write_auxtrace_info(w, &e) < 0 ||
	    perfdata_write_task(w, &fork, &e) < 0 ||
	    perfdata_write_comm(w, &c, &e) < 0 ||
	    perfdata_write_mmap2(w, &m1, &e) < 0 ||
	    perfdata_write_mmap2(w, &m2, &e) < 0 ||
	    perfdata_write_itrace_start(w, &it, &e) < 0 ||
	    perfdata_write_finished_round(w, &e) < 0 ||
	    perfdata_write_auxtrace(w, &a0, trace_a, sizeof(trace_a), &e) < 0 ||
	    perfdata_write_auxtrace(w, &a3, trace_c, sizeof(trace_c), &e) < 0 ||
	    perfdata_write_auxtrace(w, &a0, trace_b, sizeof(trace_b), &e) < 0 ||
	    perfdata_write_aux(w, &aux, &e) < 0 ||
	    perfdata_write_task(w, &ex, &e) < 0 ||
	    perfdata_writer_add_build_id(w, -1, bid_a, 20, "/usr/bin/prog",
	    &e) < 0 ||
	    perfdata_writer_add_build_id(w, 10, bid_b, 8, "/lib/b.so", &e) < 0) {
		DIAG("write: %s", e.msg);
		perfdata_writer_abort(w);
		return -1;
	}
	if (perfdata_writer_close(w, &e) < 0) {
		DIAG("close: %s", e.msg);
		return -1;
	}
	return 0;
}

static void
check_sid(const struct perfdata_sid *s, uint32_t pid, uint32_t tid,
    uint64_t time, const char *what)
{
	IS_INT(s->pid, pid, "%s: trailer pid", what);
	IS_INT(s->tid, tid, "%s: trailer tid", what);
	IS_U64(s->time, time, "%s: trailer time", what);
	IS_INT(s->cpu, PERFDATA_NO_CPU, "%s: trailer cpu", what);
	IS_U64(s->id, PERFDATA_WRITER_ID, "%s: trailer id", what);
}

static void
check_header_attr(const struct perfdata *pd)
{
	struct perfdata_writer_config cfg;
	const struct perfdata_attr *a = &pd->attrs[0];

	fill_config(&cfg);
	IS_INT(pd->nr_attrs, 1, "one attr");
	IS_INT(a->type, 42, "attr type = PMU type");
	IS_INT(a->size, 128, "attr size 128 (perf 6.1's maximum)");
	IS_U64(a->config, cfg.pt_config, "attr config");
	IS_U64(a->sample_type, 0x10087, "sample_type IP|TID|TIME|CPU|IDENTIFIER");
	OK(a->flags & PERFDATA_ATTR_SAMPLE_ID_ALL, "sample_id_all set");
	IS_INT(a->nr_ids, 1, "one id");
	IS_U64(a->ids[0], PERFDATA_WRITER_ID, "the id");
	IS_U64(pd->data_offset, 256, "data at 0x100");
	OK(pd->has_pt_info, "AUXTRACE_INFO read");
	IS_INT(pd->auxtrace_info_type, PERFDATA_AUXTRACE_INTEL_PT, "intel_pt");
	IS_INT(pd->pt.nr_priv, PERFDATA_PT_PRIV_NR, "17 priv values");
	for (int i = 0; i < PERFDATA_PT_PRIV_NR; i++) {
		uint64_t want = i == PERFDATA_PT_FILTER_STR_LEN ?
		    strlen(cfg.pt.filter) : cfg.pt.priv[i];

		IS_U64(pd->pt.priv[i], want, "priv[%d]", i);
	}
	IS_STR(pd->pt.filter, cfg.pt.filter, "filter string");
}

static void
check_sideband(const struct perfdata *pd)
{
	IS_INT(pd->has_time_conv, 1, "TIME_CONV read");
	IS_U64(pd->time_conv.time_shift, 31, "time_shift");
	IS_U64(pd->time_conv.time_mult, 858993459, "time_mult");
	IS_U64(pd->time_conv.time_zero, 500000000000ULL, "time_zero");
	IS_U64(pd->time_conv.time_cycles, 77, "time_cycles");
	IS_U64(pd->time_conv.time_mask, 0xffffff, "time_mask");
	IS_INT(pd->time_conv.cap_user_time_zero, 1, "cap_user_time_zero");
	IS_INT(pd->nr_comms, 1, "one COMM");
	IS_STR(pd->comms[0].comm, "prog", "comm");
	IS_INT(pd->comms[0].exec, 1, "comm exec");
	IS_INT(pd->comms[0].tid, 11, "comm tid");
	check_sid(&pd->comms[0].sid, 10, 11, 900, "COMM");
	IS_INT(pd->nr_mmaps, 2, "two MMAP2");
	IS_INT(pd->mmaps[0].is_mmap2, 1, "MMAP2");
	IS_U64(pd->mmaps[0].addr, 0x400000, "mmap addr");
	IS_U64(pd->mmaps[0].len, 0x2000, "mmap len");
	IS_U64(pd->mmaps[0].pgoff, 0x1000, "mmap pgoff");
	IS_INT(pd->mmaps[0].build_id_size, 20, "build-id form");
	IS_MEM(pd->mmaps[0].build_id, bid_a, 20, "mmap build-id");
	IS_INT(pd->mmaps[0].prot, 5, "prot");
	IS_INT(pd->mmaps[0].flags, 2, "flags");
	IS_STR(pd->mmaps[0].filename, "/usr/bin/prog", "filename");
	check_sid(&pd->mmaps[0].sid, 10, 10, 901, "MMAP2");
	IS_INT(pd->mmaps[1].build_id_size, 0, "inode form");
	IS_INT(pd->mmaps[1].maj, 8, "maj");
	IS_INT(pd->mmaps[1].min, 1, "min");
	IS_U64(pd->mmaps[1].ino, 1234, "ino");
	IS_U64(pd->mmaps[1].ino_generation, 5, "ino_generation");
	IS_STR(pd->mmaps[1].filename, "/lib/libsomething-with-a-long-name.so.1",
	    "long filename");
	IS_INT(pd->nr_itrace_starts, 1, "ITRACE_START");
	IS_INT(pd->itrace_starts[0].tid, 11, "itrace tid");
	check_sid(&pd->itrace_starts[0].sid, 10, 11, 903, "ITRACE_START");
	IS_INT(pd->nr_auxs, 1, "AUX");
	IS_U64(pd->auxs[0].aux_offset, 4096, "aux offset");
	IS_U64(pd->auxs[0].aux_size, 13, "aux size");
	IS_U64(pd->auxs[0].flags, PERFDATA_AUX_FLAG_TRUNCATED, "aux flags");
	IS_INT(pd->nr_tasks, 2, "FORK and EXIT");
	IS_INT(pd->tasks[0].is_fork, 1, "FORK");
	IS_INT(pd->tasks[1].is_fork, 0, "EXIT");
	IS_INT(pd->tasks[1].ppid, 10, "exit ppid");
	IS_INT(pd->tasks[1].ptid, 10, "exit ptid");
	IS_U64(pd->tasks[1].time, 3000, "exit time");
	check_sid(&pd->tasks[1].sid, 10, 11, 3000, "EXIT");
}

static void
check_trace(const struct perfdata *pd)
{
	const struct perfdata_queue *q0 = perfdata_queue_by_idx(pd, 0);
	const struct perfdata_queue *q3 = perfdata_queue_by_idx(pd, 3);
	uint8_t *buf = NULL;
	size_t len = 0;
	struct error e;

	IS_INT(pd->nr_auxtrace, 3, "three AUXTRACE records");
	IS_U64(pd->auxtrace[0].size, 16, "payload padded to 8");
	IS_MEM(pd->auxtrace[0].data, trace_a, sizeof(trace_a), "payload");
	OK(pd->auxtrace[0].data[13] == 0 && pd->auxtrace[0].data[15] == 0,
	    "padding is zero (PT PAD)");
	IS_U64(pd->auxtrace[0].reference, 0x1234, "reference");
	IS_INT(pd->auxtrace[0].cpu, PERFDATA_NO_CPU, "cpu -1");
	IS_INT(pd->auxtrace[1].tid, 10, "tid");
	IS_U64(pd->auxtrace[1].offset, 64, "offset");
	IS_INT(pd->nr_queues, 2, "two queues");
	OK(q0 != NULL && q3 != NULL, "queues 0 and 3");
	if (q0 == NULL || q3 == NULL)
		return;
	IS_INT(pd->queues[0].idx, 0, "queues sorted");
	IS_INT(q0->nr_chunks, 2, "queue 0 has two chunks");
	IS_U64(q0->total_size, 24, "queue 0 bytes");
	IS_INT(q0->tid, 11, "queue 0 tid");
	IS_INT(perfdata_queue_data(pd, q0, &buf, &len, &e), 0, "queue data");
	IS_INT(len, 24, "queue data length");
	if (buf != NULL && len == 24) {
		IS_MEM(buf, trace_a, 13, "chunk 1 first");
		IS_MEM(buf + 16, trace_b, 8, "chunk 2 after chunk 1's padding");
	}
	free(buf);
	IS_U64(pd->nr_auxtrace_index, 3, "HEADER_AUXTRACE has 3 entries");
	IS_U64(pd->nr_bad_index, 0, "each entry points at an AUXTRACE record");
}

static void
check_features(const struct perfdata *pd)
{
	struct perfdata_pt_timing t;
	struct error e;

	IS_INT(pd->nr_build_ids, 2, "HEADER_BUILD_ID entries");
	IS_MEM(pd->build_ids[0].id, bid_a, 20, "build-id 0");
	IS_INT(pd->build_ids[0].size, 20, "build-id 0 size");
	IS_INT(pd->build_ids[0].pid, -1, "build-id 0 pid");
	IS_STR(pd->build_ids[0].filename, "/usr/bin/prog", "build-id 0 file");
	IS_INT(pd->build_ids[1].size, 8, "build-id 1 size");
	IS_MEM(pd->build_ids[1].id, bid_b, 8, "build-id 1");
	IS_INT(pd->build_ids[1].pid, 10, "build-id 1 pid");
	IS_STR(pd->hostname, "host-a", "hostname");
	IS_STR(pd->osrelease, "6.1.0-test", "osrelease");
	IS_STR(pd->version, "0.1.0", "version");
	IS_STR(pd->arch, "x86_64", "arch");
	IS_STR(pd->cpudesc, "Test CPU", "cpudesc");
	IS_STR(pd->cpuid, "GenuineIntel,6,85,4", "cpuid");
	IS_INT(pd->nr_cpus_avail, 8, "nr_cpus_avail");
	IS_INT(pd->nr_cpus_online, 6, "nr_cpus_online");
	IS_U64(pd->nr_records, 13, "13 records");
	IS_U64(pd->nr_warnings, 0, "no warnings");
	IS_INT(perfdata_pt_timing(pd, &t, &e), 0, "pt timing");
	IS_INT(t.mtc_freq, 3, "mtc_freq from config bits 14..17");
	IS_INT(t.mtc, 1, "mtc on");
	IS_INT(t.cyc, 1, "cyc on");
	IS_INT(t.tsc, 1, "tsc on");
	IS_INT(t.noretcomp, 1, "noretcomp on");
	IS_INT(t.tsc_ctc_n, 112, "tsc_ctc_n");
	IS_INT(t.tsc_ctc_d, 113, "tsc_ctc_d");
	IS_INT(t.max_nonturbo_ratio, 115, "max_nonturbo_ratio");
}

static void
test_roundtrip(void)
{
	char path[256];
	struct perfdata *pd = NULL;
	struct error e;

	snprintf(path, sizeof(path), "%s/rt.data", tmpdir);
	if (!OK(write_file(path) == 0, "writer writes a file"))
		return;
	error_clear(&e);
	if (!OK(perfdata_read(&pd, path, &e) == 0, "reader reads it back")) {
		DIAG("%s", e.msg);
		return;
	}
	check_header_attr(pd);
	check_sideband(pd);
	check_trace(pd);
	check_features(pd);
	perfdata_free(pd);
	IS_INT(write_file(path), -ERR_EXISTS, "writer refuses an existing file");
}

static void
test_time_conv(void)
{
	struct perfdata_time_conv tc = { 31, 858993459, 500000000000ULL, 0, 0,
		1, 0 };
	struct perfdata_time_conv id = { 0, 1, 0, 0, 0, 1, 0 };

	/* 2.5 GHz: 1e12 ticks = 400 s after time_zero */
	IS_U64(perfdata_tsc_to_perf_time(1000000000000ULL, &tc),
	    899999999906ULL, "2.5 GHz conversion as perf computes it");
	IS_U64(perfdata_tsc_to_perf_time(12345, &id), 12345, "identity");
}

static char *
data_path(const char *rel)
{
	const char *src = getenv("PTKIT_SRC");
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/tests/data/%s", src ? src : ".", rel);
	return buf;
}

static void
test_perf_record(const char *file, uint64_t records, uint64_t samples,
    uint64_t compressed, size_t nr_build_ids)
{
	struct perfdata *pd = NULL;
	struct error e;

	error_clear(&e);
	if (!OK(perfdata_read(&pd, data_path(file), &e) == 0, "%s parses",
	    file)) {
		DIAG("%s", e.msg);
		return;
	}
	IS_U64(pd->nr_records, records, "%s: records as perf report -D", file);
	IS_U64(pd->nr_samples, samples, "%s: samples", file);
	IS_U64(pd->nr_compressed, compressed, "%s: COMPRESSED records", file);
	IS_INT(pd->nr_mmaps, 5, "%s: 1 MMAP + 4 MMAP2", file);
	IS_INT(pd->mmaps[0].is_mmap2, 0, "%s: the first is the kernel MMAP",
	    file);
	IS_INT(pd->nr_comms, 2, "%s: COMMs", file);
	IS_INT(pd->nr_tasks, 1, "%s: EXIT", file);
	IS_INT(pd->nr_build_ids, nr_build_ids, "%s: HEADER_BUILD_ID", file);
	IS_U64(pd->nr_unknown_records, 0, "%s: no unknown records", file);
	IS_U64(pd->nr_warnings, 0, "%s: no warnings", file);
	OK(!pd->has_pt_info, "%s: no AUXTRACE_INFO", file);
	IS_STR(pd->comms[1].comm, "sh", "%s: comm of the workload", file);
	perfdata_free(pd);
}

static void
test_quipper(void)
{
	struct perfdata *pd = NULL;
	struct perfdata_pt_timing t;
	struct error e;

	error_clear(&e);
	if (!OK(perfdata_read(&pd, data_path(
	    "quipper-echo/perf.data.intel_pt-4.14"), &e) == 0,
	    "Skylake intel_pt perf.data parses")) {
		DIAG("%s", e.msg);
		return;
	}
	IS_U64(pd->nr_records, 257, "quipper: 257 records");
	IS_INT(pd->nr_attrs, 4, "quipper: 4 attrs");
	IS_INT(pd->nr_mmaps, 66, "quipper: 56 MMAP + 10 MMAP2");
	IS_INT(pd->nr_comms, 3, "quipper: COMMs");
	IS_INT(pd->nr_itrace_starts, 2, "quipper: ITRACE_STARTs");
	IS_INT(pd->nr_auxs, 10, "quipper: AUX");
	IS_U64(pd->nr_samples, 15, "quipper: samples");
	IS_INT(pd->nr_queues, 2, "quipper: two per-CPU queues");
	IS_INT(pd->queues[0].cpu, 0, "quipper: queue on cpu 0");
	IS_U64(pd->queues[0].total_size, 12240, "quipper: cpu 0 bytes");
	IS_INT(pd->queues[1].cpu, 3, "quipper: queue on cpu 3");
	IS_U64(pd->queues[1].total_size, 137728, "quipper: cpu 3 bytes");
	IS_MEM(pd->auxtrace[0].data, "\x02\x82\x02\x82", 4,
	    "quipper: the trace starts with a PSB");
	IS_U64(pd->pt.priv[PERFDATA_PT_PMU_TYPE], 6, "quipper: PMU type 6");
	IS_U64(pd->pt.priv[PERFDATA_PT_PER_CPU_MMAPS], 1, "quipper: per-CPU");
	IS_INT(perfdata_pt_timing(pd, &t, &e), 0, "quipper: pt timing");
	IS_INT(t.mtc_freq, 3, "quipper: mtc_freq 3");
	IS_INT(t.tsc_ctc_n, 0x64, "quipper: TSC/CTC numerator");
	IS_INT(t.tsc_ctc_d, 2, "quipper: TSC/CTC denominator");
	IS_INT(t.max_nonturbo_ratio, 12, "quipper: nominal ratio 12");
	IS_INT(t.per_cpu, 1, "quipper: per-CPU buffers");
	IS_INT(pd->nr_build_ids, 66, "quipper: build-ids");
	IS_INT(pd->has_time_conv, 1, "quipper: TIME_CONV");
	IS_U64(pd->nr_unknown_records, 0, "quipper: no unknown records");
	IS_INT(pd->nr_switches, 152, "quipper: SWITCH_CPU_WIDE records");
	if (pd->nr_switches == 152) {
		const struct perfdata_switch *a = NULL, *b = NULL;
		size_t outs = 0;

		for (size_t i = 0; i < pd->nr_switches; i++) {
			outs += (size_t)pd->switches[i].out;
			if (pd->switches[i].file_offset == 0x21b0)
				a = &pd->switches[i], b = a + 1;
		}
		IS_INT(outs, 76, "quipper: 76 of them OUT");
		IS_U64(pd->switches[0].file_offset, 0x2180, "first switch offset");
		if (OK(a != NULL, "the switch at 0x21b0")) {
			/* perf report -D: "3 641255848111 0x21b0 [0x30]:
			 * PERF_RECORD_SWITCH_CPU_WIDE OUT next pid/tid: 1760/1760" */
			IS_INT(a->cpu_wide, 1, "cpu-wide");
			IS_INT(a->out, 1, "OUT");
			IS_INT(a->next_prev_tid, 1760, "next tid 1760");
			IS_INT(a->sid.cpu, 3, "on cpu 3");
			IS_U64(a->sid.time, 641255848111ULL, "at its time");
			IS_INT(b->out, 0, "the next one (0x21e0) is IN");
			IS_INT(b->next_prev_tid, 0, "from tid 0");
		}
	}
	IS_U64(pd->nr_bad_index, 0, "quipper: the AUXTRACE index is right");
	perfdata_free(pd);
}

/* Two attrs whose ids sections both cover the whole file. */
static void
test_id_bomb(void)
{
	uint8_t f[104 + 2 * 80];
	uint64_t v;
	struct perfdata *pd;
	struct error e;

	memset(f, 0, sizeof(f));
	memcpy(f, "PERFILE2", 8);
	v = 104, memcpy(f + 8, &v, 8);
	v = 80, memcpy(f + 16, &v, 8);		/* attr_size */
	v = 104, memcpy(f + 24, &v, 8);		/* attrs.offset */
	v = 160, memcpy(f + 32, &v, 8);		/* attrs.size */
	v = sizeof(f), memcpy(f + 40, &v, 8);	/* data: empty, at the end */
	for (int i = 0; i < 2; i++) {
		uint8_t *a = f + 104 + 80 * i;
		uint32_t sz = 64;

		memcpy(a + 4, &sz, 4);
		v = 0, memcpy(a + 64, &v, 8);
		v = sizeof(f), memcpy(a + 72, &v, 8);
	}
	IS_INT(perfdata_read_buffer(&pd, f, sizeof(f), "bomb", &e), -ERR_FORMAT,
	    "overlapping ids sections refused");
	IS_STR(e.msg, "bomb: file offset 184: attr ids sections hold more ids "
	    "than the file has bytes for", "and said where");
}

static void
test_errors(void)
{
	static const uint8_t junk[16] = "NOTPERF!xxxxxxxx";
	uint8_t hdr[104];
	struct perfdata *pd = (struct perfdata *)1;
	struct error e;
	int rc;

	error_clear(&e);
	rc = perfdata_read(&pd, "/nonexistent/perf.data", &e);
	IS_INT(rc, -ERR_NOTFOUND, "missing file: ERR_NOTFOUND");
	OK(pd == NULL, "no perfdata on error");
	rc = perfdata_read_buffer(&pd, junk, sizeof(junk), "junk", &e);
	IS_INT(rc, -ERR_FORMAT, "not a perf.data");
	IS_STR(e.msg, "junk: file offset 0: not a perf.data file (no PERFILE2 "
	    "magic)", "message names the offset");
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "PERFILE2", 8);
	hdr[8] = 104;
	rc = perfdata_read_buffer(&pd, hdr, 60, "short", &e);
	IS_INT(rc, -ERR_TRUNCATED, "header cut short");
	IS_STR(e.msg, "short: file offset 16: file of 60 bytes ends inside the "
	    "104-byte header", "truncation message");
	hdr[8] = 16;
	rc = perfdata_read_buffer(&pd, hdr, 104, "pipe", &e);
	IS_INT(rc, -ERR_UNSUPPORTED, "pipe mode refused");
	memcpy(hdr, "2ELIFREP", 8);
	rc = perfdata_read_buffer(&pd, hdr, 104, "be", &e);
	IS_INT(rc, -ERR_UNSUPPORTED, "big-endian refused");
	test_id_bomb();
}

/* A record of an unknown type and a feature bit past perf's are skipped. */
static void
test_unknown(void)
{
	char path[256];
	uint8_t *buf;
	struct perfdata *pd;
	struct error e;
	FILE *f;
	long len, fr_off = -1;
	uint64_t feat;
	char want[128];

	snprintf(path, sizeof(path), "%s/rt.data", tmpdir);
	f = fopen(path, "rb");
	if (!OK(f != NULL, "reopen the round-trip file"))
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(buf);
		OK(0, "read the round-trip file");
		return;
	}
	fclose(f);
	/* retype the first FINISHED_ROUND as an unknown type */
	for (long off = 256; off + 8 <= len; ) {
		uint32_t type;
		uint16_t size;
		uint64_t extra = 0;

		memcpy(&type, buf + off, 4);
		memcpy(&size, buf + off + 6, 2);
		if (type == PERFDATA_REC_FINISHED_ROUND) {
			type = 1000;
			memcpy(buf + off, &type, 4);
			fr_off = off;
			break;
		}
		if (type == PERFDATA_REC_AUXTRACE)
			memcpy(&extra, buf + off + 8, 8);
		off += size + (long)extra;
	}
	/* move the last feature table entry from bit 18 (AUXTRACE) to bit
	 * 200, which no perf knows */
	memcpy(&feat, buf + 72, 8);
	feat &= ~(1ULL << PERFDATA_FEAT_AUXTRACE);
	memcpy(buf + 72, &feat, 8);
	feat = 1ULL << (200 - 192);
	memcpy(buf + 72 + 24, &feat, 8);
	error_clear(&e);
	if (OK(perfdata_read_buffer(&pd, buf, (size_t)len, "mod", &e) == 0,
	    "file with an unknown record and feature parses")) {
		IS_U64(pd->nr_unknown_records, 1, "unknown record counted");
		IS_U64(pd->nr_unknown_features, 1, "unknown feature counted");
		IS_U64(pd->nr_warnings, 2, "two warnings");
		snprintf(want, sizeof(want), "file offset %ld: unknown record "
		    "type 1000 skipped", fr_off);
		IS_STR(pd->first_warning, want, "first warning names the offset");
		IS_INT(pd->nr_auxtrace, 3, "the rest still read");
		perfdata_free(pd);
	} else {
		DIAG("%s", e.msg);
	}
	free(buf);
}

/* An index entry pointing where no AUXTRACE starts: counted, warned. */
static void
test_bad_index(void)
{
	char path[256];
	struct perfdata *pd = NULL;
	uint8_t *buf = NULL;
	uint64_t table, sec, ent;
	size_t len = 0;
	struct error e;
	FILE *f;

	snprintf(path, sizeof(path), "%s/rt.data", tmpdir);
	if ((f = fopen(path, "rb")) != NULL) {
		fseek(f, 0, SEEK_END);
		len = (size_t)ftell(f);
		rewind(f);
		buf = malloc(len);
		if (buf != NULL && fread(buf, 1, len, f) != len)
			len = 0;
		fclose(f);
	}
	if (!OK(buf != NULL && len > 0, "reread the round-trip file")) {
		free(buf);
		return;
	}
	/* features 2..9 and 18: the AUXTRACE section is the ninth entry */
	memcpy(&table, buf + 40, 8);
	memcpy(&sec, buf + 48, 8);
	table += sec;
	memcpy(&sec, buf + table + 8 * 16, 8);
	memcpy(&ent, buf + sec + 8, 8);
	ent += 8;
	memcpy(buf + sec + 8, &ent, 8);
	error_clear(&e);
	if (OK(perfdata_read_buffer(&pd, buf, len, "idx", &e) == 0,
	    "a wrong index entry is not fatal")) {
		IS_U64(pd->nr_bad_index, 1, "one bad index entry counted");
		IS_U64(pd->nr_warnings, 1, "and warned about");
		IS_INT(pd->nr_auxtrace, 3, "the records are still read");
		perfdata_free(pd);
	}
	free(buf);
}

int
main(void)
{
	char path[256];

	if (mkdtemp(tmpdir) == NULL)
		return 1;
	test_roundtrip();
	test_time_conv();
	test_perf_record("perf-record/cpu-clock.data", 219, 204, 0, 5);
	test_perf_record("perf-record/cpu-clock-z.data", 205, 187, 2, 0);
	test_quipper();
	test_errors();
	test_unknown();
	test_bad_index();
	snprintf(path, sizeof(path), "%s/rt.data", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return tap_done();
}
