/*
 * t_snapwrite: ptrec's one snapshot writer: where a snapshot goes (every
 * path that would not fit is refused, naming it, before anything is
 * made), a snapshot written from a recorder's facts alone, and images
 * that cannot be archived: one that cannot be read is a told loss, one
 * that cannot be written (a full disk, made here with RLIMIT_FSIZE and
 * SIGXFSZ ignored: no tmpfs for an unprivileged test) fails the snapshot
 * and leaves nothing.
 */
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "fmt/store.h"
#include "snapwrite.h"
#include "tap.h"

static char tmp[] = "/tmp/t_snapwrite.XXXXXX";

/* A --store whose "<store>/snapshots" does not fit in PATH_MAX. */
static void
test_dest_store_too_long(void)
{
	static char store[PATH_MAX];
	struct rec_options o;
	struct error e;
	char out[PATH_MAX];
	size_t len;

	len = (size_t)snprintf(store, sizeof(store), "%s/", tmp);
	memset(store + len, 's', PATH_MAX - 5 - len);
	store[PATH_MAX - 5] = '\0';
	memset(&o, 0, sizeof(o));
	o.store = store;
	IS_INT(snapwrite_dest(&o, 1, out, sizeof(out), &e), -ERR_RANGE,
	    "a store whose snapshots/ would be cut is refused");
	OK(strncmp(e.msg, store, 64) == 0, "the error names the store");
	OK(access(store, F_OK) != 0, "nothing was made for it");
	IS_INT(store_snapshots_dir(store, out, sizeof(out), &e),
	    -ERR_RANGE, "store_snapshots_dir refuses it too");
}

/* The store's snapshots/ fits, the snapshot's own path does not. */
static void
test_dest_out_too_small(void)
{
	char store[PATH_MAX], parent[PATH_MAX + 16], want[PATH_MAX + 16];
	char out[PATH_MAX];
	struct rec_options o;
	struct error e;
	struct stat st;

	snprintf(store, sizeof(store), "%s/store", tmp);
	memset(&o, 0, sizeof(o));
	o.store = store;
	IS_INT(store_snapshots_dir(store, parent, sizeof(parent), &e), 0,
	    "store snapshots path");
	snprintf(want, sizeof(want), "%s/snapshots", store);
	IS_STR(parent, want, "<store>/snapshots");
	IS_INT(snapwrite_dest(&o, 1, out, strlen(parent) + 4, &e), -ERR_RANGE,
	    "a destination that would be cut is refused");
	OK(strncmp(e.msg, parent, strlen(parent)) == 0 &&
	    strstr(e.msg, "path too long") != NULL, "the error names %s: %s",
	    parent, e.msg);
	IS_INT(snapwrite_dest(&o, 2, out, sizeof(out), &e), 0, "--store dest");
	OK(strncmp(out, parent, strlen(parent)) == 0 &&
	    out[strlen(parent)] == '/' && strlen(out) == strlen(parent) + 26,
	    "<store>/snapshots/<id>: %s", out);
	OK(stat(parent, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & 0777) == 0700, "snapshots/ made, 0700");
}

static void
test_dest_out_dir(void)
{
	char dir[PATH_MAX], out[PATH_MAX];
	struct rec_options o;
	struct error e;

	memset(&o, 0, sizeof(o));
	snprintf(dir, sizeof(dir), "%s/snap", tmp);
	o.out_dir = dir;
	IS_INT(snapwrite_dest(&o, 1, out, sizeof(out), &e), 0, "-o, 1st");
	IS_STR(out, dir, "-o DIR as it is for the first snapshot");
	IS_INT(snapwrite_dest(&o, 12, out, strlen(dir) + 3, &e), -ERR_RANGE,
	    "-o DIR.12 that would be cut is refused");
	OK(strncmp(e.msg, dir, strlen(dir)) == 0, "the error names -o DIR");
}

static int
setting(const struct manifest *m, const char *key, const char *value)
{
	for (size_t i = 0; i < m->recorder.nr_settings; i++)
		if (strcmp(m->recorder.settings[i].key, key) == 0)
			return value != NULL &&
			    strcmp(m->recorder.settings[i].value, value) == 0;
	return value == NULL;
}

/* A snapshot from facts only: no image, one ring, a COMM. */
static void
test_write(void)
{
	static const uint8_t ring[4] = { 1, 2, 3, 4 };
	const struct snapwrite_setting settings[] = {
		{ .key = "budget_bytes", .num = 64, .numeric = 1 },
		{ .key = "trigger_symbol", .text = NULL },
		{ .key = "emulator", .text = "fake" },
	};
	const struct snapwrite_counter counters[] = { { "things", 7 } };
	const char *const warnings[] = { "a warning" };
	char *argv[] = { "prog", NULL };
	struct snapwrite_thread th;
	struct snapwrite_source src;
	struct perfdata_writer_config wcfg;
	struct perfdata_time_conv tc;
	struct ptsb_record comm;
	struct ptcaps_cpu cpu;
	struct rec_options o;
	struct perfdata *pd;
	struct manifest m;
	struct error e;
	char dest[PATH_MAX], path[PATH_MAX + 32];
	int rc;

	memset(&o, 0, sizeof(o));
	o.aux_bytes = 4096;
	o.program = argv;
	memset(&cpu, 0, sizeof(cpu));
	snprintf(cpu.vendor, sizeof(cpu.vendor), "GenuineIntel");
	cpu.family = 6;
	perfdata_writer_config_default(&wcfg, 0);
	memset(&tc, 0, sizeof(tc));
	tc.time_mult = 1;
	memset(&comm, 0, sizeof(comm));
	comm.type = PERF_RECORD_COMM;
	comm.sid.pid = comm.sid.tid = 50;
	comm.sid.time = 5;
	comm.sid.cpu = PERFDATA_NO_CPU;
	comm.u.comm.pid = comm.u.comm.tid = 50;
	comm.u.comm.comm = "prog";
	memset(&th, 0, sizeof(th));
	th.tid = th.pid = 50;
	th.name = "prog";
	th.ring_size = 4096;
	th.data = ring;
	th.kept = sizeof(ring);
	th.offset = 8;
	th.wrapped = 1;
	memset(&src, 0, sizeof(src));
	src.opt = &o;
	src.backend = "emu";
	src.settings = settings;
	src.n_settings = 3;
	src.cpu = &cpu;
	src.emulated = 1;
	src.pt.clock = "virtual";
	src.pid = 0;		/* no JIT map to look for */
	src.state = "exited";
	src.wconfig = &wcfg;
	src.tc = &tc;
	src.sideband = &comm;
	src.n_sideband = 1;
	src.threads = &th;
	src.n_threads = 1;
	src.reason = "exit";
	src.counters = counters;
	src.n_counters = 1;
	src.warnings = warnings;
	src.n_warnings = 1;
	snprintf(dest, sizeof(dest), "%s/w", tmp);
	rc = snapwrite(&src, dest, &e);
	IS_INT(rc, 0, "written%s%s", rc < 0 ? ": " : "", rc < 0 ? e.msg : "");
	snprintf(path, sizeof(path), "%s/manifest.json", dest);
	if (rc < 0 || manifest_read(path, &m, &e) < 0) {
		OK(0, "manifest");
		return;
	}
	IS_STR(m.recorder.backend, "emu", "recorder.backend");
	OK(setting(&m, "aux_bytes", "4096"), "aux_bytes first, from -a");
	OK(setting(&m, "budget_bytes", "64"), "a numeric setting");
	OK(setting(&m, "emulator", "fake"), "a text setting");
	OK(setting(&m, "trigger_symbol", NULL), "a setting not given is left "
	    "out");
	IS_INT(m.host.emulated, 1, "host.emulated");
	IS_STR(m.pt.clock, "virtual", "pt.clock");
	IS_U64(m.nr_threads, 1, "one thread row");
	if (m.nr_threads == 1) {
		IS_STR(m.threads[0].name, "prog", "its name");
		IS_INT(m.threads[0].wrapped, 1, "wrapped");
	}
	IS_U64(m.nr_warnings, 1, "no wrap warning unless asked for");
	IS_U64(m.nr_counters, 1, "the recorder's counter");
	manifest_free(&m);
	snprintf(path, sizeof(path), "%s/perf.data", dest);
	if (perfdata_read(&pd, path, &e) < 0) {
		OK(0, "perf.data: %s", e.msg);
		return;
	}
	IS_U64(pd->nr_queues, 1, "one AUXTRACE queue");
	IS_U64(pd->nr_comms, 1, "the COMM written");
	perfdata_free(pd);
	IS_INT(snapwrite(&src, dest, &e), -ERR_EXISTS,
	    "an existing snapshot is not overwritten");
}

/* A source with one exec mapping of image: the smallest that archives. */
static void
image_source(struct snapwrite_source *src, struct rec_options *o,
    struct ptsb_record *map, struct snapwrite_thread *th,
    struct perfdata_writer_config *wcfg, struct perfdata_time_conv *tc,
    struct ptcaps_cpu *cpu, const char *image)
{
	static const uint8_t ring[4] = { 1, 2, 3, 4 };
	static char *argv[] = { "prog", NULL };

	memset(o, 0, sizeof(*o));
	o->aux_bytes = 4096;
	o->program = argv;
	memset(cpu, 0, sizeof(*cpu));
	snprintf(cpu->vendor, sizeof(cpu->vendor), "GenuineIntel");
	cpu->family = 6;
	perfdata_writer_config_default(wcfg, 0);
	memset(tc, 0, sizeof(*tc));
	tc->time_mult = 1;
	memset(map, 0, sizeof(*map));
	map->type = PERF_RECORD_MMAP2;
	map->sid.pid = map->sid.tid = 50;
	map->sid.cpu = PERFDATA_NO_CPU;
	map->u.mmap.pid = map->u.mmap.tid = 50;
	map->u.mmap.addr = 0x400000;
	map->u.mmap.len = 0x1000;
	map->u.mmap.prot = PROT_READ | PROT_EXEC;
	map->u.mmap.filename = image;
	memset(th, 0, sizeof(*th));
	th->tid = th->pid = 50;
	th->name = "prog";
	th->ring_size = 4096;
	th->data = ring;
	th->kept = sizeof(ring);
	memset(src, 0, sizeof(*src));
	src->opt = o;
	src->backend = "emu";
	src->cpu = cpu;
	src->emulated = 1;
	src->pt.clock = "virtual";
	src->state = "exited";
	src->wconfig = wcfg;
	src->tc = tc;
	src->sideband = map;
	src->n_sideband = 1;
	src->threads = th;
	src->n_threads = 1;
	src->reason = "exit";
}

/* Entries of dir other than . and .. */
static int
entries(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	if (dp == NULL)
		return -1;
	while ((d = readdir(dp)) != NULL)
		n += strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
	closedir(dp);
	return n;
}

/* An image that is gone: the snapshot is written, the loss told. */
static void
test_image_unreadable(void)
{
	struct snapwrite_source src;
	struct rec_options o;
	struct ptsb_record map;
	struct snapwrite_thread th;
	struct perfdata_writer_config wcfg;
	struct perfdata_time_conv tc;
	struct ptcaps_cpu cpu;
	struct manifest m;
	struct error e;
	char dest[PATH_MAX], path[PATH_MAX + 32];
	int rc;

	char said[512] = "";
	FILE *f;
	int saved;

	image_source(&src, &o, &map, &th, &wcfg, &tc, &cpu, "/nonexistent/lib.so");
	snprintf(dest, sizeof(dest), "%s/gone", tmp);
	snprintf(path, sizeof(path), "%s/gone.stderr", tmp);
	/* What it says on stderr, caught in a file. */
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	if (saved < 0 || freopen(path, "w", stderr) == NULL) {
		OK(0, "stderr to a file");
		return;
	}
	rc = snapwrite(&src, dest, &e);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(said, sizeof(said), f) == NULL)
			said[0] = '\0';
		fclose(f);
	}
	IS_INT(rc, 0, "a snapshot without the image%s%s", rc < 0 ? ": " : "",
	    rc < 0 ? e.msg : "");
	IS_STR(said, "ptrec: warning: snapshot: image /nonexistent/lib.so not "
	    "archived: /nonexistent/lib.so: open: No such file or directory\n",
	    "the loss is said on stderr at once");
	snprintf(path, sizeof(path), "%s/manifest.json", dest);
	if (rc < 0 || manifest_read(path, &m, &e) < 0) {
		OK(0, "manifest");
		return;
	}
	IS_U64(m.nr_warnings, 1, "one warning");
	if (m.nr_warnings == 1)
		IS_STR(m.warnings[0], "image /nonexistent/lib.so not archived: "
		    "/nonexistent/lib.so: open: No such file or directory",
		    "the warning names the image and why");
	IS_U64(m.nr_images, 0, "no image row");
	manifest_free(&m);
}

/*
 * A full disk while an image is copied: the snapshot fails with the
 * file and the reason, and neither it nor its temporary directory stays.
 */
static void
test_image_full_disk(void)
{
	struct rlimit old, lim = { .rlim_cur = 16384, .rlim_max = 0 };
	struct snapwrite_source src;
	struct rec_options o;
	struct ptsb_record map;
	struct snapwrite_thread th;
	struct perfdata_writer_config wcfg;
	struct perfdata_time_conv tc;
	struct ptcaps_cpu cpu;
	struct error e;
	char dest[PATH_MAX + 8], dir[PATH_MAX], self[PATH_MAX];
	const char *tail = ": write: File too large";
	struct stat st;
	ssize_t n;
	int rc;

	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0) {
		OK(0, "/proc/self/exe");
		return;
	}
	self[n] = '\0';
	if (stat(self, &st) < 0 || st.st_size <= 16384) {
		OK(0, "this test's binary is larger than the limit");
		return;
	}
	image_source(&src, &o, &map, &th, &wcfg, &tc, &cpu, self);
	snprintf(dir, sizeof(dir), "%s/full", tmp);
	snprintf(dest, sizeof(dest), "%s/snap", dir);
	if (mkdir(dir, 0700) < 0 || getrlimit(RLIMIT_FSIZE, &old) < 0) {
		OK(0, "setup");
		return;
	}
	lim.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &lim) < 0) {
		OK(0, "RLIMIT_FSIZE");
		return;
	}
	rc = snapwrite(&src, dest, &e);
	if (setrlimit(RLIMIT_FSIZE, &old) < 0)
		OK(0, "RLIMIT_FSIZE restored");
	signal(SIGXFSZ, SIG_DFL);
	IS_INT(rc, -ERR_IO, "the snapshot fails");
	{
		char head[2 * PATH_MAX + 64];
		size_t hl, ml = strlen(e.msg), tl = strlen(tail);

		snprintf(head, sizeof(head), "image %s not archived: %s/.snap.tmp-",
		    self, dir);
		hl = strlen(head);
		OK(ml > hl + tl && strncmp(e.msg, head, hl) == 0 &&
		    strcmp(e.msg + ml - tl, tail) == 0,
		    "it names the image, the file it wrote and why: %s", e.msg);
	}
	IS_INT(entries(dir), 0, "nothing is left: neither snapshot nor "
	    "temporary directory");
}

int
main(void)
{
	if (mkdtemp(tmp) == NULL) {
		OK(0, "setup");
		return tap_done();
	}
	test_dest_store_too_long();
	test_dest_out_too_small();
	test_dest_out_dir();
	test_write();
	test_image_unreadable();
	test_image_full_disk();
	STEP(cleanup_remove_tree(tmp));
	return tap_done();
}
