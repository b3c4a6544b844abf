/*
 * ptevent: one thread's perf event with its sideband ring and AUX ring.
 *
 * Owns the per-thread event of notes/recorder.md §2: the attr recipe of
 * §2.1 (pid = the thread, cpu = -1, user space only, disabled until
 * enabled, MMAP2/COMM/task/switch sideband with a sample_id trailer, a
 * watermark at half the data ring), the base mapping (writable: the data
 * ring runs no-overwrite), the AUX mapping read-only (snapshot mode: the
 * hardware overwrites), the address filter ioctl, enable/disable, draining
 * the sideband (ptsb) and copying the AUX ring (ptaux).  With type
 * intel_pt this is the pt recorder's event; with a software dummy event
 * and no AUX ring it is testable on any machine.
 */
#ifndef PTKIT_PTEVENT_H
#define PTKIT_PTEVENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "rec/ptaux.h"
#include "rec/ptsb.h"

/* TID | TIME | CPU | IDENTIFIER: what libipt's sideband reader expects. */
#define PTEVENT_SAMPLE_TYPE 0x10086ULL

struct ptevent_spec {
	uint32_t type;		/* perf_event_attr.type (intel_pt's type) */
	uint64_t config;
	uint64_t data_bytes;	/* sideband ring: a power of two of pages */
	uint64_t aux_bytes;	/* AUX ring: a power of two of pages; 0: none */
	const char *filter;	/* for PERF_EVENT_IOC_SET_FILTER, or NULL */
};

struct ptevent {
	int fd;			/* -1 when closed */
	pid_t tid;
	void *base;		/* control page + data ring */
	size_t base_len;
	struct ptaux_ring aux;	/* aux.base NULL without an AUX ring */
	size_t aux_len;
};

/*
 * Opens the event (disabled) on thread tid and maps its rings.  Returns 0,
 * or -ERR_IO (perf_event_open, mmap or the filter failed: e names the
 * call and says errno), -ERR_INVALID (sizes not powers of two of pages).
 * On failure nothing stays open or mapped and ev->fd is -1.
 */
int ptevent_open(struct ptevent *ev, pid_t tid, const struct ptevent_spec *s,
    struct error *e) PTKIT_MUST_CHECK;

/* PERF_EVENT_IOC_ENABLE / _DISABLE.  Return 0 or -ERR_IO. */
int ptevent_enable(struct ptevent *ev, struct error *e) PTKIT_MUST_CHECK;
int ptevent_disable(struct ptevent *ev, struct error *e) PTKIT_MUST_CHECK;

/* Drains the sideband ring (ptsb_drain); returns as ptsb_drain. */
int ptevent_drain(struct ptevent *ev, ptsb_fn fn, void *arg,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Copies the AUX ring oldest to newest into out (room for aux_bytes);
 * call after ptevent_disable.  Returns the bytes copied; *truncated as
 * ptaux_copy.  0 without an AUX ring.
 */
uint64_t ptevent_snapshot(struct ptevent *ev, uint8_t *out, int *truncated);

/*
 * TSC to perf time conversion from the control page (read under its
 * seqlock), for perf.data's TIME_CONV.  Returns 0, or -ERR_UNSUPPORTED
 * when the kernel does not offer it (cap_user_time_zero is 0; tc is
 * still filled).
 */
int ptevent_time_conv(const struct ptevent *ev, struct perfdata_time_conv *tc,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The symbol trigger without aux_pause (notes/recorder.md §6): an execute
 * breakpoint on thread tid at runtime address addr whose counter
 * overflows at every hits-th execution and then sends the thread a
 * synchronous SIGTRAP (attr.sigtrap, Linux 5.13+; si_code
 * PTEVENT_TRAP_PERF) before the instruction at addr runs.  Under pttrace
 * that signal parks the thread at the trigger until the recorder has taken
 * its snapshot and swallows the signal.  Removed on exec.  Returns the
 * event's fd, or -ERR_IO (e says errno: ENOSPC when the debug registers
 * are taken, EINVAL on kernels without sigtrap).
 */
int ptevent_breakpoint(pid_t tid, uint64_t addr, uint64_t hits,
    uint64_t cookie, struct error *e) PTKIT_MUST_CHECK;

/*
 * The symbol trigger with aux_pause (Linux 6.13+, notes/recorder.md
 * §6.4): the same execute breakpoint opened in the group of the thread's
 * PT event (group_fd), with attr.aux_action's aux_pause bit, so that its
 * overflow at every hits-th execution clears TraceEn inside the
 * breakpoint's handler, before the instruction at addr runs; the thread
 * is not stopped.  No signal: the recorder reads the counter
 * (ptevent_breakpoint_count) to learn that it fired.  Returns the fd, or
 * -ERR_IO (EINVAL / EOPNOTSUPP: a kernel without aux_pause; ENOSPC:
 * debug registers taken).
 */
int ptevent_breakpoint_pause(pid_t tid, uint64_t addr, uint64_t hits,
    int group_fd, struct error *e) PTKIT_MUST_CHECK;

/*
 * The hits counted so far by a breakpoint fd (read(2) of the counter).
 * Returns them, or -ERR_IO.
 */
int64_t ptevent_breakpoint_count(int fd, struct error *e);

/* attr.aux_action (the former __reserved_3, byte 116), Linux 6.13. */
#define PTEVENT_AUX_ACTION_OFFSET 116
#define PTEVENT_AUX_START_PAUSED (1u << 0)
#define PTEVENT_AUX_PAUSE (1u << 1)
#define PTEVENT_AUX_RESUME (1u << 2)

enum ptevent_bp_kind { PTEVENT_BP_SIGTRAP, PTEVENT_BP_PAUSE };

/*
 * The perf_event_attr of either breakpoint (a struct perf_event_attr,
 * passed as void * so that this header needs no kernel header), for
 * tests that check every field the kernel reads.
 */
void ptevent_breakpoint_attr(void *attr, enum ptevent_bp_kind kind,
    uint64_t addr, uint64_t hits, uint64_t cookie);

/* si_code of a perf event's SIGTRAP (TRAP_PERF, Linux 5.13). */
#define PTEVENT_TRAP_PERF 6

/* Unmaps and closes; safe on a closed event. */
void ptevent_close(struct ptevent *ev);

#endif
