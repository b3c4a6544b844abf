/*
 * doctor: `ptrec --doctor`, what works on this machine and why.
 *
 * Owns the doctor's report, as text for people or JSON for programs
 * (ptmcp's trace_doctor), from one assessment (verdict.h): the CPU and
 * Intel PT with its caps and the timing profiles they allow, permissions
 * and limits with the ring budget they allow, ptrace_scope, perf and
 * qemu-user, and a verdict per recorder with the remedy.
 */
#ifndef PTREC_DOCTOR_H
#define PTREC_DOCTOR_H

#include "options.h"

/*
 * Writes the report to stdout.  Returns the exit status: EXIT_OK when at
 * least one recorder is usable, EXIT_FAIL when none is (or the tree could
 * not be read), EXIT_USAGE when --sysroot is not a directory.
 */
int rec_doctor(const struct rec_options *o);

#endif
