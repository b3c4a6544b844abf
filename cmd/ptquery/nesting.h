/*
 * nesting: the times of the spans a trace export writes, laid out so that
 * consumers that rebuild the call tree from times alone (Chrome DevTools'
 * trace engine, speedscope) rebuild ptkit's.
 *
 * Those consumers nest an event under the one before it when it starts
 * strictly before that one's end and ends no later, and compare times as
 * doubles: zero-duration spans, spans that start where their parent ends
 * and decimal microseconds that do not add up exactly all nest wrongly.
 * So the export counts time in ticks of 2^-20 microseconds (exact in a
 * double up to 2^33 us, sums included), and each span's start and end
 * take, in call-tree order (a span, then its children by start, then its
 * end), the tick of their nanosecond, or one tick after the previous event
 * of the thread when that is later: every event of a thread has its own
 * tick, children lie strictly inside their parent and siblings one after
 * the other, and no time moves by more than the events that share its
 * nanosecond (a tick is 0.95 ps).  The parent of a span is its nearest
 * ancestor among the spans exported.
 */
#ifndef PTQUERY_NESTING_H
#define PTQUERY_NESTING_H

#include <stddef.h>
#include <stdint.h>

#include "span/analysis.h"

#define NESTING_TICK_BITS 20		/* ticks per microsecond: 2^20 */

/*
 * Lays out rows[0..n) of a: fills order[0..n) with indices into rows in
 * call-tree order (threads by tid), and start[i], end[i] with the ticks
 * of rows[i].  Returns 0 or -1 when out of memory.
 */
int nesting_layout(const struct analysis *a, const uint64_t *rows, size_t n,
    size_t *order, uint64_t *start, uint64_t *end);

/*
 * As nesting_layout, with m more events that have no times of their own
 * (inlined calls: --inline): event n + j is a child of event
 * parent[j] (an index below n, or n + k for another of them), placed at
 * its parent's start before the parent's other children, lasting one
 * tick, with its own children inside.  order, start and end hold n + m.
 */
int nesting_layout_extra(const struct analysis *a, const uint64_t *rows,
    size_t n, const size_t *parent, size_t m, size_t *order,
    uint64_t *start, uint64_t *end);

/* Writes ticks as exact decimal microseconds ("24.0341796875"). */
int nesting_print_us(char *buf, size_t size, uint64_t ticks);

#endif
