/* policy/profiles.c: `strict` is spliced from `default`'s pieces. This
 * checks that it is still exactly the profile it was as a standalone text
 * (kept below, verbatim, as the reference): the same effective policy and
 * the same compiled BPF program, instruction for instruction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"

/* The standalone `strict` text before it was built from `default`. */
static const char STRICT_BEFORE[] =
	"{\n"
	"  \"description\": \"default, plus AF_UNIX sockets only, tight limits, no writable binds\",\n"
	"  \"network\": {\"mode\": \"none\"},\n"
	"  \"limits\": {\"memory\": \"512M\", \"pids\": 64, \"timeout\": 60, \"disk\": \"256M\"},\n"
	"  \"no_writable_binds\": true,\n"
	"  \"landlock\": {\"connect\": \"proxy\"},\n"
	"  \"seccomp\": {\n"
	"    \"default_action\": \"errno\",\n"
	"    \"default_errno\": \"ENOSYS\",\n"
	"    \"allow\": [\n"
	"      \"accept\", \"accept4\", \"access\", \"alarm\", \"arch_prctl\", \"bind\", \"brk\",\n"
	"      \"capget\", \"capset\", \"chdir\", \"chmod\", \"chown\", \"clock_getres\",\n"
	"      \"clock_gettime\", \"clock_nanosleep\", \"close\", \"close_range\", \"connect\",\n"
	"      \"copy_file_range\", \"creat\", \"dup\", \"dup2\", \"dup3\", \"epoll_create\",\n"
	"      \"epoll_create1\", \"epoll_ctl\", \"epoll_ctl_old\", \"epoll_pwait\",\n"
	"      \"epoll_pwait2\", \"epoll_wait\", \"epoll_wait_old\", \"eventfd\", \"eventfd2\",\n"
	"      \"execve\", \"execveat\", \"exit\", \"exit_group\", \"faccessat\", \"faccessat2\",\n"
	"      \"fadvise64\", \"fallocate\", \"fanotify_mark\", \"fchdir\", \"fchmod\", \"fchmodat\",\n"
	"      \"fchown\", \"fchownat\", \"fcntl\", \"fdatasync\", \"fgetxattr\", \"flistxattr\",\n"
	"      \"flock\", \"fork\", \"fremovexattr\", \"fsetxattr\", \"fstat\", \"fstatfs\", \"fsync\",\n"
	"      \"ftruncate\", \"futex\", \"futex_waitv\", \"futimesat\", \"get_robust_list\",\n"
	"      \"get_thread_area\", \"getcpu\", \"getcwd\", \"getdents\", \"getdents64\",\n"
	"      \"getegid\", \"geteuid\", \"getgid\", \"getgroups\", \"getitimer\", \"getpeername\",\n"
	"      \"getpgid\", \"getpgrp\", \"getpid\", \"getppid\", \"getpriority\", \"getrandom\",\n"
	"      \"getresgid\", \"getresuid\", \"getrlimit\", \"getrusage\", \"getsid\",\n"
	"      \"getsockname\", \"getsockopt\", \"gettid\", \"gettimeofday\", \"getuid\",\n"
	"      \"getxattr\", \"inotify_add_watch\", \"inotify_init\", \"inotify_init1\",\n"
	"      \"inotify_rm_watch\", \"io_cancel\", \"io_destroy\", \"io_getevents\",\n"
	"      \"io_pgetevents\", \"io_setup\", \"io_submit\", \"ioctl\", \"ioprio_get\",\n"
	"      \"ioprio_set\", \"kill\", \"landlock_add_rule\", \"landlock_create_ruleset\",\n"
	"      \"landlock_restrict_self\", \"lchown\", \"lgetxattr\", \"link\", \"linkat\",\n"
	"      \"listen\", \"listxattr\", \"llistxattr\", \"lremovexattr\", \"lseek\", \"lsetxattr\",\n"
	"      \"lstat\", \"madvise\", \"membarrier\", \"memfd_create\", \"memfd_secret\",\n"
	"      \"mincore\", \"mkdir\", \"mkdirat\", \"mknod\", \"mknodat\", \"mlock\", \"mlock2\",\n"
	"      \"mlockall\", \"mmap\", \"mprotect\", \"mq_getsetattr\", \"mq_notify\", \"mq_open\",\n"
	"      \"mq_timedreceive\", \"mq_timedsend\", \"mq_unlink\", \"mremap\", \"msgctl\",\n"
	"      \"msgget\", \"msgrcv\", \"msgsnd\", \"msync\", \"munlock\", \"munlockall\", \"munmap\",\n"
	"      \"nanosleep\", \"newfstatat\", \"open\", \"openat\", \"openat2\", \"pause\",\n"
	"      \"pidfd_open\", \"pidfd_send_signal\", \"pipe\", \"pipe2\", \"pkey_alloc\",\n"
	"      \"pkey_free\", \"pkey_mprotect\", \"poll\", \"ppoll\", \"prctl\", \"pread64\",\n"
	"      \"preadv\", \"preadv2\", \"prlimit64\", \"process_mrelease\", \"pselect6\",\n"
	"      \"pwrite64\", \"pwritev\", \"pwritev2\", \"read\", \"readahead\", \"readlink\",\n"
	"      \"readlinkat\", \"readv\", \"recvfrom\", \"recvmmsg\", \"recvmsg\",\n"
	"      \"remap_file_pages\", \"removexattr\", \"rename\", \"renameat\", \"renameat2\",\n"
	"      \"restart_syscall\", \"rmdir\", \"rseq\", \"rt_sigaction\", \"rt_sigpending\",\n"
	"      \"rt_sigprocmask\", \"rt_sigqueueinfo\", \"rt_sigreturn\", \"rt_sigsuspend\",\n"
	"      \"rt_sigtimedwait\", \"rt_tgsigqueueinfo\", \"sched_get_priority_max\",\n"
	"      \"sched_get_priority_min\", \"sched_getaffinity\", \"sched_getattr\",\n"
	"      \"sched_getparam\", \"sched_getscheduler\", \"sched_rr_get_interval\",\n"
	"      \"sched_setaffinity\", \"sched_setattr\", \"sched_setparam\",\n"
	"      \"sched_setscheduler\", \"sched_yield\", \"seccomp\", \"select\", \"semctl\",\n"
	"      \"semget\", \"semop\", \"semtimedop\", \"sendfile\", \"sendmmsg\", \"sendmsg\",\n"
	"      \"sendto\", \"set_robust_list\", \"set_thread_area\", \"set_tid_address\",\n"
	"      \"setfsgid\", \"setfsuid\", \"setgid\", \"setgroups\", \"setitimer\", \"setpgid\",\n"
	"      \"setpriority\", \"setregid\", \"setresgid\", \"setresuid\", \"setreuid\",\n"
	"      \"setrlimit\", \"setsid\", \"setsockopt\", \"setuid\", \"setxattr\", \"shmat\",\n"
	"      \"shmctl\", \"shmdt\", \"shmget\", \"shutdown\", \"sigaltstack\", \"signalfd\",\n"
	"      \"signalfd4\", \"splice\", \"stat\", \"statfs\", \"statx\", \"symlink\", \"symlinkat\",\n"
	"      \"sync\", \"sync_file_range\", \"syncfs\", \"sysinfo\", \"tee\", \"tgkill\", \"time\",\n"
	"      \"timer_create\", \"timer_delete\", \"timer_getoverrun\", \"timer_gettime\",\n"
	"      \"timer_settime\", \"timerfd_create\", \"timerfd_gettime\", \"timerfd_settime\",\n"
	"      \"times\", \"tkill\", \"truncate\", \"umask\", \"uname\", \"unlink\", \"unlinkat\",\n"
	"      \"utime\", \"utimensat\", \"utimes\", \"vfork\", \"vmsplice\", \"wait4\", \"waitid\",\n"
	"      \"write\", \"writev\"\n"
	"    ],\n"
	"    \"deny\": [\n"
	"      {\n"
	"        \"comment\": \"mounts, namespaces and the new mount API\",\n"
	"        \"names\": [\n"
	"          \"mount\", \"umount2\", \"pivot_root\", \"chroot\", \"unshare\", \"setns\",\n"
	"          \"fsopen\", \"fsconfig\", \"fsmount\", \"fspick\", \"move_mount\", \"open_tree\",\n"
	"          \"mount_setattr\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"kernel keyring, BPF, perf, tracing other processes\",\n"
	"        \"names\": [\n"
	"          \"keyctl\", \"add_key\", \"request_key\", \"bpf\", \"perf_event_open\",\n"
	"          \"ptrace\", \"process_vm_readv\", \"process_vm_writev\", \"process_madvise\",\n"
	"          \"kcmp\", \"pidfd_getfd\", \"userfaultfd\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"kernel modules, reboot, swap, accounting\",\n"
	"        \"names\": [\n"
	"          \"kexec_load\", \"kexec_file_load\", \"init_module\", \"finit_module\",\n"
	"          \"delete_module\", \"reboot\", \"swapon\", \"swapoff\", \"acct\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"the clock, the hostname, the kernel log\",\n"
	"        \"names\": [\n"
	"          \"settimeofday\", \"clock_settime\", \"clock_adjtime\", \"adjtimex\",\n"
	"          \"sethostname\", \"setdomainname\", \"syslog\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"io_uring bypasses seccomp for the operations it submits\",\n"
	"        \"names\": [\n"
	"          \"io_uring_setup\", \"io_uring_enter\", \"io_uring_register\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"file handles, quotas, I/O ports, ttys, obsolete calls\",\n"
	"        \"names\": [\n"
	"          \"open_by_handle_at\", \"name_to_handle_at\", \"lookup_dcookie\",\n"
	"          \"quotactl\", \"quotactl_fd\", \"fanotify_init\", \"iopl\", \"ioperm\",\n"
	"          \"modify_ldt\", \"vhangup\", \"uselib\", \"_sysctl\", \"nfsservctl\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"allowed by the rules below only with Docker's values\",\n"
	"        \"names\": [\n"
	"          \"personality\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"allowed by the rule below only without namespace flags\",\n"
	"        \"names\": [\n"
	"          \"clone\"\n"
	"        ],\n"
	"        \"errno\": \"EPERM\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"glibc falls back to clone on ENOSYS, as with Docker\",\n"
	"        \"names\": [\n"
	"          \"clone3\"\n"
	"        ],\n"
	"        \"errno\": \"ENOSYS\"\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"allowed by the rule below for AF_UNIX only\",\n"
	"        \"names\": [\n"
	"          \"socket\", \"socketpair\"\n"
	"        ],\n"
	"        \"errno\": \"EAFNOSUPPORT\"\n"
	"      }\n"
	"    ],\n"
	"    \"rules\": [\n"
	"      {\n"
	"        \"comment\": \"clone without CLONE_NEW{NS,UTS,IPC,USER,PID,NET,CGROUP,TIME}\",\n"
	"        \"names\": [\"clone\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0x7e020080\", \"value\": 0}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"personality(PER_LINUX)\",\n"
	"        \"names\": [\"personality\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": 0}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"personality(UNAME26)\",\n"
	"        \"names\": [\"personality\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": 8}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"personality(ADDR_NO_RANDOMIZE)\",\n"
	"        \"names\": [\"personality\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": \"0x20000\"}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"personality(UNAME26|ADDR_NO_RANDOMIZE)\",\n"
	"        \"names\": [\"personality\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": \"0x20008\"}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"personality(query)\",\n"
	"        \"names\": [\"personality\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": \"0xffffffff\"}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"TIOCSTI on the low 32 bits, as the kernel reads it (CVE-2019-10063)\",\n"
	"        \"names\": [\"ioctl\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"        \"args\": [{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": \"0x5412\"}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"TIOCLINUX on the low 32 bits, as the kernel reads it (CVE-2019-10063)\",\n"
	"        \"names\": [\"ioctl\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"        \"args\": [{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": \"0x541c\"}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_UNIX only\",\n"
	"        \"names\": [\"socket\", \"socketpair\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 1}]\n"
	"      }\n"
	"    ]\n"
	"  }\n"
	"}\n";


static void compile(const char *json, const char *origin, struct policy *p,
		    struct policy_filter *f)
{
	struct sc_err err = {0};
	if (policy_parse(json, strlen(json), origin, p, &err) < 0)
		fail_msg("parse %s: %s", origin, err.msg);
	if (policy_compile_filter(p, NULL, f, &err) < 0)
		fail_msg("compile %s: %s", origin, err.msg);
}

static void strict_is_what_it_was(void **state)
{
	(void)state;
	const char *now = policy_builtin_json("strict");
	assert_non_null(now);
	struct policy before, after;
	struct policy_filter fb = {0}, fa = {0};
	compile(STRICT_BEFORE, "strict (before)", &before, &fb);
	compile(now, "strict", &after, &fa);
	char *jb = policy_to_json(&before), *ja = policy_to_json(&after);
	assert_non_null(jb);
	assert_non_null(ja);
	assert_string_equal(ja, jb);
	assert_true(fb.count > 0);
	assert_int_equal(fa.count, fb.count);
	assert_memory_equal(fa.insns, fb.insns, fb.count * 8);
	free(jb);
	free(ja);
	policy_filter_free(&fb);
	policy_filter_free(&fa);
	policy_free(&before);
	policy_free(&after);
}

/* The test above must be able to fail: strict differs from default. */
static void strict_is_not_default(void **state)
{
	(void)state;
	struct policy d, s;
	struct policy_filter fd = {0}, fs = {0};
	compile(policy_builtin_json("default"), "default", &d, &fd);
	compile(policy_builtin_json("strict"), "strict", &s, &fs);
	assert_true(fd.count != fs.count || memcmp(fd.insns, fs.insns, fd.count * 8) != 0);
	policy_filter_free(&fd);
	policy_filter_free(&fs);
	policy_free(&d);
	policy_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strict_is_what_it_was),
		cmocka_unit_test(strict_is_not_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
