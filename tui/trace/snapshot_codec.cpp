#include "tui/trace/snapshot_codec.hpp"
#include "tui/trace/request_codec.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::trace {

namespace {

// The records whose fields are plain values (the meta block, a thread's head, a pair) list
// them once, in the format's order, in a function of an Io: Put writes each field and Get reads
// it back, so that the writer and the reader cannot disagree.
struct Put {
  ByteWriter& w;

  void operator()(const std::string& s) { w.str(s); }
  void operator()(uint64_t v) { w.varint(v); }
  void flag(bool b) { w.u8(b ? 1 : 0); }
  template <typename Enum>
  void code(Enum e, bool (*)(uint8_t)) { w.u8(static_cast<uint8_t>(e)); }
  // A list is cut at the format's kMaxListItems rather than making the chunk unreadable.
  template <typename T>
  void list(const std::vector<T>& v) {
    const size_t n = std::min<size_t>(v.size(), kMaxListItems);
    w.varint(n);
    for (size_t i = 0; i < n; ++i) (*this)(v[i]);
  }
  // A field a later minor version appended: written always, read when the body has it.
  void appended(const std::string& s) { w.str(s); }
};

struct Get {
  ByteReader& r;

  void operator()(std::string& s) { s = r.str(); }
  void operator()(uint32_t& v) { v = r.varint32(); }
  void operator()(uint64_t& v) { v = r.varint(); }
  void flag(bool& b) {
    const uint8_t v = r.u8();
    if (v > 1) r.fail();
    b = v == 1;
  }
  template <typename Enum>
  void code(Enum& e, bool (*valid)(uint8_t)) {
    const uint8_t v = r.u8();
    if (!valid(v)) r.fail();
    e = static_cast<Enum>(v);
  }
  template <typename T>
  void list(std::vector<T>& v) {
    const size_t n = r.count(kMaxListItems);
    for (size_t i = 0; i < n && r.ok(); ++i) (*this)(v.emplace_back());
  }
  void appended(std::string& s) {
    if (r.ok() && r.remaining() > 0) s = r.str();
  }
};

bool valid_source(uint8_t v) { return v <= static_cast<uint8_t>(snapshot::Source::procfs); }
bool valid_pair_kind(uint8_t v) { return v == PLATOON_PAIR_PREEMPTED_BY || v == PLATOON_PAIR_WOKEN_BY; }

bool decode_source(ByteReader& r, snapshot::Source* s) {
  Get{r}.code(*s, valid_source);
  return r.ok();
}

// Meta is TraceMeta, or const TraceMeta for Put.
template <typename Io, typename Meta>
void meta_fields(Io&& io, Meta& m) {
  io(m.tool_version), io(m.hostname), io(m.kernel), io(m.target), io(m.attach_mode);
  io.code(m.source, valid_source);
  io(m.ncpus), io(m.interval_ns), io(m.start_boottime_ns), io(m.start_realtime_ns);
  io.list(m.pids);
  io(m.comm);
  io.list(m.command);
  io.appended(m.runtime);  // minor 2
}

}  // namespace

void encode_meta(ByteWriter& w, const TraceMeta& m) { meta_fields(Put{w}, m); }

bool decode_meta(ByteReader& r, TraceMeta& m) {
  meta_fields(Get{r}, m);
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

// A thread's record: its head, then the 1.0 run of the field list (docs/trace-format.md,
// "SNAP"). The entries from cpu_overflow on go after the pairs (encode_snapshot).
template <typename Io, typename Thread>
void thread_head(Io&& io, Thread& t) {
  io(t.tid), io(t.pid), io(t.comm);
  io.flag(t.exited);
  io(t.first_seen_ns), io(t.last_cpu);
}

void encode_thread(ByteWriter& w, const snapshot::ThreadSample& t) {
  thread_head(Put{w}, t);
  snapshot::for_each_thread_field(minor0_run(EncodeFields{w, t}));
}

bool decode_thread(ByteReader& r, snapshot::ThreadSample& t, Keep& keep) {
  thread_head(Get{r}, t);
  snapshot::for_each_thread_field(minor0_run(DecodeFields{r, t, keep}));
  return r.ok();
}

template <typename Io, typename Pair>
void pair_fields(Io&& io, Pair& p) {
  io(p.tid);
  io.code(p.kind, valid_pair_kind);
  io(p.other_tid), io(p.other_pid), io(p.other_comm), io(p.count), io(p.ns);
}

void encode_pair(ByteWriter& w, const snapshot::PairSample& p) { pair_fields(Put{w}, p); }

bool decode_pair(ByteReader& r, snapshot::PairSample& p) {
  pair_fields(Get{r}, p);
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
  encode_request_tail(w, s);  // 3.0
  return true;
}

bool decode_snapshot(ByteReader& r, snapshot::Snapshot& s, TraceContents& out) {
  Keep keep{kKeepCpuSlotsPerSnapshot, &out};
  s.ts_ns = r.varint();
  if (!decode_source(r, &s.source)) return false;
  // Bits this version does not know are dropped: a newer minor version may add fields.
  s.fields = r.varint32() & snapshot::kFieldsKnown;
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
  if (r.remaining() == 0) s.fields &= ~uint32_t{snapshot::kFieldRequests};  // a file before 3.0
  else if (!decode_request_tail(r, s)) return false;
  // The model promises threads sorted by tid; consumers binary-search on it.
  auto by_tid = [](const snapshot::ThreadSample& a, const snapshot::ThreadSample& b) { return a.tid < b.tid; };
  if (!std::is_sorted(s.threads.begin(), s.threads.end(), by_tid))
    std::stable_sort(s.threads.begin(), s.threads.end(), by_tid);
  return true;
}

}  // namespace platoon::trace
