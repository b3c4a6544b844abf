/*
 * ptrec: record a program's control flow into a snapshot directory.
 *
 * main parses the command line and picks the recorder (pt, perf or emu),
 * or runs the doctor.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <limits.h>

#include "base/spawn.h"
#include "base/progpath.h"
#include "tool/cli.h"
#include "doctor.h"
#include "options.h"
#include "rec_emu.h"
#include "rec_perf.h"
#include "rec_pt.h"
#include "snapwrite.h"
#include "tool/report.h"
#include "verdict.h"

/*
 * --recorder auto: pt where Intel PT is usable, else emu, said in one
 * line on stderr (CLI.md).
 */
static enum rec_recorder
pick_recorder(const struct rec_options *o)
{
	struct assessment *a = malloc(sizeof(*a));
	const char *why = "Intel PT is not usable here";
	struct error e;
	int pt = 0;

	if (a != NULL && assess(o, a, &e) == 0) {
		pt = a->v[VERDICT_PT].usable;
		if (!pt && a->v[VERDICT_PT].n_problems > 0)
			why = a->v[VERDICT_PT].problems[0].what;
	}
	if (pt)
		report(ptrec_tool.name, "--recorder auto", NULL,
		    "using pt: Intel PT is usable");
	else
		report(ptrec_tool.name, "--recorder auto", NULL,
		    "using emu: %s", why);
	free(a);
	return pt ? REC_PT : REC_EMU;
}

/* Attaching needs hardware: a software CPU cannot adopt a process. */
static void
refuse_emu_attach(void)
{
	report(ptrec_tool.name, "--pid", "use --recorder pt or --recorder "
	    "perf on a machine with Intel PT",
	    "the emu recorder cannot attach to a running process");
}

/*
 * What can be checked without running the program is checked before it
 * runs, so that no recording is lost at its end: the program (missing,
 * or there but not executable), and where the snapshots go.  Returns 0
 * or the exit status.
 */
static int
check_before_run(const struct rec_options *o)
{
	char found[PATH_MAX];
	struct error e;

	if (o->program != NULL && progpath_search(o->program[0], NULL, found,
	    sizeof(found), &e) < 0) {
		report_error(ptrec_tool.name, NULL, &e, NULL);
		return EXIT_FAIL;
	}
	if (snapwrite_dest_check(o, &e) < 0) {
		report_error(ptrec_tool.name, NULL, &e, e.code == ERR_EXISTS ?
		    "-o takes a directory that does not exist yet" : NULL);
		return EXIT_USAGE;
	}
	return 0;
}

/* stdout's state until the exit's last flush (report_stdout_keep_errno) */
static struct report_kept_stdout kept_stdout;

int
main(int argc, char *argv[])
{
	struct rec_options o;
	enum cli_parse p;
	int status;

	/* Started by ptmcp: ends when it does, and its qemu with it (the
	 * emu plugin asks for that); a snapshot half written is a dead
	 * owner's, swept by the next run. */
	if (spawn_die_with_parent(SIGKILL))
		return EXIT_FAIL;
	/* The snapshot lines are checked at the end: keep why one failed. */
	if (report_stdout_keep_errno(&kept_stdout) < 0) {
		report(ptrec_tool.name, "stdout", NULL, "out of memory");
		return EXIT_FAIL;
	}
	if ((p = rec_options_parse(argc, argv, &o)) != CLI_RUN)
		return report_close_stdout(ptrec_tool.name, p == CLI_DONE ?
		    EXIT_OK : EXIT_USAGE);
	if (o.doctor)
		return report_close_stdout(ptrec_tool.name, rec_doctor(&o));
	if (o.recorder == REC_AUTO)
		o.recorder = pick_recorder(&o);
	if (o.recorder == REC_EMU && o.pid != 0) {
		refuse_emu_attach();
		return EXIT_FAIL;
	}
	if (o.recorder == REC_EMU && (status = check_before_run(&o)) != 0)
		return status;
	if (o.recorder == REC_EMU)
		return report_close_stdout(ptrec_tool.name, rec_emu_run(&o));
	/* perf's inheritance follows threads and children together: one
	 * cannot be dropped without the other, so nothing is silently lost */
	if (o.no_follow) {
		report(ptrec_tool.name, "--no-follow", "use --recorder emu",
		    "the %s recorder follows a program's threads and children "
		    "together", o.recorder == REC_PT ? "pt" : "perf");
		return EXIT_USAGE;
	}
	/* the machine first: what it cannot do, no option changes */
	if (rec_hardware_check(&o) < 0)
		return EXIT_FAIL;
	if ((status = check_before_run(&o)) != 0)
		return status;
	if (o.recorder == REC_PT)
		return report_close_stdout(ptrec_tool.name, rec_pt_run(&o));
	return report_close_stdout(ptrec_tool.name, rec_perf_run(&o));
}
