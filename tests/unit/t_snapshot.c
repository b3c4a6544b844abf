/*
 * t_snapshot: the snapshot directory (atomic creation, image archive by
 * build-id and by SHA-256, deduplication, separate debuginfo), snapshot
 * ids, SHA-256, and manifest.json written and read back field by field.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "fmt/store.h"
#include "tap.h"

static char root[] = "/tmp/t_snapshot.XXXXXX";

static void
fill(struct manifest *m, struct error *e)
{
	const char *argv[] = { "/bin/prog", "--flag", "a \"quoted\"\n arg" };
	struct manifest_thread t = { .tid = 101, .pid = 100, .name = "worker",
	    .auxtrace_idx = 1, .ring_size = 1 << 20, .bytes_kept = 4096,
	    .wrapped = 1, .exited = 0, .start_ns = 5, .end_ns = 9 };
	struct manifest_image im = { .path = "/bin/prog", .build_id = "abcd",
	    .sha256 = "00ff", .archived = "images/x", .debug = NULL,
	    .size = 1234, .is_vdso = 0 };

	strcpy(m->id, "20261129T084202Z-0123abcd");
	STEP(manifest_set_string(&m->created, "2026-11-29T08:42:02Z", e));
	m->created_wall_ns = 1795941722000000001ULL;
	STEP(manifest_set_string(&m->host.hostname, "host", e));
	STEP(manifest_set_string(&m->host.kernel, "6.1.0", e));
	STEP(manifest_set_string(&m->host.cpu_vendor, "GenuineIntel", e));
	m->host.cpu_family = 6, m->host.cpu_model = 85, m->host.cpu_stepping = 4;
	m->host.nr_cpus = 8;
	m->host.emulated = 1;
	STEP(manifest_set_string(&m->recorder.backend, "emu", e));
	STEP(manifest_set_string(&m->recorder.version, "0.1.0", e));
	STEP(manifest_set_setting(m, "ring_size", "1048576", e));
	STEP(manifest_set_setting(m, "profile", "normal", e));
	STEP(manifest_set_setting(m, "profile", "high", e));
	m->pt.config = 0x2c01;
	m->pt.pmu_type = 10;
	m->pt.branch = m->pt.tsc = m->pt.cyc = 1;
	m->pt.mtc_period = 3;
	m->pt.cyc_threshold = 1;
	m->pt.psb_period = 2;
	STEP(manifest_set_string(&m->pt.clock, "virtual", e));
	STEP(manifest_set_string(&m->pt.timing_profile, "high", e));
	m->pt.tsc_hz = 1000000000;
	m->pt.nom_freq = 1;
	m->pt.tsc_ctc_n = 2, m->pt.tsc_ctc_d = 308;
	m->pt.time_shift = 31, m->pt.time_mult = 581029125;
	m->pt.time_zero = 18444502336406842448ULL;
	STEP(manifest_set_argv(m, 3, argv, e));
	m->target.pid = 100;
	STEP(manifest_set_string(&m->target.cwd, "/tmp", e));
	STEP(manifest_set_string(&m->target.state, "signaled", e));
	m->target.signal = 11;
	STEP(manifest_set_string(&m->trigger.kind, "crash", e));
	STEP(manifest_set_string(&m->trigger.detail, "SIGSEGV", e));
	m->trigger.fired_ns = 77, m->trigger.fired_wall_ns = 78;
	m->capture.start_ns = 1, m->capture.end_ns = 2;
	m->capture.start_wall_ns = 3, m->capture.end_wall_ns = 4;
	m->capture.start_tsc = 5, m->capture.end_tsc = 6;
	STEP(manifest_add_thread(m, &t, e));
	t.tid = 100, t.name = NULL, t.wrapped = 0;
	STEP(manifest_add_thread(m, &t, e));
	STEP(manifest_add_image(m, &im, e));
	im.path = "[vdso]", im.build_id = NULL, im.is_vdso = 1;
	im.debug = "images/d";
	STEP(manifest_add_image(m, &im, e));
	STEP(manifest_add_warning(m, e, "lost %d bytes", 12));
	STEP(manifest_set_counter(m, "signals_blind", 2, e));
	STEP(manifest_set_counter(m, "faults_in_tb", 1, e));
	STEP(manifest_set_counter(m, "signals_blind", 3, e));
}

static void
test_manifest(void)
{
	struct manifest m, r;
	struct error e;
	char path[256];
	FILE *f;

	error_clear(&e);
	manifest_init(&m);
	fill(&m, &e);
	IS_INT(e.code, 0, "manifest filled");
	snprintf(path, sizeof(path), "%s/manifest.json", root);
	f = fopen(path, "w");
	IS_INT(manifest_write(f, &m, &e), 0, "manifest written");
	fclose(f);
	if (!OK(manifest_read(path, &r, &e) == 0, "manifest read back")) {
		DIAG("%s", e.msg);
		manifest_free(&m);
		return;
	}
	IS_INT(r.format_version, 1, "format_version");
	IS_STR(r.id, m.id, "id");
	IS_STR(r.created, m.created, "created");
	IS_U64(r.created_wall_ns, m.created_wall_ns, "created_wall_ns");
	IS_STR(r.host.hostname, "host", "hostname");
	IS_STR(r.host.kernel, "6.1.0", "kernel");
	IS_STR(r.host.cpu_vendor, "GenuineIntel", "vendor");
	OK(r.host.cpu_model_name == NULL, "null model name stays null");
	IS_INT(r.host.cpu_model, 85, "model");
	IS_INT(r.host.cpu_stepping, 4, "stepping");
	IS_INT(r.host.emulated, 1, "emulated");
	IS_STR(r.recorder.backend, "emu", "backend");
	IS_INT(r.recorder.nr_settings, 2, "settings (one replaced)");
	IS_STR(r.recorder.settings[1].value, "high", "replaced setting");
	IS_U64(r.pt.config, 0x2c01, "pt config");
	IS_INT(r.pt.cyc, 1, "cyc");
	IS_INT(r.pt.mtc, 0, "mtc");
	IS_INT(r.pt.mtc_period, 3, "mtc_period");
	IS_INT(r.pt.psb_period, 2, "psb_period");
	IS_STR(r.pt.clock, "virtual", "clock");
	IS_INT(r.pt.tsc_ctc_d, 308, "tsc_ctc_d");
	IS_U64(r.pt.time_mult, 581029125, "time_mult");
	IS_U64(r.pt.time_zero, 18444502336406842448ULL,
	    "time_zero above INT64_MAX survives");
	IS_INT(r.target.argc, 3, "argc");
	IS_STR(r.target.argv[2], "a \"quoted\"\n arg", "argv escaped and back");
	IS_STR(r.target.state, "signaled", "state");
	IS_INT(r.target.signal, 11, "signal");
	IS_STR(r.trigger.kind, "crash", "trigger kind");
	IS_STR(r.trigger.detail, "SIGSEGV", "trigger detail");
	IS_U64(r.trigger.fired_wall_ns, 78, "fired_wall_ns");
	IS_U64(r.capture.end_tsc, 6, "capture end_tsc");
	IS_INT(r.nr_threads, 2, "threads");
	IS_STR(r.threads[0].name, "worker", "thread name");
	OK(r.threads[1].name == NULL, "thread without a name");
	IS_INT(r.threads[0].wrapped, 1, "wrapped");
	IS_U64(r.threads[0].ring_size, 1 << 20, "ring_size");
	IS_U64(r.threads[0].bytes_kept, 4096, "bytes_kept");
	IS_INT(r.threads[0].auxtrace_idx, 1, "auxtrace_idx");
	IS_INT(r.nr_images, 2, "images");
	IS_STR(r.images[0].build_id, "abcd", "image build_id");
	OK(r.images[1].build_id == NULL, "vdso without build-id");
	IS_STR(r.images[1].debug, "images/d", "debug");
	IS_INT(r.images[1].is_vdso, 1, "vdso");
	OK(manifest_find_image(&r, "[vdso]") == &r.images[1], "find image");
	IS_INT(r.nr_warnings, 1, "warnings");
	IS_STR(r.warnings[0], "lost 12 bytes", "warning text");
	IS_INT(r.nr_counters, 2, "counters");
	IS_U64(r.counters[0].value, 3, "counter replaced");
	manifest_free(&r);
	manifest_free(&m);

	f = fopen(path, "w");
	fputs("{\"format_version\": 1, \"id\": \"x\"}\n", f);
	fclose(f);
	IS_INT(manifest_read(path, &r, &e), -ERR_FORMAT, "missing member");
	OK(strstr(e.msg, "'created' is missing") != NULL,
	    "message names the member: %s", e.msg);
	f = fopen(path, "w");
	fputs("{\"format_version\": 2}\n", f);
	fclose(f);
	IS_INT(manifest_read(path, &r, &e), -ERR_UNSUPPORTED, "newer version");
	unlink(path);
}

static int
exists(const char *dir, const char *rel)
{
	char p[4096];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return stat(p, &st) == 0;
}

static void
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* A fake debug root holding "debuginfo" for /bin/true's build-id. */
static void
make_debug_root(const char *dbg, const char *hex)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/.build-id/%.2s", dbg, hex);
	mkdir(dbg, 0755);
	snprintf(p, sizeof(p), "%s/.build-id", dbg);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s", dbg, hex);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dbg, hex, hex + 2);
	write_text(p, "debuginfo\n");
}

static void
test_archive(void)
{
	char dest[256], text[256], text2[256], dbg[256], rel[256];
	uint8_t id[SNAPSHOT_BUILD_ID_MAX];
	struct snapshot_image img, img2;
	struct snapshot *s;
	struct manifest m;
	struct error e;
	char hex[41];
	int n;

	error_clear(&e);
	n = snapshot_elf_build_id("/bin/true", id, &e);
	if (!OK(n == 20, "/bin/true has a 20-byte build-id"))
		return;
	snapshot_hex(id, 20, hex);
	IS_INT(snapshot_elf_build_id("/nonexistent", id, &e), -ERR_NOTFOUND,
	    "build-id of a missing file");
	snprintf(text, sizeof(text), "%s/notes.txt", root);
	write_text(text, "not an ELF file\n");
	IS_INT(snapshot_elf_build_id(text, id, &e), 0, "no build-id in text");
	snprintf(text2, sizeof(text2), "%s/copy.txt", root);
	write_text(text2, "not an ELF file\n");
	snprintf(dbg, sizeof(dbg), "%s/debug", root);
	make_debug_root(dbg, hex);

	snprintf(dest, sizeof(dest), "%s/20261129T084202Z-0123abcd", root);
	if (!OK(snapshot_begin(&s, dest, &e) == 0, "begin")) {
		DIAG("%s", e.msg);
		return;
	}
	free(s->debug_root);
	s->debug_root = strdup(dbg);
	IS_STR(s->manifest.id, "20261129T084202Z-0123abcd", "id from the name");
	OK(!exists(dest, "."), "nothing at the destination before commit");
	IS_INT(snapshot_archive_file(s, "/bin/true", NULL, &img, &e), 0,
	    "archive /bin/true");
	IS_STR(img.build_id_hex, hex, "its build-id");
	IS_INT(img.has_debug, 1, "debuginfo found by build-id");
	snprintf(rel, sizeof(rel), "images/.build-id/%.2s/%s/elf", hex, hex + 2);
	IS_STR(s->manifest.images[0].archived, rel, "perf build-id layout");
	snprintf(rel, sizeof(rel), "images/.build-id/%.2s/%s/debug", hex,
	    hex + 2);
	IS_STR(s->manifest.images[0].debug, rel, "debug beside elf");
	IS_INT(snapshot_archive_file(s, "/usr/bin/true", "/bin/true", &img2,
	    &e), 0, "same file under another path");
	IS_INT(img2.deduplicated, 1, "deduplicated by build-id");
	IS_INT(snapshot_archive_file(s, "/bin/true", NULL, &img2, &e), 0,
	    "same path again");
	IS_INT(s->manifest.nr_images, 2, "one manifest row per path");
	IS_STR(img2.build_id_hex, hex, "build-id from the manifest row");
	IS_INT(snapshot_archive_file(s, "/opt/notes.txt", text, &img, &e), 0,
	    "archive a file without build-id");
	IS_INT(img.build_id_size, 0, "no build-id");
	IS_STR(img.sha256_hex, "b1318f14ee540c44ec2e8cc4762b410aefab55255aad013a61dc08cb825c01a5",
	    "its SHA-256 (as sha256sum says)");
	snprintf(rel, sizeof(rel), "images/sha256/%s/notes.txt",
	    img.sha256_hex);
	IS_STR(s->manifest.images[2].archived, rel, "sha256 layout");
	IS_INT(snapshot_archive_file(s, "/opt/copy.txt", text2, &img2, &e), 0,
	    "same content, other name");
	IS_INT(img2.deduplicated, 0, "a new basename is a new file");
	IS_INT(snapshot_archive_file(s, "/srv/notes.txt", text, &img2, &e), 0,
	    "same content, same basename");
	IS_INT(img2.deduplicated, 1, "deduplicated by content");
	IS_INT(snapshot_archive_memory(s, "[vdso]", "\x7f" "ELFjunk", 8, &img2,
	    &e), 0, "archive memory");
	IS_INT(s->manifest.images[5].is_vdso, 1, "vdso row");
	IS_INT(snapshot_archive_file(s, "/nonexistent", NULL, &img, &e),
	    -ERR_NOTFOUND, "missing image");
	STEP(manifest_set_string(&s->manifest.recorder.backend, "synthetic", &e));
	IS_INT(snapshot_commit(s, &e), 0, "commit");
	OK(exists(dest, "manifest.json") && exists(dest, "images"),
	    "snapshot in place");
	if (OK(manifest_read(
	    strcat(strcpy(rel, dest), "/manifest.json"), &m, &e) == 0,
	    "committed manifest reads")) {
		IS_INT(m.nr_images, 6, "six rows");
		IS_STR(m.recorder.backend, "synthetic", "backend");
		manifest_free(&m);
	}
	IS_INT(snapshot_begin(&s, dest, &e), -ERR_EXISTS, "destination exists");
	snprintf(dest, sizeof(dest), "%s/nodir/deeper/x", root);
	if (OK(snapshot_begin(&s, dest, &e) == 0,
	    "missing parents are made, as mkdir -p")) {
		snapshot_abort(s);
		*strrchr(dest, '/') = '\0';
		OK(access(dest, F_OK) == 0, "the parent exists after abort");
	}
	snprintf(dest, sizeof(dest), "%s/aborted", root);
	if (OK(snapshot_begin(&s, dest, &e) == 0, "begin another")) {
		char tmp[4096];

		OK(store_id_valid(s->manifest.id), "a new id: %s",
		    s->manifest.id);
		snprintf(tmp, sizeof(tmp), "%s", s->tmp);
		snapshot_abort(s);
		OK(access(tmp, F_OK) != 0 && errno == ENOENT,
		    "abort removes the temporary directory");
		OK(!exists(dest, "."), "and nothing is at the destination");
	}
}

/*
 * A manifest that does not fit on the disk (a file size limit here,
 * RLIMIT_FSIZE with SIGXFSZ ignored: no tmpfs for an unprivileged test):
 * the commit fails naming the file and the reason, and leaves nothing.
 */
static void
test_manifest_full_disk(void)
{
	struct rlimit old, lim = { .rlim_cur = 4096, .rlim_max = 0 };
	char dest[256], tmp[256], want[512], big[8192];
	struct snapshot *s;
	struct error e;
	int rc;

	snprintf(dest, sizeof(dest), "%s/full", root);
	if (snapshot_begin(&s, dest, &e) < 0) {
		OK(0, "begin: %s", e.msg);
		return;
	}
	memset(big, 'w', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(tmp, sizeof(tmp), "%s", s->tmp);
	if (manifest_add_warning(&s->manifest, &e, "%s", big) < 0 ||
	    getrlimit(RLIMIT_FSIZE, &old) < 0) {
		OK(0, "setup");
		snapshot_abort(s);
		return;
	}
	lim.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &lim) < 0) {
		OK(0, "RLIMIT_FSIZE");
		snapshot_abort(s);
		return;
	}
	rc = snapshot_commit(s, &e);
	if (setrlimit(RLIMIT_FSIZE, &old) < 0)
		OK(0, "RLIMIT_FSIZE restored");
	signal(SIGXFSZ, SIG_DFL);
	IS_INT(rc, -ERR_IO, "a manifest that does not fit fails the commit");
	snprintf(want, sizeof(want), "%s/manifest.json: write: File too large",
	    tmp);
	IS_STR(e.msg, want, "naming the file and the reason");
	OK(access(tmp, F_OK) != 0 && access(dest, F_OK) != 0,
	    "nothing is left, neither snapshot nor temporary directory");
}

int
main(void)
{
	if (mkdtemp(root) == NULL)
		return 1;
	test_manifest();
	test_archive();
	test_manifest_full_disk();
	STEP(cleanup_remove_tree(root));
	return tap_done();
}
