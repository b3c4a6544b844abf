/* emu_jit: see emu_jit.h. */
#include "emu_jit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define JIT_DUMP_MAX (64u << 20)	/* bytes of one region, at most */

void
emu_jit_add(struct emu_jit *j, uint64_t start, uint64_t len)
{
	int i;

	if (len == 0)
		return;
	for (i = 0; i < j->n; i++)
		if (j->r[i].start == start && j->r[i].len == len)
			return;
	if (j->n == EMU_JIT_MAX) {
		j->lost++;
		return;
	}
	j->r[j->n].start = start;
	j->r[j->n].len = len;
	j->n++;
}

void
emu_jit_unmap(struct emu_jit *j, uint64_t start, uint64_t len)
{
	int i, k = 0;

	for (i = 0; i < j->n; i++) {
		if (j->r[i].start < start + len &&
		    start < j->r[i].start + j->r[i].len) {
			j->lost++;
			continue;
		}
		j->r[k++] = j->r[i];
	}
	j->n = k;
}

static int
write_fd(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
write_whole(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc;

	if (fd < 0)
		return -1;
	rc = write_fd(fd, (const char *)p, n);
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

/* Reads len bytes at guest (= host) address start; 0 or -1. */
static int
read_mem(int mem, uint64_t start, uint8_t *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(mem, buf + got, len - got, (off_t)(start + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

int
emu_jit_dump(const struct emu_jit *j, const char *dir)
{
	char path[PATH_MAX + 32], line[64];
	uint8_t *buf;
	FILE *list;
	int mem, i, done = 0;

	if (j->n == 0)
		return 0;
	if ((mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/jit", dir);
	if ((list = fopen(path, "we")) == NULL) {
		close(mem);
		return 0;
	}
	for (i = 0; i < j->n; i++) {
		if (j->r[i].len > JIT_DUMP_MAX ||
		    (buf = malloc(j->r[i].len)) == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/jit.%" PRIx64, dir,
		    j->r[i].start);
		if (read_mem(mem, j->r[i].start, buf, j->r[i].len) == 0 &&
		    write_whole(path, buf, j->r[i].len) == 0) {
			snprintf(line, sizeof(line), "%" PRIx64 " %" PRIx64 "\n",
			    j->r[i].start, j->r[i].len);
			fputs(line, list);
			done++;
		}
		free(buf);
	}
	fclose(list);
	close(mem);
	return done;
}

void
emu_jit_map_path(int pid, char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/perf-%d.map", pid);
}

int
emu_jit_is_map_path(int pid, uint64_t path_addr)
{
	char map[64], got[64];
	struct iovec local, remote;
	ssize_t n;

	emu_jit_map_path(pid, map, sizeof(map));
	local.iov_base = got;
	local.iov_len = sizeof(got) - 1;
	remote.iov_base = (void *)(uintptr_t)path_addr;
	remote.iov_len = strlen(map) + 1;
	/* Reading ourselves: a bad address is EFAULT, not SIGSEGV. */
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (path_addr == 0 || n != (ssize_t)remote.iov_len)
		return 0;
	got[n] = '\0';
	return strcmp(got, map) == 0;
}

int
emu_jit_copy(const char *src, const char *dst)
{
	char buf[65536];
	int in, out, ok = 1;
	ssize_t n;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return 0;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write_fd(out, buf, (size_t)n) < 0) {
			ok = 0;
			break;
		}
	}
	close(in);
	close(out);
	if (!ok)
		unlink(dst);
	return ok;
}
