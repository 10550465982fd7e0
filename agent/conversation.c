#include "conversation.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

void agent_conversation_write(const char *dir, const struct llm *m, const char *secret)
{
	if (!m->ops || !m->messages)
		return;
	char tmp[SC_PATH_BUF], final[SC_PATH_BUF];
	if (sc_path(tmp, sizeof(tmp), "%s/.conversation.json.tmp", dir) < 0 ||
	    sc_path(final, sizeof(final), "%s/conversation.json", dir) < 0)
		return;
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "api", m->ops->name);
	if (m->system)
		cJSON_AddItemReferenceToObject(doc, "system", m->system);
	if (m->tools)
		cJSON_AddItemReferenceToObject(doc, "tools", m->tools);
	else
		cJSON_AddArrayToObject(doc, "tools");
	cJSON_AddItemReferenceToObject(doc, "messages", m->messages);
	/* a copy, scrubbed on its values (see agent_json_scrub) */
	cJSON *copy = cJSON_Duplicate(doc, true);
	cJSON_Delete(doc); /* references only: the history stays */
	if (!copy)
		return;
	agent_json_scrub(copy, secret);
	_cleanup_free_ char *text = cJSON_PrintUnformatted(copy);
	cJSON_Delete(copy);
	if (!text)
		return;
	size_t len = strlen(text);
	text[len] = '\n';
	_cleanup_fd_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	if (sc_write_all(fd, text, len + 1) < 0) {
		unlink(tmp);
		return;
	}
	if (rename(tmp, final) < 0)
		unlink(tmp);
}
