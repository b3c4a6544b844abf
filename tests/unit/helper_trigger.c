/*
 * helper_trigger: the program t_rec_pt records with the pt recorder on
 * fake rings.
 *
 *   helper_trigger lines        writes "tick 1" to "tick 4" in one write,
 *                               exits 0
 *   helper_trigger trap COOKIE [N]
 *                               writes "before ADDR" (ADDR: trigger_here's
 *                               runtime address), calls trigger_here() N
 *                               times (default 1) writing "between K"
 *                               after the K-th but the last, then writes
 *                               "after" to stderr, exits 5
 *
 *   helper_trigger sleep S      writes "sleeping", sleeps S seconds, exits 0
 *
 * trigger_here() raises on its own thread the signal a perf breakpoint
 * with attr.sigtrap raises when it fires (SIGTRAP, si_code TRAP_PERF,
 * si_perf_data = the event's sig_data): what the kernel would send at a
 * hardware breakpoint on trigger_here, which this machine's breakpoints
 * cannot give.  A process may queue any siginfo to itself.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TRAP_PERF_CODE 6

__attribute__((noinline)) void trigger_here(unsigned long long cookie);

__attribute__((noinline)) void
trigger_here(unsigned long long cookie)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGTRAP;
	si.si_code = TRAP_PERF_CODE;
	si.si_addr = (void *)trigger_here;
	/* si_perf_data follows si_addr in the kernel's siginfo. */
	memcpy((char *)&si.si_addr + sizeof(void *), &cookie, sizeof(cookie));
	syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid),
	    SIGTRAP, &si);
}

int
main(int argc, char *argv[])
{
	static const char ticks[] = "tick 1\ntick 2\ntick 3\ntick 4\n";

	if (argc == 2 && strcmp(argv[1], "lines") == 0) {
		if (write(1, ticks, sizeof(ticks) - 1) < 0)
			return 1;
		return 0;
	}
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "trap") == 0) {
		int n = argc == 4 ? atoi(argv[3]) : 1, k;

		printf("before %p\n", (void *)trigger_here);
		fflush(stdout);
		for (k = 1; k <= n; k++) {
			trigger_here(strtoull(argv[2], NULL, 0));
			if (k < n) {
				printf("between %d\n", k);
				fflush(stdout);
			}
		}
		fprintf(stderr, "after\n");
		return 5;
	}
	if (argc == 3 && strcmp(argv[1], "sleep") == 0) {
		printf("sleeping\n");
		fflush(stdout);
		sleep((unsigned)atoi(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: helper_trigger lines | trap COOKIE [N] | "
	    "sleep S\n");
	return 2;
}
