/*
 * pipebuf: the size of a pipe's kernel buffer.
 *
 * Owns one decision shared by the tools at either end of
 * `ptdecode | ptspans`: a pipe of 1 MiB instead of 64 KiB means 16 times
 * fewer wakeups of either side, each costing tens of microseconds on a
 * VM.  Either end may ask; the pipe is the same.
 */
#ifndef PTKIT_PIPEBUF_H
#define PTKIT_PIPEBUF_H

#define PIPEBUF_WANT (1 << 20)

/*
 * Grows the buffer of fd to want bytes when fd is a pipe, or to the most
 * /proc/sys/fs/pipe-max-size allows when want is refused.  Not a pipe,
 * or refused again: nothing changes, and nothing is reported (a small
 * pipe is slower, never wrong).
 */
void pipebuf_widen(int fd, int want);

#endif
