/*
 * Tests for lib/ptprobe: the breakpoint probe on this machine, the
 * intel_pt probe's failure path (an unknown PMU type), and the sentences
 * for each errno an intel_pt open can meet on hardware.
 */
#include <errno.h>
#include <string.h>

#include "rec/ptprobe.h"
#include "tap.h"

static void
test_breakpoint(struct ptprobe *bp)
{
	IS_INT(ptprobe_breakpoint(bp), 0, "the breakpoint probe runs");
	if (bp->ok) {
		IS_INT(bp->err, 0, "ok: no errno");
		IS_STR(bp->what, "", "ok: no sentence");
	} else {
		OK(strncmp(bp->what, "a hardware breakpoint cannot be "
		    "opened: ", 40) == 0 || strncmp(bp->what, "hardware "
		    "breakpoints open but do not fire (", 39) == 0,
		    "failure sentence: %s", bp->what);
		OK(bp->remedy[0] != '\0', "failure remedy");
	}
}

static void
test_unknown_type(const struct ptprobe *bp)
{
	struct ptprobe p;

	IS_INT(ptprobe_intel_pt(0x7ffffff0, 0x2401, &p), 0, "the PT probe runs");
	OK(!p.ok, "an unknown PMU type fails");
	if (!bp->ok && bp->err != 0) {
		DIAG("perf_event_open is refused here: %s", bp->what);
		return;
	}
	IS_INT(p.err, ENOENT, "ENOENT");
	IS_STR(p.what, "a test intel_pt event (config 0x2401) on ptrec itself: "
	    "the kernel has no PMU of that type: No such file or directory",
	    "ENOENT sentence");
	IS_STR(p.remedy, "check /sys/bus/event_source/devices/intel_pt/type",
	    "ENOENT remedy");
}

static void
test_explain(void)
{
	struct ptprobe p;

	ptprobe_explain(EBUSY, 0, 0x3082603, &p);
	IS_STR(p.what, "a test intel_pt event (config 0x3082603) on ptrec "
	    "itself: Intel PT is busy: someone traces with it system-wide "
	    "(perf record -a -e intel_pt//) or on this thread (gdb record "
	    "btrace pt): Device or resource busy", "EBUSY");
	IS_STR(p.remedy, "stop the other Intel PT user; per-thread and "
	    "CPU-wide PT events cannot coexist", "EBUSY remedy");
	ptprobe_explain(EACCES, 0, 0x1, &p);
	IS_STR(p.what, "a test intel_pt event (config 0x1) on ptrec itself: "
	    "perf_event_paranoid forbids it for this user: Permission denied",
	    "EACCES");
	ptprobe_explain(EPERM, 0, 0x1, &p);
	IS_STR(p.remedy, "allow perf_event_open (docker: --cap-add PERFMON "
	    "and a seccomp profile that permits it)", "EPERM remedy");
	ptprobe_explain(EINVAL, 0, 0x1, &p);
	IS_STR(p.what, "a test intel_pt event (config 0x1) on ptrec itself: "
	    "the kernel refuses this config: Invalid argument", "EINVAL");
	ptprobe_explain(EPERM, 1, 0x1, &p);
	IS_STR(p.what, "a test intel_pt event (config 0x1) on ptrec itself: "
	    "mapping its AUX area failed (locked-memory limits, or no "
	    "contiguous memory for a single-entry ToPA): Operation not "
	    "permitted", "mmap EPERM");
	IS_INT(p.ok, 0, "not ok");
	IS_INT(p.err, EPERM, "errno kept");
}

int
main(void)
{
	struct ptprobe bp;

	test_breakpoint(&bp);
	test_unknown_type(&bp);
	test_explain();
	return tap_done();
}
