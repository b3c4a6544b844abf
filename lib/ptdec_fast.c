/*
 * ptdec_fast: the fast ptdec backend (issue #11).
 *
 * For now every PSB interval is handed to libipt's block decoder; the
 * flow walker replaces that interval by interval.
 */
#include "ptdec.h"

static int
fast_worker_new(void **worker, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, struct error *e)
{
	return ptdec_backend_libipt.worker_new(worker, cfg, th, e);
}

static int
fast_decode_chunk(void *worker, const struct ptdec_chunk *c,
    struct ptdec_out *out, struct error *e)
{
	return ptdec_backend_libipt.decode_chunk(worker, c, out, e);
}

static void
fast_worker_free(void *worker)
{
	ptdec_backend_libipt.worker_free(worker);
}

const struct ptdec_backend ptdec_backend_fast = {
	"fast",
	fast_worker_new,
	fast_decode_chunk,
	fast_worker_free,
};
