// The common part of the collector suites: root and BTF or skip, open a collector on this
// process (or on what the options name), find a thread in a snapshot.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bpf/collectors/collector.hpp"
#include "bpf/platoon.h"
#include "tests/bpf/workloads.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {

inline uint64_t lost(const snapshot::Snapshot& s) {
  return std::accumulate(s.lost_events_per_cpu.begin(), s.lost_events_per_cpu.end(), uint64_t{0});
}

// A raw ring-buffer record's header; nullopt when the record is shorter than one.
inline std::optional<platoon_event_header> header_of(const void* data, size_t size) {
  if (size < sizeof(platoon_event_header)) return std::nullopt;
  platoon_event_header h;
  std::memcpy(&h, data, sizeof h);
  return h;
}

inline const snapshot::ThreadSample* find(const snapshot::Snapshot& s, pid_t tid) {
  for (const auto& t : s.threads)
    if (t.tid == static_cast<uint32_t>(tid)) return &t;
  return nullptr;
}

// short_lived_thread_rounds (workloads.hpp) watched by `c`, a snapshot after each round: the
// threads spawned, how many of them no snapshot showed, and the last snapshot.
struct RoundsSeen {
  std::vector<uint32_t> spawned;
  size_t never = 0;
  snapshot::Snapshot last;
};
inline RoundsSeen snapshot_thread_rounds(Collector& c, int rounds, int threads, int sleeps, useconds_t us) {
  RoundsSeen r;
  std::set<uint32_t> seen;
  r.spawned = platoon::testing::short_lived_thread_rounds(rounds, threads, sleeps, us, [&] {
    r.last = c.snapshot();
    for (const auto& t : r.last.threads) seen.insert(t.tid);
  });
  for (uint32_t tid : r.spawned) r.never += seen.count(tid) == 0;
  return r;
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

}  // namespace platoon::tests::testing
