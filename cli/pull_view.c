/* A pull's progress on stderr: on a terminal, a bar per layer being
 * downloaded and one for the whole image (bytes, percent, rate), drawn
 * again in place; elsewhere, the plain lines of cli_log (one a layer). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define BAR_WIDTH 24
#define MAX_LAYER_LINES 4 /* the pull downloads at most this many at once */

static int percent(uint64_t done, uint64_t total)
{
	return total ? (int)(done * 100 / total) : 100;
}

static void put_bar(uint64_t done, uint64_t total)
{
	int fill = total ? (int)(done * BAR_WIDTH / total) : BAR_WIDTH;
	char bar[BAR_WIDTH + 3];
	bar[0] = '[';
	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i + 1] = i < fill ? '#' : '.';
	bar[BAR_WIDTH + 1] = ']';
	bar[BAR_WIDTH + 2] = '\0';
	fputs(bar, stderr);
}

/* The bar's lines off the screen: the cursor goes back to where they began. */
static void erase(struct cli_pull_view *v)
{
	if (v->lines)
		fprintf(stderr, "\r\033[%zuA\033[J", v->lines);
	v->lines = 0;
}

static void draw(void *ctx, const struct rootfs_pull_figures *f)
{
	struct cli_pull_view *v = ctx;
	erase(v);
	for (size_t i = 0, shown = 0; i < f->nlayers && shown < MAX_LAYER_LINES && !f->final; i++) {
		const struct rootfs_pull_layer *l = &f->layer[i];
		if (!l->started || l->done >= l->size)
			continue;
		const char *hex = strchr(l->digest, ':');
		fprintf(stderr, "  %-12.12s ", hex ? hex + 1 : l->digest);
		put_bar(l->done, l->size);
		fprintf(stderr, " %3d%%  %.1f/%.1f MB\033[K\n", percent(l->done, l->size),
			(double)l->done / 1e6, (double)l->size / 1e6);
		v->lines++;
		shown++;
	}
	double rate = f->seconds > 0 ? (double)f->bytes_now / 1e6 / f->seconds : 0;
	fprintf(stderr, "  %zu/%zu layers  ", f->layers_done, f->nlayers);
	put_bar(f->bytes_done, f->bytes);
	fprintf(stderr, " %3d%%  %.1f/%.1f MB  %.1f MB/s%s\033[K\n", percent(f->bytes_done, f->bytes),
		(double)f->bytes_done / 1e6, (double)f->bytes / 1e6, rate, f->final ? "  done" : "");
	v->lines = f->final ? 0 : v->lines + 1; /* the last frame stays */
	fflush(stderr);
}

static void message(void *ctx, enum sc_log_level level, const char *msg)
{
	struct cli_pull_view *v = ctx;
	if (level == SC_LOG_PROGRESS)
		return; /* what the bar shows */
	erase(v);
	struct sc_log plain = cli_log_sink(&v->plain);
	sc_log(&plain, level, "%s", msg);
}

void cli_pull_view_init(struct cli_pull_view *v)
{
	*v = (struct cli_pull_view){0};
	v->bar = isatty(STDERR_FILENO) == 1;
	if (v->bar) {
		v->log = (struct sc_log){.fn = message, .ctx = v};
		v->meter = (struct rootfs_pull_meter){.fn = draw, .ctx = v};
	} else {
		v->log = cli_log_sink(&v->plain);
	}
}

void cli_pull_view_set(struct cli_pull_view *v, struct rootfs_pull_opts *o)
{
	o->log = &v->log;
	o->meter = v->bar ? &v->meter : NULL;
}
