#include "tui/trace/trace_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include <zlib.h>
#include <zstd.h>

namespace platoon::model {
namespace {

// Reads the format's primitives from a bounded span. A failed read sets a sticky flag and
// returns zeros, so decoders read straight through and check ok() once; nothing ever reads past
// the end, and every count is checked against the bytes left before it is used.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> b) : b_(b) {}
  bool ok() const { return ok_; }
  size_t remaining() const { return b_.size() - pos_; }
  void fail() { ok_ = false; pos_ = b_.size(); }

  uint8_t u8() {
    if (remaining() < 1) return fail(), 0;
    return b_[pos_++];
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (remaining() < 1) return fail(), 0;
      uint8_t byte = b_[pos_++];
      // The tenth byte may only carry the top bit of a 64-bit value.
      if (shift == 63 && byte > 1) return fail(), 0;
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    return fail(), 0;  // more than 10 bytes
  }
  uint32_t varint32() {
    uint64_t v = varint();
    if (v > std::numeric_limits<uint32_t>::max()) return fail(), 0;
    return static_cast<uint32_t>(v);
  }
  // A count of items that each take at least one byte: bounded by what is left and by `max`.
  size_t count(size_t max) {
    uint64_t n = varint();
    if (n > max || n > remaining()) return fail(), 0;
    return static_cast<size_t>(n);
  }
  std::string str() {
    size_t n = count(kMaxStringBytes);
    if (n == 0) return {};
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  template <size_t N>
  void hist(std::array<uint64_t, N>& h) {
    size_t n = count(N);
    for (size_t i = 0; i < n && ok_; ++i) h[i] = varint();
  }
  // A list of at most `max` varints (the format's limit) of which the first `keep` are kept;
  // the rest are read and dropped. Returns how many were dropped.
  size_t list(std::vector<uint64_t>& v, size_t max, size_t keep) {
    size_t n = count(max);
    v.resize(std::min(n, keep));
    for (size_t i = 0; i < n && ok_; ++i) {
      uint64_t x = varint();
      if (i < v.size()) v[i] = x;
    }
    return n - v.size();
  }
  std::span<const uint8_t> rest() {
    auto r = b_.subspan(pos_);
    pos_ = b_.size();
    return r;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool decode_source(ByteReader& r, Source* s) {
  uint8_t v = r.u8();
  if (v > static_cast<uint8_t>(Source::procfs)) return false;
  *s = static_cast<Source>(v);
  return true;
}

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

// The field list's quantities, in its order (which is the format's).
struct DecodeFields {
  ByteReader& r;
  ThreadSample& t;
  Keep& keep;

  void counter(uint64_t ThreadSample::*m, const char*) { t.*m = r.varint(); }
  void maximum(uint64_t ThreadSample::*m, const char*) { t.*m = r.varint(); }
  template <size_t N>
  void hist(std::array<uint64_t, N> ThreadSample::*m, const char*) { r.hist(t.*m); }
  void per_cpu(std::vector<uint64_t> ThreadSample::*m, const char*) { cpu_list(r, t.*m, keep); }
};

// Mirrors encode_thread in trace_writer.cpp field by field; cpu_overflow comes from the
// snapshot's minor-1 tail (decode_snapshot).
bool decode_thread(ByteReader& r, ThreadSample& t, Keep& keep) {
  t.tid = r.varint32();
  t.pid = r.varint32();
  t.comm = r.str();
  uint8_t flags = r.u8();
  if (flags > 1) return false;
  t.exited = flags == 1;
  t.first_seen_ns = r.varint();
  t.last_cpu = r.varint32();
  for_each_inline_field(DecodeFields{r, t, keep});
  return r.ok();
}

bool decode_pair(ByteReader& r, PairSample& p) {
  p.tid = r.varint32();
  uint8_t kind = r.u8();
  if (kind != PLATOON_PAIR_PREEMPTED_BY && kind != PLATOON_PAIR_WOKEN_BY) return false;
  p.kind = static_cast<PairKind>(kind);
  p.other_tid = r.varint32();
  p.other_pid = r.varint32();
  p.other_comm = r.str();
  p.count = r.varint();
  p.ns = r.varint();
  return r.ok();
}

// The tail fields of one thread, by position: a newer minor may store more than this version
// knows (read and dropped), an older one fewer (left 0).
struct DecodeTail {
  const std::vector<uint64_t>& values;
  ThreadSample& t;
  size_t i = 0;
  void counter(uint64_t ThreadSample::*m, const char*) {
    if (i < values.size()) t.*m = values[i];
    ++i;
  }
};

// Mirrors encode_minor2_tail in trace_writer.cpp.
bool decode_minor2_tail(ByteReader& r, Snapshot& s, size_t nthreads, Keep& keep) {
  const size_t nfields = r.count(kMaxListItems);
  const size_t with_tail = r.count(kMaxThreadsPerSnapshot);
  std::vector<uint64_t> values(nfields);
  for (size_t i = 0; i < with_tail && r.ok(); ++i) {
    const uint64_t index = r.varint();
    for (auto& v : values) v = r.varint();
    if (index >= nthreads) return false;
    if (index < s.threads.size()) for_each_tail_field(DecodeTail{values, s.threads[index]});
  }
  s.tick_ns = r.varint();
  const size_t ncpus = r.count(kMaxCpusInTrace);
  for (size_t i = 0; i < ncpus && r.ok(); ++i) {
    CpuTimes c;
    c.cpu = r.varint32();
    for (uint64_t* v : {&c.user, &c.nice, &c.system, &c.idle, &c.iowait, &c.irq, &c.softirq, &c.steal}) *v = r.varint();
    if (i < std::min<size_t>(kKeepCpusPerList, keep.cpu_slots)) s.cpus.push_back(c);
    else if (keep.out) ++keep.out->cut_cpu_slots;
  }
  keep.cpu_slots -= std::min(keep.cpu_slots, s.cpus.size());
  const size_t ngroups = r.count(kMaxListItems);
  for (size_t i = 0; i < ngroups && r.ok(); ++i) {
    CgroupCpu g;
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
  std::sort(s.cgroups.begin(), s.cgroups.end(), [](const CgroupCpu& a, const CgroupCpu& b) { return a.path < b.path; });
  return true;
}

bool decode_snapshot(ByteReader& r, Snapshot& s, TraceContents& out) {
  Keep keep{kKeepCpuSlotsPerSnapshot, &out};
  s.ts_ns = r.varint();
  if (!decode_source(r, &s.source)) return false;
  // Bits this version does not know are dropped: a newer minor version may add fields.
  s.fields = r.varint32() & kFieldsBpf;
  s.untracked_threads = r.varint();
  s.lost_pairs = r.varint();
  s.lost_targets = r.varint();
  cpu_list(r, s.lost_events_per_cpu, keep);
  // Items past a kKeep* cap are still decoded (the body must be valid) into a scratch value
  // that keeps no per-CPU entries, then dropped.
  ThreadSample thread_scratch;
  Keep no_slots{0, nullptr};  // a dropped thread's counters are not counted on their own
  size_t nthreads = r.count(kMaxThreadsPerSnapshot);
  s.threads.reserve(std::min<size_t>(nthreads, kKeepThreadsPerSnapshot));
  for (size_t i = 0; i < nthreads && r.ok(); ++i) {
    const bool kept = i < kKeepThreadsPerSnapshot;
    if (!decode_thread(r, kept ? s.threads.emplace_back() : thread_scratch, kept ? keep : no_slots)) return false;
    if (!kept) ++out.cut_threads;
  }
  PairSample pair_scratch;
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
  if (r.remaining() > 0 && !decode_minor2_tail(r, s, nthreads, keep)) return false;
  // The model promises threads sorted by tid; consumers binary-search on it.
  auto by_tid = [](const ThreadSample& a, const ThreadSample& b) { return a.tid < b.tid; };
  if (!std::is_sorted(s.threads.begin(), s.threads.end(), by_tid))
    std::stable_sort(s.threads.begin(), s.threads.end(), by_tid);
  return true;
}

// Where the bytes come from: a span (fuzzer, tests) or a file read chunk by chunk, so that a
// long recording is never read into memory whole.
class Input {
 public:
  virtual ~Input() = default;
  virtual uint64_t size() const = 0;
  // n bytes at off (off + n <= size()), possibly copied into scratch; empty + *err on failure.
  virtual std::span<const uint8_t> get(uint64_t off, size_t n, std::vector<uint8_t>& scratch,
                                       std::string* err) = 0;
};

class SpanInput : public Input {
 public:
  explicit SpanInput(std::span<const uint8_t> b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  std::span<const uint8_t> get(uint64_t off, size_t n, std::vector<uint8_t>&, std::string*) override {
    return b_.subspan(static_cast<size_t>(off), n);
  }

 private:
  std::span<const uint8_t> b_;
};

class FileInput : public Input {
 public:
  FileInput(UniqueFd fd, uint64_t size) : fd_(std::move(fd)), size_(size) {}
  uint64_t size() const override { return size_; }
  std::span<const uint8_t> get(uint64_t off, size_t n, std::vector<uint8_t>& scratch,
                               std::string* err) override {
    scratch.resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_.get(), scratch.data() + done, n - done, static_cast<off_t>(off + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {  // 0: the file shrank under us
        *err = r < 0 ? std::string("read error: ") + std::strerror(errno) : "file shrank while reading";
        return {};
      }
      done += static_cast<size_t>(r);
    }
    return scratch;
  }

 private:
  UniqueFd fd_;
  uint64_t size_;
};

uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

struct Chunk {
  ChunkType type{};
  std::span<const uint8_t> body;  // decoded (decompressed) body
  uint64_t next = 0;              // offset of the following chunk
};

// Reads and checks the chunk at `off`. nullopt + *why if it is incomplete or corrupt.
std::optional<Chunk> next_chunk(Input& in, uint64_t off, bool verify_crc, std::vector<uint8_t>& raw,
                                std::vector<uint8_t>& inflated, std::string* why) {
  uint64_t left = in.size() - off;
  if (left < kChunkHeaderBytes) return *why = "incomplete chunk header", std::nullopt;
  std::vector<uint8_t> hscratch;
  auto h = in.get(off, kChunkHeaderBytes, hscratch, why);
  if (h.empty()) return std::nullopt;
  uint8_t head[kChunkHeaderBytes];
  std::copy(h.begin(), h.end(), head);
  uint32_t length = get_u32(head + 4);
  if (length > kMaxChunkBytes) return *why = "chunk length over the format's limit", std::nullopt;
  if (length > left - kChunkHeaderBytes) return *why = "incomplete chunk", std::nullopt;
  if (length == 0) return *why = "empty chunk payload", std::nullopt;
  auto payload = in.get(off + kChunkHeaderBytes, length, raw, why);
  if (payload.empty()) return std::nullopt;
  if (verify_crc && chunk_crc(head, payload.data(), payload.size()) != get_u32(head + 8))
    return *why = "checksum mismatch", std::nullopt;

  Chunk c;
  c.type = static_cast<ChunkType>(get_u32(head));
  c.next = off + kChunkHeaderBytes + length;
  ByteReader r(payload);
  uint8_t encoding = r.u8();
  if (encoding == static_cast<uint8_t>(ChunkEncoding::stored)) {
    c.body = r.rest();
  } else if (encoding == static_cast<uint8_t>(ChunkEncoding::zlib) ||
             encoding == static_cast<uint8_t>(ChunkEncoding::zstd)) {
    uint64_t raw_len = r.varint();
    auto z = r.rest();
    // Bound the allocation by what the compressed bytes could possibly expand to.
    if (!r.ok() || raw_len == 0 || raw_len > kMaxChunkBytes || raw_len > z.size() * kMaxZlibRatio)
      return *why = "bad compressed length", std::nullopt;
    inflated.resize(static_cast<size_t>(raw_len));
    bool whole;
    if (encoding == static_cast<uint8_t>(ChunkEncoding::zlib)) {
      uLongf out = static_cast<uLongf>(raw_len);
      whole = uncompress(inflated.data(), &out, z.data(), static_cast<uLong>(z.size())) == Z_OK && out == raw_len;
    } else {
      const size_t out = ZSTD_decompress(inflated.data(), inflated.size(), z.data(), z.size());
      whole = !ZSTD_isError(out) && out == raw_len;
    }
    if (!whole) return *why = "bad compressed data", std::nullopt;
    c.body = inflated;
  } else {
    return *why = "unknown chunk encoding " + std::to_string(encoding), std::nullopt;
  }
  return c;
}

// Validates an EVTS body whole before delivering anything from it.
bool take_events(std::span<const uint8_t> body, const ReadOptions& options, TraceContents& out) {
  ByteReader r(body);
  uint64_t count = r.varint();
  auto records = r.rest();
  if (!r.ok()) return false;
  uint64_t seen = 0;
  size_t used = 0;
  bool valid = for_each_event(records, [&](const platoon_event_header&, const void*, size_t size) {
    ++seen;
    used += size;
  });
  if (!valid || used != records.size() || seen != count) return false;
  if (options.on_event)
    for_each_event(records, options.on_event);
  else if (options.max_event_bytes && records.size() > options.max_event_bytes - std::min<uint64_t>(options.max_event_bytes, out.events.size()))
    out.cut_events += count;
  else
    out.events.insert(out.events.end(), records.begin(), records.end());
  out.event_count += count;
  return true;
}

// Applies one data chunk to `out`; false if its body does not decode.
bool take_chunk(const Chunk& c, const ReadOptions& options, TraceContents& out, uint64_t& kept_snapshot_bytes) {
  ByteReader r(c.body);
  switch (c.type) {
    case ChunkType::snapshot: {
      Snapshot s;
      if (!decode_snapshot(r, s, out)) return false;
      ++out.snapshot_count;
      const uint64_t bytes = options.max_snapshot_bytes ? snapshot_bytes(s) : 0;
      if (options.on_snapshot) {
        options.on_snapshot(std::move(s));
      } else if (options.max_snapshot_bytes && (out.cut_snapshots || bytes > options.max_snapshot_bytes - kept_snapshot_bytes)) {
        ++out.cut_snapshots;  // keep a prefix: a gap in the middle would fake one long interval
      } else {
        kept_snapshot_bytes += bytes;
        out.snapshots.push_back(std::move(s));
      }
      return true;
    }
    case ChunkType::events:
      return take_events(c.body, options, out);
    case ChunkType::note: {
      TraceNote n;
      n.ts_ns = r.varint();
      n.text = r.str();
      if (!r.ok()) return false;
      out.notes.push_back(std::move(n));
      return true;
    }
    case ChunkType::stop:
      out.stop_reason = r.str();
      out.end_boottime_ns = r.varint();
      out.complete = r.ok();
      return r.ok();
    case ChunkType::meta:
      return false;  // only once, first
  }
  ++out.skipped_chunks;  // a chunk type from a newer minor version
  return true;
}

// The header and META chunk: the contents' metadata and the offset of the first data chunk,
// or nullopt with the reason.
std::optional<uint64_t> read_head(Input& in, bool verify_crc, TraceContents& out, std::string* error) {
  auto fail = [&](const std::string& msg) -> std::optional<uint64_t> {
    if (error) *error = msg;
    return std::nullopt;
  };
  std::vector<uint8_t> scratch, raw, inflated;
  std::string why;
  const uint64_t size = in.size();
  if (size < sizeof kTraceMagic) return fail("not a platoon trace");
  auto head = in.get(0, std::min<uint64_t>(size, kTraceHeaderBytes), scratch, &why);
  if (head.empty()) return fail(why);
  if (!std::equal(std::begin(kTraceMagic), std::end(kTraceMagic), head.begin()))
    return fail("not a platoon trace");
  if (size < kTraceHeaderBytes) return fail("truncated trace header");
  out.meta.version = uint32_t(head[8]) | uint32_t(head[9]) << 8;
  out.meta.minor_version = uint32_t(head[10]) | uint32_t(head[11]) << 8;
  if (out.meta.version < kTraceOldestMajorVersion || out.meta.version > kTraceMajorVersion)
    return fail("unsupported trace version " + std::to_string(out.meta.version) + " (this platoon reads " +
                std::to_string(kTraceOldestMajorVersion) + " to " + std::to_string(kTraceMajorVersion) + ")");
  auto meta = next_chunk(in, kTraceHeaderBytes, verify_crc, raw, inflated, &why);
  if (meta && meta->type != ChunkType::meta) why = "first chunk is not META";
  if (meta && meta->type == ChunkType::meta) {
    ByteReader r(meta->body);
    if (!decode_meta(r, out.meta)) why = "malformed META chunk";
  }
  if (!why.empty()) return fail("trace metadata missing or corrupt (" + why + " at byte 16)");
  return meta->next;
}

}  // namespace

// What a cursor holds between chunks.
struct TraceCursor::State {
  std::unique_ptr<Input> in;
  ReadOptions options;
  TraceContents out;
  uint64_t off = 0;
  uint64_t kept_snapshot_bytes = 0;
  bool done = false;
  std::vector<uint8_t> raw, inflated;
};

TraceCursor::TraceCursor(std::unique_ptr<State> st) : st_(std::move(st)) {}
TraceCursor::~TraceCursor() = default;

bool TraceCursor::next() {
  State& st = *st_;
  if (st.done || st.off >= st.in->size()) return !(st.done = true);
  std::string why;
  auto c = next_chunk(*st.in, st.off, st.options.verify_crc, st.raw, st.inflated, &why);
  if (c && !take_chunk(*c, st.options, st.out, st.kept_snapshot_bytes)) why = "malformed chunk";
  if (!why.empty()) {
    st.out.truncated = true;
    st.out.truncated_at = st.off;
    st.out.truncated_reason = why;
    return !(st.done = true);
  }
  st.off = c->next;
  if (st.out.complete) st.done = true;  // STOP is the last chunk; anything after it is not ours
  return true;
}

const TraceContents& TraceCursor::contents() const { return st_->out; }
TraceContents TraceCursor::take_contents() { return std::move(st_->out); }

namespace {

std::unique_ptr<TraceCursor::State> start(std::unique_ptr<Input> in, const ReadOptions& options, std::string* error) {
  auto st = std::make_unique<TraceCursor::State>();
  st->options = options;
  auto first = read_head(*in, options.verify_crc, st->out, error);
  if (!first) return nullptr;
  st->off = *first;
  st->in = std::move(in);
  return st;
}

std::optional<TraceContents> read_all(std::unique_ptr<TraceCursor> c) {
  while (c->next()) {
  }
  return c->take_contents();
}

}  // namespace

uint64_t snapshot_bytes(const Snapshot& s) {
  uint64_t n = sizeof(Snapshot) + s.threads.capacity() * sizeof(ThreadSample) +
               s.pairs.capacity() * sizeof(PairSample) + s.lost_events_per_cpu.capacity() * sizeof(uint64_t);
  for (const auto& t : s.threads) n += t.cpu_switch_ins.capacity() * sizeof(uint64_t) + t.comm.capacity();
  for (const auto& p : s.pairs) n += p.other_comm.capacity();
  return n;
}

std::string TraceContents::cap_note() const {
  std::string parts;
  auto add = [&](uint64_t n, const char* what) {
    if (n == 0) return;
    parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(cut_threads, "threads");
  add(cut_pairs, "pairs");
  add(cut_cpu_slots, "per-CPU counters");
  add(cut_snapshots, "snapshots");
  add(cut_events, "events");
  if (parts.empty()) return {};
  return "the reader's memory caps (docs/trace-format.md, \"Reader caps\") dropped " + parts +
         ": figures that depend on them are incomplete";
}

bool for_each_event(std::span<const uint8_t> records, const EventFn& fn) {
  size_t off = 0;
  while (off < records.size()) {
    platoon_event_header h;
    if (records.size() - off < sizeof h) return false;
    std::memcpy(&h, records.data() + off, sizeof h);
    size_t size = event_record_size(h.type);
    if (size == 0 || records.size() - off < size) return false;
    fn(h, records.data() + off, size);
    off += size;
  }
  return true;
}

std::unique_ptr<TraceCursor> TraceCursor::open(const std::string& path, std::string* error, const ReadOptions& options) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<TraceCursor> {
    if (error) *error = path + ": " + msg;
    return nullptr;
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  std::string why;
  auto state = start(std::make_unique<FileInput>(std::move(fd), static_cast<uint64_t>(st.st_size)), options, &why);
  if (!state) return fail(why);
  return std::unique_ptr<TraceCursor>(new TraceCursor(std::move(state)));
}

std::optional<TraceContents> read_trace_bytes(std::span<const uint8_t> bytes, std::string* error,
                                              const ReadOptions& options) {
  auto state = start(std::make_unique<SpanInput>(bytes), options, error);
  if (!state) return std::nullopt;
  return read_all(std::unique_ptr<TraceCursor>(new TraceCursor(std::move(state))));
}

std::optional<TraceContents> read_trace(const std::string& path, std::string* error,
                                        const ReadOptions& options) {
  auto c = TraceCursor::open(path, error, options);
  if (!c) return std::nullopt;
  return read_all(std::move(c));
}

}  // namespace platoon::model
