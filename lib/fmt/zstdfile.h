/*
 * zstdfile: a stdio stream over a file that may be zstd-compressed, for
 * the JSON Lines files of an analysis (spans.jsonl.zst, man
 * ptkit-spans.5).
 *
 * Owns reading either form through one FILE * (the zstd magic decides;
 * concatenated frames are read on) and writing a compressed file through
 * one (fclose ends the frame and reports any error of the whole write).
 * Callers keep using getline, fwrite and fprintf as on a plain file.
 */
#ifndef PTKIT_ZSTDFILE_H
#define PTKIT_ZSTDFILE_H

#include <stdio.h>

#include "base/error.h"

/* The level ptspans writes at: zstd's fastest; span lines are so
 * repetitive that it packs them 25 to 30 times already. */
#define ZSTDFILE_LEVEL 1

/*
 * Opens path for reading, compressed or not.  Returns the stream, or NULL
 * with e (-ERR_NOTFOUND, -ERR_IO, -ERR_NOMEM).  A damaged frame reads as
 * an error of the stream (ferror), errno EBADMSG.
 */
FILE *zstdfile_open_read(const char *path, struct error *e);

/* As zstdfile_open_read, from fd (an open file, at offset 0, which the
 * stream owns from here on, or which is closed on failure), named path
 * in messages. */
FILE *zstdfile_open_read_fd(int fd, const char *path, struct error *e);

/*
 * Creates (or truncates) path and returns a stream that compresses into
 * it at level, on a thread of zstd's own when the library has them (so
 * that the writer goes on meanwhile), or NULL with e.  Its fclose()
 * returns EOF when any write or the end of the frame failed.
 */
FILE *zstdfile_open_write(const char *path, int level, struct error *e);

#endif
