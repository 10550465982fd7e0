/* E2B's snapshots: Sandbox.createSnapshot makes an image of a sandbox's
 * files (its image and what it wrote), which Sandbox.create takes as a
 * template (serve --allow-images); listSnapshots and deleteSnapshot
 * (DELETE /templates/{id}) see and remove only such images. The commit
 * runs in the pool host (single-threaded: it forks to read the base
 * image), never in a request's thread. Processes and memory are not
 * kept: a sandbox made from a snapshot starts with a fresh init, as a
 * fork's children do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../common/parse.h"
#include "../rootfs/rootfs.h"
#include "e2b_priv.h"

#define SNAPSHOT_SOURCE "commit:e2b-snapshot:" /* its image's source, then the sandbox id */
#define SNAPSHOT_DROP_TRIES 100 /* 10 s for its pool's cells to go */

/* The sandbox a snapshot image was made of, or NULL: not a snapshot. */
static const char *snapshot_of(const struct rootfs_image_info *im)
{
	size_t n = strlen(SNAPSHOT_SOURCE);
	return im->source && !strncmp(im->source, SNAPSHOT_SOURCE, n) ? im->source + n : NULL;
}

/* The snapshot's name: the one asked for, or snap-HEX. */
static bool snapshot_name(const cJSON *j, char name[64], struct api_bad *bad)
{
	const char *given;
	if (!api_req_str(j, "name", &given, bad))
		return false;
	if (given) {
		if (!sc_valid_name(given))
			return api_bad(bad, 422, "name",
				       "name: letters, digits, '.', '_' and '-' (1 to 63, the first a "
				       "letter or digit)");
		snprintf(name, 64, "%s", given);
		return true;
	}
	unsigned char rnd[6];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return api_bad(bad, 500, "", "getrandom failed");
	snprintf(name, 64, "snap-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
		 rnd[5]);
	return true;
}

void api_e2b_snapshot_create(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	char name[64];
	cJSON *j = api_req_object(call->req->body, call->req->body_len, false, &bad);
	bool ok = j && snapshot_name(j, name, &bad);
	cJSON_Delete(j);
	if (!ok) {
		api_e2b_error(resp, bad.status == 422 ? 400 : bad.status, "%s", bad.msg);
		return;
	}
	if (!a->lim.other_images) {
		api_e2b_error(resp, 400, "a snapshot is an image that sandboxes are made of: this "
					 "server makes them with serve --allow-images");
		return;
	}
	struct cell *c;
	struct api_cell e;
	struct api_response inner = {0};
	if (api_cell_begin_entry(a, call->id, &c, &e, &inner) < 0 || !e.e2b) {
		if (inner.status == 0)
			api_cell_end(a, call->id, c);
		api_response_free(&inner);
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
		return;
	}
	char source[128];
	snprintf(source, sizeof(source), "e2b-snapshot:%s", call->id);
	struct sc_err err = {0};
	int rc = api_image_stored(name) ? sc_fail(&err, EEXIST, "an image named '%s' exists", name)
				    : api_pool_host_snapshot(a, e.name, name, source, &err);
	api_cell_end(a, call->id, c);
	if (rc < 0) {
		api_e2b_error(resp, err.errnum == EEXIST ? 409 : 400, "snapshot of %s: %.400s",
			      call->id, err.msg);
		return;
	}
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fprintf(jb.f, "{\"snapshotID\":\"%s\",\"names\":[\"%s\"]}", name, name);
	api_jb_send(&jb, resp, 201);
}

void api_e2b_snapshot_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	(void)a;
	const struct api_request *req = call->req;
	const char *of = req->query ? req->query(req->ctx, "sandboxID") : NULL;
	const char *named = req->query ? req->query(req->ctx, "name") : NULL;
	struct rootfs_image_info *list = NULL;
	size_t n = 0;
	struct sc_err err = {0};
	if (rootfs_image_list(cell_data_root(), &list, &n, &err) < 0) {
		api_e2b_error(resp, 500, "%.400s", err.msg);
		return;
	}
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		rootfs_image_list_free(list, n);
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputc('[', jb.f);
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		const char *sb = snapshot_of(&list[i]);
		if (!sb || (named && strcmp(named, list[i].name) != 0) ||
		    (of && (strncmp(sb, of, strlen(of)) != 0 || sb[strlen(of)] != '@')))
			continue;
		fprintf(jb.f, "%s{\"snapshotID\":\"%s\",\"names\":[\"%s\"]}", first ? "" : ",",
			list[i].name, list[i].name);
		first = false;
	}
	fputc(']', jb.f);
	rootfs_image_list_free(list, n);
	api_jb_send(&jb, resp, 200);
}

void api_e2b_template_delete(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct rootfs_image_info *list = NULL;
	size_t n = 0;
	struct sc_err err = {0};
	bool snapshot = false;
	if (sc_valid_name(call->tag) && rootfs_image_list(cell_data_root(), &list, &n, &err) == 0)
		for (size_t i = 0; i < n && !snapshot; i++)
			snapshot = !strcmp(list[i].name, call->tag) && snapshot_of(&list[i]);
	rootfs_image_list_free(list, n);
	if (!snapshot) {
		api_e2b_error(resp, 404, "no snapshot %.100s (only snapshots are deleted here)",
			      call->tag);
		return;
	}
	if (api_image_in_table(a, call->tag)) {
		api_e2b_error(resp, 409, "snapshot %s is the template of a sandbox that runs: kill "
					 "it first", call->tag);
		return;
	}
	/* its pool's ready cells go in the background: wait for them */
	api_image_pool_drop(a, call->tag);
	int rc;
	for (int i = 0; (rc = rootfs_image_remove(cell_data_root(), &api_cells_in_use, call->tag,
						  &err)) < 0 && i < SNAPSHOT_DROP_TRIES; i++)
		nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
	if (rc < 0) {
		api_e2b_error(resp, 409, "%.400s", err.msg);
		return;
	}
	api_set_body(resp, 204, "application/json", NULL, 0);
}
