/* Names of actions, comparison operators and errno values in policy
 * documents, and the small pure helpers around them. */
#include <errno.h>
#include <string.h>

#include "policy_priv.h"

/* The kernel's seccomp return values (linux/seccomp.h), spelled out so that
 * this file does not depend on the installed kernel headers. */
#define RET_KILL_PROCESS 0x80000000U
#define RET_TRAP 0x00030000U
#define RET_ERRNO 0x00050000U
#define RET_LOG 0x7ffc0000U
#define RET_ALLOW 0x7fff0000U

static const char *const ACT_NAMES[] = {
	[POL_ACT_ALLOW] = "allow",
	[POL_ACT_ERRNO] = "errno",
	[POL_ACT_KILL] = "kill",
	[POL_ACT_TRAP] = "trap",
	[POL_ACT_LOG] = "log",
};

const char *policy_act_name(enum pol_act_kind k)
{
	if ((size_t)k < SC_ARRAY_LEN(ACT_NAMES))
		return ACT_NAMES[k];
	return "?";
}

int policy_act_parse(const char *s, enum pol_act_kind *out)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(ACT_NAMES); i++)
		if (!strcmp(s, ACT_NAMES[i])) {
			*out = (enum pol_act_kind)i;
			return 0;
		}
	return -1;
}

static const char *const OP_NAMES[] = {
	[POL_OP_EQ] = "eq",
	[POL_OP_NE] = "ne",
	[POL_OP_LT] = "lt",
	[POL_OP_LE] = "le",
	[POL_OP_GT] = "gt",
	[POL_OP_GE] = "ge",
	[POL_OP_MASKED_EQ] = "masked_eq",
};

const char *policy_op_name(enum pol_op op)
{
	if ((size_t)op < SC_ARRAY_LEN(OP_NAMES))
		return OP_NAMES[op];
	return "?";
}

int policy_op_parse(const char *s, enum pol_op *out)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(OP_NAMES); i++)
		if (!strcmp(s, OP_NAMES[i])) {
			*out = (enum pol_op)i;
			return 0;
		}
	return -1;
}

#define E(x) {#x, x}
static const struct {
	const char *name;
	int value;
} ERRNOS[] = {
	E(EPERM), E(ENOENT), E(ESRCH), E(EINTR), E(EIO), E(ENXIO), E(E2BIG),
	E(ENOEXEC), E(EBADF), E(ECHILD), E(EAGAIN), E(ENOMEM), E(EACCES),
	E(EFAULT), E(EBUSY), E(EEXIST), E(EXDEV), E(ENODEV), E(ENOTDIR),
	E(EISDIR), E(EINVAL), E(ENFILE), E(EMFILE), E(ENOTTY), E(ETXTBSY),
	E(EFBIG), E(ENOSPC), E(ESPIPE), E(EROFS), E(EMLINK), E(EPIPE),
	E(ERANGE), E(ENOSYS), E(ENOTSUP), E(EOPNOTSUPP), E(EPROTONOSUPPORT),
	E(ESOCKTNOSUPPORT), E(EPFNOSUPPORT), E(EAFNOSUPPORT), E(EADDRNOTAVAIL),
	E(ENETDOWN), E(ENETUNREACH), E(ECONNREFUSED), E(EHOSTUNREACH),
	E(ENOTSOCK), E(EPROTOTYPE), E(ENOPROTOOPT), E(ENODATA), E(ENOTCONN),
	E(ETIMEDOUT), E(ELOOP), E(ENAMETOOLONG), E(ENOTEMPTY), E(EDQUOT),
	E(ENOKEY), E(EKEYREJECTED),
};
#undef E

const char *policy_errno_name(int e)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(ERRNOS); i++)
		if (ERRNOS[i].value == e)
			return ERRNOS[i].name;
	return NULL;
}

int policy_errno_parse(const char *s, int *out)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(ERRNOS); i++)
		if (!strcmp(s, ERRNOS[i].name)) {
			*out = ERRNOS[i].value;
			return 0;
		}
	return -1;
}

uint32_t policy_act_ret(const struct pol_act *a)
{
	switch (a->kind) {
	case POL_ACT_ALLOW: return RET_ALLOW;
	case POL_ACT_ERRNO: return RET_ERRNO | ((uint32_t)a->errnum & 0xffffU);
	case POL_ACT_KILL: return RET_KILL_PROCESS;
	case POL_ACT_TRAP: return RET_TRAP;
	case POL_ACT_LOG: return RET_LOG;
	}
	return RET_KILL_PROCESS;
}

bool policy_act_equal(const struct pol_act *a, const struct pol_act *b)
{
	return policy_act_ret(a) == policy_act_ret(b);
}

bool policy_arg_matches(const struct pol_arg *a, uint64_t v)
{
	switch (a->op) {
	case POL_OP_EQ: return v == a->value;
	case POL_OP_NE: return v != a->value;
	case POL_OP_LT: return v < a->value;
	case POL_OP_LE: return v <= a->value;
	case POL_OP_GT: return v > a->value;
	case POL_OP_GE: return v >= a->value;
	case POL_OP_MASKED_EQ: return (v & a->mask) == a->value;
	}
	return false;
}
