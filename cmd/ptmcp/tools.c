/* tools: see tools.h. */
#include "tools.h"

#include <string.h>

#include "fmt/jsonrpc.h"

#define ID_PATTERN "^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$"
#define REQUEST_ID "\"request_id\":{\"type\":\"string\"," \
	"\"pattern\":\"^[A-Za-z0-9_.-]{1,64}$\",\"description\":\"Any " \
	"string you choose; repeating a call with the same request_id " \
	"returns the first call's result instead of doing the work again.\"}"
#define ID_EXAMPLE "\"examples\":[\"20261129T101500Z-0123abcd\"]"
#define SNAP_ID(desc) "{\"type\":\"string\",\"pattern\":\"" ID_PATTERN \
	"\"," ID_EXAMPLE ",\"description\":\"" desc "\"}"
#define SESSION_ID "\"session_id\":{\"type\":\"string\",\"pattern\":\"" \
	ID_PATTERN "\"," ID_EXAMPLE ",\"description\":\"The session_id trace_start " \
	"returned.\"}"
#define MS(name, desc) "\"" name "\":{\"type\":\"integer\",\"minimum\":0," \
	"\"maximum\":31536000000,\"description\":\"" desc "\"}"
#define NS(name, desc) "\"" name "\":{\"type\":\"integer\",\"minimum\":0," \
	"\"maximum\":9223372036854775807,\"description\":\"" desc "\"}"
#define STRINGS "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"
#define STATES "{\"type\":\"string\",\"enum\":[\"running\",\"done\"," \
	"\"failed\",\"cancelled\"]}"

static const struct tool_def defs[TOOL_COUNT] = {
	{ TOOL_DOCTOR, "trace_doctor", "Check what can record here",
	  "Call this first, once: it says which recorders work on this "
	  "machine (Intel PT hardware, perf, or the emulator that works "
	  "anywhere), why the others do not and how to fix that, and where "
	  "the snapshot store is. Returns the store's path and size and the "
	  "recorder report.",
	  "{\"type\":\"object\",\"properties\":{},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"store\":{\"type\":\"object\","
	  "\"properties\":{\"path\":{\"type\":\"string\"},\"snapshots\":"
	  "{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"}},"
	  "\"required\":[\"path\",\"snapshots\",\"bytes\"]},"
	  "\"report\":{\"type\":\"object\",\"description\":\"ptrec "
	  "--doctor --format json\"}},"
	  "\"required\":[\"store\",\"report\"]}",
	  1, 0, 1, 0 },
	{ TOOL_START, "trace_start", "Start recording a program",
	  "Launch a program (program: its argv) or attach to a running "
	  "process (pid) and record every branch it takes into rings, in the "
	  "background. Returns at once with a session_id; then poll "
	  "trace_status until the state is done (a snapshot is taken when the "
	  "program exits or a trigger fires), or call trace_snapshot / "
	  "trace_stop yourself. Use trigger_symbol to snapshot the moment a "
	  "function runs, trigger_line for a line the program prints, "
	  "after_ms for a time. Next step: trace_decode the snapshot.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"program\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
	  "\"maxLength\":4096},\"minItems\":1,\"maxItems\":256,"
	  "\"description\":\"The program and its arguments, e.g. "
	  "[\\\"./server\\\", \\\"--port\\\", \\\"8080\\\"]. Give this or "
	  "pid.\"},"
	  "\"pid\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4194304,"
	  "\"description\":\"Attach to this running process instead of "
	  "launching one; it is never signalled.\"},"
	  "\"recorder\":{\"type\":\"string\",\"enum\":[\"auto\",\"pt\","
	  "\"perf\",\"emu\"],\"description\":\"auto (default): Intel PT where "
	  "usable, else the emulator.\"},"
	  "\"aux_bytes\":{\"type\":\"integer\",\"minimum\":4096,"
	  "\"maximum\":4294967296,\"description\":\"Ring size per thread in "
	  "bytes: more history, more memory.\"},"
	  "\"budget_bytes\":{\"type\":\"integer\",\"minimum\":4096,"
	  "\"maximum\":68719476736,\"description\":\"Total ring memory for "
	  "all threads.\"},"
	  "\"timing\":{\"type\":\"string\",\"enum\":[\"low\",\"normal\","
	  "\"high\"],\"description\":\"Timestamp precision: more precision, "
	  "less history per byte.\"},"
	  "\"cpus\":{\"type\":\"string\",\"maxLength\":256,\"description\":"
	  "\"CPU list to record on, e.g. 0-3,8.\"},"
	  "\"filters\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
	  "\"maxLength\":512},\"maxItems\":16,\"description\":\"Record only "
	  "inside these functions (SYMBOL or ADDR/SIZE@FILE).\"},"
	  MS("after_ms", "Snapshot this many ms after the start.") ","
	  MS("max_capture_ms", "Hard cap: snapshot after this many ms.") ","
	  MS("min_capture_ms", "Ignore triggers before this many ms.") ","
	  MS("tail_ms", "After a trigger, keep recording this long.") ","
	  "\"trigger_symbol\":{\"type\":\"string\",\"maxLength\":512,"
	  "\"description\":\"Snapshot when this function is entered.\"},"
	  "\"trigger_hits\":{\"type\":\"integer\",\"minimum\":1,"
	  "\"maximum\":1000000000,\"description\":\"... on its Nth entry "
	  "(needs trigger_symbol).\"},"
	  "\"trigger_line\":{\"type\":\"string\",\"maxLength\":1024,"
	  "\"description\":\"Snapshot when the program prints a line "
	  "matching this extended regex.\"},"
	  "\"repeat\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,"
	  "\"description\":\"Re-arm the trigger and take this many "
	  "snapshots.\"}," REQUEST_ID "},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":"
	  "{\"type\":\"string\"},\"state\":" STATES "},"
	  "\"required\":[\"session_id\",\"state\"]}",
	  0, 0, 0, 1 },
	{ TOOL_STATUS, "trace_status", "Check a recording session",
	  "Ask how a session started by trace_start is doing: running, done, "
	  "failed (with the recorder's own message) or cancelled, how long "
	  "it ran, the snapshot ids taken so far, and what the newest "
	  "snapshot did not keep (untraced threads and processes, the "
	  "recorder's warnings). Poll it every few seconds while the state "
	  "is running.",
	  "{\"type\":\"object\",\"properties\":{" SESSION_ID "},"
	  "\"required\":[\"session_id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":"
	  "{\"type\":\"string\"},\"state\":" STATES ",\"elapsed_ms\":"
	  "{\"type\":\"integer\"},\"snapshots\":" STRINGS ",\"error\":"
	  "{\"type\":\"string\"},\"exit_code\":{\"type\":\"integer\","
	  "\"description\":\"The program's exit status, when its newest "
	  "snapshot says it exited on its own.\"},\"program_state\":"
	  "{\"type\":\"string\",\"enum\":[\"exited\",\"killed\","
	  "\"stopped\",\"cancelled\",\"running\",\"unknown\"],"
	  "\"description\":\"How the program ended: stopped and cancelled "
	  "mean trace_stop or trace_cancel ended it; running, that its "
	  "newest snapshot saw it running.\"},\"signal\":{\"type\":"
	  "\"integer\"},\"signal_name\":{\"type\":\"string\"},"
	  "\"recorder_exit_code\":{\"type\":\"integer\",\"description\":"
	  "\"ptrec's exit status (0: its snapshots were written).\"},"
	  "\"untraced\":{\"type\":\"integer\",\"description\":\"Threads "
	  "the newest snapshot has no trace of.\"},\"untraced_processes\":"
	  "{\"type\":\"integer\",\"description\":\"Processes the newest "
	  "snapshot has no trace of (children not followed, programs "
	  "exec'd).\"},\"warnings\":" STRINGS "},"
	  "\"required\":[\"session_id\",\"state\",\"snapshots\"]}",
	  1, 0, 1, 0 },
	{ TOOL_SNAPSHOT, "trace_snapshot", "Snapshot a running session now",
	  "Take a snapshot of a running session's rings now (the last moments "
	  "of every thread) and keep recording. Returns the new snapshot_id "
	  "once it is written; trace_decode it next.",
	  "{\"type\":\"object\",\"properties\":{" SESSION_ID "},"
	  "\"required\":[\"session_id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":"
	  "{\"type\":\"string\"},\"snapshot_id\":{\"type\":\"string\"}},"
	  "\"required\":[\"session_id\",\"snapshot_id\"]}",
	  0, 0, 0, 0 },
	{ TOOL_STOP, "trace_stop", "Stop a session and keep its snapshot",
	  "End a running session, taking a final snapshot, and wait for the "
	  "recorder to finish. With decode true it also decodes that "
	  "snapshot (as trace_decode). Returns the session's snapshot ids.",
	  "{\"type\":\"object\",\"properties\":{" SESSION_ID ","
	  "\"decode\":{\"type\":\"boolean\",\"description\":\"Also decode the "
	  "final snapshot.\"}},"
	  "\"required\":[\"session_id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":"
	  "{\"type\":\"string\"},\"state\":" STATES ",\"snapshots\":" STRINGS
	  ",\"analysis_id\":{\"type\":\"string\"}},"
	  "\"required\":[\"session_id\",\"state\",\"snapshots\"]}",
	  0, 0, 1, 0 },
	{ TOOL_CANCEL, "trace_cancel", "Abandon a session",
	  "End a running session without keeping anything from it (no "
	  "snapshot is written). Use trace_stop instead to keep the "
	  "history.",
	  "{\"type\":\"object\",\"properties\":{" SESSION_ID "},"
	  "\"required\":[\"session_id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":"
	  "{\"type\":\"string\"},\"state\":" STATES "},"
	  "\"required\":[\"session_id\",\"state\"]}",
	  0, 1, 1, 0 },
	{ TOOL_DECODE, "trace_decode", "Decode a snapshot into function calls",
	  "Turn a snapshot into its analysis: every function call with "
	  "timestamps, per thread, with the gaps in the history said. Needed "
	  "once per snapshot before trace_query or trace_compare; decoding an "
	  "already decoded snapshot returns at once. Sends progress while it "
	  "works; may take a while for large rings.",
	  "{\"type\":\"object\",\"properties\":{\"snapshot_id\":"
	  SNAP_ID("The snapshot to decode, from trace_status.") ","
	  REQUEST_ID "},\"required\":[\"snapshot_id\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"snapshot_id\":"
	  "{\"type\":\"string\"},\"analysis_id\":{\"type\":\"string\"},"
	  "\"already_decoded\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"snapshot_id\",\"analysis_id\"]}",
	  0, 0, 1, 0 },
	{ TOOL_QUERY, "trace_query", "Ask a decoded snapshot",
	  "Query a decoded snapshot: summary (start here), hotpaths (where "
	  "time went), tree (a function's callees to a depth), timeline, "
	  "calls (of one function), at (what ran at an instant), branches, "
	  "insns, gaps, threads. Results are paged to fit "
	  "your context: pass next_cursor back as cursor for more.",
	  "{\"type\":\"object\",\"properties\":{\"snapshot_id\":"
	  SNAP_ID("A decoded snapshot.") ","
	  "\"analysis_id\":{\"type\":\"string\",\"pattern\":"
	  "\"^[a-z0-9]{1,64}$\",\"description\":\"Default: default.\"},"
	  "\"kind\":{\"type\":\"string\",\"enum\":[\"summary\",\"hotpaths\","
	  "\"timeline\",\"calls\",\"at\",\"branches\",\"insns\",\"gaps\","
	  "\"threads\",\"tree\",\"source\",\"images\"],\"description\":\"tree: "
	  "the call paths below function (or every root) to depth levels, each "
	  "with calls, time and instructions, in one request, pruned to the "
	  "page by share (min_share). source: file:line and the inline chain "
	  "(outermost first) of function, or of address. images: what the "
	  "snapshot holds (build-ids, archived or why not, debug info) and "
	  "what was decoded in each.\"},"
	  "\"min_share\":{\"type\":\"number\",\"minimum\":0,\"maximum\":100,"
	  "\"description\":\"For kind tree: keep the call paths with at least "
	  "this percentage of the instructions (default: as many as fit the "
	  "page; the answer says what was pruned).\"},"
	  "\"address\":{\"type\":\"string\",\"maxLength\":256,"
	  "\"description\":\"For kind source: MODULE+0xOFFSET (a file "
	  "offset, as unnamed frames are named) or an absolute 0xADDR.\"},"
	  "\"inline\":{\"type\":\"boolean\",\"description\":\"For kind "
	  "timeline: each span's inlined calls (helper:instructions).\"},"
	  "\"depth\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":64,"
	  "\"description\":\"For kind tree: levels below the function "
	  "(default 3).\"},"
	  "\"group\":{\"type\":\"string\",\"enum\":[\"function\",\"inline\","
	  "\"module\"]},"
	  "\"sort\":{\"type\":\"string\",\"enum\":[\"self_ns\",\"total_ns\","
	  "\"calls\",\"spans\",\"insns\",\"self_insns\",\"mean_ns\","
	  "\"max_ns\",\"start\",\"start_ns\",\"end_ns\",\"dur_ns\","
	  "\"depth\",\"tid\",\"taken\",\"not_taken\",\"executed\","
	  "\"gap_ns\",\"blocks\",\"gaps\"],\"description\":\"A numeric "
	  "column of the kind's rows; times and counts largest first, ids, "
	  "threads, depths and times of day smallest first.\"},"
	  "\"function\":{\"type\":\"string\",\"maxLength\":1024,"
	  "\"description\":\"A function as you would type it: lookup finds "
	  "lookup.constprop.0, a mangled name is demangled, an inlined helper "
	  "hotpaths lists is accepted by calls and timeline. With group inline: "
	  "that function's inlined helpers, counted inside it.\"},"
	  "\"module\":{\"type\":\"string\",\"maxLength\":4096,"
	  "\"description\":\"Only the rows of this image (its file name, "
	  "e.g. app or libc.so.6, or its path): every kind with rows of "
	  "code.\"},"
	  "\"exclude_module\":{\"type\":\"array\",\"maxItems\":16,"
	  "\"items\":{\"type\":\"string\",\"maxLength\":4096},"
	  "\"description\":\"Leave out the rows of these images, e.g. "
	  "[\\\"libc.so.6\\\", \\\"ld-linux-x86-64.so.2\\\"] for the "
	  "program's own code.\"},"
	  "\"tid\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4194304},"
	  "\"pid\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4194304,"
	  "\"description\":\"Only the threads of this process.\"},"
	  NS("from_ns", "Start of the window, ns since capture start.") ","
	  NS("to_ns", "End of the window.") ","
	  NS("at_ns", "The instant for kind at.") ","
	  "\"span_id\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":"
	  "9223372036854775807,\"description\":\"For kind at: the instant "
	  "this span (an id from timeline) began, e.g. what every other "
	  "thread was doing when it was entered.\"},"
	  "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,"
	  "\"description\":\"Rows per page (default 20).\"},"
	  "\"cursor\":{\"type\":\"string\",\"maxLength\":256},"
	  "\"time_budget_s\":{\"type\":\"integer\",\"minimum\":1,"
	  "\"maximum\":3600,\"description\":\"Seconds the query may run "
	  "(default 60): past it, it is stopped and says so.\"},"
	  "\"max_insns\":{\"type\":\"integer\",\"minimum\":0,"
	  "\"maximum\":9223372036854775807,\"description\":\"For kinds "
	  "branches and insns: instructions decoded at most (default "
	  "20000000; 0: no cap); the summary says where a window was cut.\"}},"
	  "\"required\":[\"snapshot_id\",\"kind\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"snapshot_id\":"
	  "{\"type\":\"string\"},\"analysis_id\":{\"type\":\"string\"},"
	  "\"kind\":{\"type\":\"string\"},\"result\":{},"
	  "\"truncated\":{\"type\":\"boolean\",\"description\":\"The "
	  "page holds fewer rows than limit to fit 8 KB; next_cursor goes on "
	  "at the first row it left out.\"},"
	  "\"next_cursor\":{\"type\":\"string\"},"
	  "\"clock\":{\"type\":\"string\",\"description\":\"How the "
	  "times were kept, when not by a hardware clock.\"}},"
	  "\"required\":[\"snapshot_id\",\"analysis_id\",\"kind\","
	  "\"result\",\"truncated\"]}",
	  1, 0, 1, 0 },
	{ TOOL_COMPARE, "trace_compare", "Compare two decoded snapshots",
	  "Compare two decoded snapshots function by function (calls, total "
	  "and self time, instructions; new and vanished functions) to find "
	  "what a change made slower or different. The whole report is kept "
	  "in the store under report_id; the answer is one page of its rows "
	  "(changed_only for the changed ones): pass report_id and "
	  "next_cursor back as cursor for the next page.",
	  "{\"type\":\"object\",\"properties\":{\"a\":"
	  SNAP_ID("The baseline snapshot.") ",\"b\":"
	  SNAP_ID("The snapshot to compare with it.") ","
	  "\"report_id\":" SNAP_ID("Read back a report an earlier "
	  "trace_compare kept (instead of a and b).") ","
	  "\"group\":{\"type\":\"string\",\"enum\":[\"function\","
	  "\"inline\"]},"
	  "\"fail_on\":{\"type\":\"array\",\"maxItems\":32,\"items\":"
	  "{\"type\":\"string\",\"pattern\":\"^[a-z_]{1,32}:[+-][0-9]{1,6}"
	  "%$\"},\"description\":\"Bounds like self_ns:+10% that mark the "
	  "comparison as crossed.\"},"
	  NS("min_ns", "Ignore changes smaller than this.") ","
	  "\"modules\":{\"type\":\"array\",\"maxItems\":64,\"items\":"
	  "{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},"
	  "\"description\":\"Compare only the functions of these modules "
	  "(file names like app or libc.so.6, or paths).\"},"
	  "\"exclude_modules\":{\"type\":\"array\",\"maxItems\":64,"
	  "\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":"
	  "4096},\"description\":\"Leave these modules out, e.g. "
	  "[\\\"libc.so.6\\\"] to compare only the program's own code.\"},"
	  "\"noise_insns\":{\"type\":\"string\",\"pattern\":"
	  "\"^[0-9]{1,12}(\\\\.[0-9]{1,6})?%?$\",\"description\":\"Changes "
	  "of at most this many instructions (\\\"200\\\") or this share of "
	  "the capture's (\\\"0.1%\\\") are no change. Default: 0.1% when a "
	  "side has more than one thread (their runs are not deterministic), "
	  "else 0.\"},"
	  "\"changed_only\":{\"type\":\"boolean\",\"description\":"
	  "\"Only the rows of functions that changed.\"},"
	  "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,"
	  "\"description\":\"Rows per page (default 20).\"},"
	  "\"cursor\":{\"type\":\"string\",\"maxLength\":32},"
	  REQUEST_ID "},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"report_id\":"
	  "{\"type\":\"string\"},\"a\":{\"type\":\"string\"},\"b\":"
	  "{\"type\":\"string\"},\"crossed\":{\"type\":\"boolean\","
	  "\"description\":\"A fail_on bound was crossed.\"},"
	  "\"changed\":{\"type\":\"integer\",\"description\":"
	  "\"Functions that changed.\"},"
	  "\"comparison\":{},\"truncated\":{\"type\":\"boolean\"},"
	  "\"total_rows\":{\"type\":\"integer\"},\"first_row\":"
	  "{\"type\":\"integer\"},\"next_cursor\":{\"type\":\"string\"},"
	  "\"clock\":{\"type\":\"string\"}},"
	  "\"required\":[\"report_id\",\"a\",\"b\",\"crossed\","
	  "\"comparison\",\"truncated\"]}",
	  0, 0, 0, 0 },
	{ TOOL_PRUNE, "trace_prune", "Free space in the snapshot store",
	  "Delete snapshots (and their analyses): those named in ids, then "
	  "the oldest by creation time until they are all younger than "
	  "max_age_s, at most max_count in all and keep_newest of each "
	  "program, and together under max_bytes. Snapshots a live session "
	  "or job uses are never deleted (the answer says which were kept). "
	  "Returns what was removed and the bytes freed. Try dry_run first "
	  "to see what would go; trace_list shows the store.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"ids\":{\"type\":\"array\",\"maxItems\":256,\"items\":"
	  SNAP_ID("A snapshot to delete, from trace_list.") ","
	  "\"description\":\"Delete these snapshots; every one must be in "
	  "the store, else nothing is deleted.\"},"
	  "\"keep_newest\":{\"type\":\"integer\",\"minimum\":0,"
	  "\"maximum\":1000000,\"description\":\"Keep the newest N "
	  "snapshots of each program (as trace_list names it).\"},"
	  "\"max_age_s\":{\"type\":\"integer\",\"minimum\":0,"
	  "\"maximum\":3153600000},"
	  "\"max_count\":{\"type\":\"integer\",\"minimum\":0,"
	  "\"maximum\":1000000},"
	  "\"max_bytes\":{\"type\":\"integer\",\"minimum\":0,"
	  "\"maximum\":9223372036854775807},"
	  "\"dry_run\":{\"type\":\"boolean\"}},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"removed\":{\"type\":"
	  "\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	  "\"id\":{\"type\":\"string\"},\"program\":{\"type\":"
	  "[\"string\",\"null\"]},\"created\":{\"type\":\"string\"},"
	  "\"bytes\":{\"type\":\"integer\"}},\"required\":[\"id\","
	  "\"bytes\"]}},\"kept_in_use\":" STRINGS ","
	  "\"freed_bytes\":{\"type\":\"integer\"},\"dry_run\":"
	  "{\"type\":\"boolean\"}},"
	  "\"required\":[\"removed\",\"freed_bytes\",\"dry_run\"]}",
	  0, 1, 0, 0 },
	{ TOOL_LIST, "trace_list", "List the snapshot store",
	  "List the snapshots in the store, oldest first: for each its "
	  "snapshot_id, the program it recorded, when it was made (ISO 8601, "
	  "UTC), what took it (its trigger), its size in bytes, whether it is "
	  "decoded and its analyses, and whether a live session uses it. Use "
	  "it to find a snapshot to query or compare again, or what "
	  "trace_prune should remove. Paged: pass next_cursor back as "
	  "cursor.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"program\":{\"type\":\"string\",\"maxLength\":4096,"
	  "\"description\":\"Only the snapshots of this program (as "
	  "recorded, or its file name).\"},"
	  "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,"
	  "\"description\":\"Rows per page (default 20).\"},"
	  "\"cursor\":{\"type\":\"string\",\"maxLength\":32}},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"snapshots\":{\"type\":"
	  "\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	  "\"snapshot_id\":{\"type\":\"string\"},\"program\":{\"type\":"
	  "[\"string\",\"null\"]},\"created\":{\"type\":\"string\"},"
	  "\"trigger\":{\"type\":[\"string\",\"null\"]},\"bytes\":"
	  "{\"type\":\"integer\"},\"decoded\":{\"type\":\"boolean\"},"
	  "\"analyses\":{\"type\":\"array\"},\"in_use\":{\"type\":"
	  "\"boolean\"}},\"required\":[\"snapshot_id\",\"created\","
	  "\"bytes\",\"decoded\"]}},"
	  "\"total_rows\":{\"type\":\"integer\"},\"first_row\":"
	  "{\"type\":\"integer\"},\"total_bytes\":{\"type\":\"integer\"},"
	  "\"truncated\":{\"type\":\"boolean\"},\"next_cursor\":"
	  "{\"type\":\"string\"}},"
	  "\"required\":[\"snapshots\",\"total_rows\",\"first_row\","
	  "\"truncated\"]}",
	  1, 0, 1, 0 },
};

static const struct tool_word start_words[] = {
	{ "--recorder", "recorder" }, { "--aux-bytes", "aux_bytes" },
	{ "--budget-bytes", "budget_bytes" }, { "--timing", "timing" },
	{ "--cpus", "cpus" }, { "--after-ms", "after_ms" },
	{ "--max-capture-ms", "max_capture_ms" },
	{ "--min-capture-ms", "min_capture_ms" }, { "--tail-ms", "tail_ms" },
	{ "--trigger-symbol", "trigger_symbol" },
	{ "--trigger-hits", "trigger_hits" },
	{ "--trigger-line", "trigger_line" }, { "--repeat", "repeat" },
	{ "--pid", "pid" }, { "--filter", "filters" },
	{ "PROGRAM", "program" }, { NULL, NULL },
};

static const struct tool_word query_words[] = {
	{ "--kind", "kind" }, { "--limit", "limit" }, { "--group", "group" },
	{ "--sort", "sort" }, { "--function", "function" },
	{ "--module", "module" }, { "--depth", "depth" }, { "--tid", "tid" },
	{ "--pid", "pid" }, { "--from", "from_ns" }, { "--to", "to_ns" },
	{ "--at", "at_ns" }, { "--span", "span_id" }, { "--cursor", "cursor" },
	/* A damaged or older analysis: ptmcp decodes anew, not ptspans. */
	{ "run ptspans again", "call trace_decode again" },
	{ NULL, NULL },
};

static const struct tool_word compare_words[] = {
	{ "--group", "group" }, { "--min-ns", "min_ns" },
	{ "--fail-on", "fail_on" }, { "--module", "modules" },
	{ "--exclude-module", "exclude_modules" },
	{ "--noise-insns", "noise_insns" },
	{ "run ptspans again", "call trace_decode again" }, { NULL, NULL },
};

static const struct tool_word no_words[] = { { NULL, NULL } };

const struct tool_word *
tools_words(enum tool_id id)
{
	switch (id) {
	case TOOL_START: return start_words;
	case TOOL_QUERY: return query_words;
	case TOOL_COMPARE: return compare_words;
	default: return no_words;
	}
}

static json_t *
load_object_schema(const char *text)
{
	json_t *v = json_loads(text, 0, NULL);
	json_t *type = json_object_get(v, "type");

	if (!json_is_string(type) ||
	    strcmp(json_string_value(type), "object") != 0) {
		json_decref(v);
		return NULL;
	}
	return v;
}

int
tools_load(struct tool_set *ts, struct error *e)
{
	int i;

	memset(ts, 0, sizeof(*ts));
	ts->defs = defs;
	for (i = 0; i < TOOL_COUNT; i++) {
		ts->input[i] = load_object_schema(defs[i].input_schema);
		ts->output[i] = load_object_schema(defs[i].output_schema);
		if (ts->input[i] == NULL || ts->output[i] == NULL) {
			tools_free(ts);
			return error_set(e, ERR_INTERNAL, "%s: a schema is not "
			    "a JSON object of type object", defs[i].name);
		}
	}
	return 0;
}

void
tools_free(struct tool_set *ts)
{
	int i;

	for (i = 0; i < TOOL_COUNT; i++) {
		json_decref(ts->input[i]);
		json_decref(ts->output[i]);
		ts->input[i] = ts->output[i] = NULL;
	}
}

const struct tool_def *
tools_find(const struct tool_set *ts, const char *name)
{
	int i;

	for (i = 0; i < TOOL_COUNT; i++)
		if (strcmp(ts->defs[i].name, name) == 0)
			return &ts->defs[i];
	return NULL;
}

void
tools_write_list(const struct tool_set *ts, struct jsonw *w)
{
	const struct tool_def *d;
	int i;

	jsonw_object_begin(w);
	jsonw_key(w, "tools");
	jsonw_array_begin(w);
	for (i = 0; i < TOOL_COUNT; i++) {
		d = &ts->defs[i];
		jsonw_object_begin(w);
		jsonw_kv_string(w, "name", d->name);
		jsonw_kv_string(w, "title", d->title);
		jsonw_kv_string(w, "description", d->description);
		jsonw_key(w, "inputSchema");
		jsonrpc_write_json(w, ts->input[i]);
		jsonw_key(w, "outputSchema");
		jsonrpc_write_json(w, ts->output[i]);
		jsonw_key(w, "annotations");
		jsonw_object_begin(w);
		jsonw_kv_string(w, "title", d->title);
		jsonw_kv_bool(w, "readOnlyHint", d->read_only);
		jsonw_kv_bool(w, "destructiveHint", d->destructive);
		jsonw_kv_bool(w, "idempotentHint", d->idempotent);
		jsonw_kv_bool(w, "openWorldHint", d->open_world);
		jsonw_object_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}
