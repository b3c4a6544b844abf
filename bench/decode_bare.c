/*
 * decode_bare: the yardstick for ptdecode's speed, a bare libipt
 * block-decode loop over a snapshot's rings with no output: the same
 * images (shared section cache), the same decoder configuration, blocks
 * and events drained and counted, errors resynchronised at the next PSB.
 * With -j N the ring is cut into N pieces at PSBs decoded by N threads.
 *
 *   decode_bare [-j N] SNAPSHOT    prints "blocks B insns I"
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "dec/ptdec.h"
#include "snapload.h"

struct piece {
	const struct snap *s;
	const struct snap_thread *t;
	const uint8_t *buf;
	size_t len;
	uint64_t begin, end;
	uint64_t blocks, insns;
};

static void
drain(struct pt_block_decoder *d, int *status)
{
	struct pt_event ev;

	while (*status >= 0 && (*status & pts_event_pending))
		*status = pt_blk_event(d, &ev, sizeof(ev));
}

static void *
decode_piece(void *arg)
{
	struct piece *p = arg;
	struct pt_block_decoder *d;
	struct pt_config cfg;
	struct pt_block b;
	struct pt_image *img;
	uint64_t off;
	int status;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)(uintptr_t)p->buf + p->begin;
	cfg.end = (uint8_t *)(uintptr_t)p->buf + p->end;
	cfg.cpu = p->s->cfg.cpu;
	if (cfg.cpu.vendor == pcv_intel)
		pt_cpu_errata(&cfg.errata, &cfg.cpu);
	cfg.mtc_freq = p->s->cfg.mtc_freq;
	cfg.nom_freq = p->s->cfg.nom_freq;
	cfg.cpuid_0x15_eax = p->s->cfg.cpuid_0x15_eax;
	cfg.cpuid_0x15_ebx = p->s->cfg.cpuid_0x15_ebx;
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	d = pt_blk_alloc_decoder(&cfg);
	img = pt_image_alloc(NULL);
	for (size_t i = 0; i < p->s->images.nr; i++) {
		if (p->s->images.sec[i].pid == p->t->pid)
			pt_image_add_cached(img, p->s->images.iscache,
			    p->s->images.sec[i].isid, NULL);
	}
	pt_blk_set_image(d, img);
	status = pt_blk_sync_forward(d);
	while (status != -pte_eos) {
		if (status < 0) {
			status = pt_blk_sync_forward(d);
			continue;
		}
		drain(d, &status);
		if (status < 0 || (status & pts_eos)) {
			if (status >= 0)
				break;
			continue;
		}
		status = pt_blk_next(d, &b, sizeof(b));
		p->blocks += b.ninsn > 0;
		p->insns += b.ninsn;
	}
	(void)off;
	pt_blk_free_decoder(d);
	pt_image_free(img);
	return NULL;
}

int
main(int argc, char *argv[])
{
	struct error e;
	struct snap s;
	uint64_t blocks = 0, insns = 0;
	int jobs = 1, c;

	while ((c = getopt(argc, argv, "j:")) != -1) {
		if (c != 'j')
			return 2;
		jobs = atoi(optarg) > 0 ? atoi(optarg) : 1;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: decode_bare [-j N] SNAPSHOT\n");
		return 2;
	}
	if (snap_load(&s, argv[optind], &e) < 0) {
		fprintf(stderr, "decode_bare: %s\n", e.msg);
		return 1;
	}
	for (size_t i = 0; i < s.nr_threads; i++) {
		struct ptdec_thread th = { 0 };
		struct ptdec_plan plan;
		struct piece pc[64];
		pthread_t tid[64];
		uint8_t *owned;
		int n = jobs > 64 ? 64 : jobs;

		if (snap_thread_trace(&s, &s.threads[i], &th.buf, &th.len,
		    &owned, &e) < 0 || ptdec_split(&th, 0, &plan, &e) < 0)
			return 1;
		if ((size_t)n > plan.nr_psb)
			n = plan.nr_psb > 0 ? (int)plan.nr_psb : 1;
		for (int k = 0; k < n; k++) {
			size_t a = plan.nr_psb * (size_t)k / (size_t)n;
			size_t z = plan.nr_psb * (size_t)(k + 1) / (size_t)n;

			pc[k] = (struct piece){ &s, &s.threads[i], th.buf,
			    th.len, plan.nr_psb ? plan.psb[a] : 0,
			    z < plan.nr_psb ? plan.psb[z] : th.len, 0, 0 };
			pthread_create(&tid[k], NULL, decode_piece, &pc[k]);
		}
		for (int k = 0; k < n; k++) {
			pthread_join(tid[k], NULL);
			blocks += pc[k].blocks;
			insns += pc[k].insns;
		}
		ptdec_plan_free(&plan);
		free(owned);
	}
	printf("blocks %llu insns %llu\n", (unsigned long long)blocks,
	    (unsigned long long)insns);
	snap_free(&s);
	return 0;
}
