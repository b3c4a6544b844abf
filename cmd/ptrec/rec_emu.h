/*
 * rec_emu: the emu recorder, `ptrec --recorder emu`.
 *
 * Owns running the program under qemu-x86_64 with the ptkit plugin
 * (posix_spawn through lib/spawn, no shell), the conversation with the
 * plugin through the scratch directory (emu_handoff.h), copying the
 * program's output to ptrec's stderr and output.log, turning each
 * snapshot the plugin announces (and a crash, SIGINT/SIGTERM or a control
 * request) into a snapshot directory, and printing each one's path.
 */
#ifndef PTREC_REC_EMU_H
#define PTREC_REC_EMU_H

#include <stddef.h>

#include "options.h"

/* Returns the exit status: EXIT_OK when a snapshot was written. */
int rec_emu_run(const struct rec_options *o);

/* 1 when qemu-x86_64 and the plugin are there; why not in why[]. */
int rec_emu_available(char *why, size_t size);

#endif
