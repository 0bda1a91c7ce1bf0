// Test support: two snapshots equal field by field, for the suites that hold a trace file or a
// replay to the snapshots that went in (trace_file_test, sources_test). The thread's quantities
// are compared by the field list (thread_fields.hpp), so a quantity added there is compared too.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::test {

// Every listed counter, maximum, histogram slot and per-CPU list equal, each failure by name.
struct ExpectEveryListedFieldEqual {
  const ThreadSample& got;
  const ThreadSample& want;
  void counter(uint64_t ThreadSample::*m, const char* name) { EXPECT_EQ(got.*m, want.*m) << name; }
  void maximum(uint64_t ThreadSample::*m, const char* name) { EXPECT_EQ(got.*m, want.*m) << name; }
  template <size_t N>
  void hist(std::array<uint64_t, N> ThreadSample::*m, const char* name) {
    for (size_t i = 0; i < N; ++i) EXPECT_EQ((got.*m)[i], (want.*m)[i]) << name << "[" << i << "]";
  }
  void per_cpu(std::vector<uint64_t> ThreadSample::*m, const char* name) { EXPECT_EQ(got.*m, want.*m) << name; }
};

// The identity and state fields, then every listed quantity.
inline void expect_same_thread(const ThreadSample& got, const ThreadSample& want) {
  SCOPED_TRACE("tid " + std::to_string(want.tid));
  EXPECT_EQ(std::tie(got.tid, got.pid, got.comm, got.exited, got.first_seen_ns, got.last_cpu, got.cgroup),
            std::tie(want.tid, want.pid, want.comm, want.exited, want.first_seen_ns, want.last_cpu, want.cgroup));
  for_each_thread_field(ExpectEveryListedFieldEqual{got, want});
}

inline void expect_same_snapshot(const Snapshot& got, const Snapshot& want) {
  EXPECT_EQ(got.ts_ns, want.ts_ns);
  EXPECT_EQ(got.source, want.source);
  EXPECT_EQ(got.fields, want.fields);
  EXPECT_EQ(got.lost_events_per_cpu, want.lost_events_per_cpu);
  EXPECT_EQ(got.untracked_threads, want.untracked_threads);
  EXPECT_EQ(got.lost_pairs, want.lost_pairs);
  EXPECT_EQ(got.lost_targets, want.lost_targets);
  EXPECT_EQ(got.tick_ns, want.tick_ns);
  ASSERT_EQ(got.cpus.size(), want.cpus.size());
  for (size_t i = 0; i < want.cpus.size(); ++i) {
    const CpuTimes &g = got.cpus[i], &w = want.cpus[i];
    EXPECT_EQ(std::tie(g.cpu, g.user, g.nice, g.system, g.idle, g.iowait, g.irq, g.softirq, g.steal),
              std::tie(w.cpu, w.user, w.nice, w.system, w.idle, w.iowait, w.irq, w.softirq, w.steal)) << "cpu " << i;
  }
  ASSERT_EQ(got.cgroups.size(), want.cgroups.size());
  for (size_t i = 0; i < want.cgroups.size(); ++i) {
    const CgroupCpu &g = got.cgroups[i], &w = want.cgroups[i];
    EXPECT_EQ(std::tie(g.path, g.version, g.quota_us, g.period_us, g.nr_periods, g.nr_throttled, g.throttled_ns, g.usage_ns),
              std::tie(w.path, w.version, w.quota_us, w.period_us, w.nr_periods, w.nr_throttled, w.throttled_ns, w.usage_ns))
        << "cgroup " << w.path;
  }
  ASSERT_EQ(got.threads.size(), want.threads.size());
  for (size_t i = 0; i < want.threads.size(); ++i) expect_same_thread(got.threads[i], want.threads[i]);
  ASSERT_EQ(got.pairs.size(), want.pairs.size());
  for (size_t i = 0; i < want.pairs.size(); ++i) {
    const PairSample &g = got.pairs[i], &w = want.pairs[i];
    EXPECT_EQ(std::tie(g.tid, g.kind, g.other_tid, g.other_pid, g.other_comm, g.count, g.ns),
              std::tie(w.tid, w.kind, w.other_tid, w.other_pid, w.other_comm, w.count, w.ns)) << "pair " << i;
  }
}

}  // namespace platoon::tests::test
