/*
 * libFuzzer target for the decode core: any bytes as a thread's ring,
 * decoded over the tiny code image of t_ptdec.c, must end in GAP records
 * and a clean return, never a crash, a hang or a leak; and the stream must
 * be the same in one chunk and with every PSB a chunk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "dec/ptdec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t code[] = {
	0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xd8, 0x75, 0xf7,
	0xe8, 0x02, 0x00, 0x00, 0x00, 0xeb, 0xf0, 0x90, 0xc3,
};

struct sum {
	uint64_t n, hash;
};

static int
count(void *ctx, const struct blks_record *r, struct error *e)
{
	struct sum *s = ctx;
	uint64_t v = r->type == BLKS_BLOCK ? r->u.block.end_ip ^
	    r->u.block.ninsn : r->type == BLKS_GAP ? r->u.gap.offset : 1;

	(void)e;
	s->n++;
	s->hash = s->hash * 1099511628211ULL ^ v ^ r->type;
	return 0;
}

static struct ptdec_images *
images(void)
{
	static struct ptdec_images im;
	static int done;
	char path[] = "/tmp/ptkit-fuzz-ptdec-XXXXXX";
	struct error e;
	int fd;

	if (done)
		return &im;
	done = 1;
	if ((fd = mkstemp(path)) < 0 ||
	    write(fd, code, sizeof(code)) != (ssize_t)sizeof(code))
		abort();
	close(fd);
	if (ptdec_images_init(&im, &e) < 0 ||
	    ptdec_images_add(&im, 1, 0x401000, sizeof(code), 0, path, &e) < 0)
		abort();
	/* the iscache has read the file; it may go */
	unlink(path);
	return &im;
}

static struct sum
decode(const uint8_t *data, size_t size, size_t chunk)
{
	struct ptdec_config cfg;
	struct ptdec_thread th = { 7, 1, data, size, 0 };
	struct sum s = { 0, 0 };
	struct ptdec_sink sink = { count, &s };
	struct blks_end end;
	struct error e;

	memset(&cfg, 0, sizeof(cfg));
	cfg.time = (struct ptdec_time){ 0, 1, 0, 0, 1 };
	cfg.images = images();
	cfg.chunk_bytes = chunk;
	cfg.jobs = 1;
	if (ptdec_decode_thread(&ptdec_backend_libipt, &cfg, &th, &sink,
	    &end, &e) < 0)
		abort();
	return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sum a = decode(data, size, SIZE_MAX);
	struct sum b = decode(data, size, 1);

	if (a.n != b.n || a.hash != b.hash)
		abort();
	return 0;
}
