/*
 * manifest: see manifest.h.  Every member is always written (null for an
 * absent string), and the reader requires every member, so a field the
 * writer forgot or a reader of a different version is caught at once.
 * time_zero is written as a signed integer: perf's TIME_CONV arithmetic
 * is modulo 2^64 and real values exceed INT64_MAX, which JSON readers
 * (jansson) cannot hold as unsigned.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/jsonw.h"
#include "fmt/manifest.h"

void
manifest_init(struct manifest *m)
{
	memset(m, 0, sizeof(*m));
	m->format_version = MANIFEST_FORMAT_VERSION;
	m->trigger.output_offset = -1;
}

static void
free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
manifest_free(struct manifest *m)
{
	free(m->created);
	free(m->host.hostname);
	free(m->host.kernel);
	free(m->host.cpu_vendor);
	free(m->host.cpu_model_name);
	free(m->recorder.backend);
	free(m->recorder.version);
	for (size_t i = 0; i < m->recorder.nr_settings; i++) {
		free(m->recorder.settings[i].key);
		free(m->recorder.settings[i].value);
	}
	free(m->recorder.settings);
	free(m->pt.clock);
	free(m->pt.timing_profile);
	free_strv(m->target.argv, m->target.argc);
	free(m->target.cwd);
	free(m->target.state);
	free(m->trigger.kind);
	free(m->trigger.detail);
	for (size_t i = 0; i < m->nr_threads; i++)
		free(m->threads[i].name);
	free(m->threads);
	for (size_t i = 0; i < m->nr_images; i++) {
		free(m->images[i].path);
		free(m->images[i].build_id);
		free(m->images[i].sha256);
		free(m->images[i].archived);
		free(m->images[i].debug);
	}
	free(m->images);
	for (size_t i = 0; i < m->nr_jit_maps; i++) {
		free(m->jit_maps[i].path);
		free(m->jit_maps[i].archived);
	}
	free(m->jit_maps);
	free_strv(m->warnings, m->nr_warnings);
	for (size_t i = 0; i < m->nr_counters; i++)
		free(m->counters[i].name);
	free(m->counters);
	memset(m, 0, sizeof(*m));
}

static int
dup_or_null(char **dst, const char *s)
{
	*dst = NULL;
	if (s == NULL)
		return 0;
	*dst = strdup(s);
	return *dst == NULL ? -1 : 0;
}

int
manifest_set_string(char **field, const char *value, struct error *e)
{
	char *n = NULL;

	if (dup_or_null(&n, value) < 0)
		return error_set(e, ERR_NOMEM, "manifest string");
	free(*field);
	*field = n;
	return 0;
}

/* Grows *arr (n elements of size el) by one zeroed element. */
static void *
append(void *arr_p, size_t *n, size_t el)
{
	void **arr = arr_p;
	void *np = reallocarray(*arr, *n + 1, el);

	if (np == NULL)
		return NULL;
	*arr = np;
	memset((char *)np + *n * el, 0, el);
	return (char *)np + (*n)++ * el;
}

int
manifest_set_argv(struct manifest *m, size_t argc, const char *const *argv,
    struct error *e)
{
	char **v = calloc(argc + 1, sizeof(*v));

	if (v == NULL)
		return error_set(e, ERR_NOMEM, "manifest argv");
	for (size_t i = 0; i < argc; i++) {
		if (dup_or_null(&v[i], argv[i]) < 0) {
			free_strv(v, i);
			return error_set(e, ERR_NOMEM, "manifest argv");
		}
	}
	free_strv(m->target.argv, m->target.argc);
	m->target.argv = v;
	m->target.argc = argc;
	return 0;
}

int
manifest_set_setting(struct manifest *m, const char *key, const char *value,
    struct error *e)
{
	struct manifest_kv *kv = NULL;

	for (size_t i = 0; i < m->recorder.nr_settings; i++)
		if (strcmp(m->recorder.settings[i].key, key) == 0)
			kv = &m->recorder.settings[i];
	if (kv != NULL)
		return manifest_set_string(&kv->value, value, e);
	kv = append(&m->recorder.settings, &m->recorder.nr_settings,
	    sizeof(*kv));
	if (kv == NULL || dup_or_null(&kv->key, key) < 0 ||
	    dup_or_null(&kv->value, value) < 0)
		return error_set(e, ERR_NOMEM, "manifest setting %s", key);
	return 0;
}

int
manifest_add_thread(struct manifest *m, const struct manifest_thread *t,
    struct error *e)
{
	struct manifest_thread *n = append(&m->threads, &m->nr_threads,
	    sizeof(*n));

	if (n == NULL)
		return error_set(e, ERR_NOMEM, "manifest thread");
	*n = *t;
	if (dup_or_null(&n->name, t->name) < 0) {
		m->nr_threads--;
		return error_set(e, ERR_NOMEM, "manifest thread");
	}
	return (int)(m->nr_threads - 1);
}

int
manifest_add_image(struct manifest *m, const struct manifest_image *im,
    struct error *e)
{
	struct manifest_image *n = append(&m->images, &m->nr_images,
	    sizeof(*n));

	if (n == NULL)
		return error_set(e, ERR_NOMEM, "manifest image");
	n->size = im->size;
	n->is_vdso = im->is_vdso;
	if (dup_or_null(&n->path, im->path) < 0 ||
	    dup_or_null(&n->build_id, im->build_id) < 0 ||
	    dup_or_null(&n->sha256, im->sha256) < 0 ||
	    dup_or_null(&n->archived, im->archived) < 0 ||
	    dup_or_null(&n->debug, im->debug) < 0)
		return error_set(e, ERR_NOMEM, "manifest image");
	return (int)(m->nr_images - 1);
}

int
manifest_add_warning(struct manifest *m, struct error *e, const char *fmt, ...)
{
	char **slot;
	char *s;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return error_set(e, ERR_NOMEM, "manifest warning");
	slot = append(&m->warnings, &m->nr_warnings, sizeof(*slot));
	if (slot == NULL) {
		free(s);
		return error_set(e, ERR_NOMEM, "manifest warning");
	}
	*slot = s;
	return 0;
}

int
manifest_set_counter(struct manifest *m, const char *name, uint64_t value,
    struct error *e)
{
	struct manifest_counter *c;

	for (size_t i = 0; i < m->nr_counters; i++) {
		if (strcmp(m->counters[i].name, name) == 0) {
			m->counters[i].value = value;
			return 0;
		}
	}
	c = append(&m->counters, &m->nr_counters, sizeof(*c));
	if (c == NULL || dup_or_null(&c->name, name) < 0)
		return error_set(e, ERR_NOMEM, "manifest counter %s", name);
	c->value = value;
	return 0;
}

int
manifest_add_jit_map(struct manifest *m, const struct manifest_jit_map *j,
    struct error *e)
{
	struct manifest_jit_map *n = append(&m->jit_maps, &m->nr_jit_maps,
	    sizeof(*n));

	if (n == NULL)
		return error_set(e, ERR_NOMEM, "manifest JIT map");
	n->pid = j->pid;
	if (dup_or_null(&n->path, j->path) < 0 ||
	    dup_or_null(&n->archived, j->archived) < 0)
		return error_set(e, ERR_NOMEM, "manifest JIT map");
	return (int)(m->nr_jit_maps - 1);
}

const struct manifest_jit_map *
manifest_find_jit_map(const struct manifest *m, uint32_t pid)
{
	for (size_t i = 0; i < m->nr_jit_maps; i++)
		if (m->jit_maps[i].pid == pid)
			return &m->jit_maps[i];
	return NULL;
}

const struct manifest_image *
manifest_find_image(const struct manifest *m, const char *path)
{
	for (size_t i = 0; i < m->nr_images; i++)
		if (m->images[i].path != NULL &&
		    strcmp(m->images[i].path, path) == 0)
			return &m->images[i];
	return NULL;
}

uint64_t
manifest_counter(const struct manifest *m, const char *name)
{
	for (size_t i = 0; i < m->nr_counters; i++)
		if (strcmp(m->counters[i].name, name) == 0)
			return m->counters[i].value;
	return 0;
}

uint64_t
manifest_untraced(const struct manifest *m)
{
	return manifest_counter(m, MANIFEST_C_UNTRACED) +
	    manifest_counter(m, MANIFEST_C_DROPPED);
}

uint64_t
manifest_untraced_processes(const struct manifest *m)
{
	return manifest_counter(m, MANIFEST_C_FORK_UNTRACED) +
	    manifest_counter(m, MANIFEST_C_EXEC_UNTRACED);
}

const char *
manifest_clock_note(const struct manifest *m)
{
	if (m->pt.clock == NULL || strcmp(m->pt.clock, "virtual") != 0)
		return NULL;
	return "emulated, shared by all threads (host time under emulation)";
}

/* ---- writing ----------------------------------------------------- */

static void
kv_str_or_null(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	if (s != NULL)
		jsonw_string(w, s);
	else
		jsonw_null(w);
}

static void
write_host(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "host");
	jsonw_object_begin(w);
	kv_str_or_null(w, "hostname", m->host.hostname);
	kv_str_or_null(w, "kernel", m->host.kernel);
	jsonw_kv_u64(w, "nr_cpus", m->host.nr_cpus);
	jsonw_key(w, "cpu");
	jsonw_object_begin(w);
	kv_str_or_null(w, "vendor", m->host.cpu_vendor);
	kv_str_or_null(w, "model_name", m->host.cpu_model_name);
	jsonw_kv_u64(w, "family", m->host.cpu_family);
	jsonw_kv_u64(w, "model", m->host.cpu_model);
	jsonw_kv_u64(w, "stepping", m->host.cpu_stepping);
	jsonw_kv_bool(w, "emulated", m->host.emulated);
	jsonw_object_end(w);
	jsonw_object_end(w);
}

static void
write_recorder(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "recorder");
	jsonw_object_begin(w);
	kv_str_or_null(w, "backend", m->recorder.backend);
	kv_str_or_null(w, "version", m->recorder.version);
	jsonw_key(w, "settings");
	jsonw_object_begin(w);
	for (size_t i = 0; i < m->recorder.nr_settings; i++)
		kv_str_or_null(w, m->recorder.settings[i].key,
		    m->recorder.settings[i].value);
	jsonw_object_end(w);
	jsonw_object_end(w);
}

static void
write_pt(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "pt");
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "config", m->pt.config);
	jsonw_kv_u64(w, "pmu_type", m->pt.pmu_type);
	jsonw_kv_bool(w, "branch", m->pt.branch);
	jsonw_kv_bool(w, "tsc", m->pt.tsc);
	jsonw_kv_bool(w, "mtc", m->pt.mtc);
	jsonw_kv_bool(w, "cyc", m->pt.cyc);
	jsonw_kv_bool(w, "noretcomp", m->pt.noretcomp);
	jsonw_kv_u64(w, "mtc_period", m->pt.mtc_period);
	jsonw_kv_u64(w, "cyc_threshold", m->pt.cyc_threshold);
	jsonw_kv_u64(w, "psb_period", m->pt.psb_period);
	kv_str_or_null(w, "clock", m->pt.clock);
	kv_str_or_null(w, "timing_profile", m->pt.timing_profile);
	jsonw_kv_u64(w, "tsc_hz", m->pt.tsc_hz);
	jsonw_kv_u64(w, "nom_freq", m->pt.nom_freq);
	jsonw_kv_u64(w, "tsc_ctc_n", m->pt.tsc_ctc_n);
	jsonw_kv_u64(w, "tsc_ctc_d", m->pt.tsc_ctc_d);
	jsonw_kv_u64(w, "time_shift", m->pt.time_shift);
	jsonw_kv_u64(w, "time_mult", m->pt.time_mult);
	jsonw_kv_i64(w, "time_zero", (int64_t)m->pt.time_zero);
	jsonw_object_end(w);
}

static void
write_target(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "target");
	jsonw_object_begin(w);
	jsonw_key(w, "argv");
	jsonw_array_begin(w);
	for (size_t i = 0; i < m->target.argc; i++)
		jsonw_string(w, m->target.argv[i] ? m->target.argv[i] : "");
	jsonw_array_end(w);
	jsonw_kv_u64(w, "pid", m->target.pid);
	kv_str_or_null(w, "cwd", m->target.cwd);
	kv_str_or_null(w, "state", m->target.state);
	jsonw_kv_i64(w, "exit_code", m->target.exit_code);
	jsonw_kv_i64(w, "signal", m->target.signal);
	jsonw_object_end(w);
}

static void
write_trigger_capture(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "trigger");
	jsonw_object_begin(w);
	kv_str_or_null(w, "kind", m->trigger.kind);
	kv_str_or_null(w, "detail", m->trigger.detail);
	jsonw_kv_u64(w, "fired_ns", m->trigger.fired_ns);
	jsonw_kv_u64(w, "fired_wall_ns", m->trigger.fired_wall_ns);
	jsonw_key(w, "output_offset");
	if (m->trigger.output_offset >= 0)
		jsonw_u64(w, (uint64_t)m->trigger.output_offset);
	else
		jsonw_null(w);
	jsonw_object_end(w);
	jsonw_key(w, "capture");
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "start_ns", m->capture.start_ns);
	jsonw_kv_u64(w, "end_ns", m->capture.end_ns);
	jsonw_kv_u64(w, "start_wall_ns", m->capture.start_wall_ns);
	jsonw_kv_u64(w, "end_wall_ns", m->capture.end_wall_ns);
	jsonw_kv_u64(w, "start_tsc", m->capture.start_tsc);
	jsonw_kv_u64(w, "end_tsc", m->capture.end_tsc);
	jsonw_object_end(w);
}

static void
write_threads(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "threads");
	jsonw_array_begin(w);
	for (size_t i = 0; i < m->nr_threads; i++) {
		const struct manifest_thread *t = &m->threads[i];

		jsonw_object_begin(w);
		jsonw_kv_u64(w, "tid", t->tid);
		jsonw_kv_u64(w, "pid", t->pid);
		kv_str_or_null(w, "name", t->name);
		jsonw_kv_u64(w, "auxtrace_idx", t->auxtrace_idx);
		jsonw_kv_u64(w, "ring_size", t->ring_size);
		jsonw_kv_u64(w, "bytes_kept", t->bytes_kept);
		jsonw_kv_bool(w, "wrapped", t->wrapped);
		jsonw_kv_bool(w, "exited", t->exited);
		jsonw_kv_u64(w, "start_ns", t->start_ns);
		jsonw_kv_u64(w, "end_ns", t->end_ns);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void
write_images(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "images");
	jsonw_array_begin(w);
	for (size_t i = 0; i < m->nr_images; i++) {
		const struct manifest_image *im = &m->images[i];

		jsonw_object_begin(w);
		kv_str_or_null(w, "path", im->path);
		kv_str_or_null(w, "build_id", im->build_id);
		kv_str_or_null(w, "sha256", im->sha256);
		kv_str_or_null(w, "archived", im->archived);
		kv_str_or_null(w, "debug", im->debug);
		jsonw_kv_u64(w, "size", im->size);
		jsonw_kv_bool(w, "vdso", im->is_vdso);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void
write_jit_maps(struct jsonw *w, const struct manifest *m)
{
	jsonw_key(w, "jit_maps");
	jsonw_array_begin(w);
	for (size_t i = 0; i < m->nr_jit_maps; i++) {
		const struct manifest_jit_map *j = &m->jit_maps[i];

		jsonw_object_begin(w);
		jsonw_kv_u64(w, "pid", j->pid);
		kv_str_or_null(w, "path", j->path);
		kv_str_or_null(w, "archived", j->archived);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

int
manifest_write(FILE *out, const struct manifest *m, struct error *e)
{
	struct jsonw w;
	int rc;

	jsonw_init(&w, out);
	jsonw_object_begin(&w);
	jsonw_kv_u64(&w, "format_version", (uint64_t)m->format_version);
	jsonw_kv_string(&w, "id", m->id);
	kv_str_or_null(&w, "created", m->created);
	jsonw_kv_u64(&w, "created_wall_ns", m->created_wall_ns);
	write_host(&w, m);
	write_recorder(&w, m);
	write_pt(&w, m);
	write_target(&w, m);
	write_trigger_capture(&w, m);
	write_threads(&w, m);
	write_images(&w, m);
	write_jit_maps(&w, m);
	jsonw_key(&w, "warnings");
	jsonw_array_begin(&w);
	for (size_t i = 0; i < m->nr_warnings; i++)
		jsonw_string(&w, m->warnings[i]);
	jsonw_array_end(&w);
	jsonw_key(&w, "counters");
	jsonw_object_begin(&w);
	for (size_t i = 0; i < m->nr_counters; i++)
		jsonw_kv_u64(&w, m->counters[i].name, m->counters[i].value);
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	rc = jsonw_finish(&w);
	if (rc < 0)
		return error_set(e, -rc, "manifest: %s", err_str(rc));
	return 0;
}

/* ---- reading ----------------------------------------------------- */

/* Reading context: the first error wins, later calls do nothing. */
struct mr {
	struct error *e;
	int rc;
	const char *where;		/* object being read, for messages */
};

static const json_t *
obj(struct mr *r, const json_t *parent, const char *key)
{
	const json_t *v;

	if (r->rc < 0)
		return NULL;
	v = json_object_get(parent, key);
	if (v == NULL || !json_is_object(v)) {
		r->rc = error_set(r->e, ERR_FORMAT,
		    "%s: member '%s' %s", r->where, key,
		    v == NULL ? "is missing" : "is not an object");
		return NULL;
	}
	return v;
}

static void
fail_member(struct mr *r, int rc)
{
	r->rc = rc == -ERR_NOTFOUND ? -ERR_FORMAT : rc;
	if (r->e != NULL)
		r->e->code = -r->rc;
	error_prefix(r->e, "%s", r->where);
}

static uint64_t
u64(struct mr *r, const json_t *o, const char *key)
{
	uint64_t v = 0;
	int rc;

	if (r->rc < 0)
		return 0;
	if ((rc = json_get_u64(o, key, &v, r->e)) < 0)
		fail_member(r, rc);
	return v;
}

static int64_t
i64(struct mr *r, const json_t *o, const char *key)
{
	int64_t v = 0;
	int rc;

	if (r->rc < 0)
		return 0;
	if ((rc = json_get_i64(o, key, &v, r->e)) < 0)
		fail_member(r, rc);
	return v;
}

static int
boolean(struct mr *r, const json_t *o, const char *key)
{
	int v = 0, rc;

	if (r->rc < 0)
		return 0;
	if ((rc = json_get_bool(o, key, &v, r->e)) < 0)
		fail_member(r, rc);
	return v;
}

/* A string member (null allowed) copied into *dst. */
static void
str(struct mr *r, const json_t *o, const char *key, char **dst)
{
	const json_t *v;

	if (r->rc < 0)
		return;
	v = json_object_get(o, key);
	if (v == NULL || !(json_is_string(v) || json_is_null(v))) {
		r->rc = error_set(r->e, ERR_FORMAT, "%s: member '%s' %s",
		    r->where, key, v == NULL ? "is missing" :
		    "is not a string or null");
		return;
	}
	free(*dst);
	*dst = NULL;
	if (json_is_string(v) && (*dst = strdup(json_string_value(v))) == NULL)
		r->rc = error_set(r->e, ERR_NOMEM, "manifest");
}

static const json_t *
arr(struct mr *r, const json_t *o, const char *key)
{
	const json_t *v;

	if (r->rc < 0)
		return NULL;
	v = json_object_get(o, key);
	if (v == NULL || !json_is_array(v)) {
		r->rc = error_set(r->e, ERR_FORMAT, "%s: member '%s' %s",
		    r->where, key, v == NULL ? "is missing" : "is not an array");
		return NULL;
	}
	return v;
}

static void
read_host(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *h = obj(r, root, "host"), *c;

	r->where = "host";
	str(r, h, "hostname", &m->host.hostname);
	str(r, h, "kernel", &m->host.kernel);
	m->host.nr_cpus = (uint32_t)u64(r, h, "nr_cpus");
	c = obj(r, h, "cpu");
	r->where = "host.cpu";
	str(r, c, "vendor", &m->host.cpu_vendor);
	str(r, c, "model_name", &m->host.cpu_model_name);
	m->host.cpu_family = (uint32_t)u64(r, c, "family");
	m->host.cpu_model = (uint32_t)u64(r, c, "model");
	m->host.cpu_stepping = (uint32_t)u64(r, c, "stepping");
	m->host.emulated = boolean(r, c, "emulated");
}

static void
read_recorder(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *rec = obj(r, root, "recorder"), *set, *v;
	const char *key;

	r->where = "recorder";
	str(r, rec, "backend", &m->recorder.backend);
	str(r, rec, "version", &m->recorder.version);
	set = obj(r, rec, "settings");
	if (r->rc < 0)
		return;
	json_object_foreach((json_t *)set, key, v) {
		if (!json_is_string(v)) {
			r->rc = error_set(r->e, ERR_FORMAT,
			    "recorder.settings: '%s' is not a string", key);
			return;
		}
		if ((r->rc = manifest_set_setting(m, key, json_string_value(v),
		    r->e)) < 0)
			return;
	}
}

static void
read_pt(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *p = obj(r, root, "pt");

	r->where = "pt";
	m->pt.config = u64(r, p, "config");
	m->pt.pmu_type = (uint32_t)u64(r, p, "pmu_type");
	m->pt.branch = boolean(r, p, "branch");
	m->pt.tsc = boolean(r, p, "tsc");
	m->pt.mtc = boolean(r, p, "mtc");
	m->pt.cyc = boolean(r, p, "cyc");
	m->pt.noretcomp = boolean(r, p, "noretcomp");
	m->pt.mtc_period = (uint32_t)u64(r, p, "mtc_period");
	m->pt.cyc_threshold = (uint32_t)u64(r, p, "cyc_threshold");
	m->pt.psb_period = (uint32_t)u64(r, p, "psb_period");
	str(r, p, "clock", &m->pt.clock);
	str(r, p, "timing_profile", &m->pt.timing_profile);
	m->pt.tsc_hz = u64(r, p, "tsc_hz");
	m->pt.nom_freq = (uint32_t)u64(r, p, "nom_freq");
	m->pt.tsc_ctc_n = (uint32_t)u64(r, p, "tsc_ctc_n");
	m->pt.tsc_ctc_d = (uint32_t)u64(r, p, "tsc_ctc_d");
	m->pt.time_shift = u64(r, p, "time_shift");
	m->pt.time_mult = u64(r, p, "time_mult");
	m->pt.time_zero = (uint64_t)i64(r, p, "time_zero");
}

static void
read_target(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *t = obj(r, root, "target"), *argv;

	r->where = "target";
	argv = arr(r, t, "argv");
	if (r->rc == 0) {
		size_t n = json_array_size(argv);

		m->target.argv = calloc(n + 1, sizeof(char *));
		if (m->target.argv == NULL) {
			r->rc = error_set(r->e, ERR_NOMEM, "manifest argv");
			return;
		}
		for (size_t i = 0; i < n; i++) {
			const json_t *a = json_array_get(argv, i);

			if (!json_is_string(a)) {
				r->rc = error_set(r->e, ERR_FORMAT,
				    "target.argv[%zu] is not a string", i);
				return;
			}
			m->target.argv[i] = strdup(json_string_value(a));
			if (m->target.argv[i] == NULL) {
				r->rc = error_set(r->e, ERR_NOMEM, "argv");
				return;
			}
			m->target.argc = i + 1;
		}
	}
	m->target.pid = (uint32_t)u64(r, t, "pid");
	str(r, t, "cwd", &m->target.cwd);
	str(r, t, "state", &m->target.state);
	m->target.exit_code = (int)i64(r, t, "exit_code");
	m->target.signal = (int)i64(r, t, "signal");
}

static void
read_trigger_capture(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *t = obj(r, root, "trigger"), *c;

	r->where = "trigger";
	str(r, t, "kind", &m->trigger.kind);
	str(r, t, "detail", &m->trigger.detail);
	m->trigger.fired_ns = u64(r, t, "fired_ns");
	m->trigger.fired_wall_ns = u64(r, t, "fired_wall_ns");
	m->trigger.output_offset = json_is_integer(json_object_get(t,
	    "output_offset")) ? (int64_t)u64(r, t, "output_offset") : -1;
	c = obj(r, root, "capture");
	r->where = "capture";
	m->capture.start_ns = u64(r, c, "start_ns");
	m->capture.end_ns = u64(r, c, "end_ns");
	m->capture.start_wall_ns = u64(r, c, "start_wall_ns");
	m->capture.end_wall_ns = u64(r, c, "end_wall_ns");
	m->capture.start_tsc = u64(r, c, "start_tsc");
	m->capture.end_tsc = u64(r, c, "end_tsc");
}

static void
read_threads(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *a = arr(r, root, "threads");

	for (size_t i = 0; r->rc == 0 && i < json_array_size(a); i++) {
		const json_t *o = json_array_get(a, i);
		struct manifest_thread t = { 0 };

		r->where = "threads[]";
		if (!json_is_object(o)) {
			r->rc = error_set(r->e, ERR_FORMAT,
			    "threads[%zu] is not an object", i);
			return;
		}
		t.tid = (uint32_t)u64(r, o, "tid");
		t.pid = (uint32_t)u64(r, o, "pid");
		str(r, o, "name", &t.name);
		t.auxtrace_idx = (uint32_t)u64(r, o, "auxtrace_idx");
		t.ring_size = u64(r, o, "ring_size");
		t.bytes_kept = u64(r, o, "bytes_kept");
		t.wrapped = boolean(r, o, "wrapped");
		t.exited = boolean(r, o, "exited");
		t.start_ns = u64(r, o, "start_ns");
		t.end_ns = u64(r, o, "end_ns");
		if (r->rc == 0) {
			int rc = manifest_add_thread(m, &t, r->e);

			if (rc < 0)
				r->rc = rc;
		}
		free(t.name);
	}
}

/*
 * Whether rel names a file inside the snapshot directory on its face:
 * relative, not empty, no ".." component.  (Links inside the snapshot
 * are the opener's check: lib/fmt/snapshot's snapshot_member.)
 */
static int
inside_path(const char *rel)
{
	const char *p = rel;

	if (*rel == '\0' || *rel == '/')
		return 0;
	while (*p != '\0') {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		p += *p == '/';
	}
	return 1;
}

/* A member that names a file of the snapshot must stay inside it. */
static void
check_inside(struct mr *r, const char *list, size_t i, const char *key,
    const char *rel)
{
	if (r->rc == 0 && rel != NULL && !inside_path(rel))
		r->rc = error_set(r->e, ERR_FORMAT, "%s[%zu].%s: not a path "
		    "inside the snapshot directory (absolute, empty or "
		    "through ..)", list, i, key);
}

static void
read_images(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *a = arr(r, root, "images");

	for (size_t i = 0; r->rc == 0 && i < json_array_size(a); i++) {
		const json_t *o = json_array_get(a, i);
		struct manifest_image im = { 0 };

		r->where = "images[]";
		if (!json_is_object(o)) {
			r->rc = error_set(r->e, ERR_FORMAT,
			    "images[%zu] is not an object", i);
			return;
		}
		str(r, o, "path", &im.path);
		str(r, o, "build_id", &im.build_id);
		str(r, o, "sha256", &im.sha256);
		str(r, o, "archived", &im.archived);
		str(r, o, "debug", &im.debug);
		im.size = u64(r, o, "size");
		im.is_vdso = boolean(r, o, "vdso");
		check_inside(r, "images", i, "archived", im.archived);
		check_inside(r, "images", i, "debug", im.debug);
		if (r->rc == 0) {
			int rc = manifest_add_image(m, &im, r->e);

			if (rc < 0)
				r->rc = rc;
		}
		free(im.path);
		free(im.build_id);
		free(im.sha256);
		free(im.archived);
		free(im.debug);
	}
}

/* Snapshots written before JIT maps were archived have no member. */
static void
read_jit_maps(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *a;

	if (r->rc < 0 || json_object_get(root, "jit_maps") == NULL)
		return;
	a = arr(r, root, "jit_maps");
	for (size_t i = 0; r->rc == 0 && i < json_array_size(a); i++) {
		const json_t *o = json_array_get(a, i);
		struct manifest_jit_map j = { 0 };
		uint64_t pid;

		r->where = "jit_maps[]";
		if (!json_is_object(o)) {
			r->rc = error_set(r->e, ERR_FORMAT,
			    "jit_maps[%zu] is not an object", i);
			return;
		}
		pid = u64(r, o, "pid");
		if (r->rc == 0 && pid > UINT32_MAX)
			r->rc = error_set(r->e, ERR_FORMAT,
			    "jit_maps[%zu]: pid %llu out of range", i,
			    (unsigned long long)pid);
		j.pid = (uint32_t)pid;
		str(r, o, "path", &j.path);
		str(r, o, "archived", &j.archived);
		check_inside(r, "jit_maps", i, "archived", j.archived);
		if (r->rc == 0) {
			int rc = manifest_add_jit_map(m, &j, r->e);

			if (rc < 0)
				r->rc = rc;
		}
		free(j.path);
		free(j.archived);
	}
}

static void
read_lists(struct mr *r, const json_t *root, struct manifest *m)
{
	const json_t *w = arr(r, root, "warnings"), *c, *v;
	const char *key;

	for (size_t i = 0; r->rc == 0 && i < json_array_size(w); i++) {
		const json_t *s = json_array_get(w, i);

		if (!json_is_string(s)) {
			r->rc = error_set(r->e, ERR_FORMAT,
			    "warnings[%zu] is not a string", i);
			return;
		}
		r->rc = manifest_add_warning(m, r->e, "%s", json_string_value(s));
	}
	r->where = "manifest";
	c = obj(r, root, "counters");
	if (r->rc < 0)
		return;
	json_object_foreach((json_t *)c, key, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			r->rc = error_set(r->e, ERR_FORMAT,
			    "counters: '%s' is not a non-negative integer", key);
			return;
		}
		r->rc = manifest_set_counter(m, key,
		    (uint64_t)json_integer_value(v), r->e);
		if (r->rc < 0)
			return;
	}
}

static void
read_top(struct mr *r, const json_t *root, struct manifest *m)
{
	const char *id = NULL;
	uint64_t ver;
	int rc;

	r->where = "manifest";
	if (!json_is_object(root)) {
		r->rc = error_set(r->e, ERR_FORMAT, "manifest is not an object");
		return;
	}
	ver = u64(r, root, "format_version");
	if (r->rc == 0 && ver != MANIFEST_FORMAT_VERSION) {
		r->rc = error_set(r->e, ver > MANIFEST_FORMAT_VERSION ?
		    ERR_UNSUPPORTED : ERR_FORMAT,
		    "format_version %llu, this ptkit reads %d",
		    (unsigned long long)ver, MANIFEST_FORMAT_VERSION);
		return;
	}
	if (r->rc == 0 && (rc = json_get_string(root, "id", &id, r->e)) < 0)
		fail_member(r, rc);
	if (r->rc == 0) {
		if (strlen(id) >= sizeof(m->id)) {
			r->rc = error_set(r->e, ERR_FORMAT, "id too long");
			return;
		}
		strcpy(m->id, id);
	}
	str(r, root, "created", &m->created);
	m->created_wall_ns = u64(r, root, "created_wall_ns");
}

static int
check_paths_root(json_t *root, const char *path, struct error *e)
{
	static const struct { const char *list, *key; } members[] = {
		{ "images", "archived" }, { "images", "debug" },
		{ "jit_maps", "archived" },
	};
	struct mr r = { e, 0, "manifest" };

	if (root == NULL)
		return error_prefix(e, "%s", path);
	for (size_t k = 0; k < sizeof(members) / sizeof(members[0]); k++) {
		const json_t *a = json_object_get(root, members[k].list);

		for (size_t i = 0; i < json_array_size(a); i++) {
			const json_t *v = json_object_get(json_array_get(a, i),
			    members[k].key);

			check_inside(&r, members[k].list, i, members[k].key,
			    json_is_string(v) ? json_string_value(v) : NULL);
		}
	}
	json_decref(root);
	return r.rc < 0 ? error_prefix(e, "%s", path) : 0;
}

int
manifest_check_paths(const char *path, struct error *e)
{
	return check_paths_root(json_read_file(path, e), path, e);
}

int
manifest_check_paths_fd(int fd, const char *path, struct error *e)
{
	return check_paths_root(json_read_fd(fd, e), path, e);
}

static int manifest_read_root(json_t *root, const char *path,
    struct manifest *m, struct error *e);

int
manifest_read(const char *path, struct manifest *m, struct error *e)
{
	manifest_init(m);
	return manifest_read_root(json_read_file(path, e), path, m, e);
}

int
manifest_read_fd(int fd, const char *path, struct manifest *m,
    struct error *e)
{
	manifest_init(m);
	return manifest_read_root(json_read_fd(fd, e), path, m, e);
}

static int
manifest_read_root(json_t *root, const char *path, struct manifest *m,
    struct error *e)
{
	struct mr r = { e, 0, "manifest" };

	if (root == NULL)
		return error_prefix(e, "%s", path);
	read_top(&r, root, m);
	read_host(&r, root, m);
	read_recorder(&r, root, m);
	read_pt(&r, root, m);
	read_target(&r, root, m);
	read_trigger_capture(&r, root, m);
	read_threads(&r, root, m);
	read_images(&r, root, m);
	read_jit_maps(&r, root, m);
	read_lists(&r, root, m);
	json_decref(root);
	if (r.rc < 0) {
		manifest_free(m);
		return error_prefix(e, "%s", path);
	}
	return 0;
}

/* Copies string member key of o into buf when it is one. */
static void
brief_str(const json_t *o, const char *key, char *buf, size_t size)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		snprintf(buf, size, "%s", json_string_value(v));
}

static int brief_root(json_t *root, const char *path,
    struct manifest_brief *b, struct error *e);

int
manifest_read_brief(const char *path, struct manifest_brief *b,
    struct error *e)
{
	memset(b, 0, sizeof(*b));
	return brief_root(json_read_file(path, e), path, b, e);
}

int
manifest_read_brief_fd(int fd, const char *path, struct manifest_brief *b,
    struct error *e)
{
	memset(b, 0, sizeof(*b));
	return brief_root(json_read_fd(fd, e), path, b, e);
}

static int
brief_root(json_t *root, const char *path, struct manifest_brief *b,
    struct error *e)
{
	const json_t *t, *v;

	if (root == NULL)
		return error_prefix(e, "%s", path);
	if (!json_is_object(root)) {
		json_decref(root);
		return error_set(e, ERR_FORMAT, "%s: manifest is not an object",
		    path);
	}
	v = json_object_get(root, "created_wall_ns");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		b->created_wall_ns = (uint64_t)json_integer_value(v);
	brief_str(root, "created", b->created, sizeof(b->created));
	t = json_object_get(root, "target");
	v = json_array_get(json_object_get(t, "argv"), 0);
	if (json_is_string(v))
		snprintf(b->program, sizeof(b->program), "%s",
		    json_string_value(v));
	v = json_object_get(t, "pid");
	if (json_is_integer(v) && json_integer_value(v) > 0 &&
	    json_integer_value(v) <= UINT32_MAX)
		b->pid = (uint32_t)json_integer_value(v);
	brief_str(t, "state", b->target_state, sizeof(b->target_state));
	b->exit_code = (int)json_integer_value(json_object_get(t,
	    "exit_code"));
	b->signal = (int)json_integer_value(json_object_get(t, "signal"));
	brief_str(json_object_get(root, "trigger"), "kind", b->trigger,
	    sizeof(b->trigger));
	brief_str(json_object_get(root, "recorder"), "backend", b->recorder,
	    sizeof(b->recorder));
	json_decref(root);
	return 0;
}
