/* t_pipebuf: a pipe grows to what is asked, or to pipe-max-size. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "base/pipebuf.h"
#include "tap.h"

static int
max_size(void)
{
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");
	int max = 0;

	if (f != NULL) {
		if (fscanf(f, "%d", &max) != 1)
			max = 0;
		fclose(f);
	}
	return max;
}

int
main(void)
{
	int p[2], max = max_size();
	FILE *f = tmpfile();

	OK(max >= 4096, "pipe-max-size is readable");
	OK(pipe(p) == 0, "a pipe");
	pipebuf_widen(p[1], 1 << 17);
	IS_INT(fcntl(p[1], F_GETPIPE_SZ), 1 << 17, "grown to what is asked");
	/* As root the kernel grants more than pipe-max-size: not root. */
	if (geteuid() != 0) {
		pipebuf_widen(p[0], max * 2);
		IS_INT(fcntl(p[0], F_GETPIPE_SZ), max,
		    "refused: pipe-max-size instead");
	} else {
		pipebuf_widen(p[0], max);
		IS_INT(fcntl(p[0], F_GETPIPE_SZ), max, "pipe-max-size (root)");
	}
	OK(f != NULL, "a regular file");
	pipebuf_widen(fileno(f), 1 << 20);
	IS_INT(fcntl(fileno(f), F_GETPIPE_SZ), -1, "not a pipe: untouched");
	pipebuf_widen(-1, 1 << 20);	/* no descriptor: must not fault */
	fclose(f);
	close(p[0]);
	close(p[1]);
	return tap_done();
}
