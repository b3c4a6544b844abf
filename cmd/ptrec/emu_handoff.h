/*
 * emu_handoff: what the emu plugin (running inside qemu-x86_64) leaves for
 * ptrec, and how ptrec reads it back.
 *
 * The plugin is started as
 *     qemu-x86_64 -plugin libptkit-emu.so,dir=SCRATCH PROGRAM ARGS
 * and, for a program a traced process execs (emu_exec.h), as
 *     qemu-x86_64 -0 ARGV0 -plugin libptkit-emu.so,dir=SCRATCH,exec=N,
 *         leader=L,events=FD,seq=S,done=D,hits=H,clock=T PROGRAM ARGS
 * (the Nth program of the process; the leader's events FIFO left open
 * across the exec as FD, its snapshot count and trigger hits; the exec's
 * time)
 * and everything passes through files in ptrec's scratch directory SCRATCH
 * (removed with it), because qemu gives a plugin no channel of its own:
 *
 *   config          written by ptrec before the start: "KEY VALUE" lines
 *                   (aux, budget, psb, cyc, retcomp, truth, repeat, follow,
 *                   hits,
 *                   after_ns, max_ns, min_ns, tail_ns, line REGEX,
 *                   clock_origin: the CLOCK_MONOTONIC ns the clock counts
 *                   from, ptrec's just before it starts the program, so
 *                   every process of a run shares it (default, run by
 *                   hand: the plugin's start),
 *                   trigger|stop OFFSET PATH, filter OFFSET SIZE PATH;
 *                   file offsets, resolved as the images are mapped), so
 *                   paths and regexes need no escaping in qemu's
 *                   comma-separated plugin arguments.
 *   ring.<tid>      one per guest thread: a 4 KiB header (struct
 *                   emu_ring_hdr) then the ring of exactly ring_size bytes,
 *                   a sparse file whose pages are taken only as the thread
 *                   writes them (and given back with hole punching when a
 *                   thread that ended gives its history up for the budget:
 *                   freed says up to where).
 *                   Both sides map it MAP_SHARED, so the trace survives a
 *                   guest crash, after which qemu dies by the signal without
 *                   running any plugin callback (qemu 7.2 dump_core_and_abort):
 *                   ptrec then finishes the ring itself (the pending TNT bits
 *                   are kept in the header for exactly this).
 *   sideband        text, one record per line, appended with one write(2)
 *                   each as it happens (so it also survives a crash):
 *                     map TIME PID TID ADDR LEN PGOFF PROT PATH
 *                     unmap TIME PID TID ADDR LEN
 *                     prot TIME PID TID ADDR LEN PROT
 *                     thread TIME PID TID PARENT_TID
 *                     exit TIME PID TID
 *                     comm TIME PID TID NAME
 *                     process TIME PID PARENT_PID PARENT_TID
 *                     exec TIME PID TID PATH
 *                     execfail TIME PID TID
 *                     program TIME PID TID N PATH
 *                     snapshot SEQ REASON TID TIME
 *                     counter NAME VALUE
 *                   numbers are hex with 0x except PID/TID/SEQ (decimal);
 *                   TIME is the clock every thread shares (ns of host
 *                   CLOCK_MONOTONIC since clock_origin, plus 1 ms, as a
 *                   1 GHz TSC; emu_plugin.c clock_sync).
 *                   "sideband" is the first process's (the leader's); each
 *                   fork child writes its own sideband.<pid>, which starts
 *                   with its "process" record, so that a child never
 *                   writes a file its parent writes.  Counters are per
 *                   file (the last line wins) and ptrec adds them up over
 *                   the files.  "exec" is written as a program calls
 *                   execve; "program" starts the file of the program the
 *                   plugin followed it with, sideband.<pid>.<N> (N in
 *                   three digits), whose thread goes on in the ring and
 *                   truth log it had; "execfail" says execve returned;
 *                   with neither, the program ran natively, untraced.
 *                   A fork child's threads have rings here too: only the
 *                   leader takes snapshots, so ptrec reads every other
 *                   process's rings from these files (complete once the
 *                   process ended: EMU_RING_CLOSED).
 *   snap.<seq>/<tid>.pt   ring contents at snapshot <seq>, oldest byte
 *                   first, ending on a packet boundary; snap.<seq>/threads
 *                   lists "TID TOTAL KEPT WRAPPED FIRST_TIME LAST_TIME INSNS
 *                   EXITED IN_RING".  IN_RING 1: no <tid>.pt, the KEPT
 *                   bytes are the stream bytes [TOTAL - KEPT, TOTAL) of
 *                   ring.<tid> itself, which nothing writes or gives back
 *                   any more (the snapshot at the program's exit: copying
 *                   a ring of many megabytes to a file only for ptrec to
 *                   copy it again into perf.data costs as much as both);
 *                   snap.<seq>/info is "REASON TID TIME" of the trigger.
 *                   snap.<seq>/jit lists "START LEN" (hex) of every
 *                   anonymous executable mapping whose bytes are in
 *                   snap.<seq>/jit.<START hex> (emu_jit.h);
 *                   snap.<seq>/perf.map is /tmp/perf-PID.map as it was
 *                   at the snapshot, when it existed.
 *   perf-map.removed  /tmp/perf-PID.map as it was when the guest removed
 *                   it (unlink or unlinkat of that exact path).
 *   events          a FIFO ptrec creates and reads; the plugin writes one
 *                   line per completed snapshot ("snapshot SEQ REASON\n")
 *                   and "done\n" when it stops tracing.
 *   control         a 4 KiB file both map: ptrec raises request_seq to ask
 *                   for a snapshot now (SIGINT/SIGTERM, --control; stop=1
 *                   makes it the last); the plugin answers on events at
 *                   a thread's next poll.  When every thread sits in a
 *                   syscall nobody answers, and ptrec reads the rings.
 *   truth.<tid>     with --emu-truth (one per thread of every process,
 *                   tids being unique among a run's live processes):
 *                   "SRC DST KIND" per executed branch,
 *                   hex, in a shared mapping that also survives a crash;
 *                   "snapshot SEQ" marks where a snapshot cut the ring.
 */
#ifndef PTREC_EMU_HANDOFF_H
#define PTREC_EMU_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#define EMU_RING_MAGIC 0x3152474e52554d45ULL	/* "EMURNGR1" */
#define EMU_HDR_SIZE 4096u
#define EMU_TRUTH_CHUNK (1u << 20)

enum emu_ring_state {
	EMU_RING_LIVE = 1,	/* the thread runs and writes */
	EMU_RING_CLOSED = 2,	/* finished by the plugin: complete */
};

/* The header of ring.<tid>; fields written by the plugin only. */
struct emu_ring_hdr {
	uint64_t magic;
	uint32_t state;		/* enum emu_ring_state */
	int32_t tid;
	uint64_t ring_size;	/* bytes of ring after the header */
	volatile uint64_t total;	/* bytes ever written */
	volatile uint64_t tnt_payload;	/* TNT bits not yet in the ring */
	volatile uint32_t tnt_bits;
	uint32_t pad;
	volatile uint64_t clock;	/* virtual time of the last TB */
	volatile uint64_t insns;	/* instructions retired */
	uint64_t first_time;	/* virtual time of the first packet */
	volatile uint64_t cur_ip;	/* block running now; 0 in a syscall */
	volatile uint64_t freed;	/* stream bytes before this were given
					   back for the budget: not trace */
};

/*
 * The control file: ptrec writes request_seq and out_dev/out_ino, the
 * plugin reads them.  out_bytes is the one count, shared by every traced
 * process (each maps the file), of the bytes the program wrote to the
 * files ptrec reads its output from (out_dev/out_ino: the program's
 * stdout and stderr as started, whatever descriptor it writes them
 * through): where in output.log a trigger fired and how much of it a
 * snapshot keeps.  An ino of 0 is not known: fds 1 and 2 count.
 */
struct emu_control {
	uint64_t magic;
	volatile uint64_t request_seq;
	volatile uint64_t stop;		/* stop tracing, no snapshot */
	uint64_t out_dev[2], out_ino[2];
	volatile uint64_t out_bytes;	/* atomic */
};

#define EMU_CONTROL_MAGIC 0x314c52544355554dULL

/* A ring as ptrec takes it out: copied into memory, or left in a file. */
struct emu_ring_copy {
	int tid;
	uint64_t total;		/* bytes ever written */
	uint64_t kept;		/* bytes in data, or in file's ranges */
	int wrapped;
	int exited;		/* the thread had ended at the snapshot */
	uint64_t first_time, last_time, insns;
	uint8_t *data;		/* malloc'd, oldest byte first; or NULL */
	char *file;		/* or (data NULL) malloc'd path of the file
				   holding them: kept bytes at file_off[0]
				   (file_len[0] of them), then file_off[1] */
	uint64_t file_off[2], file_len[2];
};

/*
 * Copies the newest min(total, size) bytes of a ring of size bytes whose
 * write position is total, oldest byte first, into dst.  Returns the
 * number of bytes copied.
 */
uint64_t emu_ring_unroll(const uint8_t *ring, uint64_t size, uint64_t total,
    uint8_t *dst);

/*
 * The stream position of the oldest byte ring h still holds when its
 * write position is total: what it has not overwritten nor given back.
 */
uint64_t emu_ring_first(const struct emu_ring_hdr *h, uint64_t total);

/*
 * Where the stream bytes [from, total) of a ring of size bytes (from no
 * older than total - size) are in it, oldest first: len[0] bytes at
 * pos[0], then len[1] (0 unless they wrap) at pos[1] (0).
 */
void emu_ring_split(uint64_t size, uint64_t total, uint64_t from,
    uint64_t pos[2], uint64_t len[2]);

/*
 * Copies the stream bytes [from, total) of a ring of size bytes (from no
 * older than total - size) into dst, oldest first; returns total - from.
 */
uint64_t emu_ring_unroll_from(const uint8_t *ring, uint64_t size,
    uint64_t total, uint64_t from, uint8_t *dst);

/*
 * Writes n bytes into a ring of size bytes at position *total, overwriting
 * the oldest bytes, and advances *total.
 */
void emu_ring_put(uint8_t *ring, uint64_t size, uint64_t *total,
    const uint8_t *p, size_t n);

#endif
