/* The exec trampoline: a tiny static program, embedded in sandcell and run
 * from a sealed memfd, that execs the cell's command. The process that
 * execs a command therefore never runs from the host's sandcell binary, so
 * a command reached through /proc/self/exe (or a #! line naming it) is
 * this memfd, not the host file (the CVE-2019-5736 pattern: a rootless
 * caller owns that file, and so does root of the cell). It is used when
 * the cell could change the file (runtime/start.c binary_reachable).
 * argv: [trampoline, PATH, ARGV0, ARG1...]. No libc: raw syscalls only. */
#include <asm/unistd.h>

#if defined(__x86_64__)
static long sys3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}
__asm__(".text\n.globl _start\n_start:\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n\tcall tramp_main\n\thlt\n");
#elif defined(__aarch64__)
static long sys3(long n, long a, long b, long c)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
				     x2 __asm__("x2") = c;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
}
__asm__(".text\n.globl _start\n_start:\n\tmov x0, sp\n\tbl tramp_main\n");
#else
#error "the exec trampoline supports x86_64 and aarch64"
#endif

static unsigned long len(const char *s)
{
	unsigned long n = 0;
	while (s[n])
		n++;
	return n;
}

static void say(const char *s) { sys3(__NR_write, 2, (long)s, (long)len(s)); }

__attribute__((noreturn, used)) void tramp_main(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	long r = argc >= 3 ? sys3(__NR_execve, (long)argv[1], (long)(argv + 2), (long)envp) : -22;
	/* As the shell reports it: 127 not found, 126 not executable. */
	say("sandcell: cannot run '");
	say(argc >= 3 ? argv[2] : "?");
	say(r == -2 || r == -20 ? "': No such file or directory\n"
	    : r == -13	       ? "': Permission denied\n"
	    : r == -8	       ? "': Exec format error\n"
			       : "': cannot execute\n");
	sys3(__NR_exit_group, r == -2 || r == -20 ? 127 : 126, 0, 0);
	for (;;)
		;
}
