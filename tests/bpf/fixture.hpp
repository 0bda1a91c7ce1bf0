// The common part of the collector suites: root and BTF or skip, open a collector on this
// process (or on what the options name), find a thread in a snapshot.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>

#include "bpf/collectors/collector.hpp"
#include "tests/bpf/workloads.hpp"

namespace platoon::bpf::testing {

inline uint64_t lost(const model::Snapshot& s) {
  return std::accumulate(s.lost_events_per_cpu.begin(), s.lost_events_per_cpu.end(), uint64_t{0});
}

inline const model::ThreadSample* find(const model::Snapshot& s, pid_t tid) {
  for (const auto& t : s.threads)
    if (t.tid == static_cast<uint32_t>(tid)) return &t;
  return nullptr;
}

class BpfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF)";
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "kernel has no BTF";
  }
  void TearDown() override {
    unsetenv("PLATOON_INJECT_LOAD_FAIL");
    platoon::testing::unpin();
  }

  std::unique_ptr<Collector> open(CollectorOptions o = {}) {
    if (o.pids.empty() && o.comm.empty()) o.pids = {getpid()};
    OpenError kind = OpenError::none;
    std::string message;
    auto c = Collector::open(o, &kind, &message);
    EXPECT_TRUE(c) << message;
    return c;
  }
};

}  // namespace platoon::bpf::testing
