/*
 * libFuzzer target for the fast decoder (ptdec_fast): any bytes as a
 * thread's ring decode to the same records with ptdec_backend_fast as with
 * ptdec_backend_libipt: the same blocks, events and GAP records (cause,
 * ip, time, offset, bytes skipped, error), the same END counters but
 * fallbacks; in one chunk and with every PSB interval a chunk.  A
 * difference prints both records and aborts.
 *
 * Input: byte 0 picks the code image (bits 0-6) and the mode (bit 7),
 * byte 1 the decode configuration, the rest is the ring (raw mode) or a
 * program for a packet generator (generated mode).  The images: the tiny
 * loop of fuzz_ptdec.c, and the static emu fixtures (FASTDEC_FIXTURES,
 * colon-separated paths given by mk/fastdec.mk), each its own pid, mapped
 * at their PT_LOAD addresses, so that rings cut from their emu recordings
 * (the seeds) walk real code.
 *
 * Why a generated mode: the fast decoder hands any interval with a decode
 * error to libipt, and a mutated ring almost always has one, so raw
 * inputs mostly compare libipt with itself.  The generator runs the code
 * of the image instead (lib/x86class decodes it): the program's bits say
 * which way each conditional branch goes, where each indirect branch goes
 * (a function of the image), when a return is compressed, when an
 * interrupt, a syscall, a CYC or a PSB+ comes; the packets it writes
 * (libipt's encoder) are what a CPU would write for that run, so the fast
 * decoder walks it, down paths no fixture takes.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "dec/ptdec.h"
#include "dec/x86class.h"

#ifndef FASTDEC_FIXTURES
#define FASTDEC_FIXTURES ""
#endif

#define MAX_IMAGES 8
#define MAX_IPS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_ptdec.c's loop: add, cmp, jne back; call; jmp back; nop; ret. */
static const uint8_t tiny_code[] = {
	0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xd8, 0x75, 0xf7,
	0xe8, 0x02, 0x00, 0x00, 0x00, 0xeb, 0xf0, 0x90, 0xc3,
};

/* The code of one image, for the generator. */
struct ipset {
	uint64_t lo, hi;		/* the executable segments' span */
	uint8_t *code;			/* their bytes, [lo, hi) */
	uint64_t ip[MAX_IPS];		/* function entries: indirect targets */
	size_t nr;
};

/* One mapping of a file, kept to map it again for every decode. */
struct mapping {
	uint32_t pid;
	uint64_t vaddr, size, offset;
	const char *path;		/* owned: strdup'd */
};

#define MAX_MAPPINGS 64

/*
 * libipt's block cache lives in the sections and does not know the
 * execution mode it was filled in (pt_block_decoder.c uses a cached entry
 * whatever the decoder's mode), so a decode's blocks could depend on what
 * earlier inputs decoded.  Every decode therefore gets fresh images (im),
 * mapped again from mappings[]: an input's result depends on it alone.
 */
struct images {
	struct ptdec_images im;
	struct mapping mappings[MAX_MAPPINGS];
	size_t nr_mappings;
	unsigned nr_pids;		/* pids 1..nr_pids have code */
	struct ipset ips[MAX_IMAGES];	/* [pid - 1] */
};

/* Maps a file for pid and remembers it.  0 or -1. */
static int
images_map(struct images *ims, uint32_t pid, uint64_t vaddr, uint64_t size,
    uint64_t offset, const char *path)
{
	struct mapping *m;
	struct error e;

	if (ims->nr_mappings == MAX_MAPPINGS ||
	    ptdec_images_add(&ims->im, pid, vaddr, size, offset, path, &e) < 0)
		return -1;
	m = &ims->mappings[ims->nr_mappings];
	if ((m->path = strdup(path)) == NULL)
		abort();
	m->pid = pid;
	m->vaddr = vaddr;
	m->size = size;
	m->offset = offset;
	ims->nr_mappings++;
	return 0;
}

/* Drops im, with libipt's block caches, and maps everything again. */
static void
images_refresh(struct images *ims)
{
	struct error e;

	ptdec_images_fini(&ims->im);
	if (ptdec_images_init(&ims->im, &e) < 0)
		abort();
	for (size_t i = 0; i < ims->nr_mappings; i++) {
		const struct mapping *m = &ims->mappings[i];

		if (ptdec_images_add(&ims->im, m->pid, m->vaddr, m->size,
		    m->offset, m->path, &e) < 0)
			abort();
	}
}

/*
 * libipt's block decoder follows direct branches without trace: in a loop
 * of them (a spin loop, or a fuzzed ring that walks into one) it would
 * emit blocks for ever; both backends end such a stretch after
 * PTDEC_SPIN_MAX blocks with a GAP (ptdec.h), so a decode ends, but an
 * input may still hold many such stretches.  A decode stops at
 * MAX_RECORDS, to keep runs short; an input the native decoder does not
 * finish is not compared.
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

static uint64_t
get_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static uint64_t
unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

static uint64_t
time_of(const struct blks_record *r)
{
	return r->type == BLKS_BLOCK ? r->u.block.time :
	    r->type == BLKS_EVENT ? r->u.event.time : r->u.gap.time;
}

/*
 * Encoded runs (the fast decoder's blocks that end at a branch), decoded
 * by ptkit-blocks(5) against the records kept so far; a malformed run, or
 * one whose last block is not last_ip / last_time, aborts.
 */
static int
keep_encoded(void *ctx, const uint8_t *p, size_t len, uint64_t last_ip,
    uint64_t last_time, struct error *e)
{
	const uint8_t *end = p + len;
	struct recs *s = ctx;
	struct blks_record r;
	uint64_t ip = 0, time = s->nr > 0 ? time_of(&s->r[s->nr - 1]) : 0;
	int rc;

	for (size_t i = s->nr; i-- > 0;) {
		if (s->r[i].type == BLKS_BLOCK) {
			ip = s->r[i].u.block.end_ip;
			break;
		}
	}
	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	while (p < end) {
		const uint8_t *next;
		uint8_t cls;

		if (end - p < 2 || p[0] != BLKS_BLOCK || p[1] >= 0x80 ||
		    p[1] > end - p - 2)
			abort();
		next = p + 2 + p[1];
		p += 2;
		r.u.block.ip = ip + unzigzag(get_varint(&p, next));
		r.u.block.end_ip = r.u.block.ip +
		    unzigzag(get_varint(&p, next));
		r.u.block.ninsn = (uint32_t)get_varint(&p, next);
		if (p == next)
			abort();
		cls = *p++;
		r.u.block.iclass = cls & 0xf;
		r.u.block.flags = cls >> 4 & 3;
		r.u.block.mode = cls >> 6;
		r.u.block.time = time + unzigzag(get_varint(&p, next));
		if (p != next)
			abort();
		ip = r.u.block.end_ip;
		time = r.u.block.time;
		if ((rc = keep(ctx, &r, e)) < 0)
			return rc;
	}
	if (ip != last_ip || time != last_time)
		abort();
	return 0;
}

static char tiny_path[] = "/tmp/ptkit-fuzz-ptdec-fast-XXXXXX";

static void
rm_tiny(void)
{
	unlink(tiny_path);
}

static void
add_tiny(struct images *ims, uint32_t pid, struct ipset *ips)
{
	static const uint8_t starts[] = { 0, 4, 7, 9, 14, 16, 17 };
	char *path = tiny_path;
	int fd;

	if ((fd = mkstemp(path)) < 0 ||
	    write(fd, tiny_code, sizeof(tiny_code)) !=
	    (ssize_t)sizeof(tiny_code))
		abort();
	close(fd);
	if (images_map(ims, pid, 0x401000, sizeof(tiny_code), 0, path) < 0)
		abort();
	/* libipt maps sections when it reads them: the file stays */
	atexit(rm_tiny);
	ips->lo = 0x401000;
	ips->hi = 0x401000 + sizeof(tiny_code);
	if ((ips->code = malloc(sizeof(tiny_code))) == NULL)
		abort();
	memcpy(ips->code, tiny_code, sizeof(tiny_code));
	for (size_t i = 0; i < sizeof(starts); i++)
		ips->ip[ips->nr++] = 0x401000 + starts[i];
}

/* Adds the STT_FUNC symbols of f's symbol table to ips. */
static void
add_functions(FILE *f, const Elf64_Ehdr *eh, struct ipset *ips)
{
	Elf64_Shdr sh;
	Elf64_Sym sym;

	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (fseek(f, (long)(eh->e_shoff + (uint64_t)i * eh->e_shentsize),
		    SEEK_SET) != 0 || fread(&sh, sizeof(sh), 1, f) != 1)
			return;
		if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize != sizeof(sym))
			continue;
		for (uint64_t k = 0; k < sh.sh_size / sizeof(sym) &&
		    ips->nr < MAX_IPS; k++) {
			if (fseek(f, (long)(sh.sh_offset + k * sizeof(sym)),
			    SEEK_SET) != 0 || fread(&sym, sizeof(sym), 1, f) != 1)
				return;
			if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC &&
			    sym.st_value >= ips->lo && sym.st_value < ips->hi)
				ips->ip[ips->nr++] = sym.st_value;
		}
	}
}

/* Maps every PT_LOAD segment of a 64-bit ELF file for pid.  0 or -1. */
/* Reads the executable segments into ips->code.  0 or -1. */
static int
read_code(FILE *f, const Elf64_Ehdr *eh, struct ipset *ips)
{
	Elf64_Phdr ph;

	if (ips->hi - ips->lo > (64u << 20) ||
	    (ips->code = calloc(1, ips->hi - ips->lo)) == NULL)
		return -1;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (fseek(f, (long)(eh->e_phoff + (uint64_t)i * eh->e_phentsize),
		    SEEK_SET) != 0 || fread(&ph, sizeof(ph), 1, f) != 1)
			goto fail;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (fseek(f, (long)ph.p_offset, SEEK_SET) != 0 ||
		    fread(ips->code + (ph.p_vaddr - ips->lo), 1, ph.p_filesz, f)
		    != ph.p_filesz)
			goto fail;
	}
	return 0;
fail:
	free(ips->code);
	ips->code = NULL;
	return -1;
}

static int
add_elf(struct images *ims, uint32_t pid, const char *path,
    struct ipset *ips)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
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
		if (images_map(ims, pid, ph.p_vaddr, ph.p_filesz,
		    ph.p_offset, path) < 0)
			goto fail;
		if (ph.p_flags & PF_X) {
			if (ips->hi == 0 || ph.p_vaddr < ips->lo)
				ips->lo = ph.p_vaddr;
			if (ph.p_vaddr + ph.p_filesz > ips->hi)
				ips->hi = ph.p_vaddr + ph.p_filesz;
		}
		added++;
	}
	if (ips->hi > ips->lo && read_code(f, &eh, ips) == 0)
		add_functions(f, &eh, ips);
	fclose(f);
	return added > 0 && ips->code != NULL ? 0 : -1;
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
	add_tiny(&ims, 1, &ims.ips[0]);
	ims.nr_pids = 1;
	if ((list = strdup(FASTDEC_FIXTURES)) == NULL)
		abort();
	for (p = list; (tok = strtok_r(p, ":", &save)) != NULL; p = NULL) {
		if (ims.nr_pids == MAX_IMAGES)
			break;
		memset(&ims.ips[ims.nr_pids], 0, sizeof(ims.ips[0]));
		if (add_elf(&ims, ims.nr_pids + 1, tok,
		    &ims.ips[ims.nr_pids]) == 0)
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

/*
 * Decodes ring with the image and configuration of the input's first two
 * bytes into out and end: 0, or 1 when the decode hit MAX_RECORDS.
 */
static int
decode(const struct ptdec_backend *be, const uint8_t *data,
    const uint8_t *ring, size_t len, size_t chunk, struct recs *out,
    struct blks_end *end)
{
	struct images *ims = images();
	struct ptdec_config cfg;
	struct ptdec_thread th = { 7, 1, ring, len, 0 };
	struct ptdec_sink sink = { keep, out, NULL, keep_encoded };
	struct error e;
	int rc;

	images_refresh(ims);
	memset(&cfg, 0, sizeof(cfg));
	cfg.time = (struct ptdec_time){ 0, 1, 0, 0, 1 };
	cfg.images = &ims->im;
	cfg.chunk_bytes = chunk;
	cfg.jobs = 1;
	config_of(data[1], &cfg, &th.wrapped);
	th.pid = 1 + (data[0] & 0x7f) % ims->nr_pids;
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
psb_intervals(const uint8_t *ring, size_t len)
{
	struct ptdec_thread th = { 7, 1, ring, len, 0 };
	struct ptdec_plan plan;
	struct error e;
	size_t nr;

	if (ptdec_split(&th, 0, &plan, &e) < 0)
		abort();
	nr = plan.nr_psb;
	ptdec_plan_free(&plan);
	return nr;
}

/* ----------------------------------------------------------------- */
/* Generated mode */

#define GEN_STACK 64		/* libipt's return-compression stack */
#define GEN_MAX_INSNS 200000	/* a walk ends here (loops without trace) */

struct gen {
	const uint8_t *p, *end;		/* the program */
	unsigned bits, nbits;		/* a program byte being spent bitwise */
	struct pt_encoder *enc;
	const struct ipset *ips;
	uint64_t tsc, ip;
	uint64_t stack[GEN_STACK];	/* return addresses, as libipt keeps */
	unsigned depth;
	uint64_t tnt;			/* TNT bits not yet written */
	unsigned ntnt;
	bool full;
};

static unsigned
gen_byte(struct gen *g)
{
	return g->p < g->end ? *g->p++ : 0;
}

static unsigned
gen_bit(struct gen *g)
{
	if (g->nbits == 0) {
		g->bits = gen_byte(g);
		g->nbits = 8;
	}
	g->nbits--;
	return (g->bits >> g->nbits) & 1;
}

/* A function entry: where an indirect branch or an interrupt goes. */
static uint64_t
gen_target(struct gen *g)
{
	unsigned v = gen_byte(g) | gen_byte(g) << 8;

	return g->ips->ip[v % g->ips->nr];
}

static void
gen_put(struct gen *g, enum pt_packet_type type, uint64_t v, unsigned n)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = type;
	switch (type) {
	case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd: case ppt_fup:
		pk.payload.ip.ipc = n ? pt_ipc_suppressed : pt_ipc_sext_48;
		pk.payload.ip.ip = v;
		break;
	case ppt_tnt_8:
		pk.payload.tnt.bit_size = (uint8_t)n;
		pk.payload.tnt.payload = v;
		break;
	case ppt_mode:
		pk.payload.mode.leaf = pt_mol_exec;
		pk.payload.mode.bits.exec.csl = 1;
		break;
	case ppt_tsc:
		pk.payload.tsc.tsc = v;
		break;
	case ppt_cbr:
		pk.payload.cbr.ratio = (uint8_t)v;
		break;
	case ppt_cyc:
		pk.payload.cyc.value = v;
		break;
	default:
		break;
	}
	if (!g->full && pt_enc_next(g->enc, &pk) < 0)
		g->full = true;
}

/* Writes the pending TNT bits (the oldest in the highest bit). */
static void
gen_flush(struct gen *g)
{
	if (g->ntnt > 0)
		gen_put(g, ppt_tnt_8, g->tnt, g->ntnt);
	g->tnt = 0;
	g->ntnt = 0;
}

static void
gen_tnt(struct gen *g, unsigned bit)
{
	g->tnt = g->tnt << 1 | bit;
	if (++g->ntnt == 6)
		gen_flush(g);
}

static void
gen_tip(struct gen *g, enum pt_packet_type type, uint64_t ip, unsigned sup)
{
	gen_flush(g);
	gen_put(g, type, ip, sup);
}

/* PSB+ at the current ip, as the emu recorder writes it while tracing. */
static void
gen_psb_plus(struct gen *g, bool enabled)
{
	gen_flush(g);
	gen_put(g, ppt_psb, 0, 0);
	g->tsc += 1 + gen_byte(g);
	gen_put(g, ppt_tsc, g->tsc, 0);
	gen_put(g, ppt_cbr, 1, 0);
	gen_put(g, ppt_mode, 0, 0);
	if (enabled)
		gen_put(g, ppt_fup, g->ip, 0);
	gen_put(g, ppt_psbend, 0, 0);
	/* a decoder synchronising here knows no return address */
	g->depth = 0;
}

static void
gen_enable(struct gen *g, uint64_t ip)
{
	gen_flush(g);
	gen_put(g, ppt_mode, 0, 0);
	gen_put(g, ppt_tip_pge, ip, 0);
	g->ip = ip;
}

static void
gen_push(struct gen *g, uint64_t ret)
{
	if (g->depth == GEN_STACK) {
		memmove(g->stack, g->stack + 1, (GEN_STACK - 1) *
		    sizeof(g->stack[0]));
		g->depth--;
	}
	g->stack[g->depth++] = ret;
}

/*
 * Follows one instruction.  Returns 1 after a branch, 0 after any other
 * instruction, -1 where the walk cannot go on (bytes that do not decode,
 * code outside the image).
 */
static int
gen_step(struct gen *g)
{
	struct x86_insn in;
	uint64_t off = g->ip - g->ips->lo, next, to;

	if (g->ip < g->ips->lo || g->ip >= g->ips->hi ||
	    x86_insn_decode(g->ips->code + off, g->ips->hi - g->ips->lo - off,
	    1, &in) < 0)
		return -1;
	next = g->ip + in.length;
	switch (in.iclass) {
	case ptic_cond_jump:
		if (!in.direct)
			return -1;
		to = gen_bit(g);
		gen_tnt(g, (unsigned)to);
		g->ip = to ? next + (uint64_t)in.disp : next;
		break;
	case ptic_jump:
	case ptic_call:
		if (in.iclass == ptic_call)
			gen_push(g, next);
		if (in.direct) {
			g->ip = next + (uint64_t)in.disp;
		} else {
			g->ip = gen_target(g);
			gen_tip(g, ppt_tip, g->ip, 0);
		}
		break;
	case ptic_return:
		/* compressed: a taken bit, libipt pops; else a TIP */
		if (g->depth > 0 && gen_bit(g)) {
			gen_tnt(g, 1);
			g->ip = g->stack[--g->depth];
		} else {
			g->ip = g->depth > 0 && gen_bit(g) ?
			    g->stack[g->depth - 1] : gen_target(g);
			gen_tip(g, ppt_tip, g->ip, 0);
		}
		break;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		/* a syscall as the emu recorder writes it: out, back at next */
		gen_tip(g, ppt_tip_pgd, 0, 1);
		gen_enable(g, next);
		break;
	case ptic_error:
		return -1;
	default:
		g->ip = next;
		return 0;
	}
	return 1;
}

/*
 * Writes into buf (cap bytes) the trace of a run of the image's code that
 * the program prog decides, and returns its length.  Between branches the
 * program may add a CYC, an interrupt (FUP, TIP), a PSB+, or stop and
 * restart tracing elsewhere.
 */
static size_t
generate(const uint8_t *prog, size_t len, const struct ipset *ips,
    uint8_t *buf, size_t cap)
{
	struct pt_config cfg;
	struct gen g;
	uint64_t off = 0;
	unsigned insns = 0;

	memset(&g, 0, sizeof(g));
	g.p = prog;
	g.end = prog + len;
	g.ips = ips;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	if ((g.enc = pt_alloc_encoder(&cfg)) == NULL)
		abort();
	gen_psb_plus(&g, false);
	gen_enable(&g, gen_target(&g));
	while (g.p < g.end && !g.full && insns++ < GEN_MAX_INSNS) {
		uint64_t at = g.ip;
		int rc = gen_step(&g);

		if (rc < 0) {
			/* restart somewhere that decodes */
			gen_put(&g, ppt_fup, at, 0);
			gen_tip(&g, ppt_tip_pgd, 0, 1);
			gen_enable(&g, gen_target(&g));
			continue;
		}
		if (rc == 0)
			continue;
		switch (gen_byte(&g) >> 4) {
		case 0:
			gen_flush(&g);
			gen_put(&g, ppt_cyc, 1 + gen_byte(&g), 0);
			break;
		case 1:
			/* an interrupt: from here to a handler */
			gen_flush(&g);
			gen_put(&g, ppt_fup, g.ip, 0);
			g.ip = gen_target(&g);
			gen_put(&g, ppt_tip, g.ip, 0);
			break;
		case 2:
			gen_psb_plus(&g, true);
			break;
		default:
			break;
		}
	}
	gen_put(&g, ppt_fup, g.ip, 0);
	gen_tip(&g, ppt_tip_pgd, 0, 1);
	if (pt_enc_get_offset(g.enc, &off) < 0)
		abort();
	pt_free_encoder(g.enc);
	return (size_t)off;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct recs n, f;
	static uint8_t *gbuf;
	static size_t gcap;
	struct blks_end ne, fe;
	const uint8_t *ring;
	size_t len, nr_psb;

	if (size < 2)
		return 0;
	ring = data + 2;
	len = size - 2;
	if (data[0] & 0x80) {
		struct images *ims = images();
		size_t need = 4096 + 64 * len;

		if (need > gcap) {
			free(gbuf);
			if ((gbuf = malloc(need)) == NULL)
				abort();
			gcap = need;
		}
		len = generate(ring, len,
		    &ims->ips[(data[0] & 0x7f) % ims->nr_pids], gbuf, gcap);
		ring = gbuf;
	}
	nr_psb = psb_intervals(ring, len);
	if (decode(&ptdec_backend_libipt, data, ring, len, SIZE_MAX, &n,
	    &ne)) {
		if (getenv("PTKIT_FUZZ_VERBOSE") != NULL)
			print_record("endless", n.nr - 1, &n);
		return 0;
	}
	if (ne.c[BLKS_C_FALLBACKS] != 0)
		abort();
	decode(&ptdec_backend_fast, data, ring, len, SIZE_MAX, &f, &fe);
	compare("one chunk", nr_psb, &n, &ne, &f, &fe);
	decode(&ptdec_backend_fast, data, ring, len, 1, &f, &fe);
	compare("a chunk per PSB", nr_psb, &n, &ne, &f, &fe);
	/* to see what the seeds reach: how much the fast path walked */
	if (getenv("PTKIT_FUZZ_GAPS") != NULL)
		for (size_t i = 0; i < n.nr; i++)
			if (n.r[i].type == BLKS_GAP)
				print_record("gap", i, &n);
	if (getenv("PTKIT_FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "fuzz_ptdec_fast: image %u config %#x: %zu "
		    "records, %llu blocks, %llu gaps, %zu PSB intervals, "
		    "%llu handed to libipt\n", data[0], data[1], n.nr,
		    (unsigned long long)ne.c[BLKS_C_BLOCKS],
		    (unsigned long long)ne.c[BLKS_C_GAPS], nr_psb,
		    (unsigned long long)fe.c[BLKS_C_FALLBACKS]);
	return 0;
}
