/* codemap: see codemap.h. */
#include "span/codemap.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "dec/x86class.h"
#include "sym/symcache.h"
#include "sym/symtab.h"

#define INSN_CACHE_BITS 16
#define FN_CACHE_BITS 12
#define BLK_CACHE_BITS 14
#define BLK_CACHE_RUNS 3	/* blocks with more runs are walked each time */
#define BLK_WALK 0xff
/*
 * Images loaded ahead, at most: the first in MAP order (the program, the
 * dynamic loader, the vDSO, libc and the libraries loaded with them), the
 * likeliest to run; an image no block needs costs its load for nothing.
 */
#define PRELOAD_MAX 8

struct image {
	char *path;			/* resolved file path */
	const uint8_t *bytes;		/* mapped file, or NULL */
	size_t size;
	const struct symtab *st;	/* owned by the symcache; may be NULL */
	int tried;			/* under load_lock */
	int done;			/* loaded (or failed): atomic */
	int claimed;			/* a thread loads it: under pre.lock */
};

struct mapping {
	uint32_t pid;
	uint64_t start, end, pgoff;
	char *name;
	struct image *img;
	int jit;			/* BLKS_MAP_JIT */
	char *jit_symbols;		/* its JIT map's path, or NULL */
	const struct symtab *jit_st;	/* loaded from it; may be NULL */
	int jit_tried;			/* under load_lock */
	int jit_done;			/* atomic */
};

struct insn_slot {
	uint64_t ip;
	uint32_t pid;
	uint8_t len, kind, valid;
};

struct fn_slot {
	uint64_t ip;
	uint32_t pid;
	int valid, found;
	struct cs_fn fn;
};

/*
 * What a block (pid, ip, end_ip, ninsn) is, as cb_block answers: the
 * instruction at its end and its inline runs, with what answering added
 * to the counters, so that a hit replays the lookups exactly.
 */
struct blk_slot {
	uint64_t ip, end_ip;
	uint32_t pid, ninsn;
	uint8_t valid, end_known, end_len, end_kind;
	uint8_t nr;			/* runs; BLK_WALK: walk it each time */
	uint8_t failed, undecodable;	/* inline_walk_failed, insn_undecodable */
	uint8_t replay;			/* a hit moves more than blk_hits */
};

/* The runs of a slot, apart: most blocks have none, and a slot stays 32
 * bytes, two to a cache line. */
struct blk_runs {
	struct cs_inline_run run[BLK_CACHE_RUNS];
};

/*
 * Symbol tables loaded ahead on a thread of their own, in the order the
 * MAP records named their images: the main thread, which loads an image
 * the first time a block needs it, then finds it loaded (or waits for
 * the load under way, symcache.h) instead of loading it then.
 */
struct preload {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	pthread_t thread;
	int started;			/* thread runs; join it */
	int stop;
	struct image **img;		/* queued, in MAP order */
	size_t head, n, cap;
};

/*
 * The caches and counters of one engine's questions (codemap.h,
 * codemap_view_new): the code map's own, or a worker's.
 */
struct codemap_view {
	struct codemap *m;
	size_t last_map;
	struct insn_slot *icache;
	struct fn_slot *fcache;
	struct blk_slot *bcache;
	struct blk_runs *bruns;		/* bcache's runs, same index */
	struct cs_inline_run runs[CS_MAX_RUNS];	/* cb_block's answer */
	struct codemap_stats st;	/* the insn, fn and inline counters */
	/* Block cache hits, each one insn lookup and (inlines on, ninsn
	 * not 0) one inline walk: added in codemap_view_stats, so that a
	 * hit moves one counter. */
	uint64_t blk_hits, blk_hits_unwalked;
	uint64_t gen;			/* the m->gen the caches hold for */
	int cached;			/* the caches may hold answers */
};

struct codemap {
	struct codemap_options opt;
	char *snapshot;
	struct symcache *syms;
	struct preload pre;
	struct image **img;
	size_t n_img, cap_img;
	struct mapping *map;
	size_t n_map, cap_map;
	int overlap;			/* two mappings of a pid overlap */
	/* Images and JIT maps load on first need, from any view's thread. */
	pthread_mutex_t load_lock;
	struct codemap_view *v0;	/* codemap_code's */
	struct codemap_stats st;	/* the image counters */
	int walks;			/* inline walks are on */
	uint64_t gen;			/* cs_code.gen: moved by codemap_add */
	/* Files of the snapshot refused (a link on the way): under
	 * load_lock; the first one's reason. */
	uint64_t n_refused;
	struct error refused;
};

/* ----------------------------------------------------------------- */
/* Loading symbol tables ahead */

static void *
preload_thread(void *arg)
{
	struct codemap *m = arg;
	struct preload *p = &m->pre;
	const struct symtab *st;
	struct image *img;
	struct error e;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		for (;;) {
			while (p->head == p->n && !p->stop)
				pthread_cond_wait(&p->cv, &p->lock);
			if (p->stop) {
				pthread_mutex_unlock(&p->lock);
				return NULL;
			}
			/* One the main thread loads already: the next. */
			img = p->img[p->head++];
			if (!img->claimed)
				break;
		}
		img->claimed = 1;
		pthread_mutex_unlock(&p->lock);
		/* What it loads, or fails to, image_load asks the cache for. */
		error_clear(&e);
		PTKIT_DROP(symcache_get(m->syms, img->path, 0, &st, &e));
	}
}

/*
 * Queues img (which lives as long as m) to be loaded ahead, starting the
 * thread the first time.  Without memory or a thread the image simply
 * loads when it is first needed.
 */
static void
preload_add(struct codemap *m, struct image *img)
{
	struct preload *p = &m->pre;
	struct image **grown;
	size_t cap;

	pthread_mutex_lock(&p->lock);
	if (p->n == PRELOAD_MAX)
		goto out;
	if (p->n == p->cap) {
		cap = p->cap ? 2 * p->cap : PRELOAD_MAX;
		if ((grown = realloc(p->img, cap * sizeof(*grown))) == NULL)
			goto out;
		p->img = grown;
		p->cap = cap;
	}
	if (!p->started) {
		if (pthread_create(&p->thread, NULL, preload_thread, m) != 0)
			goto out;
		p->started = 1;
	}
	p->img[p->n++] = img;
	pthread_cond_signal(&p->cv);
out:
	pthread_mutex_unlock(&p->lock);
}

/*
 * The main thread is about to load img itself: the thread need not
 * start it (if it has, the symcache makes the main thread wait for it).
 */
static void
preload_claim(struct preload *p, struct image *img)
{
	pthread_mutex_lock(&p->lock);
	img->claimed = 1;
	pthread_mutex_unlock(&p->lock);
}

/* Stops the thread: the load under way ends, no other one starts. */
static void
preload_stop(struct preload *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->lock);
	if (p->started)
		pthread_join(p->thread, NULL);
	p->started = 0;
}

int
codemap_new(struct codemap **out, const struct codemap_options *opt,
    struct error *e)
{
	struct codemap *m;
	struct symtab_options so;
	char **dirs = NULL;
	size_t nd = 0;

	*out = NULL;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return error_set(e, ERR_NOMEM, "code map");
	pthread_mutex_init(&m->pre.lock, NULL);
	pthread_cond_init(&m->pre.cv, NULL);
	pthread_mutex_init(&m->load_lock, NULL);
	m->opt = *opt;
	m->walks = !opt->no_inline && !opt->no_dwarf;
	m->snapshot = strdup(opt->snapshot ? opt->snapshot : "");
	dirs = calloc(opt->n_debug_dirs + 1, sizeof(*dirs));
	if (m->snapshot == NULL || dirs == NULL ||
	    codemap_view_new(m, &m->v0, e) < 0)
		goto nomem;
	for (size_t i = 0; i < opt->n_debug_dirs; i++)
		dirs[nd++] = (char *)opt->debug_dirs[i];
	/* A snapshot archives separate debuginfo in perf's layout. */
	if (m->snapshot[0] != '\0') {
		if (asprintf(&dirs[nd], "%s/images", m->snapshot) < 0) {
			dirs[nd] = NULL;
			goto nomem;
		}
		nd++;
	}
	memset(&so, 0, sizeof(so));
	so.debug_dirs = (const char *const *)dirs;
	so.n_debug_dirs = nd;
	so.flags = opt->no_dwarf ? SYMTAB_NO_DWARF : 0;
	/* The snapshot's files are opened beneath it, never by path. */
	so.root = m->snapshot[0] != '\0' ? m->snapshot : NULL;
	m->syms = symcache_new(&so);
	if (m->snapshot[0] != '\0')
		free(dirs[nd - 1]);
	free(dirs);
	dirs = NULL;
	if (m->syms == NULL)
		goto nomem;
	*out = m;
	return 0;
nomem:
	free(dirs);
	codemap_free(m);
	return error_set(e, ERR_NOMEM, "code map");
}

void
codemap_free(struct codemap *m)
{
	if (m == NULL)
		return;
	/* Before the cache and the paths it reads go. */
	preload_stop(&m->pre);
	free(m->pre.img);
	pthread_cond_destroy(&m->pre.cv);
	pthread_mutex_destroy(&m->pre.lock);
	for (size_t i = 0; i < m->n_img; i++) {
		if (m->img[i]->bytes != NULL)
			munmap((void *)m->img[i]->bytes, m->img[i]->size);
		free(m->img[i]->path);
		free(m->img[i]);
	}
	for (size_t i = 0; i < m->n_map; i++) {
		free(m->map[i].name);
		free(m->map[i].jit_symbols);
	}
	free(m->img);
	free(m->map);
	codemap_view_free(m->v0);
	free(m->snapshot);
	symcache_free(m->syms);
	pthread_mutex_destroy(&m->load_lock);
	free(m);
}

int
codemap_view_new(struct codemap *m, struct codemap_view **out,
    struct error *e)
{
	struct codemap_view *v;

	*out = NULL;
	if ((v = calloc(1, sizeof(*v))) == NULL)
		return error_set(e, ERR_NOMEM, "code map");
	v->m = m;
	v->gen = m->gen;
	v->icache = calloc((size_t)1 << INSN_CACHE_BITS, sizeof(*v->icache));
	v->fcache = calloc((size_t)1 << FN_CACHE_BITS, sizeof(*v->fcache));
	v->bcache = calloc((size_t)1 << BLK_CACHE_BITS, sizeof(*v->bcache));
	v->bruns = calloc((size_t)1 << BLK_CACHE_BITS, sizeof(*v->bruns));
	if (v->icache == NULL || v->fcache == NULL || v->bcache == NULL ||
	    v->bruns == NULL) {
		codemap_view_free(v);
		return error_set(e, ERR_NOMEM, "code map");
	}
	*out = v;
	return 0;
}

void
codemap_view_free(struct codemap_view *v)
{
	if (v == NULL)
		return;
	free(v->icache);
	free(v->fcache);
	free(v->bcache);
	free(v->bruns);
	free(v);
}

void
codemap_view_stats(const struct codemap_view *v, struct codemap_stats *out)
{
	*out = v->st;
	out->insn_lookups += v->blk_hits;
	out->inline_walks += v->blk_hits - v->blk_hits_unwalked;
}

uint64_t
codemap_refused(const struct codemap *m, struct error *first)
{
	struct symtab_refused sr = symcache_refused(m->syms);

	if (first != NULL && m->n_refused > 0)
		*first = m->refused;
	else if (first != NULL && sr.n > 0)
		*first = sr.first;
	return m->n_refused + sr.n;
}

uint64_t
codemap_refused_note(const struct codemap *m, char *buf, size_t size)
{
	struct error first;
	uint64_t n = codemap_refused(m, &first);

	if (size > 0)
		buf[0] = '\0';
	if (n > 0)
		snprintf(buf, size, "%s (%" PRIu64 " file%s of the snapshot "
		    "refused; their code or names count as missing)",
		    first.msg, n, n == 1 ? "" : "s");
	return n;
}

void
codemap_get_stats(const struct codemap *m, struct codemap_stats *out)
{
	codemap_view_stats(m->v0, out);
	out->images = m->st.images;
	out->images_missing = m->st.images_missing;
	out->images_no_symbols = m->st.images_no_symbols;
}

/* Empties v's caches when the mappings changed since they were filled. */
static inline void
view_fresh(struct codemap_view *v)
{
	if (__builtin_expect(v->gen == v->m->gen, 1))
		return;
	v->gen = v->m->gen;
	/* (Untouched, the caches are calloc's zero pages: a MAP record
	 * before any block costs no page faults.) */
	if (!v->cached)
		return;
	v->cached = 0;
	memset(v->icache, 0, ((size_t)1 << INSN_CACHE_BITS) *
	    sizeof(*v->icache));
	memset(v->fcache, 0, ((size_t)1 << FN_CACHE_BITS) *
	    sizeof(*v->fcache));
	memset(v->bcache, 0, ((size_t)1 << BLK_CACHE_BITS) *
	    sizeof(*v->bcache));
}

/* ----------------------------------------------------------------- */
/* Images and mappings */

static char *
resolve_path(const struct codemap *m, const char *image)
{
	char *p;

	if (image[0] == '/' || m->snapshot[0] == '\0')
		return strdup(image);
	if (asprintf(&p, "%s/%s", m->snapshot, image) < 0)
		return NULL;
	return p;
}

static struct image *
image_for(struct codemap *m, const char *path, struct error *e)
{
	struct image *img, **grown;
	size_t cap;

	for (size_t i = 0; i < m->n_img; i++)
		if (strcmp(m->img[i]->path, path) == 0)
			return m->img[i];
	if (m->n_img == m->cap_img) {
		cap = m->cap_img ? m->cap_img * 2 : 16;
		if ((grown = realloc(m->img, cap * sizeof(*grown))) == NULL)
			goto nomem;
		m->img = grown;
		m->cap_img = cap;
	}
	if ((img = calloc(1, sizeof(*img))) == NULL)
		goto nomem;
	if ((img->path = strdup(path)) == NULL) {
		free(img);
		goto nomem;
	}
	m->img[m->n_img++] = img;
	m->st.images++;
	preload_add(m, img);
	return img;
nomem:
	error_set(e, ERR_NOMEM, "image %s", path);
	return NULL;
}

/* Counts a refusal of a file of the snapshot; load_lock held. */
static void
note_refused(struct codemap *m, int rc, const struct error *e)
{
	if (rc != -ERR_PERM)
		return;
	if (m->n_refused++ == 0)
		m->refused = *e;
}

/* Maps the file and loads its symbols, the first time it is needed. */
static void image_load_locked(struct codemap *m, struct image *img);

static void
image_load(struct codemap *m, struct image *img)
{
	if (__atomic_load_n(&img->done, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&m->load_lock);
	if (!img->tried) {
		img->tried = 1;
		image_load_locked(m, img);
	}
	__atomic_store_n(&img->done, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->load_lock);
}

static void
image_load_locked(struct codemap *m, struct image *img)
{
	struct error e;
	struct stat sb;
	void *p;
	int fd, rc;

	preload_claim(&m->pre, img);
	error_clear(&e);
	if ((fd = beneath_open_under(m->snapshot, img->path,
	    "the snapshot directory", &e)) < 0) {
		note_refused(m, fd, &e);
		m->st.images_missing++;
		return;
	}
	if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
		p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd,
		    0);
		if (p != MAP_FAILED) {
			img->bytes = p;
			img->size = (size_t)sb.st_size;
		}
	}
	close(fd);
	if (img->bytes == NULL) {
		m->st.images_missing++;
		return;
	}
	error_clear(&e);
	if ((rc = symcache_get(m->syms, img->path, 0, &img->st, &e)) < 0) {
		note_refused(m, rc, &e);
		img->st = NULL;
	}
	if (img->st == NULL)
		m->st.images_no_symbols++;
}

int
codemap_add(struct codemap *m, const struct blks_map *map, struct error *e)
{
	struct mapping *mp, *grown;
	char *path;
	size_t cap;

	if (map->size == 0 || map->start + map->size < map->start)
		return 0;
	if (m->n_map == m->cap_map) {
		cap = m->cap_map ? m->cap_map * 2 : 32;
		if ((grown = realloc(m->map, cap * sizeof(*grown))) == NULL)
			return error_set(e, ERR_NOMEM, "mappings");
		m->map = grown;
		m->cap_map = cap;
	}
	if ((path = resolve_path(m, map->image[0] ? map->image :
	    map->name)) == NULL)
		return error_set(e, ERR_NOMEM, "mappings");
	mp = &m->map[m->n_map];
	memset(mp, 0, sizeof(*mp));
	mp->img = image_for(m, path, e);
	free(path);
	if (mp->img == NULL)
		return -ERR_NOMEM;
	if ((mp->name = strdup(map->name)) == NULL)
		return error_set(e, ERR_NOMEM, "mappings");
	mp->jit = (map->flags & BLKS_MAP_JIT) != 0;
	if (mp->jit && map->symbols != NULL && map->symbols[0] != '\0' &&
	    (mp->jit_symbols = resolve_path(m, map->symbols)) == NULL) {
		free(mp->name);
		return error_set(e, ERR_NOMEM, "mappings");
	}
	mp->pid = blks_space(map->pid, map->exec);
	mp->start = map->start;
	mp->end = map->start + map->size;
	mp->pgoff = map->pgoff;
	for (size_t i = 0; i < m->n_map && !m->overlap; i++)
		m->overlap = m->map[i].pid == mp->pid &&
		    m->map[i].start < mp->end && mp->start < m->map[i].end;
	m->n_map++;
	/* New code at known addresses: cached answers may be stale (every
	 * view empties its caches at its next question). */
	m->gen++;
	return 0;
}

/* The mapping holding ip in pid (the latest added), or NULL. */
static struct mapping *
mapping_at(struct codemap_view *v, uint32_t pid, uint64_t ip)
{
	struct codemap *m = v->m;
	struct mapping *mp;

	/* The last one found, unless a later one may hide part of it. */
	if (v->last_map < m->n_map && !m->overlap) {
		mp = &m->map[v->last_map];
		if (mp->pid == pid && ip >= mp->start && ip < mp->end) {
			image_load(m, mp->img);
			return mp;
		}
	}
	for (size_t i = m->n_map; i-- > 0;) {
		mp = &m->map[i];
		if (mp->pid == pid && ip >= mp->start && ip < mp->end) {
			v->last_map = i;
			image_load(m, mp->img);
			return mp;
		}
	}
	return NULL;
}

/* ----------------------------------------------------------------- */
/* Instructions */

/* Length and kind from the one x86 class table (lib/dec/x86class). */
static int
decode_insn(const uint8_t *bytes, size_t size, struct cs_insn *out)
{
	struct x86_insn in;

	if (x86_insn_decode(bytes, size, 1, &in) < 0)
		return 0;
	out->len = (uint8_t)in.length;
	out->kind = cs_kind_of(in.iclass, in.trap);
	return 1;
}

int
codemap_decode(const uint8_t *bytes, size_t size, struct cs_insn *out)
{
	return decode_insn(bytes, size, out);
}

/* The bytes at ip (up to 15), or NULL; *avail says how many. */
static const uint8_t *
bytes_at(struct codemap *m, struct mapping *mp, uint64_t ip, size_t *avail)
{
	uint64_t off = ip - mp->start + mp->pgoff;

	if (mp->img->bytes == NULL || off >= mp->img->size)
		return NULL;
	*avail = mp->img->size - off;
	if (*avail > X86_MAX_INSN_LEN)
		*avail = X86_MAX_INSN_LEN;
	if (ip + *avail > mp->end)
		*avail = mp->end - ip;
	(void)m;
	return mp->img->bytes + off;
}

static size_t
hash_ip(uint64_t ip, uint32_t pid, unsigned bits)
{
	uint64_t h = (ip ^ ((uint64_t)pid << 40)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> (64 - bits));
}

static int
cb_insn(void *ctx, uint32_t pid, uint64_t ip, struct cs_insn *out)
{
	struct codemap_view *v = ctx;
	struct insn_slot *s;
	struct mapping *mp;
	const uint8_t *b;
	size_t avail;

	view_fresh(v);
	s = &v->icache[hash_ip(ip, pid, INSN_CACHE_BITS)];
	v->st.insn_lookups++;
	if (s->valid && s->ip == ip && s->pid == pid) {
		out->len = s->len;
		out->kind = s->kind;
		return 1;
	}
	v->st.insn_misses++;
	if ((mp = mapping_at(v, pid, ip)) == NULL ||
	    (b = bytes_at(v->m, mp, ip, &avail)) == NULL ||
	    !decode_insn(b, avail, out)) {
		v->st.insn_undecodable++;
		return 0;
	}
	s->ip = ip;
	s->pid = pid;
	s->len = out->len;
	s->kind = out->kind;
	s->valid = 1;
	v->cached = 1;
	return 1;
}

/* ----------------------------------------------------------------- */
/* Functions */

static int
is_cold(const char *name)
{
	const char *p = strstr(name, ".cold");

	return p != NULL && (p[5] == '\0' || p[5] == '.');
}

/*
 * The table naming the functions of mp: a JIT region's JIT map when it
 * has one (the image's own symbols are what the recorder made of the
 * same map), else the image's.
 */
static const struct symtab *
table_of(struct codemap *m, struct mapping *mp)
{
	struct error e;
	int rc;

	if (mp->jit_symbols != NULL &&
	    !__atomic_load_n(&mp->jit_done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&m->load_lock);
		if (!mp->jit_tried) {
			mp->jit_tried = 1;
			error_clear(&e);
			if ((rc = symcache_get(m->syms, mp->jit_symbols, 1,
			    &mp->jit_st, &e)) < 0) {
				note_refused(m, rc, &e);
				mp->jit_st = NULL;
			}
		}
		__atomic_store_n(&mp->jit_done, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&m->load_lock);
	}
	return mp->jit_st != NULL ? mp->jit_st : mp->img->st;
}

static int
lookup_fn(struct codemap_view *v, uint32_t pid, uint64_t ip,
    struct cs_fn *out)
{
	struct codemap *m = v->m;
	const struct symtab *st;
	struct mapping *mp;
	struct sym_mapping sm;
	const struct sym *sym;
	uint64_t addr;

	memset(out, 0, sizeof(*out));
	if ((mp = mapping_at(v, pid, ip)) == NULL)
		return 0;
	out->module = mp->jit ? CODEMAP_JIT_MODULE : mp->name;
	out->module_base = mp->start - mp->pgoff;
	if ((st = table_of(m, mp)) == NULL)
		return 0;
	sm.start = mp->start;
	sm.end = mp->end;
	sm.pgoff = mp->pgoff;
	if (symtab_addr_from_map(st, &sm, ip, &addr) < 0 ||
	    (sym = symtab_lookup(st, addr)) == NULL)
		return 0;
	out->lo = ip - (addr - sym->addr);
	out->hi = out->lo + (sym->size ? sym->size : 1);
	out->name = sym->name;
	out->raw = sym->raw;
	if (sym->flags & SYM_PLT)
		out->flags |= CS_FN_PLT;
	if (is_cold(sym->raw))
		out->flags |= CS_FN_COLD;
	if (strstr(sym->raw, "longjmp") != NULL)
		out->flags |= CS_FN_LONGJMP;
	return 1;
}

static int
cb_fn(void *ctx, uint32_t pid, uint64_t ip, struct cs_fn *out)
{
	struct codemap_view *v = ctx;
	struct fn_slot *s;

	view_fresh(v);
	s = &v->fcache[hash_ip(ip, pid, FN_CACHE_BITS)];
	v->st.fn_lookups++;
	if (!(s->valid && s->ip == ip && s->pid == pid)) {
		v->st.fn_misses++;
		s->ip = ip;
		s->pid = pid;
		s->valid = 1;
		v->cached = 1;
		s->found = lookup_fn(v, pid, ip, &s->fn);
		if (!s->found)
			v->st.fn_unknown++;
	}
	*out = s->fn;
	return s->found;
}

/* ----------------------------------------------------------------- */
/* Inline runs */

/* Walks the block instruction by instruction (cb_inline_runs' miss). */
static int
walk_inline_runs(struct codemap_view *m, uint32_t pid, uint64_t ip,
    uint64_t end_ip, uint32_t ninsn, struct cs_inline_run *runs, size_t max)
{
	struct mapping *mp;
	struct sym_mapping sm;
	const struct sym_inline *inl = NULL;
	struct cs_insn in;
	uint64_t addr, lo = 1, hi = 0, delta;
	size_t nr = 0;
	uint32_t i;

	if ((mp = mapping_at(m, pid, ip)) == NULL || mp->img->st == NULL ||
	    end_ip < ip || end_ip >= mp->end)
		goto fail;
	sm.start = mp->start;
	sm.end = mp->end;
	sm.pgoff = mp->pgoff;
	if (symtab_addr_from_map(mp->img->st, &sm, ip, &addr) < 0)
		goto fail;
	delta = ip - addr;
	for (i = 0; i < ninsn; i++) {
		if (ip > end_ip)
			goto fail;
		addr = ip - delta;
		if (addr < lo || addr >= hi)
			inl = symtab_inline_span(mp->img->st, addr, &lo, &hi);
		if (nr > 0 && runs[nr - 1].inl == inl)
			runs[nr - 1].n++;
		else if (nr == max)
			goto fail;
		else {
			runs[nr].inl = inl;
			runs[nr].n = 1;
			nr++;
		}
		if (i + 1 == ninsn)
			break;
		if (cb_insn(m, pid, ip, &in) != 1)
			goto fail;
		ip += in.len;
	}
	if (ip != end_ip)
		goto fail;
	return (int)nr;
fail:
	m->st.inline_walk_failed++;
	return 0;
}

static int
cb_inline_runs(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_inline_run *runs, size_t max)
{
	struct codemap_view *m = ctx;

	view_fresh(m);
	m->st.inline_walks++;
	return walk_inline_runs(m, pid, ip, end_ip, ninsn, runs, max);
}

/* Answers cb_block for a block the cache does not hold. */
static void
block_lookup(struct codemap_view *m, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	int nr = 0;
	uint32_t kept = 0;

	if (m->m->walks && ninsn > 0)
		nr = cb_inline_runs(m, pid, ip, end_ip, ninsn, m->runs,
		    CS_MAX_RUNS);
	/* Only runs through inlined code count: most blocks have none. */
	for (int i = 0; i < nr; i++)
		if (m->runs[i].inl != NULL)
			m->runs[kept++] = m->runs[i];
	out->runs = m->runs;
	out->n_runs = kept;
	out->end_known = (uint8_t)cb_insn(m, pid, end_ip, &out->end);
}

/*
 * Loops run the same few blocks again and again: what a block is depends
 * only on (pid, ip, end_ip, ninsn) as long as the mappings do not change
 * (codemap_add empties the cache), so it is looked up once.
 */
static int
cb_block(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	struct codemap_view *m = ctx;
	size_t slot = hash_ip(ip ^ (end_ip << 20) ^ ((uint64_t)ninsn << 44),
	    pid, BLK_CACHE_BITS);
	struct blk_slot *s;
	struct blk_runs *sr = &m->bruns[slot];
	uint64_t failed, undecodable;

	view_fresh(m);
	s = &m->bcache[slot];

	if (s->valid && s->ip == ip && s->end_ip == end_ip &&
	    s->ninsn == ninsn && s->pid == pid && s->nr != BLK_WALK) {
		m->blk_hits++;
		if (s->replay) {
			m->blk_hits_unwalked += !m->m->walks || ninsn == 0;
			m->st.inline_walk_failed += s->failed;
			m->st.insn_undecodable += s->undecodable;
		}
		out->end.len = s->end_len;
		out->end.kind = s->end_kind;
		out->end_known = s->end_known;
		out->reuse = (s->failed | s->undecodable) == 0;
		out->runs = sr->run;
		out->n_runs = s->nr;
		return 0;
	}
	failed = m->st.inline_walk_failed;
	undecodable = m->st.insn_undecodable;
	block_lookup(m, pid, ip, end_ip, ninsn, out);
	s->ip = ip;
	s->end_ip = end_ip;
	s->ninsn = ninsn;
	s->pid = pid;
	s->end_known = out->end_known;
	s->end_len = out->end.len;
	s->end_kind = out->end.kind;
	s->failed = (uint8_t)(m->st.inline_walk_failed - failed);
	s->undecodable = (uint8_t)(m->st.insn_undecodable - undecodable);
	s->replay = s->failed || s->undecodable || !m->m->walks || ninsn == 0;
	out->reuse = (s->failed | s->undecodable) == 0;
	s->nr = BLK_WALK;
	if (out->n_runs <= BLK_CACHE_RUNS) {
		s->nr = (uint8_t)out->n_runs;
		for (uint32_t i = 0; i < out->n_runs; i++)
			sr->run[i] = out->runs[i];
	}
	s->valid = 1;
	m->cached = 1;
	return 0;
}

void
codemap_view_code(struct codemap_view *v, struct cs_code *out)
{
	memset(out, 0, sizeof(*out));
	out->ctx = v;
	out->insn = cb_insn;
	out->fn = cb_fn;
	out->block = cb_block;
	out->gen = &v->m->gen;
	if (!v->m->opt.no_inline && !v->m->opt.no_dwarf)
		out->inline_runs = cb_inline_runs;
}

void
codemap_code(struct codemap *m, struct cs_code *out)
{
	codemap_view_code(m->v0, out);
}
