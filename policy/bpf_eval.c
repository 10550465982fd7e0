/* A classic-BPF interpreter for seccomp programs: the instructions the
 * kernel's seccomp_check_filter accepts, with its semantics. Used to check
 * every compiled filter against the policy before it is cached or used. */
#include <linux/filter.h>
#include <string.h>

#include "policy_priv.h"

#define DATA_LEN 64 /* sizeof(struct seccomp_data) */
#define MAX_INSNS 4096 /* BPF_MAXINSNS */

int policy_bpf_run(const void *insns, size_t count, const struct pol_seccomp_data *d,
		uint32_t *ret)
{
	const struct sock_filter *f = insns;
	unsigned char data[DATA_LEN];
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};

	if (!insns || count == 0 || count > MAX_INSNS)
		return -1;
	/* struct seccomp_data, in host byte order as the kernel lays it out. */
	memcpy(data, &d->nr, 4);
	memcpy(data + 4, &d->arch, 4);
	memcpy(data + 8, &d->instruction_pointer, 8);
	memcpy(data + 16, d->args, 48);

	for (size_t pc = 0; pc < count; pc++) {
		const struct sock_filter *in = &f[pc];
		uint32_t k = in->k, src = BPF_SRC(in->code) == BPF_X ? X : k;
		switch (in->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k % 4 || k > DATA_LEN - 4)
				return -1;
			memcpy(&A, data + k, 4);
			break;
		case BPF_LD | BPF_W | BPF_LEN: A = DATA_LEN; break;
		case BPF_LDX | BPF_W | BPF_LEN: X = DATA_LEN; break;
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_LDX | BPF_IMM: X = k; break;
		case BPF_LD | BPF_MEM:
			if (k >= BPF_MEMWORDS)
				return -1;
			A = M[k];
			break;
		case BPF_LDX | BPF_MEM:
			if (k >= BPF_MEMWORDS)
				return -1;
			X = M[k];
			break;
		case BPF_ST:
			if (k >= BPF_MEMWORDS)
				return -1;
			M[k] = A;
			break;
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -1;
			M[k] = X;
			break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_RET | BPF_K: *ret = k; return 0;
		case BPF_RET | BPF_A: *ret = A; return 0;
		case BPF_ALU | BPF_ADD | BPF_K:
		case BPF_ALU | BPF_ADD | BPF_X: A += src; break;
		case BPF_ALU | BPF_SUB | BPF_K:
		case BPF_ALU | BPF_SUB | BPF_X: A -= src; break;
		case BPF_ALU | BPF_MUL | BPF_K:
		case BPF_ALU | BPF_MUL | BPF_X: A *= src; break;
		case BPF_ALU | BPF_DIV | BPF_K:
		case BPF_ALU | BPF_DIV | BPF_X:
			if (src == 0) {
				if (BPF_SRC(in->code) == BPF_K)
					return -1; /* refused by the kernel */
				*ret = 0;          /* the program returns 0: kill */
				return 0;
			}
			A /= src;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
		case BPF_ALU | BPF_AND | BPF_X: A &= src; break;
		case BPF_ALU | BPF_OR | BPF_K:
		case BPF_ALU | BPF_OR | BPF_X: A |= src; break;
		case BPF_ALU | BPF_XOR | BPF_K:
		case BPF_ALU | BPF_XOR | BPF_X: A ^= src; break;
		case BPF_ALU | BPF_LSH | BPF_K:
		case BPF_ALU | BPF_LSH | BPF_X:
			if (src >= 32)
				return -1;
			A <<= src;
			break;
		case BPF_ALU | BPF_RSH | BPF_K:
		case BPF_ALU | BPF_RSH | BPF_X:
			if (src >= 32)
				return -1;
			A >>= src;
			break;
		case BPF_ALU | BPF_NEG: A = (uint32_t)-A; break;
		case BPF_JMP | BPF_JA:
			if (k >= count - pc - 1)
				return -1;
			pc += k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JEQ | BPF_X:
		case BPF_JMP | BPF_JGT | BPF_K:
		case BPF_JMP | BPF_JGT | BPF_X:
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_X:
		case BPF_JMP | BPF_JSET | BPF_K:
		case BPF_JMP | BPF_JSET | BPF_X: {
			bool cond;
			switch (BPF_OP(in->code)) {
			case BPF_JEQ: cond = A == src; break;
			case BPF_JGT: cond = A > src; break;
			case BPF_JGE: cond = A >= src; break;
			default: cond = (A & src) != 0; break;
			}
			size_t off = cond ? in->jt : in->jf;
			if (pc + 1 + off >= count)
				return -1;
			pc += off;
			break;
		}
		default:
			return -1; /* not allowed in a seccomp filter */
		}
	}
	return -1; /* fell off the end */
}
