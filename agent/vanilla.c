#include "vanilla.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "episode.h"
#include "text.h"

const char AGENT_VANILLA_SYSTEM_PROMPT[] =
	"You are a helpful assistant. Solve the problem the user gives you. The documents "
	"the problem refers to, if any, follow it in the same message. Think as much as you "
	"need, then end your reply with the final answer.";

struct docs {
	struct sc_sbuf b;
	size_t used; /* bytes of document text inlined */
	size_t files;
};

static void add_attr(struct sc_sbuf *b, const char *rel)
{
	/* the path is ours to show: keep it printable and quote-free */
	for (const char *p = rel; *p; p++)
		sc_sbuf_add(b, (*p == '"' || (unsigned char)*p < 0x20) ? "_" : p, 1);
}

static void add_file(struct docs *d, int dirfd, const char *name, const char *rel, off_t size)
{
	d->files++;
	sc_sbuf_adds(&d->b, "<document path=\"");
	add_attr(&d->b, rel);
	sc_sbuf_adds(&d->b, "\">\n");
	_cleanup_fd_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	struct sc_err err = {0};
	if (fd < 0 || sc_read_small_alloc_fd(fd, rel, SC_READ_REGULAR, VANILLA_MAX_DOCS - d->used,
					     &buf, &n, &err) < 0) {
		sc_sbuf_printf(&d->b, "[%lld bytes, not shown: %s]\n", (long long)size,
				  err.errnum == EFBIG ? "the documents exceed the size budget"
						   : "cannot be read");
	} else if (memchr(buf, '\0', n)) {
		sc_sbuf_printf(&d->b, "[binary file, %lld bytes, not shown]\n", (long long)size);
	} else {
		size_t clean_len;
		_cleanup_free_ char *clean = agent_text_sanitize(buf, n, &clean_len);
		if (clean) {
			sc_sbuf_add(&d->b, clean, clean_len);
			if (clean_len && clean[clean_len - 1] != '\n')
				sc_sbuf_adds(&d->b, "\n");
		}
		d->used += n;
	}
	sc_sbuf_adds(&d->b, "</document>\n");
}

static int add_dir(struct docs *d, int dirfd, const char *prefix, int depth, struct sc_err *err)
{
	if (depth > VANILLA_MAX_DEPTH)
		return 0;
	char **names;
	size_t n;
	if (sc_dir_names_sorted(dirfd, VANILLA_MAX_FILES, &names, &n, NULL) < 0)
		return sc_fail(err, errno, "cannot read the input directory");
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		char rel[4096];
		struct stat st;
		if (rc == 0 && d->files < VANILLA_MAX_FILES &&
		    sc_path(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", names[i]) == 0 &&
		    fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISREG(st.st_mode)) {
				add_file(d, dirfd, names[i], rel, st.st_size);
			} else if (S_ISDIR(st.st_mode)) {
				_cleanup_fd_ int sub = openat(dirfd, names[i],
							      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					rc = add_dir(d, sub, rel, depth + 1, err);
			}
		}
	}
	sc_dir_names_free(names, n);
	return rc;
}

char *agent_vanilla_prompt(const char *problem, const char *input_dir, struct sc_err *err)
{
	struct docs d = {0};
	sc_sbuf_printf(&d.b, "<problem>\n%s\n</problem>\n", problem);
	if (input_dir) {
		_cleanup_fd_ int fd = open(input_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			sc_sbuf_free(&d.b);
			sc_fail(err, errno, "cannot open the input directory %.200s", input_dir);
			return NULL;
		}
		sc_sbuf_adds(&d.b, "\n<documents>\n");
		if (add_dir(&d, fd, "", 0, err) < 0) {
			sc_sbuf_free(&d.b);
			return NULL;
		}
		sc_sbuf_adds(&d.b, "</documents>\n");
	}
	if (d.b.oom) {
		sc_sbuf_free(&d.b);
		sc_fail(err, ENOMEM, "the prompt");
		return NULL;
	}
	return sc_sbuf_take(&d.b);
}

void agent_vanilla_answer(struct agent_result *res, const char *dir, const char *content,
			  const char *secret)
{
	const char *c = content ? content : "";
	free(res->answer);
	res->answer = agent_text_sanitize(c, strlen(c), &res->answer_len);
	if (res->answer)
		agent_text_redact(res->answer, res->answer_len, secret);
	char path[SC_PATH_BUF];
	if (!res->answer || sc_path(path, sizeof(path), "%s/answer.txt", dir) < 0)
		return;
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0)
		(void)sc_write_all(fd, res->answer, res->answer_len);
}

int agent_run_vanilla(const struct agent_config *cfg, struct agent_result *res,
		      struct sc_err *err)
{
	*res = (struct agent_result){0};
	if (agent_episode_check(cfg, false, err) < 0)
		return -1;
	struct episode e;
	if (agent_episode_open(&e, cfg, res, cfg->vanilla_verbatim ? "" : AGENT_VANILLA_SYSTEM_PROMPT,
			       false, err) < 0)
		return -1;
	int rc = 0;
	e.setup_s = sc_now() - e.t0;
	e.llm.deadline = e.t0 + cfg->episode_timeout_s;
	agent_episode_log_start(&e, "vanilla");
	char *problem = cfg->vanilla_verbatim ? strdup(cfg->problem)
					      : agent_vanilla_prompt(cfg->problem, cfg->input_dir, err);
	if (!problem) {
		if (cfg->vanilla_verbatim)
			sc_fail(err, ENOMEM, "the prompt");
		rc = -1;
		goto out;
	}
	e.llm.ops->add_user(&e.llm, problem);
	free(problem);

	res->status = AGENT_MAX_STEPS;
	struct llm_reply r;
	if (agent_episode_may_go_on(&e)) {
		e.step++;
		if (agent_episode_model_turn(&e, &r)) {
			agent_episode_add_step(&e, &r, true, NULL, "", 0);
			agent_vanilla_answer(res, e.rec.dir, r.content, cfg->api_key);
			res->status = AGENT_SUBMITTED;
			e.done = true;
			llm_reply_free(&r);
		}
		agent_episode_snapshot(&e);
	}
out:
	agent_episode_finish(&e, rc, err);
	agent_episode_close(&e);
	return rc;
}
