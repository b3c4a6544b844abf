/* procmaps: see procmaps.h. */
#include "rec/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/fdio.h"

void
procmaps_free(struct procmaps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* "start-end perms offset maj:min inode [path]" */
static int
parse_line(const char *line, size_t len, struct procmaps_entry *en)
{
	char perms[8];
	const char *p;
	int n = 0;
	size_t plen;

	memset(en, 0, sizeof(*en));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %"
	    SCNu64 "%n", &en->start, &en->end, perms, &en->pgoff, &en->maj,
	    &en->min, &en->ino, &n) != 7 || strlen(perms) != 4 ||
	    en->end < en->start)
		return -1;
	en->prot = (perms[0] == 'r' ? PROT_READ : 0) |
	    (perms[1] == 'w' ? PROT_WRITE : 0) |
	    (perms[2] == 'x' ? PROT_EXEC : 0);
	en->shared = perms[3] == 's';
	p = line + n;
	while (p < line + len && *p == ' ')
		p++;
	plen = (size_t)(line + len - p);
	/* The path runs to the end of the line: it may hold spaces. */
	if (plen >= 10 && memcmp(p + plen - 10, " (deleted)", 10) == 0) {
		en->deleted = 1;
		plen -= 10;
	}
	if ((en->path = strndup(p, plen)) == NULL)
		return -2;
	return 0;
}

int
procmaps_parse(const char *text, int exec_only, struct procmaps *m,
    struct error *e)
{
	const char *line = text, *nl;
	struct procmaps_entry en, *v;
	size_t cap = 0, len;
	int rc;

	m->v = NULL;
	m->n = 0;
	for (; *line != '\0'; line = *nl ? nl + 1 : nl) {
		nl = strchr(line, '\n');
		if (nl == NULL)
			nl = line + strlen(line);
		len = (size_t)(nl - line);
		if (len == 0)
			continue;
		if ((rc = parse_line(line, len, &en)) < 0) {
			procmaps_free(m);
			return rc == -2 ? error_set(e, ERR_NOMEM, "maps") :
			    error_set(e, ERR_FORMAT, "maps line '%.*s' is not "
			    "START-END PERMS OFFSET MAJ:MIN INODE [PATH]",
			    (int)(len > 200 ? 200 : len), line);
		}
		if (exec_only && !(en.prot & PROT_EXEC)) {
			free(en.path);
			continue;
		}
		if (m->n == cap) {
			cap = cap ? 2 * cap : 32;
			if ((v = realloc(m->v, cap * sizeof(*v))) == NULL) {
				free(en.path);
				procmaps_free(m);
				return error_set(e, ERR_NOMEM, "maps");
			}
			m->v = v;
		}
		m->v[m->n++] = en;
	}
	return 0;
}

/* The whole file: /proc files report size 0, so read until EOF. */
static char *
slurp(const char *path, struct error *e)
{
	size_t len;
	char *buf;
	int fd, err;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		error_set(e, errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: %s",
		    path, strerror(errno));
		return NULL;
	}
	if (fdio_read_all(fd, SIZE_MAX, &buf, &len) < 0) {
		err = errno;
		if (err == ENOMEM)
			error_set(e, ERR_NOMEM, "%s", path);
		else
			error_set_errno(e, err, "%s", path);
		buf = NULL;
	}
	close(fd);
	return buf;
}

int
procmaps_read(pid_t pid, int exec_only, struct procmaps *m, struct error *e)
{
	char path[64], *text;
	int rc;

	m->v = NULL;
	m->n = 0;
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/maps");
	else
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((text = slurp(path, e)) == NULL)
		return -e->code;
	rc = procmaps_parse(text, exec_only, m, e);
	free(text);
	return rc;
}

void
procmaps_to_mmap(const struct procmaps_entry *en, uint32_t pid, uint32_t tid,
    struct perfdata_mmap *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->tid = tid;
	out->addr = en->start;
	out->len = en->end - en->start;
	out->pgoff = en->pgoff;
	out->is_mmap2 = 1;
	out->maj = en->maj;
	out->min = en->min;
	out->ino = en->ino;
	out->prot = en->prot;
	out->flags = en->shared ? MAP_SHARED : MAP_PRIVATE;
	out->filename = en->path;
}

int
procmaps_vdso(const void **base, size_t *size, struct error *e)
{
	unsigned long ehdr = getauxval(AT_SYSINFO_EHDR);
	struct procmaps m;
	size_t i;
	int rc;

	if (ehdr == 0)
		return error_set(e, ERR_NOTFOUND, "this process has no vDSO");
	if ((rc = procmaps_read(0, 0, &m, e)) < 0)
		return rc;
	for (i = 0; i < m.n; i++)
		if (strcmp(m.v[i].path, "[vdso]") == 0 && m.v[i].start == ehdr)
			break;
	if (i == m.n) {
		procmaps_free(&m);
		return error_set(e, ERR_NOTFOUND, "no [vdso] line in "
		    "/proc/self/maps");
	}
	*base = (const void *)ehdr;
	*size = (size_t)(m.v[i].end - m.v[i].start);
	procmaps_free(&m);
	return 0;
}
