/* Node names and cell ids: an id of POST /cells is NODE-HEX, the server's
 * node name, a dash and 16 lower-case hex digits, so that a load balancer
 * routes a request for a cell to its server by the path alone
 * (docs/scale-out.md). */
#include <string.h>

#include "api_priv.h"

static bool is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool node_name_ok_n(const char *s, size_t n)
{
	if (n < 1 || n > API_NODE_NAME_MAX || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool api_node_name_ok(const char *name)
{
	return name && node_name_ok_n(name, strnlen(name, API_NODE_NAME_MAX + 1));
}

static bool hex_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool api_id_parse(const char *s, size_t n, size_t *node_len)
{
	*node_len = 0;
	if (n == API_ID_HEX_LEN) /* no node part: never one of ours, but a cell id's shape */
		return hex_ok(s, n);
	if (n < API_ID_HEX_LEN + 2 || n > API_ID_LEN || s[n - API_ID_HEX_LEN - 1] != '-' ||
	    !hex_ok(s + n - API_ID_HEX_LEN, API_ID_HEX_LEN))
		return false;
	size_t k = n - API_ID_HEX_LEN - 1;
	if (!node_name_ok_n(s, k))
		return false;
	*node_len = k;
	return true;
}
