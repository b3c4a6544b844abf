/* rec_manifest: see rec_manifest.h. */
#include "rec_manifest.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

int
rec_manifest_host(struct manifest *m, const struct ptcaps_cpu *cpu,
    struct error *e)
{
	struct utsname u;
	int rc;

	if (uname(&u) == 0 &&
	    ((rc = manifest_set_string(&m->host.hostname, u.nodename, e)) < 0 ||
	    (rc = manifest_set_string(&m->host.kernel, u.release, e)) < 0))
		return rc;
	if ((rc = manifest_set_string(&m->host.cpu_vendor, cpu->vendor,
	    e)) < 0 || (rc = manifest_set_string(&m->host.cpu_model_name,
	    cpu->model_name, e)) < 0)
		return rc;
	m->host.cpu_family = cpu->family > 0 ? (uint32_t)cpu->family : 0;
	m->host.cpu_model = cpu->model > 0 ? (uint32_t)cpu->model : 0;
	m->host.cpu_stepping = cpu->stepping > 0 ? (uint32_t)cpu->stepping : 0;
	m->host.nr_cpus = cpu->online > 0 ? (uint32_t)cpu->online : 1;
	m->host.emulated = 0;
	return 0;
}

int
rec_manifest_target(struct manifest *m, const struct rec_options *opt,
    int pid, int exit_code, int signal, const char *state, struct error *e)
{
	char cwd[PATH_MAX];
	size_t argc = 0;
	int rc;

	while (opt->program != NULL && opt->program[argc] != NULL)
		argc++;
	if (argc > 0 && (rc = manifest_set_argv(m, argc,
	    (const char *const *)opt->program, e)) < 0)
		return rc;
	m->target.pid = (uint32_t)pid;
	if (getcwd(cwd, sizeof(cwd)) != NULL &&
	    (rc = manifest_set_string(&m->target.cwd, cwd, e)) < 0)
		return rc;
	m->target.exit_code = exit_code;
	m->target.signal = signal;
	return manifest_set_string(&m->target.state, state, e);
}

int
rec_manifest_setting(struct manifest *m, const char *key, uint64_t v,
    struct error *e)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return manifest_set_setting(m, key, buf, e);
}
