/*
 * emu_jit: code the guest made at run time, for the emu plugin.
 *
 * Owns the list of anonymous executable mappings the guest ran code in,
 * dumping their bytes into a snapshot's scratch directory (the decoder
 * has no file to read them from), and copying the guest's JIT map
 * (/tmp/perf-PID.map) while it exists.  The files it writes are in
 * ../emu_handoff.h.  No global state: the plugin owns one struct emu_jit
 * and calls these with its lock held.
 */
#ifndef PTREC_EMU_JIT_H
#define PTREC_EMU_JIT_H

#include <stddef.h>
#include <stdint.h>

#define EMU_JIT_MAX 256

struct emu_jit {
	struct emu_jit_region {
		uint64_t start, len;
	} r[EMU_JIT_MAX];
	int n;
	uint64_t lost;		/* regions unmapped (or beyond EMU_JIT_MAX)
				   before a snapshot could dump them */
};

/* Notes an anonymous executable mapping (a repeat of one is ignored). */
void emu_jit_add(struct emu_jit *j, uint64_t start, uint64_t len);

/* The guest unmapped [start, start+len): overlapping regions are gone. */
void emu_jit_unmap(struct emu_jit *j, uint64_t start, uint64_t len);

/*
 * Writes every region's current bytes, read through /proc/self/mem (so an
 * unreadable page is an error, not a fault), into DIR/jit.<START hex>,
 * and lists them in DIR/jit as "START LEN" lines (hex).  Returns the
 * number of regions written.
 */
int emu_jit_dump(const struct emu_jit *j, const char *dir);

/* The JIT map path of pid ("/tmp/perf-PID.map") into buf. */
void emu_jit_map_path(int pid, char *buf, size_t size);

/*
 * 1 when the guest string at path_addr is pid's JIT map path, else 0
 * (also when the address cannot be read: the guest's syscall then fails
 * with EFAULT, and the plugin must not fault first).
 */
int emu_jit_is_map_path(int pid, uint64_t path_addr);

/*
 * Copies the file src to dst (replacing it).  Returns 1 when copied, 0
 * when src does not exist or cannot be read.
 */
int emu_jit_copy(const char *src, const char *dst);

#endif
