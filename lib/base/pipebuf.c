/* pipebuf: see pipebuf.h. */
#include "base/pipebuf.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

void
pipebuf_widen(int fd, int want)
{
	struct stat sb;
	FILE *f;
	int max = 0;

	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISFIFO(sb.st_mode) ||
	    fcntl(fd, F_SETPIPE_SZ, want) >= 0)
		return;
	if ((f = fopen("/proc/sys/fs/pipe-max-size", "re")) == NULL)
		return;
	if (fscanf(f, "%d", &max) == 1 && max > 0 && max < want)
		(void)fcntl(fd, F_SETPIPE_SZ, max);
	fclose(f);
}
