/* Kernel attack surface a container should not reach.
 * usage: kernel keyctl|bpf|perf|io_uring|userfaultfd|modules|reboot|clock|handle|privileged [HOST_ONLY_PATH] */
#include "attack.h"

#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/userfaultfd.h>
#include <sys/sysmacros.h>
#include <sys/timex.h>
#include <time.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static void case_keyctl(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attempt("add_key(user, sc-attack) to the session keyring");
	expect_fail(syscall(SYS_add_key, "user", "sc-attack", "secret", 6, KEY_SPEC_SESSION_KEYRING));
	attempt("keyctl(KEYCTL_JOIN_SESSION_KEYRING, _ses)");
	expect_fail(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "_ses"));
	attempt("keyctl(KEYCTL_GET_KEYRING_ID, user keyring)");
	expect_fail(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
	attempt("keyctl(KEYCTL_READ, user keyring)");
	char buf[256];
	expect_fail(syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_USER_KEYRING, buf, sizeof(buf)));
	attempt("request_key(user, anything)");
	expect_fail(syscall(SYS_request_key, "user", "anything", NULL, KEY_SPEC_SESSION_KEYRING));
}

static void case_bpf(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = 1;
	attempt("bpf(BPF_MAP_CREATE, array)");
	expect_fail(syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));

	struct bpf_insn prog[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (unsigned long)prog;
	a.insn_cnt = 2;
	a.license = (unsigned long)"GPL";
	attempt("bpf(BPF_PROG_LOAD, socket filter)");
	expect_fail(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a)));
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_KPROBE;
	a.insns = (unsigned long)prog;
	a.insn_cnt = 2;
	a.license = (unsigned long)"GPL";
	attempt("bpf(BPF_PROG_LOAD, kprobe)");
	expect_fail(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a)));
}

static void case_perf(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct perf_event_attr pa;
	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = PERF_TYPE_SOFTWARE;
	pa.config = PERF_COUNT_SW_CPU_CLOCK;
	pa.disabled = 1;
	pa.exclude_kernel = 1;
	attempt("perf_event_open(software clock, this process)");
	expect_fail(syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
	attempt("perf_event_open(software clock, all processes on cpu 0)");
	expect_fail(syscall(SYS_perf_event_open, &pa, -1, 0, -1, 0));
	pa.type = PERF_TYPE_HARDWARE;
	pa.config = PERF_COUNT_HW_CPU_CYCLES;
	pa.exclude_kernel = 0;
	attempt("perf_event_open(cpu cycles with kernel, this process)");
	expect_fail(syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
}

static void case_io_uring(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	attempt("io_uring_setup(8)");
	int fd = (int)expect_fail(syscall(SYS_io_uring_setup, 8, &p));
	if (fd >= 0)
		close(fd);
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQPOLL;
	attempt("io_uring_setup(8, IORING_SETUP_SQPOLL)");
	fd = (int)expect_fail(syscall(SYS_io_uring_setup, 8, &p));
	if (fd >= 0)
		close(fd);
}

static void case_userfaultfd(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attempt("userfaultfd(O_CLOEXEC)");
	expect_fail(syscall(SYS_userfaultfd, O_CLOEXEC));
	attempt("userfaultfd(UFFD_USER_MODE_ONLY)");
	expect_fail(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
	attempt("open /dev/userfaultfd");
	expect_fail(open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
	attempt("mknod /tmp/uffd (char 10:126)");
	expect_fail(mknod("/tmp/uffd", S_IFCHR | 0666, makedev(10, 126)));
}

static void case_modules(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	static char image[512] = "\177ELF";
	attempt("init_module(fake ELF image)");
	expect_fail(syscall(SYS_init_module, image, sizeof(image), ""));
	attempt("finit_module(fd of this program)");
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	expect_fail(syscall(SYS_finit_module, fd, "", 0));
	attempt("delete_module(loop)");
	expect_fail(syscall(SYS_delete_module, "loop", O_NONBLOCK));
	attempt("write /proc/sys/kernel/modprobe");
	fd = open("/proc/sys/kernel/modprobe", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		blocked_errno(errno);
	else
		expect_fail(write(fd, "/tmp/evil\n", 10));
}

static void case_reboot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	/* CAD_ON is the kernel's default, so even success would change
	 * nothing on the host; success alone is the finding. */
	attempt("reboot(LINUX_REBOOT_CMD_CAD_ON)");
	expect_fail(syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2,
			    LINUX_REBOOT_CMD_CAD_ON, NULL));
	attempt("kexec_load(unload)");
	expect_fail(syscall(SYS_kexec_load, 0, 0, NULL, 0));
	attempt("kexec_file_load(unload)");
	expect_fail(syscall(SYS_kexec_file_load, -1, -1, 0, "", 2 /* KEXEC_FILE_UNLOAD */));
}

static void case_clock(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct timespec later = {.tv_sec = now.tv_sec + 3600, .tv_nsec = now.tv_nsec};
	attempt("clock_settime(CLOCK_REALTIME, now + 1h)");
	if (expect_fail(clock_settime(CLOCK_REALTIME, &later)) == 0) {
		clock_gettime(CLOCK_REALTIME, &later);
		later.tv_sec -= 3600;
		clock_settime(CLOCK_REALTIME, &later);
	}
	attempt("settimeofday(now + 1h)");
	struct timeval tv = {.tv_sec = now.tv_sec + 3600, .tv_usec = 0};
	if (expect_fail(syscall(SYS_settimeofday, &tv, NULL)) == 0) {
		clock_gettime(CLOCK_REALTIME, &later);
		later.tv_sec -= 3600;
		clock_settime(CLOCK_REALTIME, &later);
	}
	attempt("clock_adjtime(CLOCK_REALTIME, ADJ_SETOFFSET +1h)");
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_SETOFFSET | ADJ_NANO;
	tx.time.tv_sec = 3600;
	if (expect_fail(syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx)) >= 0) {
		tx.time.tv_sec = -3600;
		syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx);
	}
	attempt("adjtimex(ADJ_OFFSET 0.5s)");
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET;
	tx.offset = 500000;
	expect_fail(syscall(SYS_adjtimex, &tx));
}

/* "Shocker" (2014): open_by_handle_at with a guessed handle for the root
 * inode of the host's filesystem gives a descriptor outside any chroot or
 * mount namespace. */
static void case_handle(int argc, char **argv)
{
	(void)argc;
	struct {
		struct file_handle fh;
		unsigned char buf[MAX_HANDLE_SZ];
	} h;
	int mnt = 0;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	attempt("name_to_handle_at(/etc/hostname)");
	expect_fail(syscall(SYS_name_to_handle_at, AT_FDCWD, "/etc/hostname", &h.fh, &mnt, 0));

	int root = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* ext4's FILEID_INO32_GEN handle: inode 2 (a filesystem's root), generation 0 */
	unsigned ino = 2;
	h.fh.handle_bytes = 8;
	h.fh.handle_type = 1;
	memset(h.buf, 0, sizeof(h.buf));
	memcpy(h.buf, &ino, sizeof(ino));
	attempt("open_by_handle_at(ext4 inode 2, the filesystem root)");
	int fd = (int)syscall(SYS_open_by_handle_at, root, &h.fh, O_RDONLY | O_DIRECTORY);
	expect_fail(fd);
	if (fd >= 0)
		close(fd);
	probe_host_path(argv[1]);
}

static void case_privileged(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attempt("iopl(3)");
	expect_fail(syscall(SYS_iopl, 3));
	attempt("ioperm(0x80, 1, 1)");
	expect_fail(syscall(SYS_ioperm, 0x80, 1, 1));
	int fd = open("/tmp/swap", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	attempt("swapon(/tmp/swap)");
	expect_fail(syscall(SYS_swapon, "/tmp/swap", 0));
	attempt("acct(/tmp/acct)");
	expect_fail(syscall(SYS_acct, "/tmp/acct"));
	attempt("quotactl(Q_SYNC)");
	expect_fail(syscall(SYS_quotactl, 0x800001 /* QCMD(Q_SYNC, USRQUOTA) */, NULL, 0, NULL));
	attempt("syslog(SYSLOG_ACTION_SIZE_BUFFER)");
	expect_fail(syscall(SYS_syslog, 10, NULL, 0));
	attempt("sethostname(sc-attack)");
	expect_fail(sethostname("sc-attack", 9));
	attempt("personality(READ_IMPLIES_EXEC)");
	expect_fail(syscall(SYS_personality, 0x0400000));
	attempt("mknod /tmp/sda (block 8:0)");
	expect_fail(mknod("/tmp/sda", S_IFBLK | 0600, makedev(8, 0)));
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"keyctl", case_keyctl},	 {"bpf", case_bpf},
		{"perf", case_perf},		 {"io_uring", case_io_uring},
		{"userfaultfd", case_userfaultfd}, {"modules", case_modules},
		{"reboot", case_reboot},	 {"clock", case_clock},
		{"handle", case_handle},	 {"privileged", case_privileged},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
