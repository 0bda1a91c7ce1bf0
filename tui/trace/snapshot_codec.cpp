#include "tui/trace/snapshot_codec.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::trace {

void encode_meta(ByteWriter& w, const TraceMeta& m) {
  w.str(m.tool_version);
  w.str(m.hostname);
  w.str(m.kernel);
  w.str(m.target);
  w.str(m.attach_mode);
  w.u8(static_cast<uint8_t>(m.source));
  w.varint(m.ncpus);
  w.varint(m.interval_ns);
  w.varint(m.start_boottime_ns);
  w.varint(m.start_realtime_ns);
  size_t npids = m.pids.size() < kMaxListItems ? m.pids.size() : kMaxListItems;
  w.varint(npids);
  for (size_t i = 0; i < npids; ++i) w.varint(m.pids[i]);
  w.str(m.comm);
  size_t nwords = m.command.size() < kMaxListItems ? m.command.size() : kMaxListItems;
  w.varint(nwords);
  for (size_t i = 0; i < nwords; ++i) w.str(m.command[i]);
  w.str(m.runtime);  // minor 2
}

namespace {

bool decode_source(ByteReader& r, snapshot::Source* s) {
  uint8_t v = r.u8();
  if (v > static_cast<uint8_t>(snapshot::Source::procfs)) return false;
  *s = static_cast<snapshot::Source>(v);
  return true;
}

}  // namespace

bool decode_meta(ByteReader& r, TraceMeta& m) {
  m.tool_version = r.str();
  m.hostname = r.str();
  m.kernel = r.str();
  m.target = r.str();
  m.attach_mode = r.str();
  if (!decode_source(r, &m.source)) return false;
  m.ncpus = r.varint32();
  m.interval_ns = r.varint();
  m.start_boottime_ns = r.varint();
  m.start_realtime_ns = r.varint();
  size_t npids = r.count(kMaxListItems);
  for (size_t i = 0; i < npids && r.ok(); ++i) m.pids.push_back(r.varint32());
  m.comm = r.str();
  size_t nwords = r.count(kMaxListItems);
  for (size_t i = 0; i < nwords && r.ok(); ++i) m.command.push_back(r.str());
  if (r.ok() && r.remaining() > 0) m.runtime = r.str();  // minor 2
  return r.ok();  // trailing bytes: fields a newer minor version appended
}

namespace {

// Where each version of the format put a thread's quantities. The field list (thread_fields.hpp)
// is in the format's order, and falls in three runs:
//   1.0: the entries before cpu_overflow, in each thread's record (encode_thread);
//   1.1: cpu_overflow, after the pairs, as (thread index, count) for the threads that have any;
//   1.2: the entries after it, after that, for the threads that have any, with their number
//        (encode_minor2_tail), so that a later minor may append counters, which an older reader
//        drops, and an older file has fewer, which read as 0.
// What a recording older than a run lacks reads as the producer lacking it: its counters 0, and
// for the 1.2 run the snapshot's fields without the wait split.

// The field list as the codec counts it: its length, and where a name and the last entry that
// is not a counter stand.
struct ListShape {
  std::string_view find;
  size_t entries = 0, found = SIZE_MAX, last_non_counter = 0;
  constexpr void entry(const char* name, bool counter) {
    if (name == find) found = entries;
    if (!counter) last_non_counter = entries;
    ++entries;
  }
  constexpr void counter(uint64_t snapshot::ThreadSample::*, const char* name) { entry(name, true); }
  constexpr void maximum(uint64_t snapshot::ThreadSample::*, const char* name) { entry(name, false); }
  template <size_t N>
  constexpr void hist(std::array<uint64_t, N> snapshot::ThreadSample::*, const char* name) { entry(name, false); }
  constexpr void per_cpu(std::vector<uint64_t> snapshot::ThreadSample::*, const char* name) { entry(name, false); }
};
constexpr ListShape list_shape(std::string_view find) {
  ListShape shape{find};
  snapshot::for_each_thread_field(shape);
  return shape;
}

constexpr ListShape kList = list_shape("cpu_overflow");
constexpr size_t kMinor1Field = kList.found;      // the 1.0 run is the entries before it
constexpr size_t kMinor2First = kMinor1Field + 1;
constexpr size_t kMinor2Fields = kList.entries - kMinor2First;
static_assert(kMinor1Field == 23, "1.0 stored 23 quantities in a thread's record: append to the field list, "
                                  "never insert");
static_assert(kList.last_non_counter < kMinor1Field, "the 1.1 and 1.2 runs store counters only");

// Passes the entries [first, end) of the field list on to v, and no others.
template <typename Visitor>
struct Run {
  Visitor v;
  size_t first, end;
  size_t i = 0;

  bool take() {
    const bool in = first <= i && i < end;
    ++i;
    return in;
  }
  void counter(uint64_t snapshot::ThreadSample::*m, const char* name) {
    if (take()) v.counter(m, name);
  }
  void maximum(uint64_t snapshot::ThreadSample::*m, const char* name) {
    if (take()) v.maximum(m, name);
  }
  template <size_t N>
  void hist(std::array<uint64_t, N> snapshot::ThreadSample::*m, const char* name) {
    if (take()) v.hist(m, name);
  }
  void per_cpu(std::vector<uint64_t> snapshot::ThreadSample::*m, const char* name) {
    if (take()) v.per_cpu(m, name);
  }
};
template <typename Visitor>
Run<Visitor> minor0_run(Visitor v) { return {v, 0, kMinor1Field}; }
template <typename Visitor>
Run<Visitor> minor2_run(Visitor v) { return {v, kMinor2First, kList.entries}; }

// A visitor of the 1.2 run, which holds counters only (asserted above): the other kinds never come.
struct CountersOnly {
  void maximum(uint64_t snapshot::ThreadSample::*, const char*) {}
  template <size_t N>
  void hist(std::array<uint64_t, N> snapshot::ThreadSample::*, const char*) {}
  void per_cpu(std::vector<uint64_t> snapshot::ThreadSample::*, const char*) {}
};

// The field list's quantities, in its order (which is the format's).
struct EncodeFields {
  ByteWriter& w;
  const snapshot::ThreadSample& t;

  void counter(uint64_t snapshot::ThreadSample::*m, const char*) { w.varint(t.*m); }
  void maximum(uint64_t snapshot::ThreadSample::*m, const char*) { w.varint(t.*m); }
  template <size_t N>
  void hist(std::array<uint64_t, N> snapshot::ThreadSample::*m, const char*) { w.hist(t.*m); }
  void per_cpu(std::vector<uint64_t> snapshot::ThreadSample::*m, const char*) { w.list(t.*m); }
};

// What a snapshot may still keep (the kKeep* caps) and what the caps cut so far.
struct Keep {
  size_t cpu_slots = kKeepCpuSlotsPerSnapshot;  // reset per snapshot
  TraceContents* out = nullptr;                 // cut_* counters
};

// Per-CPU entries kept: each list is cut at kKeepCpusPerList, and all lists of one snapshot
// share kKeepCpuSlotsPerSnapshot, so that a small body cannot inflate to gigabytes of counters.
void cpu_list(ByteReader& r, std::vector<uint64_t>& v, Keep& keep) {
  const size_t dropped = r.list(v, kMaxCpusInTrace, std::min<size_t>(kKeepCpusPerList, keep.cpu_slots));
  keep.cpu_slots -= v.size();
  if (keep.out) keep.out->cut_cpu_slots += dropped;
}

// The same quantities read back, in the same order.
struct DecodeFields {
  ByteReader& r;
  snapshot::ThreadSample& t;
  Keep& keep;

  void counter(uint64_t snapshot::ThreadSample::*m, const char*) { t.*m = r.varint(); }
  void maximum(uint64_t snapshot::ThreadSample::*m, const char*) { t.*m = r.varint(); }
  template <size_t N>
  void hist(std::array<uint64_t, N> snapshot::ThreadSample::*m, const char*) { r.hist(t.*m); }
  void per_cpu(std::vector<uint64_t> snapshot::ThreadSample::*m, const char*) { cpu_list(r, t.*m, keep); }
};

// Field order is the format (docs/trace-format.md, "SNAP"); decode_thread below reads it. The
// entries from cpu_overflow on go after the pairs (encode_snapshot).
void encode_thread(ByteWriter& w, const snapshot::ThreadSample& t) {
  w.varint(t.tid);
  w.varint(t.pid);
  w.str(t.comm);
  w.u8(t.exited ? 1 : 0);
  w.varint(t.first_seen_ns);
  w.varint(t.last_cpu);
  snapshot::for_each_thread_field(minor0_run(EncodeFields{w, t}));
}

// Reads what encode_thread wrote, field by field; the entries from cpu_overflow on come from
// after the pairs (decode_snapshot).
bool decode_thread(ByteReader& r, snapshot::ThreadSample& t, Keep& keep) {
  t.tid = r.varint32();
  t.pid = r.varint32();
  t.comm = r.str();
  uint8_t flags = r.u8();
  if (flags > 1) return false;
  t.exited = flags == 1;
  t.first_seen_ns = r.varint();
  t.last_cpu = r.varint32();
  snapshot::for_each_thread_field(minor0_run(DecodeFields{r, t, keep}));
  return r.ok();
}

void encode_pair(ByteWriter& w, const snapshot::PairSample& p) {
  w.varint(p.tid);
  w.u8(static_cast<uint8_t>(p.kind));
  w.varint(p.other_tid);
  w.varint(p.other_pid);
  w.str(p.other_comm);
  w.varint(p.count);
  w.varint(p.ns);
}

bool decode_pair(ByteReader& r, snapshot::PairSample& p) {
  p.tid = r.varint32();
  uint8_t kind = r.u8();
  if (kind != PLATOON_PAIR_PREEMPTED_BY && kind != PLATOON_PAIR_WOKEN_BY) return false;
  p.kind = static_cast<snapshot::PairKind>(kind);
  p.other_tid = r.varint32();
  p.other_pid = r.varint32();
  p.other_comm = r.str();
  p.count = r.varint();
  p.ns = r.varint();
  return r.ok();
}

struct AnyCounter : CountersOnly {
  const snapshot::ThreadSample& t;
  bool& any;
  AnyCounter(const snapshot::ThreadSample& sample, bool& result) : t(sample), any(result) {}
  void counter(uint64_t snapshot::ThreadSample::*m, const char*) { any = any || t.*m != 0; }
};

bool any_tail_field(const snapshot::ThreadSample& t) {
  bool any = false;
  snapshot::for_each_thread_field(minor2_run(AnyCounter{t, any}));
  return any;
}

// Minor 2, after the minor-1 tail: the 1.2 run of the threads that have any, the machine's
// per-CPU times, the CPU cgroups and which thread is in which.
void encode_minor2_tail(ByteWriter& w, const snapshot::Snapshot& s) {
  w.varint(kMinor2Fields);
  size_t with_tail = 0;
  for (const auto& t : s.threads) with_tail += any_tail_field(t);
  w.varint(with_tail);
  for (size_t i = 0; i < s.threads.size(); ++i) {
    if (!any_tail_field(s.threads[i])) continue;
    w.varint(i);
    snapshot::for_each_thread_field(minor2_run(EncodeFields{w, s.threads[i]}));
  }
  w.varint(s.tick_ns);
  const size_t ncpus = std::min<size_t>(s.cpus.size(), kMaxCpusInTrace);
  w.varint(ncpus);
  for (size_t i = 0; i < ncpus; ++i) {
    const snapshot::CpuTimes& c = s.cpus[i];
    for (uint64_t v : {uint64_t{c.cpu}, c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal})
      w.varint(v);
  }
  const size_t ngroups = std::min<size_t>(s.cgroups.size(), kMaxListItems);
  w.varint(ngroups);
  for (size_t i = 0; i < ngroups; ++i) {
    const snapshot::CgroupCpu& g = s.cgroups[i];
    w.str(g.path);
    w.u8(g.version);
    w.varint(g.quota_us < 0 ? 0 : uint64_t(g.quota_us) + 1);  // 0: no limit
    for (uint64_t v : {g.period_us, g.nr_periods, g.nr_throttled, g.throttled_ns, g.usage_ns}) w.varint(v);
  }
  std::vector<std::pair<size_t, size_t>> member;  // (thread index, cgroup index)
  for (size_t i = 0; i < s.threads.size(); ++i) {
    if (s.threads[i].cgroup.empty()) continue;
    auto g = std::lower_bound(s.cgroups.begin(), s.cgroups.begin() + static_cast<std::ptrdiff_t>(ngroups),
                              s.threads[i].cgroup, [](const snapshot::CgroupCpu& c, const std::string& p) { return c.path < p; });
    if (g != s.cgroups.begin() + static_cast<std::ptrdiff_t>(ngroups) && g->path == s.threads[i].cgroup)
      member.emplace_back(i, size_t(g - s.cgroups.begin()));
  }
  w.varint(member.size());
  for (auto [t, g] : member) {
    w.varint(t);
    w.varint(g);
  }
}

// The 1.2 run of one thread, by position: a newer minor may store more than this version
// knows (read and dropped), an older one fewer (left 0).
struct DecodeTail : CountersOnly {
  const std::vector<uint64_t>& values;
  snapshot::ThreadSample& t;
  size_t i = 0;
  DecodeTail(const std::vector<uint64_t>& stored, snapshot::ThreadSample& sample) : values(stored), t(sample) {}
  void counter(uint64_t snapshot::ThreadSample::*m, const char*) {
    if (i < values.size()) t.*m = values[i];
    ++i;
  }
};

// Reads what encode_minor2_tail wrote.
bool decode_minor2_tail(ByteReader& r, snapshot::Snapshot& s, size_t nthreads, Keep& keep) {
  const size_t nfields = r.count(kMaxListItems);
  const size_t with_tail = r.count(kMaxThreadsPerSnapshot);
  std::vector<uint64_t> values(nfields);
  for (size_t i = 0; i < with_tail && r.ok(); ++i) {
    const uint64_t index = r.varint();
    for (auto& v : values) v = r.varint();
    if (index >= nthreads) return false;
    if (index < s.threads.size()) snapshot::for_each_thread_field(minor2_run(DecodeTail{values, s.threads[index]}));
  }
  s.tick_ns = r.varint();
  const size_t ncpus = r.count(kMaxCpusInTrace);
  for (size_t i = 0; i < ncpus && r.ok(); ++i) {
    snapshot::CpuTimes c;
    c.cpu = r.varint32();
    for (uint64_t* v : {&c.user, &c.nice, &c.system, &c.idle, &c.iowait, &c.irq, &c.softirq, &c.steal}) *v = r.varint();
    if (i < std::min<size_t>(kKeepCpusPerList, keep.cpu_slots)) s.cpus.push_back(c);
    else if (keep.out) ++keep.out->cut_cpu_slots;
  }
  keep.cpu_slots -= std::min(keep.cpu_slots, s.cpus.size());
  const size_t ngroups = r.count(kMaxListItems);
  for (size_t i = 0; i < ngroups && r.ok(); ++i) {
    snapshot::CgroupCpu g;
    g.path = r.str();
    g.version = r.u8();
    const uint64_t quota = r.varint();
    g.quota_us = quota == 0 || quota - 1 > uint64_t(INT64_MAX) ? -1 : int64_t(quota - 1);
    for (uint64_t* v : {&g.period_us, &g.nr_periods, &g.nr_throttled, &g.throttled_ns, &g.usage_ns}) *v = r.varint();
    s.cgroups.push_back(std::move(g));
  }
  const size_t members = r.count(kMaxThreadsPerSnapshot);
  for (size_t i = 0; i < members && r.ok(); ++i) {
    const uint64_t t = r.varint();
    const uint64_t g = r.varint();
    if (t >= nthreads || g >= s.cgroups.size()) return false;
    if (t < s.threads.size()) s.threads[t].cgroup = s.cgroups[g].path;
  }
  if (!r.ok()) return false;
  std::sort(s.cgroups.begin(), s.cgroups.end(), [](const snapshot::CgroupCpu& a, const snapshot::CgroupCpu& b) { return a.path < b.path; });
  return true;
}

}  // namespace

bool encode_snapshot(ByteWriter& w, const snapshot::Snapshot& s, std::string* why) {
  if (s.threads.size() > kMaxThreadsPerSnapshot || s.pairs.size() > kMaxPairsPerSnapshot) {
    *why = "snapshot has more threads or pairs than the format allows";
    return false;
  }
  w.varint(s.ts_ns);
  w.u8(static_cast<uint8_t>(s.source));
  w.varint(s.fields);
  w.varint(s.untracked_threads);
  w.varint(s.lost_pairs);
  w.varint(s.lost_targets);
  w.list(s.lost_events_per_cpu);
  w.varint(s.threads.size());
  for (const auto& t : s.threads) encode_thread(w, t);
  w.varint(s.pairs.size());
  for (const auto& p : s.pairs) encode_pair(w, p);
  // Minor 1, after everything a 1.0 reader reads (it ignores trailing bytes): switch-ins on
  // CPUs beyond the kernel's per-thread slots, as (thread index, count) for the threads that have any.
  size_t with_overflow = 0;
  for (const auto& t : s.threads) with_overflow += t.cpu_overflow > 0;
  w.varint(with_overflow);
  for (size_t i = 0; i < s.threads.size(); ++i) {
    if (s.threads[i].cpu_overflow == 0) continue;
    w.varint(i);
    w.varint(s.threads[i].cpu_overflow);
  }
  encode_minor2_tail(w, s);
  return true;
}

bool decode_snapshot(ByteReader& r, snapshot::Snapshot& s, TraceContents& out) {
  Keep keep{kKeepCpuSlotsPerSnapshot, &out};
  s.ts_ns = r.varint();
  if (!decode_source(r, &s.source)) return false;
  // Bits this version does not know are dropped: a newer minor version may add fields.
  s.fields = r.varint32() & snapshot::kFieldsBpf;
  s.untracked_threads = r.varint();
  s.lost_pairs = r.varint();
  s.lost_targets = r.varint();
  cpu_list(r, s.lost_events_per_cpu, keep);
  // Items past a kKeep* cap are still decoded (the body must be valid) into a scratch value
  // that keeps no per-CPU entries, then dropped.
  snapshot::ThreadSample thread_scratch;
  Keep no_slots{0, nullptr};  // a dropped thread's counters are not counted on their own
  size_t nthreads = r.count(kMaxThreadsPerSnapshot);
  s.threads.reserve(std::min<size_t>(nthreads, kKeepThreadsPerSnapshot));
  for (size_t i = 0; i < nthreads && r.ok(); ++i) {
    const bool kept = i < kKeepThreadsPerSnapshot;
    if (!decode_thread(r, kept ? s.threads.emplace_back() : thread_scratch, kept ? keep : no_slots)) return false;
    if (!kept) ++out.cut_threads;
  }
  snapshot::PairSample pair_scratch;
  size_t npairs = r.count(kMaxPairsPerSnapshot);
  s.pairs.reserve(std::min<size_t>(npairs, kKeepPairsPerSnapshot));
  for (size_t i = 0; i < npairs && r.ok(); ++i) {
    const bool kept = i < kKeepPairsPerSnapshot;
    if (!decode_pair(r, kept ? s.pairs.emplace_back() : pair_scratch)) return false;
    if (!kept) ++out.cut_pairs;
  }
  if (!r.ok()) return false;
  // Minor 1: per-thread switch-ins beyond the kernel's CPU slots (absent in 1.0 files).
  if (r.remaining() > 0) {
    const size_t n = r.count(kMaxThreadsPerSnapshot);
    for (size_t i = 0; i < n && r.ok(); ++i) {
      const uint64_t index = r.varint();
      const uint64_t overflow = r.varint();
      if (index >= nthreads) return false;
      if (index < s.threads.size()) s.threads[index].cpu_overflow = overflow;
    }
    if (!r.ok()) return false;
  }
  if (r.remaining() == 0) s.fields &= ~uint32_t{snapshot::kFieldWaitSplit | snapshot::kFieldWaitIrq};  // a file before 1.2
  else if (!decode_minor2_tail(r, s, nthreads, keep)) return false;
  // The model promises threads sorted by tid; consumers binary-search on it.
  auto by_tid = [](const snapshot::ThreadSample& a, const snapshot::ThreadSample& b) { return a.tid < b.tid; };
  if (!std::is_sorted(s.threads.begin(), s.threads.end(), by_tid))
    std::stable_sort(s.threads.begin(), s.threads.end(), by_tid);
  return true;
}

}  // namespace platoon::trace
