/* emu_exec: see emu_exec.h. */
#include "emu_exec.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An executable regular file whose header is an x86-64 ELF file's. */
static int
runnable_elf(const char *path)
{
	unsigned char h[20];
	struct stat st;
	ssize_t n;
	int fd;

	if (access(path, X_OK) != 0 || stat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, h, sizeof(h));
	close(fd);
	/* ELFCLASS64, little-endian, e_machine EM_X86_64 (62) */
	return n == (ssize_t)sizeof(h) && memcmp(h, "\177ELF\2\1", 6) == 0 &&
	    h[18] == 62 && h[19] == 0;
}

/* "#!INTERP [ARG]\n": the kernel's reading (one argument, spaces around). */
static int
read_shebang(const char *path, struct emu_exec_target *t)
{
	char line[256], *p, *end;
	ssize_t n;
	int fd;

	if (access(path, X_OK) != 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 2 || line[0] != '#' || line[1] != '!')
		return -1;
	line[n] = '\0';
	if ((end = strchr(line, '\n')) == NULL)
		return -1;	/* longer than the kernel reads: not followed */
	*end = '\0';
	for (p = line + 2; *p == ' ' || *p == '\t'; p++)
		;
	end = p + strcspn(p, " \t");
	if (end == p || (size_t)(end - p) >= sizeof(t->program))
		return -1;
	memcpy(t->program, p, (size_t)(end - p));
	t->program[end - p] = '\0';
	for (p = end; *p == ' ' || *p == '\t'; p++)
		;
	for (end = p + strlen(p); end > p && (end[-1] == ' ' ||
	    end[-1] == '\t'); end--)
		;
	*end = '\0';
	snprintf(t->interp_arg, sizeof(t->interp_arg), "%s", p);
	t->script = 1;
	return 0;
}

int
emu_exec_target(const char *path, struct emu_exec_target *t)
{
	memset(t, 0, sizeof(*t));
	if (path == NULL || path[0] == '\0')
		return -1;
	if (runnable_elf(path)) {
		if (snprintf(t->program, sizeof(t->program), "%s", path) >=
		    (int)sizeof(t->program))
			return -1;
		return 0;
	}
	/* one level of interpreter, which must be a program itself */
	if (read_shebang(path, t) == 0 && runnable_elf(t->program))
		return 0;
	return -1;
}

char **
emu_exec_argv(const char *qemu, const char *plugin_arg,
    const struct emu_exec_target *t, const char *path, char *const *argv)
{
	size_t n = 0, k = 0, i;
	char **v;

	while (argv != NULL && argv[n] != NULL)
		n++;
	if ((v = calloc(n + 10, sizeof(*v))) == NULL)
		return NULL;
	v[k++] = (char *)qemu;
	v[k++] = (char *)"-0";
	/* a script's argv[0] is its interpreter as the "#!" line names it */
	v[k++] = t->script ? (char *)t->program :
	    (char *)(n > 0 ? argv[0] : path);
	v[k++] = (char *)"-plugin";
	v[k++] = (char *)plugin_arg;
	v[k++] = (char *)t->program;
	if (t->script) {
		if (t->interp_arg[0] != '\0')
			v[k++] = (char *)t->interp_arg;
		v[k++] = (char *)path;
	}
	for (i = 1; i < n; i++)
		v[k++] = argv[i];
	v[k] = NULL;
	return v;
}
