/*
 * emu_exec: how a guest's execve becomes qemu's own, so that the program
 * a process turns into runs under the emulator with the plugin too.
 *
 * qemu-user passes execve to the host: the new program would run natively
 * and untraced.  The plugin instead execs qemu-x86_64 again, with the same
 * plugin and scratch directory, on the program the guest named: what the
 * kernel would run for it (an x86-64 ELF file, or a "#!" script's
 * interpreter with the script), argv[0] kept with qemu's -0, the guest's
 * environment as the new program's.  Owns deciding whether a target can be
 * followed and the argument vector of that exec; emu_plugin.c does the
 * rest (its state, the sideband, the ring the thread goes on writing).
 */
#ifndef PTREC_EMU_EXEC_H
#define PTREC_EMU_EXEC_H

#include <limits.h>

/* What qemu is to run for an execve of path. */
struct emu_exec_target {
	char program[PATH_MAX];		/* the ELF file qemu loads */
	char interp_arg[PATH_MAX];	/* "#!" line's argument, "" if none */
	int script;			/* program interprets path */
};

/*
 * Whether execve(path) would run something qemu-x86_64 can run: path
 * executable by us, and an x86-64 ELF file or a "#!" script whose
 * interpreter is one.  Returns 0 and fills t, or -1 when it cannot be
 * followed (the guest's execve then runs, and fails or runs untraced).
 */
int emu_exec_target(const char *path, struct emu_exec_target *t);

/*
 * The malloc'd argument vector of
 *     QEMU -0 ARGV0 -plugin PLUGIN_ARG PROGRAM [ARG] [PATH] ARGV[1..]
 * for the guest's execve(path, argv): argv[0] kept (for a script, the
 * interpreter as the kernel gives it).  NULL when out of memory.  The
 * strings stay the callers'.
 */
char **emu_exec_argv(const char *qemu, const char *plugin_arg,
    const struct emu_exec_target *t, const char *path, char *const *argv);

#endif
