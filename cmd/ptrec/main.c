/*
 * ptrec: record a program's control flow into a snapshot directory.
 *
 * main parses the command line and picks the recorder.  The recorders
 * arrive with issue #4 (emu) and issue #10 (pt, perf, doctor).
 */
#include <stdio.h>

#include "cli.h"
#include "doctor.h"
#include "options.h"
#include "report.h"
#include "verdict.h"

int
main(int argc, char *argv[])
{
	struct rec_options o;
	int rc;

	if ((rc = rec_options_parse(argc, argv, &o)) >= 0)
		return report_close_stdout(ptrec_tool.name, rc);
	if (o.doctor)
		return report_close_stdout(ptrec_tool.name, rec_doctor(&o));
	if ((rc = rec_hardware_check(&o)) >= 0)
		return rc;
	if (o.pid != 0)
		return cli_not_built(&ptrec_tool, "attaching (--pid)", 10);
	return cli_not_built(&ptrec_tool, "recording", 4);
}
