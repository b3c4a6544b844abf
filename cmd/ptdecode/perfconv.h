/*
 * perfconv: ptdecode --decoder perf, the fallback that runs `perf script`
 * on the snapshot (lib/spawn, no shell) and converts its branch samples
 * into the same block stream, so that the two decoders can be compared.
 */
#ifndef PTDECODE_PERFCONV_H
#define PTDECODE_PERFCONV_H

#include <stdint.h>

/*
 * Decodes snapshot to stdout; tid UINT32_MAX for all.  Returns 0, or -1
 * after reporting what went wrong.
 */
int run_perf(const char *snapshot, int format, uint32_t tid);

#endif
