// The cgroup readers on the kernel's own text formats (v1 and v2), malformed input, a
// namespaced mount, and live on this process against /proc/self/cgroup.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "bpf/collectors/cgroup_cpu_reader.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

TEST(CgroupCpu, ProcCgroupPrefersTheV1CpuLineElseTheV2One) {
  const auto v1 = parse_proc_cgroup("9:name=systemd:/\n2:cpu,cpuacct:/kubepods/pod1/c:1\n0::/x\n");
  EXPECT_EQ(v1.version, 1);
  EXPECT_EQ(v1.path, "/kubepods/pod1/c:1");  // a ':' in the path is kept
  const auto v2 = parse_proc_cgroup("0::/system.slice/nginx.service\n");
  EXPECT_EQ(v2.version, 2);
  EXPECT_EQ(v2.path, "/system.slice/nginx.service");
  EXPECT_EQ(parse_proc_cgroup("1:cpuacct:/a\n").version, 0);  // cpuacct is not cpu
  EXPECT_EQ(parse_proc_cgroup("garbage\n:\n0::\n").version, 0);
}

TEST(CgroupCpu, MountinfoFindsBothHierarchiesAndTheirRoots) {
  const auto m = parse_mountinfo(
      "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "40 30 0:37 /pod\\0401 /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
      "32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n");
  EXPECT_EQ(m.v1_cpu, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m.v1_cpu_root, "/");
  EXPECT_EQ(m.v2, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m.v2_root, "/pod 1");  // octal escapes undone
  const auto none = parse_mountinfo("short line\n1 2 3 4 5 6 - ext4 /dev/x rw\n");
  EXPECT_TRUE(none.v1_cpu.empty());
  EXPECT_TRUE(none.v2.empty());
}

TEST(CgroupCpu, CpuStatInNsForV1AndUsecForV2) {
  CgroupCpu g1;
  parse_cpu_stat("nr_periods 10\nnr_throttled 4\nthrottled_time 123456789\nnr_bursts 0\n", 1, g1);
  EXPECT_EQ(g1.nr_periods, 10u);
  EXPECT_EQ(g1.nr_throttled, 4u);
  EXPECT_EQ(g1.throttled_ns, 123456789u);
  CgroupCpu g2;
  parse_cpu_stat("usage_usec 5000\nuser_usec 1\nnr_periods 7\nnr_throttled 3\nthrottled_usec 250\nbad line\nnr_bursts x\n", 2, g2);
  EXPECT_EQ(g2.nr_periods, 7u);
  EXPECT_EQ(g2.throttled_ns, 250'000u);
  EXPECT_EQ(g2.usage_ns, 5'000'000u);
}

TEST(CgroupCpu, CpuMaxWithAndWithoutALimit) {
  CgroupCpu g;
  ASSERT_TRUE(parse_cpu_max("20000 100000\n", g));
  EXPECT_EQ(g.quota_us, 20000);
  EXPECT_EQ(g.period_us, 100000u);
  ASSERT_TRUE(parse_cpu_max("max 50000\n", g));
  EXPECT_EQ(g.quota_us, -1);
  EXPECT_EQ(g.period_us, 50000u);
  EXPECT_FALSE(parse_cpu_max("", g));
  EXPECT_FALSE(parse_cpu_max("-5 100000", g));
  EXPECT_FALSE(parse_cpu_max("10 20 30", g));
}

TEST(CgroupCpu, ThisThreadsGroupIsWhatProcSaysAndReadable) {
  CgroupCpuReader reader;
  if (reader.version() == 0) GTEST_SKIP() << "no cgroup cpu controller on this machine";
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  const CgroupRef want = parse_proc_cgroup(text.str());
  const auto got = reader.path_of(getpid(), getpid());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, want.path);
  const auto g = reader.read(*got);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->version, reader.version());
  EXPECT_FALSE(reader.read("/no/such/group/here").has_value());
  EXPECT_TRUE(reader.directory("/../../etc").empty());  // no way out of the hierarchy
  EXPECT_FALSE(reader.path_of(-1, -1).has_value());
}

}  // namespace
}  // namespace platoon::tests
