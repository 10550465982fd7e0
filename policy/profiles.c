/* The built-in profiles: JSON texts compiled into the binary and parsed by
 * the same loader as policy files, so `sandcell policy show NAME` prints
 * valid input for --policy.
 *
 * `default` allows what Docker's default seccomp profile (moby
 * profiles/seccomp/default.json) allows a container without extra
 * capabilities, minus io_uring, adjtimex/clock_adjtime and
 * name_to_handle_at; denials programs may meet fail with EPERM, syscalls
 * nobody listed (including ones newer than this list) with ENOSYS, which
 * libc and runtimes treat as "not supported here" and fall back from.
 * Argument checks on int/unsigned int arguments (socket families, ioctl
 * requests) compare the low 32 bits only, as the kernel reads them, so
 * setting high bits cannot slip past a denial. */
#include "policy_priv.h"

/* The two profiles share one text: `strict` is `default` with AF_UNIX as
 * the only socket family (socket/socketpair leave the allowlist, a rule
 * allows AF_UNIX, the per-family denials become moot), plus limits and no
 * writable binds. The pieces below are spliced at compile time, so each
 * syscall list exists once; tests/unit/test_policy_profiles.c checks that
 * `strict` compiles to the same filter as its former standalone text. */

/* "seccomp": { and its default action */
#define SECCOMP_HEAD \
	"  \"seccomp\": {\n" \
	"    \"default_action\": \"errno\",\n" \
	"    \"default_errno\": \"ENOSYS\",\n"

/* the allowlist up to the socket calls (which only `default` allows outright) */
#define ALLOW_UNTIL_SOCKET \
	"    \"allow\": [\n" \
	"      \"accept\", \"accept4\", \"access\", \"alarm\", \"arch_prctl\", \"bind\", \"brk\",\n" \
	"      \"capget\", \"capset\", \"chdir\", \"chmod\", \"chown\", \"clock_getres\",\n" \
	"      \"clock_gettime\", \"clock_nanosleep\", \"close\", \"close_range\", \"connect\",\n" \
	"      \"copy_file_range\", \"creat\", \"dup\", \"dup2\", \"dup3\", \"epoll_create\",\n" \
	"      \"epoll_create1\", \"epoll_ctl\", \"epoll_ctl_old\", \"epoll_pwait\",\n" \
	"      \"epoll_pwait2\", \"epoll_wait\", \"epoll_wait_old\", \"eventfd\", \"eventfd2\",\n" \
	"      \"execve\", \"execveat\", \"exit\", \"exit_group\", \"faccessat\", \"faccessat2\",\n" \
	"      \"fadvise64\", \"fallocate\", \"fanotify_mark\", \"fchdir\", \"fchmod\", \"fchmodat\",\n" \
	"      \"fchown\", \"fchownat\", \"fcntl\", \"fdatasync\", \"fgetxattr\", \"flistxattr\",\n" \
	"      \"flock\", \"fork\", \"fremovexattr\", \"fsetxattr\", \"fstat\", \"fstatfs\", \"fsync\",\n" \
	"      \"ftruncate\", \"futex\", \"futex_waitv\", \"futimesat\", \"get_robust_list\",\n" \
	"      \"get_thread_area\", \"getcpu\", \"getcwd\", \"getdents\", \"getdents64\",\n" \
	"      \"getegid\", \"geteuid\", \"getgid\", \"getgroups\", \"getitimer\", \"getpeername\",\n" \
	"      \"getpgid\", \"getpgrp\", \"getpid\", \"getppid\", \"getpriority\", \"getrandom\",\n" \
	"      \"getresgid\", \"getresuid\", \"getrlimit\", \"getrusage\", \"getsid\",\n" \
	"      \"getsockname\", \"getsockopt\", \"gettid\", \"gettimeofday\", \"getuid\",\n" \
	"      \"getxattr\", \"inotify_add_watch\", \"inotify_init\", \"inotify_init1\",\n" \
	"      \"inotify_rm_watch\", \"io_cancel\", \"io_destroy\", \"io_getevents\",\n" \
	"      \"io_pgetevents\", \"io_setup\", \"io_submit\", \"ioctl\", \"ioprio_get\",\n" \
	"      \"ioprio_set\", \"kill\", \"landlock_add_rule\", \"landlock_create_ruleset\",\n" \
	"      \"landlock_restrict_self\", \"lchown\", \"lgetxattr\", \"link\", \"linkat\",\n" \
	"      \"listen\", \"listxattr\", \"llistxattr\", \"lremovexattr\", \"lseek\", \"lsetxattr\",\n" \
	"      \"lstat\", \"madvise\", \"membarrier\", \"memfd_create\", \"memfd_secret\",\n" \
	"      \"mincore\", \"mkdir\", \"mkdirat\", \"mknod\", \"mknodat\", \"mlock\", \"mlock2\",\n" \
	"      \"mlockall\", \"mmap\", \"mprotect\", \"mq_getsetattr\", \"mq_notify\", \"mq_open\",\n" \
	"      \"mq_timedreceive\", \"mq_timedsend\", \"mq_unlink\", \"mremap\", \"msgctl\",\n" \
	"      \"msgget\", \"msgrcv\", \"msgsnd\", \"msync\", \"munlock\", \"munlockall\", \"munmap\",\n" \
	"      \"nanosleep\", \"newfstatat\", \"open\", \"openat\", \"openat2\", \"pause\",\n" \
	"      \"pidfd_open\", \"pidfd_send_signal\", \"pipe\", \"pipe2\", \"pkey_alloc\",\n" \
	"      \"pkey_free\", \"pkey_mprotect\", \"poll\", \"ppoll\", \"prctl\", \"pread64\",\n" \
	"      \"preadv\", \"preadv2\", \"prlimit64\", \"process_mrelease\", \"pselect6\",\n" \
	"      \"pwrite64\", \"pwritev\", \"pwritev2\", \"read\", \"readahead\", \"readlink\",\n" \
	"      \"readlinkat\", \"readv\", \"recvfrom\", \"recvmmsg\", \"recvmsg\",\n" \
	"      \"remap_file_pages\", \"removexattr\", \"rename\", \"renameat\", \"renameat2\",\n" \
	"      \"restart_syscall\", \"rmdir\", \"rseq\", \"rt_sigaction\", \"rt_sigpending\",\n" \
	"      \"rt_sigprocmask\", \"rt_sigqueueinfo\", \"rt_sigreturn\", \"rt_sigsuspend\",\n" \
	"      \"rt_sigtimedwait\", \"rt_tgsigqueueinfo\", \"sched_get_priority_max\",\n" \
	"      \"sched_get_priority_min\", \"sched_getaffinity\", \"sched_getattr\",\n" \
	"      \"sched_getparam\", \"sched_getscheduler\", \"sched_rr_get_interval\",\n" \
	"      \"sched_setaffinity\", \"sched_setattr\", \"sched_setparam\",\n" \
	"      \"sched_setscheduler\", \"sched_yield\", \"seccomp\", \"select\", \"semctl\",\n" \
	"      \"semget\", \"semop\", \"semtimedop\", \"sendfile\", \"sendmmsg\", \"sendmsg\",\n" \
	"      \"sendto\", \"set_robust_list\", \"set_thread_area\", \"set_tid_address\",\n" \
	"      \"setfsgid\", \"setfsuid\", \"setgid\", \"setgroups\", \"setitimer\", \"setpgid\",\n" \
	"      \"setpriority\", \"setregid\", \"setresgid\", \"setresuid\", \"setreuid\",\n" \
	"      \"setrlimit\", \"setsid\", \"setsockopt\", \"setuid\", \"setxattr\", \"shmat\",\n" \
	"      \"shmctl\", \"shmdt\", \"shmget\", \"shutdown\", \"sigaltstack\", \"signalfd\",\n" \
	"      \"signalfd4\", "

/* the rest of the allowlist; opens "deny" */
#define ALLOW_AFTER_SOCKET \
	"\"splice\", \"stat\", \"statfs\", \"statx\",\n" \
	"      \"symlink\", \"symlinkat\", \"sync\", \"sync_file_range\", \"syncfs\", \"sysinfo\",\n" \
	"      \"tee\", \"tgkill\", \"time\", \"timer_create\", \"timer_delete\",\n" \
	"      \"timer_getoverrun\", \"timer_gettime\", \"timer_settime\", \"timerfd_create\",\n" \
	"      \"timerfd_gettime\", \"timerfd_settime\", \"times\", \"tkill\", \"truncate\",\n" \
	"      \"umask\", \"uname\", \"unlink\", \"unlinkat\", \"utime\", \"utimensat\", \"utimes\",\n" \
	"      \"vfork\", \"vmsplice\", \"wait4\", \"waitid\", \"write\", \"writev\"\n" \
	"    ],\n" \
	"    \"deny\": [\n"

/* the denied groups, all but the closing brace of the last one */
#define DENY_GROUPS \
	"      {\n" \
	"        \"comment\": \"mounts, namespaces and the new mount API\",\n" \
	"        \"names\": [\n" \
	"          \"mount\", \"umount2\", \"pivot_root\", \"chroot\", \"unshare\", \"setns\",\n" \
	"          \"fsopen\", \"fsconfig\", \"fsmount\", \"fspick\", \"move_mount\", \"open_tree\",\n" \
	"          \"mount_setattr\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"kernel keyring, BPF, perf, tracing other processes\",\n" \
	"        \"names\": [\n" \
	"          \"keyctl\", \"add_key\", \"request_key\", \"bpf\", \"perf_event_open\",\n" \
	"          \"ptrace\", \"process_vm_readv\", \"process_vm_writev\", \"process_madvise\",\n" \
	"          \"kcmp\", \"pidfd_getfd\", \"userfaultfd\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"kernel modules, reboot, swap, accounting\",\n" \
	"        \"names\": [\n" \
	"          \"kexec_load\", \"kexec_file_load\", \"init_module\", \"finit_module\",\n" \
	"          \"delete_module\", \"reboot\", \"swapon\", \"swapoff\", \"acct\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"the clock, the hostname, the kernel log\",\n" \
	"        \"names\": [\n" \
	"          \"settimeofday\", \"clock_settime\", \"clock_adjtime\", \"adjtimex\",\n" \
	"          \"sethostname\", \"setdomainname\", \"syslog\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"io_uring bypasses seccomp for the operations it submits\",\n" \
	"        \"names\": [\n" \
	"          \"io_uring_setup\", \"io_uring_enter\", \"io_uring_register\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"file handles, quotas, I/O ports, ttys, obsolete calls\",\n" \
	"        \"names\": [\n" \
	"          \"open_by_handle_at\", \"name_to_handle_at\", \"lookup_dcookie\",\n" \
	"          \"quotactl\", \"quotactl_fd\", \"fanotify_init\", \"iopl\", \"ioperm\",\n" \
	"          \"modify_ldt\", \"vhangup\", \"uselib\", \"_sysctl\", \"nfsservctl\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"allowed by the rules below only with Docker's values\",\n" \
	"        \"names\": [\n" \
	"          \"personality\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"allowed by the rule below only without namespace flags\",\n" \
	"        \"names\": [\n" \
	"          \"clone\"\n" \
	"        ],\n" \
	"        \"errno\": \"EPERM\"\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"glibc falls back to clone on ENOSYS, as with Docker\",\n" \
	"        \"names\": [\n" \
	"          \"clone3\"\n" \
	"        ],\n" \
	"        \"errno\": \"ENOSYS\"\n"

/* "rules": clone, personality and tty ioctl rules; ends opening the next rule */
#define RULES_COMMON \
	"    \"rules\": [\n" \
	"      {\n" \
	"        \"comment\": \"clone without CLONE_NEW{NS,UTS,IPC,USER,PID,NET,CGROUP,TIME}\",\n" \
	"        \"names\": [\"clone\"],\n" \
	"        \"action\": \"allow\",\n" \
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0x7e020080\", \"value\": 0}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"personality(PER_LINUX)\",\n" \
	"        \"names\": [\"personality\"],\n" \
	"        \"action\": \"allow\",\n" \
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": 0}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"personality(UNAME26)\",\n" \
	"        \"names\": [\"personality\"],\n" \
	"        \"action\": \"allow\",\n" \
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": 8}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"personality(ADDR_NO_RANDOMIZE)\",\n" \
	"        \"names\": [\"personality\"],\n" \
	"        \"action\": \"allow\",\n" \
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": \"0x20000\"}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"personality(UNAME26|ADDR_NO_RANDOMIZE)\",\n" \
	"        \"names\": [\"personality\"],\n" \
	"        \"action\": \"allow\",\n" \
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": \"0x20008\"}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"personality(query)\",\n" \
	"        \"names\": [\"personality\"],\n" \
	"        \"action\": \"allow\",\n" \
	"        \"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": \"0xffffffff\"}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"TIOCSTI on the low 32 bits, as the kernel reads it (CVE-2019-10063)\",\n" \
	"        \"names\": [\"ioctl\"],\n" \
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n" \
	"        \"args\": [{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": \"0x5412\"}]\n" \
	"      },\n" \
	"      {\n" \
	"        \"comment\": \"TIOCLINUX on the low 32 bits, as the kernel reads it (CVE-2019-10063)\",\n" \
	"        \"names\": [\"ioctl\"],\n" \
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n" \
	"        \"args\": [{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": \"0x541c\"}]\n" \
	"      },\n" \
	"      {\n"

static const char DEFAULT_JSON[] =
	"{\n"
	"  \"description\": \"an allowlist no weaker than Docker's default seccomp profile; "
	"limits not set here or on the command line default to memory 4G (where a cgroup "
	"enforces it) and pids 1024, 0 lifts them\",\n"
	"  \"network\": {\"mode\": \"none\"},\n"
	SECCOMP_HEAD
	ALLOW_UNTIL_SOCKET
	"\"socket\", \"socketpair\", "
	ALLOW_AFTER_SOCKET
	DENY_GROUPS
	"      }\n"
	"    ],\n"
	RULES_COMMON
	"        \"comment\": \"AF_KEY\",\n"
	"        \"names\": [\"socket\", \"socketpair\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EAFNOSUPPORT\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 15}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_PACKET\",\n"
	"        \"names\": [\"socket\", \"socketpair\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EAFNOSUPPORT\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 17}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_ALG\",\n"
	"        \"names\": [\"socket\", \"socketpair\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EAFNOSUPPORT\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 38}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_VSOCK\",\n"
	"        \"names\": [\"socket\", \"socketpair\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EAFNOSUPPORT\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 40}]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_INET SOCK_RAW\",\n"
	"        \"names\": [\"socket\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"        \"args\": [\n"
	"          {\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 2},\n"
	"          {\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xf\", \"value\": 3}\n"
	"        ]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_INET SOCK_PACKET\",\n"
	"        \"names\": [\"socket\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"        \"args\": [\n"
	"          {\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 2},\n"
	"          {\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xf\", \"value\": 10}\n"
	"        ]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_INET6 SOCK_RAW\",\n"
	"        \"names\": [\"socket\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"        \"args\": [\n"
	"          {\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 10},\n"
	"          {\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xf\", \"value\": 3}\n"
	"        ]\n"
	"      },\n"
	"      {\n"
	"        \"comment\": \"AF_INET6 SOCK_PACKET\",\n"
	"        \"names\": [\"socket\"],\n"
	"        \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"        \"args\": [\n"
	"          {\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 10},\n"
	"          {\"arg\": 1, \"op\": \"masked_eq\", \"mask\": \"0xf\", \"value\": 10}\n"
	"        ]\n"
	"      }\n"
	"    ]\n"
	"  }\n"
	"}\n";

static const char STRICT_JSON[] =
	"{\n"
	"  \"description\": \"default, plus AF_UNIX sockets only, tight limits, no writable binds\",\n"
	"  \"network\": {\"mode\": \"none\"},\n"
	"  \"limits\": {\"memory\": \"512M\", \"pids\": 64, \"timeout\": 60, \"disk\": \"256M\"},\n"
	"  \"no_writable_binds\": true,\n"
	"  \"landlock\": {\"connect\": \"proxy\"},\n"
	SECCOMP_HEAD
	ALLOW_UNTIL_SOCKET
	ALLOW_AFTER_SOCKET
	DENY_GROUPS
	"      },\n"
	"      {\n"
	"        \"comment\": \"allowed by the rule below for AF_UNIX only\",\n"
	"        \"names\": [\n"
	"          \"socket\", \"socketpair\"\n"
	"        ],\n"
	"        \"errno\": \"EAFNOSUPPORT\"\n"
	"      }\n"
	"    ],\n"
	RULES_COMMON
	"        \"comment\": \"AF_UNIX only\",\n"
	"        \"names\": [\"socket\", \"socketpair\"],\n"
	"        \"action\": \"allow\",\n"
	"        \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 1}]\n"
	"      }\n"
	"    ]\n"
	"  }\n"
	"}\n";

const struct pol_builtin policy_builtins[] = {
	{"default", "allowlist seccomp filter no weaker than Docker's, loopback only",
	 DEFAULT_JSON},
	{"strict", "default + AF_UNIX sockets only, 512M, 64 pids, 60 s, 256M disk, "
		   "read-only binds",
	 STRICT_JSON},
};
const size_t policy_nbuiltins = SC_ARRAY_LEN(policy_builtins);
