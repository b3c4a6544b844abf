/* spawn: see spawn.h. */
#include "base/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fdio.h"

extern char **environ;

void
spawn_init(struct spawn *sp, char *const *argv)
{
	memset(sp, 0, sizeof(*sp));
	sp->argv = argv;
	sp->exit_code = -1;
}

int
spawn_die_with_parent(int sig)
{
	const char *v = getenv(SPAWN_PARENT_ENV);
	long want;
	char *end;

	if (v == NULL)
		return 0;
	want = strtol(v, &end, 10);
	if (unsetenv(SPAWN_PARENT_ENV) < 0 || *end != '\0' || want <= 1)
		return 0;
	if (prctl(PR_SET_PDEATHSIG, sig) < 0)
		return 0;
	/* The parent may have died before the request: nobody would tell. */
	return getppid() != (pid_t)want;
}

/*
 * environ with SPAWN_PARENT_ENV=<our pid> in place of any it had: a
 * malloc'd array whose one malloc'd string is its last entry.
 */
static char **
env_with_parent(char *const *env)
{
	size_t n = 0, k = 0, i, len = strlen(SPAWN_PARENT_ENV);
	char **v, *mine;

	while (env[n] != NULL)
		n++;
	if ((v = calloc(n + 2, sizeof(*v))) == NULL)
		return NULL;
	if (asprintf(&mine, "%s=%ld", SPAWN_PARENT_ENV, (long)getpid()) < 0) {
		free(v);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (strncmp(env[i], SPAWN_PARENT_ENV, len) != 0 ||
		    env[i][len] != '=')
			v[k++] = env[i];
	v[k] = mine;
	return v;
}

static void
env_free(char **v)
{
	size_t n = 0;

	if (v == NULL)
		return;
	while (v[n] != NULL)
		n++;
	if (n > 0)
		free(v[n - 1]);
	free(v);
}

/* Pipes made for one stream: child end [0], parent end [1]. */
struct stream_plan {
	int child_fd;
	int parent_fd;
};

static void
plan_close(struct stream_plan *p)
{
	if (p->child_fd >= 0)
		close(p->child_fd);
	if (p->parent_fd >= 0)
		close(p->parent_fd);
	p->child_fd = p->parent_fd = -1;
}

/* target is 0, 1 or 2; setting is the struct spawn field. */
static int
plan_stream(int target, int setting, struct stream_plan *p,
    posix_spawn_file_actions_t *fa)
{
	int fds[2];

	p->child_fd = p->parent_fd = -1;
	if (setting == SPAWN_INHERIT)
		return 0;
	if (setting == SPAWN_NULL)
		return posix_spawn_file_actions_addopen(fa, target, "/dev/null",
		    target == 0 ? O_RDONLY : O_WRONLY, 0);
	if (setting >= SPAWN_FD_BASE)
		return posix_spawn_file_actions_adddup2(fa,
		    setting - SPAWN_FD_BASE, target);
	if (setting != SPAWN_PIPE)
		return EINVAL;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return errno;
	/* fds[0] reads; the child reads stdin and writes the others. */
	p->child_fd = target == 0 ? fds[0] : fds[1];
	p->parent_fd = target == 0 ? fds[1] : fds[0];
	return posix_spawn_file_actions_adddup2(fa, p->child_fd, target);
}

static int
spawn_setup(struct spawn *sp, posix_spawn_file_actions_t *fa,
    posix_spawnattr_t *attr, struct stream_plan plan[3])
{
	int settings[3] = { sp->in, sp->out, sp->err };
	int i, rc;

	for (i = 0; i < 3; i++) {
		if ((rc = plan_stream(i, settings[i], &plan[i], fa)) != 0)
			return rc;
	}
	if (sp->new_pgroup) {
		if ((rc = posix_spawnattr_setpgroup(attr, 0)) != 0)
			return rc;
		return posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP |
		    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	}
	return posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGDEF |
	    POSIX_SPAWN_SETSIGMASK);
}

/* The child starts with default dispositions and an empty mask. */
static int
spawn_attr_signals(posix_spawnattr_t *attr)
{
	sigset_t all, none;
	int rc;

	sigfillset(&all);
	sigemptyset(&none);
	if ((rc = posix_spawnattr_setsigdefault(attr, &all)) != 0)
		return rc;
	return posix_spawnattr_setsigmask(attr, &none);
}

int
spawn_start(struct spawn *sp, struct error *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct stream_plan plan[3] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
	char *const *env = sp->envp != NULL ? sp->envp : environ;
	char **own_env = NULL;
	int rc, i;

	if (sp->argv == NULL || sp->argv[0] == NULL)
		return error_set(e, ERR_INVALID, "spawn: empty argv");
	if (sp->die_with_parent && (env = own_env = env_with_parent(env)) ==
	    NULL)
		return error_set(e, ERR_NOMEM, "%s: out of memory",
		    sp->argv[0]);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	rc = spawn_setup(sp, &fa, &attr, plan);
	if (rc == 0)
		rc = spawn_attr_signals(&attr);
	if (rc == 0)
		rc = posix_spawnp(&sp->pid, sp->argv[0], &fa, &attr,
		    sp->argv, env);
	env_free(own_env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		for (i = 0; i < 3; i++)
			plan_close(&plan[i]);
		sp->pid = 0;
		sp->in = sp->out = sp->err = -1;
		if (rc == ENOENT)
			return error_set(e, ERR_NOTFOUND,
			    "%s: program not found", sp->argv[0]);
		return error_set(e, ERR_IO, "%s: cannot start: %s",
		    sp->argv[0], strerror(rc));
	}
	for (i = 0; i < 3; i++) {
		if (plan[i].child_fd >= 0)
			close(plan[i].child_fd);
	}
	sp->in = plan[0].parent_fd >= 0 ? plan[0].parent_fd : -1;
	sp->out = plan[1].parent_fd >= 0 ? plan[1].parent_fd : -1;
	sp->err = plan[2].parent_fd >= 0 ? plan[2].parent_fd : -1;
	return 0;
}

static void
close_parent_end(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int
spawn_finish(struct spawn *sp, struct error *e)
{
	int status;
	pid_t r;

	close_parent_end(&sp->in);
	close_parent_end(&sp->out);
	close_parent_end(&sp->err);
	if (sp->pid <= 0)
		return error_set(e, ERR_INVALID, "spawn: no child to wait for");
	do
		r = waitpid(sp->pid, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return error_set_errno(e, errno, "%s: wait", sp->argv[0]);
	sp->pid = 0;
	if (WIFSIGNALED(status)) {
		sp->term_signal = WTERMSIG(status);
		sp->exit_code = -1;
		return error_set(e, ERR_CHILD, "%s: killed by signal %d (%s)",
		    sp->argv[0], sp->term_signal, strsignal(sp->term_signal));
	}
	sp->exit_code = WEXITSTATUS(status);
	if (sp->exit_code != 0)
		return error_set(e, ERR_CHILD, "%s: exited with status %d",
		    sp->argv[0], sp->exit_code);
	return 0;
}

int
spawn_kill(struct spawn *sp, int sig)
{
	if (sp->pid <= 0)
		return -ERR_INVALID;
	if (kill(sp->new_pgroup ? -sp->pid : sp->pid, sig) < 0)
		return -ERR_IO;
	return 0;
}

/* Reads fd to EOF into a growing buffer.  Returns 0 or -ERR_NOMEM/-ERR_IO. */
static int
read_all(int fd, char **out, size_t *out_len, struct error *e)
{
	if (fdio_read_all(fd, SIZE_MAX, out, out_len) == 0)
		return 0;
	if (errno == ENOMEM)
		return error_set(e, ERR_NOMEM, "spawn: out of memory");
	return error_set_errno(e, errno, "spawn: read");
}

int
spawn_capture(char *const *argv, char **out, size_t *out_len,
    struct error *e)
{
	struct spawn sp;
	int rc, rrc;

	*out = NULL;
	*out_len = 0;
	spawn_init(&sp, argv);
	sp.in = SPAWN_NULL;
	sp.out = SPAWN_PIPE;
	if ((rc = spawn_start(&sp, e)) < 0)
		return rc;
	rrc = read_all(sp.out, out, out_len, e);
	rc = spawn_finish(&sp, rrc < 0 ? NULL : e);
	if (rrc < 0)
		return rrc;
	return rc;
}
