/*
 * ptsb: the sideband ring of a per-thread intel_pt event.
 *
 * Owns the data-ring protocol of notes/recorder.md §2.3 -- load data_head
 * with acquire semantics, walk the records from data_tail to data_head
 * modulo data_size (copying a record that straddles the end), store the
 * new data_tail with release semantics -- and the parsing of each kernel
 * record (MMAP2, COMM, FORK, EXIT, ITRACE_START, AUX, SWITCH, LOST) and
 * its sample_id trailer into the structs of perfdata.h, so the pt recorder
 * can hand them to the perf.data writer as they are.
 */
#ifndef PTKIT_PTSB_H
#define PTKIT_PTSB_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "fmt/perfdata.h"

struct ptsb_record {
	uint32_t type;		/* PERF_RECORD_* */
	uint16_t misc;
	struct perfdata_sid sid;	/* also copied into the member below */
	union {
		struct perfdata_mmap mmap;		/* MMAP2 */
		struct perfdata_comm comm;		/* COMM */
		struct perfdata_task task;		/* FORK, EXIT */
		struct perfdata_itrace_start itrace;	/* ITRACE_START */
		struct perfdata_aux aux;		/* AUX */
		struct perfdata_switch sw;		/* SWITCH[_CPU_WIDE] */
		struct {
			uint64_t id, lost;
		} lost;					/* LOST */
	} u;
};

/*
 * Called for each record; strings in rec (filename, comm) live only during
 * the call.  A negative return stops the walk and is returned.
 */
typedef int (*ptsb_fn)(const struct ptsb_record *rec, void *arg);

/* Bytes of the sample_id trailer for this sample_type (sample_id_all). */
size_t ptsb_trailer_size(uint64_t sample_type);

/*
 * Parses one record of len bytes (header included).  Returns 0,
 * -ERR_UNSUPPORTED for a record type not listed above (rec->type and
 * rec->misc are set; callers skip it), -ERR_TRUNCATED or -ERR_FORMAT for
 * a record too short for its type or a string without its NUL.
 */
int ptsb_parse(const void *raw, size_t len, uint64_t sample_type,
    struct ptsb_record *rec, struct error *e) PTKIT_MUST_CHECK;

/*
 * Walks the records of data[0, size) (size a power of two) from *tail to
 * head, calling fn for each parsed one (unknown types are skipped), and
 * advances *tail past each record handed over.  Returns the number of
 * records seen, or a negative error: -ERR_FORMAT (a header with a size
 * below 8 or beyond head: the ring is corrupt), an error of ptsb_parse
 * other than -ERR_UNSUPPORTED, or fn's.
 */
int ptsb_walk(const uint8_t *data, uint64_t size, uint64_t head,
    uint64_t *tail, uint64_t sample_type, ptsb_fn fn, void *arg,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The same on a mapped event: data_head is read from the control page
 * (acquire), data_tail written back (release) after the walk.
 */
int ptsb_drain(struct perf_event_mmap_page *pc, const uint8_t *data,
    uint64_t sample_type, ptsb_fn fn, void *arg, struct error *e)
    PTKIT_MUST_CHECK;

#endif
