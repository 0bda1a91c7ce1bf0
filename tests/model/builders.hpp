// Test support for the model suites: synthetic threads, snapshots and windows with known
// answers, built the same way everywhere, and JSON parsed back for assertions.
#pragma once

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/analysis/window.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::test {

inline constexpr uint64_t kSec = 1'000'000'000;

// A thread as a producer first reports it: identity only, every counter 0.
inline ThreadSample thread_sample(uint32_t tid, uint32_t pid, std::string comm, uint64_t first_seen = 1) {
  ThreadSample t;
  t.tid = tid;
  t.pid = pid;
  t.comm = std::move(comm);
  t.first_seen_ns = first_seen;
  return t;
}

// A snapshot at ts holding threads, from the source that `fields` describes.
inline Snapshot snapshot_at(uint64_t ts, std::vector<ThreadSample> threads = {}, uint32_t fields = kFieldsBpf) {
  Snapshot s;
  s.ts_ns = ts;
  s.fields = fields;
  s.source = fields == kFieldsProcfs ? Source::procfs : Source::bpf;
  s.threads = std::move(threads);
  return s;
}

// Two snapshots `span` apart (10 s unless given); threads and pairs are set on the end snapshot
// as deltas. References returned stay valid until the next thread is added.
struct Scenario {
  Snapshot from, to;
  uint32_t pid = 1200;
  explicit Scenario(Source src = Source::bpf, uint64_t span = 10 * kSec) {
    const uint32_t fields = src == Source::bpf ? kFieldsBpf : kFieldsProcfs;
    from = snapshot_at(0, {}, fields);
    to = snapshot_at(span, {}, fields);
  }
  double seconds() const { return static_cast<double>(to.ts_ns - from.ts_ns) / kSec; }
  // A thread present at both ends with nothing counted yet (of process `of`, default pid).
  ThreadSample& add(uint32_t tid, const char* comm, uint32_t of = 0) {
    from.threads.push_back(thread_sample(tid, of ? of : pid, comm));
    to.threads.push_back(from.threads.back());
    return to.threads.back();
  }
  // A thread busy cpu% and waiting wait% of the span, with `ins` switch-ins spread over cpus.
  ThreadSample& thread(uint32_t tid, const char* comm, double cpu, double wait, uint64_t ins = 10000,
                       std::vector<uint64_t> cpu_ins = {}) {
    ThreadSample& t = add(tid, comm);
    t.run_ns = static_cast<uint64_t>(cpu / 100 * seconds() * kSec);
    t.wait_ns = static_cast<uint64_t>(wait / 100 * seconds() * kSec);
    t.switch_ins = ins;
    t.switches_voluntary = ins;
    t.cpu_switch_ins = cpu_ins.empty() ? std::vector<uint64_t>{0, ins} : std::move(cpu_ins);
    return t;
  }
  // A runtime carrier: a thread with epoll cycles.
  ThreadSample& carrier(uint32_t tid, const char* comm, double cpu, double wait) {
    ThreadSample& t = thread(tid, comm, cpu, wait);
    t.io_cycles = 100000;
    t.io_events = 50000;
    return t;
  }
  void pair(uint32_t tid, PairKind kind, uint32_t other, uint32_t other_pid, const char* comm, uint64_t count,
            uint64_t ns) {
    to.pairs.push_back({tid, kind, other, other_pid, comm, count, ns});
  }
  Window window() const { return make_window(from, to); }
};

// JSON text parsed back; a parse error fails the test (and the document is empty).
inline rapidjson::Document parse_json(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  EXPECT_FALSE(d.HasParseError()) << s;
  return d;
}

}  // namespace platoon::tests::test
