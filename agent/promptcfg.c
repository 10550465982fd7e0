/* Prompt configs in the reference harness's YAML format (promptcfg.h). */
#include <fcntl.h>
#include <string.h>
#include <yaml.h>

#include "promptcfg.h"

static const char *const PLACEHOLDERS[] = {"working_dir", "input_dir", "output_dir",
					   "problem_statement"};

char *agent_prompt_replace(const char *tmpl, const char *key, const char *value)
{
	char pat[64];
	int pl = snprintf(pat, sizeof(pat), "{%s}", key);
	if (pl < 0 || (size_t)pl >= sizeof(pat))
		return NULL;
	size_t vl = strlen(value), n = 0;
	for (const char *p = strstr(tmpl, pat); p; p = strstr(p + pl, pat))
		n++;
	size_t tl = strlen(tmpl);
	if (n && vl > (SIZE_MAX - tl - 1) / n)
		return NULL;
	char *out = malloc(tl + n * vl + 1), *o = out;
	if (!out)
		return NULL;
	const char *s = tmpl;
	for (const char *p = strstr(s, pat); p; p = strstr(s, pat)) {
		memcpy(o, s, (size_t)(p - s));
		o += p - s;
		memcpy(o, value, vl);
		o += vl;
		s = p + pl;
	}
	strcpy(o, s);
	return out;
}

char *agent_prompt_format(const char *tmpl, const char *const *keys, const char *const *values,
			  size_t n)
{
	size_t cap = strlen(tmpl) + 1;
	for (size_t i = 0; i < n; i++) {
		size_t vl = strlen(values[i]), uses = 0;
		char pat[64];
		if (snprintf(pat, sizeof(pat), "{%s}", keys[i]) >= (int)sizeof(pat))
			return NULL;
		for (const char *p = strstr(tmpl, pat); p; p = strstr(p + 1, pat))
			uses++;
		if (uses && vl > (SIZE_MAX - cap) / uses)
			return NULL;
		cap += uses * vl;
	}
	char *out = malloc(cap), *o = out;
	if (!out)
		return NULL;
	for (const char *p = tmpl; *p;) {
		if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
			*o++ = *p;
			p += 2;
			continue;
		}
		bool done = false;
		for (size_t i = 0; p[0] == '{' && i < n && !done; i++) {
			size_t kl = strlen(keys[i]);
			if (!strncmp(p + 1, keys[i], kl) && p[1 + kl] == '}') {
				size_t vl = strlen(values[i]);
				memcpy(o, values[i], vl);
				o += vl;
				p += kl + 2;
				done = true;
			}
		}
		if (!done)
			*o++ = *p++;
	}
	*o = '\0';
	return out;
}

/* Edit distance of short names, bounded: anything over 3 is 3. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 40 || lb > 40)
		return 3;
	size_t d[41][41];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			d[i][j] = c;
		}
	return d[la][lb] > 3 ? 3 : d[la][lb];
}

bool agent_prompt_find_typo(const char *tmpl, char *buf, size_t size)
{
	for (const char *p = tmpl; (p = strchr(p, '{'));) {
		if (p[1] == '{') { /* "{{": a literal brace in the reference's prompts */
			p += 2;
			continue;
		}
		const char *q = p + 1;
		while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		       (*q >= '0' && *q <= '9') || *q == '_')
			q++;
		size_t n = (size_t)(q - p - 1);
		if (*q != '}' || n == 0 || n > 40) {
			p++;
			continue;
		}
		char name[41], lower[41];
		memcpy(name, p + 1, n);
		name[n] = '\0';
		for (size_t i = 0; i <= n; i++)
			lower[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] + 32) : name[i];
		bool known = false, near = false;
		for (size_t i = 0; i < SC_ARRAY_LEN(PLACEHOLDERS); i++) {
			if (!strcmp(name, PLACEHOLDERS[i]))
				known = true;
			else if (!strcmp(lower, PLACEHOLDERS[i]) ||
				 (n >= 6 && distance(lower, PLACEHOLDERS[i]) <= 2))
				near = true;
		}
		if (!known && near) {
			snprintf(buf, size, "%s", name);
			return true;
		}
		p = q;
	}
	return false;
}

void agent_prompt_config_free(struct agent_prompt_config *pc)
{
	free(pc->system_prompt);
	free(pc->instance_prompt);
	free(pc->working_dir);
	free(pc->input_dir);
	free(pc->output_dir);
	free(pc->answer_path);
	free(pc->dataset);
	free(pc->data_files);
	*pc = (struct agent_prompt_config){0};
}

static const char *const FIELDS[] = {"system_prompt", "instance_prompt", "working_dir",
				     "input_dir", "output_dir"};

static char **field(struct agent_prompt_config *pc, size_t i)
{
	char **f[] = {&pc->system_prompt, &pc->instance_prompt, &pc->working_dir, &pc->input_dir,
		      &pc->output_dir};
	return f[i];
}

static int check_dir(const char *name, const char *key, const char *v, struct sc_err *err)
{
	if (v[0] != '/' || strlen(v) > 1024 || strstr(v, "/../") || strchr(v, '\n') ||
	    (strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/..")))
		return sc_fail(err, 0, "%s: %s must be an absolute cell path, got '%.100s'", name,
			       key, v);
	return 0;
}

/* Fill pc's fields from the root mapping of doc. */
static int read_mapping(const char *name, yaml_document_t *doc, struct agent_prompt_config *pc,
			struct sc_err *err)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		return sc_fail(err, 0, "%s: not a YAML mapping of prompt fields", name);
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		if (!k || k->type != YAML_SCALAR_NODE)
			continue;
		const char *key = (const char *)k->data.scalar.value;
		char **extra = !strcmp(key, "dataset") ? &pc->dataset
			       : !strcmp(key, "data_files") ? &pc->data_files : NULL;
		if (extra && v && v->type == YAML_SCALAR_NODE &&
		    strlen((const char *)v->data.scalar.value) == v->data.scalar.length) {
			free(*extra);
			if (!(*extra = strdup((const char *)v->data.scalar.value)))
				return sc_fail(err, ENOMEM, "%s", name);
		}
		for (size_t i = 0; i < SC_ARRAY_LEN(FIELDS); i++) {
			if (strcmp((const char *)k->data.scalar.value, FIELDS[i]))
				continue;
			if (!v || v->type != YAML_SCALAR_NODE)
				return sc_fail(err, 0, "%s: %s is not a string", name, FIELDS[i]);
			if (strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
				return sc_fail(err, 0, "%s: %s contains NUL bytes", name, FIELDS[i]);
			char **f = field(pc, i);
			free(*f);
			*f = strdup((const char *)v->data.scalar.value);
			if (!*f)
				return sc_fail(err, ENOMEM, "%s", name);
		}
	}
	return 0;
}

static int fill_in(const char *name, struct agent_prompt_config *pc, struct sc_err *err)
{
	for (size_t i = 0; i < 2; i++)
		if (!*field(pc, i))
			return sc_fail(err, 0, "%s: no %s", name, FIELDS[i]);
	/* as `llm-in-sandbox run` (its config/general.yaml) */
	const char *defaults[] = {"/testbed", "/testbed/input", "/testbed/output"};
	for (size_t i = 2; i < SC_ARRAY_LEN(FIELDS); i++) {
		char **f = field(pc, i);
		if (!*f && !(*f = strdup(defaults[i - 2])))
			return sc_fail(err, ENOMEM, "%s", name);
		if (check_dir(name, FIELDS[i], *f, err) < 0)
			return -1;
	}
	char typo[48];
	for (size_t i = 0; i < 2; i++)
		if (agent_prompt_find_typo(*field(pc, i), typo, sizeof(typo)))
			return sc_fail(err, 0,
				       "%s: %s has an unknown placeholder {%s} (known: {working_dir}, "
				       "{input_dir}, {output_dir}, {problem_statement})",
				       name, FIELDS[i], typo);
	for (size_t i = 0; i < 2; i++) {
		char **f = field(pc, i);
		for (size_t j = 2; j < SC_ARRAY_LEN(FIELDS); j++) {
			char *n = agent_prompt_replace(*f, FIELDS[j], *field(pc, j));
			if (!n)
				return sc_fail(err, ENOMEM, "%s", name);
			free(*f);
			*f = n;
		}
	}
	/* the reference's agent then renders the system prompt with
	 * str.format(command_docs="", demo="") */
	static const char *const sys_keys[] = {"command_docs", "demo"}, *const sys_values[] = {"", ""};
	char *sys = agent_prompt_format(pc->system_prompt, sys_keys, sys_values, 2);
	if (!sys)
		return sc_fail(err, ENOMEM, "%s", name);
	free(pc->system_prompt);
	pc->system_prompt = sys;
	if (asprintf(&pc->answer_path, "%s%sanswer.txt", pc->output_dir,
		     pc->output_dir[strlen(pc->output_dir) - 1] == '/' ? "" : "/") < 0) {
		pc->answer_path = NULL;
		return sc_fail(err, ENOMEM, "%s", name);
	}
	return 0;
}

int agent_prompt_config_parse(const char *name, const char *text, size_t len,
			      struct agent_prompt_config *pc, struct sc_err *err)
{
	*pc = (struct agent_prompt_config){0};
	yaml_parser_t parser;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&parser))
		return sc_fail(err, ENOMEM, "%s", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		sc_fail(err, 0, "%s: not YAML: %.200s at line %zu", name,
			parser.problem ? parser.problem : "parse error",
			parser.problem_mark.line + 1);
		yaml_parser_delete(&parser);
		return -1;
	}
	int rc = read_mapping(name, &doc, pc, err);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc == 0)
		rc = fill_in(name, pc, err);
	if (rc < 0)
		agent_prompt_config_free(pc);
	return rc;
}

int agent_prompt_config_load(const char *path, struct agent_prompt_config *pc,
			     struct sc_err *err)
{
	char *text = NULL;
	size_t len = 0;
	if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_REGULAR, AGENT_PROMPT_CONFIG_MAX, &text,
				&len, err) < 0)
		return sc_err_wrap(err, "prompt config %s", path);
	int rc = agent_prompt_config_parse(path, text, len, pc, err);
	free(text);
	return rc;
}
