/*
 * fuzz_manifest: libFuzzer target over the snapshot manifest's readers
 * (lib/fmt/manifest): any bytes as manifest.json go through
 * manifest_read, manifest_check_paths (what import checks) and
 * manifest_read_brief (what a listing of the store shows) without a
 * crash, a leak or undefined behaviour, and a manifest read whole has
 * only paths inside the snapshot in the members that name its files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fmt/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What manifest_read let through must not name a file outside. */
static void
check_inside(const char *rel)
{
	size_t n = rel != NULL ? strlen(rel) : 0;

	if (rel == NULL)
		return;
	if (n == 0 || rel[0] == '/' || strcmp(rel, "..") == 0 ||
	    strncmp(rel, "../", 3) == 0 || strstr(rel, "/../") != NULL ||
	    (n >= 3 && strcmp(rel + n - 3, "/..") == 0))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest_brief b;
	struct manifest m;
	struct error e;
	char path[64];
	int fd = memfd_create("manifest.json", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (manifest_read(path, &m, &e) == 0) {
			for (size_t i = 0; i < m.nr_images; i++) {
				check_inside(m.images[i].archived);
				check_inside(m.images[i].debug);
			}
			for (size_t i = 0; i < m.nr_jit_maps; i++)
				check_inside(m.jit_maps[i].archived);
			manifest_free(&m);
		}
		if (manifest_check_paths(path, &e) < 0 && e.msg[0] == '\0')
			abort();
		/* Whatever it read is terminated strings within their size. */
		if (manifest_read_brief(path, &b, &e) == 0 &&
		    (strlen(b.program) >= sizeof(b.program) ||
		    strlen(b.created) >= sizeof(b.created) ||
		    strlen(b.trigger) >= sizeof(b.trigger) ||
		    strlen(b.recorder) >= sizeof(b.recorder) ||
		    strlen(b.target_state) >= sizeof(b.target_state)))
			abort();
	}
	close(fd);
	return 0;
}
