/*
 * t_emu_snapshot: how ptrec takes a snapshot's rings from what the
 * plugin left (emu_capture_read): a ring the plugin copied is its
 * snap.<seq>/<tid>.pt, a ring left in place (IN_RING, the exit snapshot)
 * is where the kept bytes sit in ring.<tid> (two ranges when they wrap),
 * and a ring that no longer holds what the snapshot lists, or is not the
 * thread's, is an error saying so rather than a wrong trace.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu_handoff.h"
#include "emu_snapshot.h"
#include "tap.h"

static char dir[] = "/tmp/t_emu_snapshot.XXXXXX";

static int
put(const char *name, const void *p, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	if (n > 0 && fwrite(p, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

static int
put_text(const char *name, const char *text)
{
	return put(name, text, strlen(text));
}

/* ring.<tid>: a header saying tid, total and freed, then 64 KiB. */
static int
put_ring(int hdr_tid, int tid, uint64_t total, uint64_t freed)
{
	static uint8_t file[EMU_HDR_SIZE + 65536];
	struct emu_ring_hdr h;
	char name[32];

	memset(&h, 0, sizeof(h));
	h.magic = EMU_RING_MAGIC;
	h.state = EMU_RING_CLOSED;
	h.tid = hdr_tid;
	h.ring_size = 65536;
	h.total = total;
	h.freed = freed;
	memcpy(file, &h, sizeof(h));
	snprintf(name, sizeof(name), "ring.%d", tid);
	return put(name, file, sizeof(file));
}

static int
read_capture(struct emu_capture *c, struct error *e)
{
	error_clear(e);
	return emu_capture_read(c, dir, 1, e);
}

int
main(void)
{
	static const uint8_t pt[5000];
	char want[512];
	struct emu_capture c;
	struct error e;
	int rc;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(want, sizeof(want), "%s/snap.1", dir);
	STEP(mkdir(want, 0700));
	STEP(put_text("sideband", ""));
	STEP(put("snap.1/101.pt", pt, sizeof(pt)));
	/* thread 100 in place, wrapped: kept from 134464, ring byte 3392 */
	STEP(put_ring(100, 100, 200000, 0));
	STEP(put_text("snap.1/threads",
	    "100 200000 65536 1 0x10 0x20 5 1 1\n"
	    "101 5000 5000 0 0x10 0x30 6 0 0\n"));
	rc = read_capture(&c, &e);
	IS_INT(rc, 0, "a ring in place and a copied one");
	if (rc == 0 && OK(c.n_rings == 2, "two rings")) {
		snprintf(want, sizeof(want), "%s/ring.100", dir);
		IS_STR(c.rings[0].file, want, "in place: the ring's file");
		OK(c.rings[0].data == NULL, "not read into memory");
		IS_U64(c.rings[0].kept, 65536, "its kept bytes");
		IS_U64(c.rings[0].file_off[0], 4096 + 3392,
		    "the oldest from its stream position in the ring");
		IS_U64(c.rings[0].file_len[0], 65536 - 3392, "to the ring's end");
		IS_U64(c.rings[0].file_off[1], 4096, "then the ring's start");
		IS_U64(c.rings[0].file_len[1], 3392, "up to the newest");
		snprintf(want, sizeof(want), "%s/snap.1/101.pt", dir);
		IS_STR(c.rings[1].file, want, "copied: the plugin's copy");
		IS_U64(c.rings[1].kept, 5000, "as long as that file");
		IS_U64(c.rings[1].file_off[0], 0, "from its start");
		IS_U64(c.rings[1].file_len[0], 5000, "all of it");
		IS_U64(c.rings[1].file_len[1], 0, "in one range");
		emu_capture_free(&c);
	}

	/* ten more bytes written: the ten oldest kept ones are gone */
	STEP(put_ring(100, 100, 200010, 0));
	rc = read_capture(&c, &e);
	IS_INT(rc, -ERR_FORMAT, "a ring that moved on: ERR_FORMAT");
	snprintf(want, sizeof(want), "%s/ring.100: no longer holds the 65536 "
	    "bytes of trace the snapshot lists (stream bytes 134464 to "
	    "200000)", dir);
	IS_STR(e.msg, want, "says which bytes it lost");

	/* history given back after the snapshot listed it */
	STEP(put_ring(100, 100, 200000, 134465));
	rc = read_capture(&c, &e);
	IS_INT(rc, -ERR_FORMAT, "history given back since: ERR_FORMAT");
	IS_STR(e.msg, want, "the same words");

	/* another thread's ring under this name */
	STEP(put_ring(99, 100, 200000, 0));
	rc = read_capture(&c, &e);
	IS_INT(rc, -ERR_FORMAT, "another thread's ring: ERR_FORMAT");
	snprintf(want, sizeof(want), "%s/ring.100: not the emu ring of "
	    "thread 100", dir);
	IS_STR(e.msg, want, "says whose it should be");

	/* the plugin's line without IN_RING is not one it writes */
	STEP(put_ring(100, 100, 200000, 0));
	STEP(put_text("snap.1/threads", "100 200000 65536 1 0x10 0x20 5 1\n"));
	rc = read_capture(&c, &e);
	IS_INT(rc, -ERR_FORMAT, "a line of eight fields: ERR_FORMAT");

	snprintf(want, sizeof(want), "rm -rf %s", dir);
	STEP(system(want) == 0 ? 0 : -1);
	return tap_done();
}
