/*
 * symcache: see symcache.h.  A list of entries under one mutex; each entry
 * loads once, under its own mutex, so a slow load (libc with its
 * debuginfo) does not stop threads that want other images.
 */
#include "sym/symcache.h"
#include "sym/symtab_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cache_entry {
	struct cache_entry *next;
	char *path;
	int jit;
	pthread_mutex_t lock;
	int loaded;
	int rc;
	struct error err;
	struct symtab *st;
};

struct symcache {
	pthread_mutex_t lock;
	struct cache_entry *head;
	struct symtab_options opt;
	char **dirs;
	char *root;
};

struct symcache *
symcache_new(const struct symtab_options *opt)
{
	struct symcache *c = calloc(1, sizeof(*c));
	size_t i;

	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	if (opt == NULL)
		return c;
	c->opt.flags = opt->flags;
	if (opt->root != NULL && (c->root = strdup(opt->root)) == NULL)
		goto fail;
	c->opt.root = c->root;
	if (opt->n_debug_dirs == 0)
		return c;
	c->dirs = calloc(opt->n_debug_dirs, sizeof(*c->dirs));
	if (c->dirs == NULL)
		goto fail;
	c->opt.n_debug_dirs = opt->n_debug_dirs;
	c->opt.debug_dirs = (const char *const *)c->dirs;
	for (i = 0; i < opt->n_debug_dirs; i++)
		if ((c->dirs[i] = strdup(opt->debug_dirs[i])) == NULL)
			goto fail;
	return c;
fail:
	symcache_free(c);
	return NULL;
}

/* The entry for (path, jit), created when new; NULL when out of memory. */
static struct cache_entry *
entry_for(struct symcache *c, const char *path, int jit)
{
	struct cache_entry *en;

	pthread_mutex_lock(&c->lock);
	for (en = c->head; en != NULL; en = en->next)
		if (en->jit == jit && strcmp(en->path, path) == 0)
			break;
	if (en == NULL && (en = calloc(1, sizeof(*en))) != NULL) {
		en->path = strdup(path);
		if (en->path == NULL) {
			free(en);
			en = NULL;
		} else {
			en->jit = jit;
			pthread_mutex_init(&en->lock, NULL);
			en->next = c->head;
			c->head = en;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return en;
}

/* A JIT map, opened as lib/sym opens every file (beneath the root). */
static int
open_jitmap(const struct symcache *c, const char *path, struct symtab **out,
    struct error *e)
{
	int fd = symfile_open(c->opt.root, path, e);

	*out = NULL;
	return fd < 0 ? fd : symtab_open_jitmap_fd(fd, path, out, e);
}

int
symcache_get(struct symcache *c, const char *path, int jit,
    const struct symtab **out, struct error *e)
{
	struct cache_entry *en;
	int rc;

	*out = NULL;
	en = entry_for(c, path, jit);
	if (en == NULL)
		return error_set(e, ERR_NOMEM, "%s: symbol cache", path);
	pthread_mutex_lock(&en->lock);
	if (!en->loaded) {
		error_clear(&en->err);
		if (jit)
			en->rc = open_jitmap(c, path, &en->st, &en->err);
		else
			en->rc = symtab_open(path, &c->opt, &en->st, &en->err);
		en->loaded = 1;
	}
	rc = en->rc;
	if (rc == 0)
		*out = en->st;
	else if (e != NULL)
		*e = en->err;
	pthread_mutex_unlock(&en->lock);
	return rc;
}

struct symtab_refused
symcache_refused(struct symcache *c)
{
	struct symtab_refused all = { 0 };
	const struct symtab_refused *r;
	struct cache_entry *en;

	pthread_mutex_lock(&c->lock);
	for (en = c->head; en != NULL; en = en->next) {
		pthread_mutex_lock(&en->lock);
		if (en->st != NULL && (r = symtab_refused(en->st))->n > 0) {
			if (all.n == 0)
				all.first = r->first;
			all.n += r->n;
		}
		pthread_mutex_unlock(&en->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return all;
}

void
symcache_free(struct symcache *c)
{
	struct cache_entry *en, *next;
	size_t i;

	if (c == NULL)
		return;
	for (en = c->head; en != NULL; en = next) {
		next = en->next;
		symtab_free(en->st);
		pthread_mutex_destroy(&en->lock);
		free(en->path);
		free(en);
	}
	for (i = 0; c->dirs != NULL && i < c->opt.n_debug_dirs; i++)
		free(c->dirs[i]);
	free(c->dirs);
	free(c->root);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
