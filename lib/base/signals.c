/* signals: see signals.h. */
#include "base/signals.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int
set_action(int sig, const struct sigaction *sa, struct error *e)
{
	if (sigaction(sig, sa, NULL) < 0)
		return error_set_errno(e, errno, "sigaction SIG%s",
		    sigabbrev_np(sig));
	return 0;
}

int
signals_catch_stop(void (*handler)(int), int restart, struct error *e)
{
	struct sigaction sa;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	if (sigemptyset(&sa.sa_mask) < 0)
		return error_set_errno(e, errno, "sigemptyset");
	sa.sa_flags = restart ? SA_RESTART : 0;
	if ((rc = set_action(SIGINT, &sa, e)) < 0 ||
	    (rc = set_action(SIGTERM, &sa, e)) < 0)
		return rc;
	return 0;
}

int
signals_ignore_pipe(struct error *e)
{
	struct sigaction sa;

	/* What signal(SIGPIPE, SIG_IGN) sets, spelt out. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigemptyset(&sa.sa_mask) < 0)
		return error_set_errno(e, errno, "sigemptyset");
	sa.sa_flags = SA_RESTART;
	return set_action(SIGPIPE, &sa, e);
}

int
signals_catch_unless_ignored(const int *sigs, size_t n,
    void (*handler)(int), struct error *e)
{
	struct sigaction sa, old;
	size_t i;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	/* a handler that returns (a noted SIGINT) must not fail a read */
	sa.sa_flags = SA_RESTART;
	if (sigfillset(&sa.sa_mask) < 0)
		return error_set_errno(e, errno, "sigfillset");
	for (i = 0; i < n; i++) {
		if (sigaction(sigs[i], NULL, &old) < 0)
			return error_set_errno(e, errno, "sigaction SIG%s",
			    sigabbrev_np(sigs[i]));
		if (old.sa_handler == SIG_IGN)
			continue;
		if ((rc = set_action(sigs[i], &sa, e)) < 0)
			return rc;
	}
	return 0;
}

void
signals_reraise(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	if (sigemptyset(&sa.sa_mask) < 0 || sigaction(sig, &sa, NULL) < 0 ||
	    raise(sig) != 0)
		_exit(128 + sig);
}
