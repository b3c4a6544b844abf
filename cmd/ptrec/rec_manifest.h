/*
 * rec_manifest: the manifest fields every recorder fills the same way.
 *
 * Owns the host row taken from the CPU the trace describes (pt, perf),
 * the target row (argv, pid, cwd, how it ended) and numeric recorder
 * settings; each recorder keeps only what is its own (emu's emulated CPU,
 * its clock model, perf's imported PT settings).
 */
#ifndef PTREC_REC_MANIFEST_H
#define PTREC_REC_MANIFEST_H

#include <stdint.h>

#include "base/error.h"
#include "fmt/manifest.h"
#include "options.h"
#include "rec/ptcaps.h"

/* Hostname and kernel from uname(2), CPU identity from cpu.  Returns 0 or
 * -ERR_NOMEM. */
int rec_manifest_host(struct manifest *m, const struct ptcaps_cpu *cpu,
    struct error *e);

/* How the target ran; opt->program may be NULL (attach).  state is
 * "exited", "signaled" or "running".  Returns 0 or -ERR_NOMEM. */
int rec_manifest_target(struct manifest *m, const struct rec_options *opt,
    int pid, int exit_code, int signal, const char *state,
    struct error *e);

/* A recorder setting with a numeric value.  Returns 0 or -ERR_NOMEM. */
int rec_manifest_setting(struct manifest *m, const char *key, uint64_t v,
    struct error *e);

#endif
