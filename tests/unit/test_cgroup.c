/* The pure parts of runtime/cgroup*: mountinfo and /proc/self/cgroup lines,
 * controller lists, cpu.max, flat-keyed files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/cgroup_probe.h"

static void mountinfo_v2_line(void **state)
{
	struct cg_mountinfo mi;
	assert_int_equal(rt_cg_parse_mountinfo_line("40 30 0:37 / /sys/fs/cgroup/unified rw,relatime "
						 "shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
						 &mi),
			 0);
	assert_string_equal(mi.root, "/");
	assert_string_equal(mi.point, "/sys/fs/cgroup/unified");
	assert_string_equal(mi.fstype, "cgroup2");
	assert_string_equal(mi.superopts, "rw,nsdelegate");
}

static void mountinfo_no_optional_fields(void **state)
{
	struct cg_mountinfo mi;
	assert_int_equal(rt_cg_parse_mountinfo_line(
				 "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
				 &mi),
			 0);
	assert_string_equal(mi.fstype, "cgroup");
	assert_true(rt_cg_v1_has_controller(mi.superopts));
}

static void mountinfo_escaped_point(void **state)
{
	struct cg_mountinfo mi;
	assert_int_equal(rt_cg_parse_mountinfo_line("1 2 0:3 /sub /mnt/my\\040cg\\134x rw - cgroup2 none rw",
						 &mi),
			 0);
	assert_string_equal(mi.root, "/sub");
	assert_string_equal(mi.point, "/mnt/my cg\\x");
}

static void mountinfo_malformed(void **state)
{
	struct cg_mountinfo mi;
	assert_int_equal(rt_cg_parse_mountinfo_line("", &mi), -1);
	assert_int_equal(rt_cg_parse_mountinfo_line("1 2 0:3 / /x rw shared:1", &mi), -1);
	assert_int_equal(rt_cg_parse_mountinfo_line("1 2 0:3 / /x rw - cgroup2", &mi), -1);
	/* a field longer than any path */
	char *big = malloc(2 * PATH_MAX);
	memset(big, 'a', 2 * PATH_MAX - 1);
	big[2 * PATH_MAX - 1] = '\0';
	memcpy(big, "1 2 0:3 / /", 11);
	assert_int_equal(rt_cg_parse_mountinfo_line(big, &mi), -1);
	free(big);
}

static void v1_systemd_only_is_not_a_controller(void **state)
{
	assert_false(rt_cg_v1_has_controller("rw,xattr,name=systemd"));
	assert_false(rt_cg_v1_has_controller("rw,cpuset_v2_mode"));
	assert_true(rt_cg_v1_has_controller("rw,cpu,cpuacct"));
	assert_true(rt_cg_v1_has_controller("rw,nsdelegate,pids"));
}

static void v1_controllers(void **state)
{
	assert_int_equal(rt_cg_v1_controllers("rw,memory"), CG_CTRL_MEMORY);
	assert_int_equal(rt_cg_v1_controllers("rw,cpu,cpuacct"), CG_CTRL_CPU);
	assert_int_equal(rt_cg_v1_controllers("rw,cpuacct"), 0);
	assert_int_equal(rt_cg_v1_controllers("rw,cpuset"), 0);
	assert_int_equal(rt_cg_v1_controllers("rw,pids,memory"), CG_CTRL_PIDS | CG_CTRL_MEMORY);
	assert_int_equal(rt_cg_v1_controllers("rw,xattr,name=systemd"), 0);
	assert_int_equal(rt_cg_v1_controllers(""), 0);
	assert_int_equal(CG_CTRL_INDEX(CG_CTRL_MEMORY), 0);
	assert_int_equal(CG_CTRL_INDEX(CG_CTRL_PIDS), 1);
	assert_int_equal(CG_CTRL_INDEX(CG_CTRL_CPU), 2);
}

static void leaf_creator(void **state)
{
	assert_int_equal(rt_cg_leaf_creator("run-1234-5f3a"), 1234);
	assert_int_equal(rt_cg_leaf_creator("doctor-77"), 77);
	/* a long-lived cell's own name says nothing */
	assert_int_equal(rt_cg_leaf_creator("mybox"), 0);
	assert_int_equal(rt_cg_leaf_creator("run-"), 0);
	assert_int_equal(rt_cg_leaf_creator("run-0-1"), 0);
	assert_int_equal(rt_cg_leaf_creator("run-12x-1"), 0);
	assert_int_equal(rt_cg_leaf_creator("run-99999999999999999999-1"), 0);
	assert_int_equal(rt_cg_leaf_creator("doctor-12-"), 12);
}

static void self_cgroup(void **state)
{
	char p[256];
	const char *hybrid = "9:name=systemd:/\n4:memory:/x/y\n0::/user.slice/a.scope\n";
	assert_int_equal(rt_cg_parse_self_cgroup(hybrid, p, sizeof(p)), 0);
	assert_string_equal(p, "/user.slice/a.scope");
	assert_int_equal(rt_cg_parse_self_cgroup("0::/\n", p, sizeof(p)), 0);
	assert_string_equal(p, "/");
	assert_int_equal(rt_cg_parse_self_cgroup("0::/gone (deleted)\n", p, sizeof(p)), 0);
	assert_string_equal(p, "/gone");
	/* v1 only: no 0:: line */
	assert_int_equal(rt_cg_parse_self_cgroup("4:memory:/x\n1:cpu:/\n", p, sizeof(p)), -1);
	/* "10::" is not the v2 line */
	assert_int_equal(rt_cg_parse_self_cgroup("10::/x\n", p, sizeof(p)), -1);
	assert_int_equal(rt_cg_parse_self_cgroup("0::relative\n", p, sizeof(p)), -1);
	assert_int_equal(rt_cg_parse_self_cgroup("0::/a/very/long/path\n", p, 8), -1);
}

static void controllers(void **state)
{
	assert_int_equal(rt_cg_parse_controllers("cpuset cpu io memory hugetlb pids rdma misc\n"),
			 CG_CTRL_ALL);
	assert_int_equal(rt_cg_parse_controllers("hugetlb\n"), 0);
	assert_int_equal(rt_cg_parse_controllers(""), 0);
	/* prefixes are not controllers */
	assert_int_equal(rt_cg_parse_controllers("cpuset memoryx pid"), 0);
	assert_int_equal(rt_cg_parse_controllers("memory pids"), CG_CTRL_MEMORY | CG_CTRL_PIDS);

	char names[64];
	rt_cg_ctrl_names(CG_CTRL_MEMORY | CG_CTRL_CPU, names, sizeof(names));
	assert_string_equal(names, "memory cpu");
	rt_cg_ctrl_names(0, names, sizeof(names));
	assert_string_equal(names, "none");
}

static void cpu_max(void **state)
{
	char b[64];
	assert_int_equal(rt_cg_format_cpu_max(0.5, b, sizeof(b)), 0);
	assert_string_equal(b, "50000 100000");
	assert_int_equal(rt_cg_format_cpu_max(2, b, sizeof(b)), 0);
	assert_string_equal(b, "200000 100000");
	assert_int_equal(rt_cg_format_cpu_max(0.001, b, sizeof(b)), 0);
	assert_string_equal(b, "1000 100000");
	assert_int_equal(rt_cg_format_cpu_max(1.333333, b, sizeof(b)), 0);
	assert_string_equal(b, "133333 100000");
	assert_int_equal(rt_cg_format_cpu_max(0, b, sizeof(b)), -1);
	assert_int_equal(rt_cg_format_cpu_max(-1, b, sizeof(b)), -1);
	assert_int_equal(rt_cg_format_cpu_max(5000, b, sizeof(b)), -1);
	assert_int_equal(rt_cg_format_cpu_max(1, b, 5), -1);
	/* the same quota for v1's cpu.cfs_quota_us */
	assert_int_equal(rt_cg_cpu_quota_us(0.5), 50000);
	assert_int_equal(rt_cg_cpu_quota_us(0.001), 1000);
	assert_int_equal(rt_cg_cpu_quota_us(0), -1);
	assert_int_equal(rt_cg_cpu_quota_us(5000), -1);
}

static void keyed(void **state)
{
	uint64_t v = 0;
	const char *events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
	assert_int_equal(rt_cg_parse_keyed(events, "oom_kill", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rt_cg_parse_keyed(events, "oom", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rt_cg_parse_keyed(events, "max", &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(rt_cg_parse_keyed(events, "oom_group", &v), -1);
	assert_int_equal(rt_cg_parse_keyed("usage_usec 4200123\nuser_usec 1", "usage_usec", &v), 0);
	assert_int_equal(v, 4200123);
	assert_int_equal(rt_cg_parse_keyed("user_usec 1\n", "usec", &v), -1);
	assert_int_equal(rt_cg_parse_keyed("populated 0\nfrozen 0\n", "populated", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(rt_cg_parse_keyed("max -1\n", "max", &v), -1);
	assert_int_equal(rt_cg_parse_keyed("max 12x\n", "max", &v), -1);
	assert_int_equal(rt_cg_parse_keyed("max 99999999999999999999999\n", "max", &v), -1);
}

static void leaf_names(void **state)
{
	assert_true(rt_cg_valid_leaf_name("run-1234-abcd"));
	assert_true(rt_cg_valid_leaf_name("my_cell.2"));
	assert_false(rt_cg_valid_leaf_name(""));
	assert_false(rt_cg_valid_leaf_name("."));
	assert_false(rt_cg_valid_leaf_name(".."));
	assert_false(rt_cg_valid_leaf_name("../x"));
	assert_false(rt_cg_valid_leaf_name("a/b"));
	assert_false(rt_cg_valid_leaf_name("a b"));
	char big[200];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_false(rt_cg_valid_leaf_name(big));
}

static void host_status_is_consistent(void **state)
{
	/* Whatever the host is, the description must hang together. */
	struct cg_host *h = malloc(sizeof(*h));
	rt_cgroup_host_status(h);
	if (h->mode == CG_MODE_V2 || h->mode == CG_MODE_HYBRID) {
		assert_true(h->mount[0] == '/');
		assert_true(h->own[0] == '/');
	} else {
		assert_string_equal(h->mount, "");
	}
	if (!h->base[0] || !(h->delegated & CG_CTRL_ALL))
		assert_true(h->why[0] != '\0');
	/* v1 controllers are named only on v1 and hybrid hosts, with a mount */
	assert_int_equal(h->v1_writable & ~h->v1, 0);
	if (h->mode == CG_MODE_V2 || h->mode == CG_MODE_NONE)
		assert_int_equal(h->v1, 0);
	for (unsigned bit = CG_CTRL_MEMORY; bit & CG_CTRL_ALL; bit <<= 1)
		assert_true(!(h->v1 & bit) == !h->v1_mount[CG_CTRL_INDEX(bit)][0]);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mountinfo_v2_line),
		cmocka_unit_test(mountinfo_no_optional_fields),
		cmocka_unit_test(mountinfo_escaped_point),
		cmocka_unit_test(mountinfo_malformed),
		cmocka_unit_test(v1_systemd_only_is_not_a_controller),
		cmocka_unit_test(v1_controllers),
		cmocka_unit_test(leaf_creator),
		cmocka_unit_test(self_cgroup),
		cmocka_unit_test(controllers),
		cmocka_unit_test(cpu_max),
		cmocka_unit_test(keyed),
		cmocka_unit_test(leaf_names),
		cmocka_unit_test(host_status_is_consistent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
