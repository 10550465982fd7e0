/* Kernel memory, keys, firmware and logs through /proc, /sys and /dev.
 * usage: devices kcore|keys|firmware|mem|kmsg|procsys|sysrq [MARKER] */
#include "attack.h"

#include <sys/mount.h>
#include <sys/sysmacros.h>

/* Reading anything at all is the escape (an empty mask is not). */
static void try_read(const char *path)
{
	attempt("read %s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		blocked_errno(errno);
		return;
	}
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0)
		escaped("read %zd bytes", n);
	else if (n == 0)
		blocked("opened, but it is empty (masked)");
	else
		blocked_errno(errno);
	close(fd);
}

static void try_write(const char *path, const char *data)
{
	attempt("write '%s' to %s", data, path);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		blocked_errno(errno);
		return;
	}
	ssize_t n = write(fd, data, strlen(data));
	if (n > 0)
		escaped("wrote %zd bytes", n);
	else
		blocked_errno(errno);
	close(fd);
}

static void try_mknod_read(const char *path, unsigned maj, unsigned min)
{
	attempt("mknod %s (char %u:%u)", path, maj, min);
	if (mknod(path, S_IFCHR | 0600, makedev(maj, min)) < 0) {
		blocked_errno(errno);
		return;
	}
	blocked("created; the node must still be useless");
	try_read(path);
}

/* Anyone may read the symbol names; the addresses are the secret. */
static void try_kallsyms(void)
{
	attempt("read kernel addresses from /proc/kallsyms");
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f) {
		blocked_errno(errno);
		return;
	}
	char line[512];
	unsigned long long addr, nonzero = 0, lines = 0;
	while (lines < 1000 && fgets(line, sizeof(line), f)) {
		lines++;
		if (sscanf(line, "%llx", &addr) == 1 && addr)
			nonzero++;
	}
	fclose(f);
	if (nonzero)
		escaped("%llu of %llu symbols show an address", nonzero, lines);
	else
		blocked("%llu symbols, every address is 0", lines);
}

static void case_kcore(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_read("/proc/kcore");
	try_kallsyms();
	try_read("/proc/self/root/proc/kcore");
}

static void case_keys(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_read("/proc/keys");
	try_read("/proc/key-users");
	try_read("/proc/timer_list");
	try_read("/proc/sched_debug");
}

static void case_firmware(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_read("/sys/firmware/memmap/0/type");
	try_read("/sys/firmware/acpi/tables/DSDT");
	try_read("/sys/kernel/debug/kprobes/list");
	attempt("mount sysfs on /tmp/sys");
	mkdir("/tmp/sys", 0755);
	if (expect_fail(mount("sysfs", "/tmp/sys", "sysfs", 0, NULL)) == 0)
		try_read("/tmp/sys/firmware/memmap/0/type");
}

static void case_mem(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_read("/dev/mem");
	try_read("/dev/kmem");
	try_read("/dev/port");
	try_mknod_read("/tmp/mem", 1, 1);
	try_mknod_read("/tmp/port", 1, 4);
	try_mknod_read("/dev/shm/mem", 1, 1);
}

/* MARKER: a string the test then looks for in the host's kernel log. */
static void case_kmsg(int argc, char **argv)
{
	const char *marker = argc > 1 ? argv[1] : "sc-attack-kmsg";
	try_read("/dev/kmsg");
	try_read("/proc/kmsg");
	try_write("/dev/kmsg", marker);
	try_mknod_read("/tmp/kmsg", 1, 11);
	attempt("write '%s' to a new /dev/kmsg node", marker);
	int fd = open("/tmp/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		blocked_errno(errno);
	else
		expect_fail(write(fd, marker, strlen(marker)));
	attempt("syslog(SYSLOG_ACTION_READ_ALL)");
	char buf[1024];
	expect_fail(syscall(SYS_syslog, 3, buf, (int)sizeof(buf)));
}

static void case_procsys(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_write("/proc/sys/kernel/hostname", "sc-attack");
	try_write("/proc/sys/kernel/domainname", "sc-attack");
	try_write("/proc/sys/kernel/core_pattern", "|/tmp/sc-attack-core");
	try_write("/proc/sys/vm/drop_caches", "3");
	try_write("/proc/sys/kernel/randomize_va_space", "0");
	try_write("/proc/sys/net/ipv4/ip_forward", "1");
	try_write("/proc/sys/fs/binfmt_misc/register", ":scattack:E::sca::/tmp/x:");
	attempt("remount /proc/sys read-write");
	expect_fail(mount(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND, NULL));
}

static void case_sysrq(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	/* 'h' only prints the help into the kernel log. */
	try_write("/proc/sysrq-trigger", "h");
	try_write("/proc/sys/kernel/sysrq", "1");
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"kcore", case_kcore},	 {"keys", case_keys},	  {"firmware", case_firmware},
		{"mem", case_mem},	 {"kmsg", case_kmsg},	  {"procsys", case_procsys},
		{"sysrq", case_sysrq}, {NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}
