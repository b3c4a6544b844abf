/*
 * libFuzzer target for the fast decoder (issue 11): any bytes as a
 * thread's ring decode to the same records with ptdec_backend_fast as with
 * ptdec_backend_libipt: the same blocks, events and GAP records (cause,
 * ip, time, offset, bytes skipped, error), the same END counters but
 * fallbacks; in one chunk and with every PSB interval a chunk.  A
 * difference prints both records and aborts.
 *
 * Input: byte 0 picks the code image, byte 1 the decode configuration,
 * the rest is the ring.  The images: the tiny loop of fuzz_ptdec.c, and
 * the static emu fixtures (FASTDEC_FIXTURES, colon-separated paths given
 * by mk/fastdec.mk), each its own pid, mapped at their PT_LOAD addresses,
 * so that rings cut from their emu recordings (the seeds) walk real code.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "ptdec.h"

#ifndef FASTDEC_FIXTURES
#define FASTDEC_FIXTURES ""
#endif

#define MAX_IMAGES 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_ptdec.c's loop: add, cmp, jne back; call; jmp back; nop; ret. */
static const uint8_t tiny_code[] = {
	0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xd8, 0x75, 0xf7,
	0xe8, 0x02, 0x00, 0x00, 0x00, 0xeb, 0xf0, 0x90, 0xc3,
};

struct images {
	struct ptdec_images im;
	unsigned nr_pids;		/* pids 1..nr_pids have code */
};

/*
 * libipt's block decoder follows direct branches without trace: in a loop
 * of them (a spin loop, or a fuzzed ring that walks into one) it emits
 * blocks for ever.  A decode stops at MAX_RECORDS; an input the native
 * decoder does not finish is not compared.
 */
#define MAX_RECORDS 200000

/* A growing copy of the records one decode emitted. */
struct recs {
	struct blks_record *r;
	size_t nr, cap;
};

static int
keep(void *ctx, const struct blks_record *r, struct error *e)
{
	struct recs *s = ctx;

	if (s->nr == MAX_RECORDS)
		return error_set(e, ERR_RANGE, "more than %d records",
		    MAX_RECORDS);
	if (s->nr == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct blks_record *n = realloc(s->r, cap * sizeof(*n));

		if (n == NULL)
			abort();
		s->r = n;
		s->cap = cap;
	}
	s->r[s->nr++] = *r;
	return 0;
}

static void
add_tiny(struct ptdec_images *im, uint32_t pid)
{
	char path[] = "/tmp/ptkit-fuzz-ptdec-fast-XXXXXX";
	struct error e;
	int fd;

	if ((fd = mkstemp(path)) < 0 ||
	    write(fd, tiny_code, sizeof(tiny_code)) !=
	    (ssize_t)sizeof(tiny_code))
		abort();
	close(fd);
	if (ptdec_images_add(im, pid, 0x401000, sizeof(tiny_code), 0, path,
	    &e) < 0)
		abort();
	/* the iscache has read the file; it may go */
	unlink(path);
}

/* Maps every PT_LOAD segment of a 64-bit ELF file for pid.  0 or -1. */
static int
add_elf(struct ptdec_images *im, uint32_t pid, const char *path)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	struct error e;
	int added = 0;

	if (f == NULL)
		return -1;
	if (fread(&eh, sizeof(eh), 1, f) != 1 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		goto fail;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (fseek(f, (long)(eh.e_phoff + (uint64_t)i * eh.e_phentsize),
		    SEEK_SET) != 0 || fread(&ph, sizeof(ph), 1, f) != 1)
			goto fail;
		if (ph.p_type != PT_LOAD || ph.p_filesz == 0)
			continue;
		if (ptdec_images_add(im, pid, ph.p_vaddr, ph.p_filesz,
		    ph.p_offset, path, &e) < 0)
			goto fail;
		added++;
	}
	fclose(f);
	return added > 0 ? 0 : -1;
fail:
	fclose(f);
	return -1;
}

/* pid 1: the tiny loop; pids 2...: the fixtures that load. */
static struct images *
images(void)
{
	static struct images ims;
	static int done;
	struct error e;
	char *list, *p, *tok, *save = NULL;

	if (done)
		return &ims;
	done = 1;
	if (ptdec_images_init(&ims.im, &e) < 0)
		abort();
	add_tiny(&ims.im, 1);
	ims.nr_pids = 1;
	if ((list = strdup(FASTDEC_FIXTURES)) == NULL)
		abort();
	for (p = list; (tok = strtok_r(p, ":", &save)) != NULL; p = NULL) {
		if (ims.nr_pids == MAX_IMAGES)
			break;
		if (add_elf(&ims.im, ims.nr_pids + 1, tok) == 0)
			ims.nr_pids++;
		else
			fprintf(stderr, "fuzz_ptdec_fast: %s: not loaded\n",
			    tok);
	}
	free(list);
	return &ims;
}

/*
 * The decode configuration of byte 1: bits 0-1 nominal frequency, 2-3
 * MTC frequency, 4-5 the CPUID 0x15 ratio, 6 the ring wrapped, 7 a CPU
 * with errata.  0 is what the emu recorder writes.
 */
static void
config_of(uint8_t b, struct ptdec_config *cfg, int *wrapped)
{
	static const uint8_t nom[] = { 1, 0, 8, 40 };
	static const uint8_t mtc[] = { 0, 3, 6, 9 };
	static const uint32_t ratio[][2] = { { 0, 0 }, { 2, 200 }, { 1, 1 },
	    { 3, 7 } };

	cfg->nom_freq = nom[b & 3];
	cfg->mtc_freq = mtc[b >> 2 & 3];
	cfg->cpuid_0x15_eax = ratio[b >> 4 & 3][0];
	cfg->cpuid_0x15_ebx = ratio[b >> 4 & 3][1];
	*wrapped = (b >> 6) & 1;
	if (b & 0x80) {
		cfg->cpu.vendor = pcv_intel;
		cfg->cpu.family = 6;
		cfg->cpu.model = 0x55;
		cfg->cpu.stepping = 4;
	}
}

/* Decodes into out and end: 0, or 1 when the decode hit MAX_RECORDS. */
static int
decode(const struct ptdec_backend *be, const uint8_t *data, size_t size,
    size_t chunk, struct recs *out, struct blks_end *end)
{
	struct images *ims = images();
	struct ptdec_config cfg;
	struct ptdec_thread th = { 7, 1, data + 2, size - 2, 0 };
	struct ptdec_sink sink = { keep, out };
	struct error e;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.time = (struct ptdec_time){ 0, 1, 0, 0, 1 };
	cfg.images = &ims->im;
	cfg.chunk_bytes = chunk;
	cfg.jobs = 1;
	config_of(data[1], &cfg, &th.wrapped);
	th.pid = 1 + data[0] % ims->nr_pids;
	memset(end, 0, sizeof(*end));
	out->nr = 0;
	if ((rc = ptdec_decode_thread(be, &cfg, &th, &sink, end, &e)) < 0) {
		if (rc == -ERR_RANGE && out->nr == MAX_RECORDS)
			return 1;
		fprintf(stderr, "fuzz_ptdec_fast: %s: %s\n", be->name, e.msg);
		abort();
	}
	return 0;
}

static int
same_text(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static int
same_record(const struct blks_record *a, const struct blks_record *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case BLKS_BLOCK:
		return a->u.block.ip == b->u.block.ip &&
		    a->u.block.end_ip == b->u.block.end_ip &&
		    a->u.block.ninsn == b->u.block.ninsn &&
		    a->u.block.iclass == b->u.block.iclass &&
		    a->u.block.flags == b->u.block.flags &&
		    a->u.block.mode == b->u.block.mode &&
		    a->u.block.time == b->u.block.time;
	case BLKS_EVENT:
		return a->u.event.kind == b->u.event.kind &&
		    a->u.event.flags == b->u.event.flags &&
		    a->u.event.ip == b->u.event.ip &&
		    a->u.event.at == b->u.event.at &&
		    a->u.event.arg == b->u.event.arg &&
		    a->u.event.time == b->u.event.time;
	case BLKS_GAP:
		return a->u.gap.cause == b->u.gap.cause &&
		    a->u.gap.ip == b->u.gap.ip &&
		    a->u.gap.time == b->u.gap.time &&
		    a->u.gap.offset == b->u.gap.offset &&
		    a->u.gap.bytes_skipped == b->u.gap.bytes_skipped &&
		    a->u.gap.errcode == b->u.gap.errcode &&
		    same_text(a->u.gap.text, b->u.gap.text);
	default:
		/* the driver emits nothing else into a thread's records */
		return 0;
	}
}

static void
print_record(const char *who, size_t i, const struct recs *s)
{
	const struct blks_record *r;

	if (i >= s->nr) {
		fprintf(stderr, "  %-6s #%zu: (end of stream, %zu records)\n",
		    who, i, s->nr);
		return;
	}
	r = &s->r[i];
	switch (r->type) {
	case BLKS_BLOCK:
		fprintf(stderr, "  %-6s #%zu: block ip %#llx end_ip %#llx "
		    "ninsn %u class %u flags %u mode %u time %llu\n", who, i,
		    (unsigned long long)r->u.block.ip,
		    (unsigned long long)r->u.block.end_ip, r->u.block.ninsn,
		    r->u.block.iclass, r->u.block.flags, r->u.block.mode,
		    (unsigned long long)r->u.block.time);
		break;
	case BLKS_EVENT:
		fprintf(stderr, "  %-6s #%zu: event %s flags %u ip %#llx at "
		    "%#llx arg %#llx time %llu\n", who, i,
		    blks_event_name(r->u.event.kind), r->u.event.flags,
		    (unsigned long long)r->u.event.ip,
		    (unsigned long long)r->u.event.at,
		    (unsigned long long)r->u.event.arg,
		    (unsigned long long)r->u.event.time);
		break;
	case BLKS_GAP:
		fprintf(stderr, "  %-6s #%zu: gap %s ip %#llx time %llu offset "
		    "%llu skipped %llu error %d (%s)\n", who, i,
		    blks_gap_cause_name(r->u.gap.cause),
		    (unsigned long long)r->u.gap.ip,
		    (unsigned long long)r->u.gap.time,
		    (unsigned long long)r->u.gap.offset,
		    (unsigned long long)r->u.gap.bytes_skipped,
		    r->u.gap.errcode, r->u.gap.text ? r->u.gap.text : "");
		break;
	default:
		fprintf(stderr, "  %-6s #%zu: record type %u\n", who, i,
		    r->type);
	}
}

/* Aborts, showing the first difference, unless fast equals native. */
static void
compare(const char *what, size_t nr_psb, const struct recs *n,
    const struct blks_end *ne, const struct recs *f, const struct blks_end *fe)
{
	size_t i;

	for (i = 0; i < n->nr && i < f->nr; i++)
		if (!same_record(&n->r[i], &f->r[i]))
			break;
	if (i < n->nr || i < f->nr) {
		fprintf(stderr, "fuzz_ptdec_fast: %s: record %zu differs\n",
		    what, i);
		if (i > 0)
			print_record("before", i - 1, n);
		print_record("native", i, n);
		print_record("fast", i, f);
		abort();
	}
	for (unsigned c = 0; c < BLKS_C_NR; c++) {
		if (c == BLKS_C_FALLBACKS || ne->c[c] == fe->c[c])
			continue;
		fprintf(stderr, "fuzz_ptdec_fast: %s: END %s: native %llu, "
		    "fast %llu\n", what, blks_counter_name(c),
		    (unsigned long long)ne->c[c], (unsigned long long)fe->c[c]);
		abort();
	}
	if (fe->c[BLKS_C_FALLBACKS] > nr_psb) {
		fprintf(stderr, "fuzz_ptdec_fast: %s: %llu fallbacks for %zu "
		    "PSB intervals\n", what,
		    (unsigned long long)fe->c[BLKS_C_FALLBACKS], nr_psb);
		abort();
	}
}

/* The number of PSB intervals in the ring (what fallbacks count). */
static size_t
psb_intervals(const uint8_t *data, size_t size)
{
	struct ptdec_thread th = { 7, 1, data + 2, size - 2, 0 };
	struct ptdec_plan plan;
	struct error e;
	size_t nr;

	if (ptdec_split(&th, 0, &plan, &e) < 0)
		abort();
	nr = plan.nr_psb;
	ptdec_plan_free(&plan);
	return nr;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct recs n, f;
	struct blks_end ne, fe;
	size_t nr_psb;

	if (size < 2)
		return 0;
	nr_psb = psb_intervals(data, size);
	if (decode(&ptdec_backend_libipt, data, size, SIZE_MAX, &n, &ne)) {
		if (getenv("PTKIT_FUZZ_VERBOSE") != NULL)
			print_record("endless", n.nr - 1, &n);
		return 0;
	}
	if (ne.c[BLKS_C_FALLBACKS] != 0)
		abort();
	decode(&ptdec_backend_fast, data, size, SIZE_MAX, &f, &fe);
	compare("one chunk", nr_psb, &n, &ne, &f, &fe);
	decode(&ptdec_backend_fast, data, size, 1, &f, &fe);
	compare("a chunk per PSB", nr_psb, &n, &ne, &f, &fe);
	/* to see what the seeds reach: how much the fast path walked */
	if (getenv("PTKIT_FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "fuzz_ptdec_fast: image %u config %#x: %zu "
		    "records, %llu blocks, %llu gaps, %zu PSB intervals, "
		    "%llu handed to libipt\n", data[0], data[1], n.nr,
		    (unsigned long long)ne.c[BLKS_C_BLOCKS],
		    (unsigned long long)ne.c[BLKS_C_GAPS], nr_psb,
		    (unsigned long long)fe.c[BLKS_C_FALLBACKS]);
	return 0;
}
