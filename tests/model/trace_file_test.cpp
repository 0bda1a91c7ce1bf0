// The trace file: round trips of every field, crash and corruption behaviour, permissions, the
// documented errors, a writer killed mid-run.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "tests/model/expect_snapshot.hpp"
#include "tests/model/temp_dir.hpp"
#include "tui/trace/events.hpp"  // event_as
#include "tui/trace/trace_reader.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tui/analysis/window.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using ::testing::HasSubstr;

using test::expect_same_snapshot;
using test::expect_same_thread;

class TraceFileTest : public test::TempDirTest {};

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TraceMeta sample_meta() {
  TraceMeta m;
  m.tool_version = "platoon 0.4.0-test";
  m.hostname = "bench-host";
  m.kernel = "6.1.0-18-amd64";
  m.target = "-- ./platoon-server --port 8080";
  m.attach_mode = "tp_btf";
  m.source = Source::bpf;
  m.ncpus = 2;
  m.interval_ns = 1'000'000'000;
  m.start_boottime_ns = 123'456'789'012;
  m.start_realtime_ns = 1'700'000'000'123'456'789;
  m.pids = {4242, 4243};
  m.comm = "platoon-server";
  m.command = {"./platoon-server", "--port", "8080", "arg with spaces"};
  m.runtime = "platoon-rt";
  return m;
}

// Visits the field list (bpf/snapshot/thread_fields.hpp), giving every entry, slot by slot,
// its own value: large, so that each is a multi-byte varint.
struct SetEveryListedField {
  ThreadSample& t;
  uint64_t v;
  uint64_t next() { return v += 1'000'003; }
  void counter(uint64_t ThreadSample::*m, const char*) { t.*m = next(); }
  void maximum(uint64_t ThreadSample::*m, const char*) { t.*m = next(); }
  template <size_t N>
  void hist(std::array<uint64_t, N> ThreadSample::*m, const char*) {
    for (uint64_t& slot : t.*m) slot = next();
  }
  void per_cpu(std::vector<uint64_t> ThreadSample::*m, const char*) { t.*m = {next(), next(), next()}; }
};

// Distinct non-zero values everywhere, derived from `seed`, so a swapped or dropped field shows;
// then the edges of the encoding: the full 64-bit range, trimmed trailing zeros, a zero slot.
ThreadSample sample_thread(uint32_t tid, uint64_t seed) {
  ThreadSample t;
  t.tid = tid;
  t.pid = 4242;
  t.comm = "carrier-" + std::to_string(tid);
  t.exited = tid % 2 == 1;
  t.first_seen_ns = seed * 1000 + tid;
  t.last_cpu = tid % 3;
  for_each_thread_field(SetEveryListedField{t, seed * 1000 + tid});
  t.runq_max_ns = ~uint64_t{0} - seed;
  t.runq_hist[kRunqSlots - 1] = 0;  // trailing zeros are trimmed on disk
  t.cpu_switch_ins[1] = 0;
  return t;
}

Snapshot sample_snapshot(uint64_t seed, int nthreads = 3) {
  Snapshot s;
  s.ts_ns = 123'456'789'012 + seed * 1'000'000'000;
  s.source = seed % 2 ? Source::procfs : Source::bpf;
  s.fields = seed % 2 ? uint32_t{kFieldsProcfs} : uint32_t{kFieldsBpf};
  for (int i = 0; i < nthreads; ++i) s.threads.push_back(sample_thread(4242 + uint32_t(i), seed));
  s.pairs.push_back({4242, PairKind::preempted_by, 99, 98, "master-poller", 300 + seed, 90'000'000});
  s.pairs.push_back({4243, PairKind::woken_by, 0, 0, "", 5000, 0});
  s.lost_events_per_cpu = {seed, 0, 17};
  s.untracked_threads = 1 + seed;
  s.lost_pairs = 2 + seed;
  s.lost_targets = 3 + seed;
  return s;
}

// Switch-ins on CPUs beyond the kernel's per-thread slots (machines with more CPUs than it
// has slots) survive the file (minor 1) and show as the "other" share of the distribution.
TEST(TraceCpuOverflow, SurvivesTheFileAndShowsAsOtherCpus) {
  Snapshot a = sample_snapshot(0), b = sample_snapshot(0);
  b.ts_ns += 1'000'000'000;
  for (auto& t : b.threads) {
    t.cpu_switch_ins = {30, 10};
    t.cpu_overflow = t.tid == 4243 ? 60 : 0;
  }
  for (auto& t : a.threads) t.cpu_switch_ins = {0, 0};
  const std::string file = ::testing::TempDir() + "overflow-" + std::to_string(::getpid()) + ".trace";
  std::string error;
  {
    auto w = TraceWriter::create(file, TraceMeta{}, &error);
    ASSERT_TRUE(w) << error;
    ASSERT_TRUE(w->write_snapshot(a));
    ASSERT_TRUE(w->write_snapshot(b));
    ASSERT_TRUE(w->finish("done"));
  }
  auto c = read_trace(file, &error);
  ::unlink(file.c_str());
  ASSERT_TRUE(c) << error;
  ASSERT_EQ(c->snapshots.size(), 2u);
  for (size_t i = 0; i < b.threads.size(); ++i) expect_same_thread(c->snapshots[1].threads[i], b.threads[i]);
  const Window win = make_window(c->snapshots[0], c->snapshots[1]);
  for (const auto& t : win.threads) {
    if (t.tid == 4243) {
      EXPECT_NEAR(t.cpu_other_pct, 60.0, 1e-9);  // 60 of 100 switch-ins
      ASSERT_EQ(t.cpu_distribution.size(), 2u);
      EXPECT_NEAR(t.cpu_distribution[0].second, 30.0, 1e-9);
    } else {
      EXPECT_EQ(t.cpu_other_pct, 0.0);
    }
  }
}

template <class T>
void append_record(std::vector<uint8_t>& buf, const T& rec) {
  size_t at = buf.size();
  buf.resize(at + sizeof rec);
  std::memcpy(buf.data() + at, &rec, sizeof rec);
}

platoon_event_header header(uint16_t type, uint64_t ts, uint32_t tid) {
  platoon_event_header h{};
  h.ts_ns = ts;
  h.type = type;
  h.cpu = uint16_t(tid % 2);
  h.tid = tid;
  return h;
}

// One record of every type, with `base` folded into every value.
constexpr uint64_t kEventsPerBatch = 9;
std::vector<uint8_t> sample_events(uint64_t base, uint64_t* count) {
  std::vector<uint8_t> buf;
  platoon_ev_switch sw{.h = header(PLATOON_EV_SWITCH, base + 1, 4242), .prev_pid = 4242, .next_tid = 99,
                       .next_pid = 98, .prev_state = 0, .prev_prio = 120, .next_prio = -1};
  std::strcpy(sw.prev_comm, "carrier-0");
  std::strcpy(sw.next_comm, "master-poller");
  append_record(buf, sw);
  for (uint16_t type : {PLATOON_EV_WAKING, PLATOON_EV_WAKEUP, PLATOON_EV_WAKEUP_NEW}) {
    platoon_ev_wake w{
        .h = header(type, base + 2 + type, 4243), .pid = 4242, .target_cpu = 1, .prio = 120, .waker_tid = 99};
    std::strcpy(w.comm, "carrier-1");
    append_record(buf, w);
  }
  append_record(buf, platoon_ev_migrate{
                         .h = header(PLATOON_EV_MIGRATE, base + 10, 4242), .pid = 4242, .orig_cpu = 0, .dest_cpu = 1, .prio = 120});
  append_record(buf, platoon_ev_exit{.h = header(PLATOON_EV_EXIT, base + 11, 4244), .pid = 4242});
  // nevents -4: -EINTR
  append_record(buf, platoon_ev_epoll{.h = header(PLATOON_EV_EPOLL, base + 12, 4242), .nevents = -4, .enter_ns = base + 5});
  for (uint16_t type : {PLATOON_EV_DRAIN, PLATOON_EV_STEAL})
    append_record(buf, platoon_ev_runtime{.h = header(type, base + 13 + type, 4242), .carrier = 1, .a = -2, .b = int64_t(base)});
  *count = kEventsPerBatch;
  return buf;
}

std::vector<uint8_t> collect_events(const TraceContents& c, std::vector<uint16_t>* types = nullptr) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(for_each_event(c, [&](const platoon_event_header& h, const void* rec, size_t size) {
    EXPECT_EQ(size, event_record_size(h.type));
    if (types) types->push_back(h.type);
    auto p = static_cast<const uint8_t*>(rec);
    out.insert(out.end(), p, p + size);
  }));
  return out;
}

TEST_F(TraceFileTest, RoundTripsEveryField) {
  // zstd (as written now), zlib (as 1.2 wrote: read the same), stored.
  for (int codec : {2, 1, 0}) {
    const bool compress = codec != 0;
    SCOPED_TRACE(codec == 2 ? "zstd" : codec == 1 ? "zlib, a 1.2 file" : "stored");
    std::string file = path(codec == 2 ? "zstd.plt" : codec == 1 ? "z.plt" : "s.plt");
    std::string error;
    TraceWriter::Options opts;
    opts.compress = compress;
    opts.zlib = codec == 1;
    auto w = TraceWriter::create(file, sample_meta(), opts, &error);
    ASSERT_TRUE(w) << error;
    std::vector<Snapshot> snaps;
    std::vector<uint8_t> events;
    uint64_t nevents = 0;
    for (uint64_t i = 0; i < 4; ++i) {
      snaps.push_back(sample_snapshot(i, 2 + int(i)));
      ASSERT_TRUE(w->write_snapshot(snaps.back())) << w->error();
      uint64_t n = 0;
      auto batch = sample_events(i * 100, &n);
      ASSERT_TRUE(w->write_events(batch.data(), batch.size(), n)) << w->error();
      events.insert(events.end(), batch.begin(), batch.end());
      nevents += n;
    }
    // A batch bigger than one events chunk is split at record boundaries.
    std::vector<uint8_t> big;
    uint64_t nbig = 0;
    while (big.size() < 3 * kEventChunkRawBytes / 2) {
      uint64_t n = 0;
      auto batch = sample_events(big.size(), &n);
      big.insert(big.end(), batch.begin(), batch.end());
      nbig += n;
    }
    ASSERT_TRUE(w->write_events(big.data(), big.size(), nbig)) << w->error();
    events.insert(events.end(), big.begin(), big.end());
    nevents += nbig;
    ASSERT_TRUE(w->write_events(nullptr, 0, 0));  // nothing to write is fine
    ASSERT_TRUE(w->write_note(5, "target 4242 exited at +3.2 s"));
    ASSERT_TRUE(w->write_note(6, "usdt: attached 4 probes to /proc/4242/exe"));
    ASSERT_TRUE(w->finish(std::string(kStopTargetExited))) << w->error();
    EXPECT_EQ(w->bytes_written(), std::filesystem::file_size(file));
    EXPECT_FALSE(w->write_note(7, "after finish"));

    auto c = read_trace(file, &error);
    ASSERT_TRUE(c) << error;
    TraceMeta want = sample_meta();
    EXPECT_EQ(c->meta.version, codec == 1 ? 1u : kTraceMajorVersion);
    EXPECT_EQ(c->meta.minor_version, codec == 1 ? 2u : kTraceMinorVersion);
    // Every compressed chunk is in the codec asked for.
    const std::vector<uint8_t> bytes = slurp(file);
    size_t compressed = 0;
    for (size_t off = kTraceHeaderBytes; off + kChunkHeaderBytes < bytes.size();) {
      const uint32_t len = bytes[off + 4] | bytes[off + 5] << 8 | bytes[off + 6] << 16 | uint32_t(bytes[off + 7]) << 24;
      const uint8_t enc = bytes[off + kChunkHeaderBytes];
      if (enc != 0) {
        EXPECT_EQ(enc, codec);
      }
      compressed += enc != 0;
      off += kChunkHeaderBytes + len;
    }
    EXPECT_EQ(compressed > 0, compress);
    want.version = c->meta.version;  // the versions asserted above, the rest field by field
    want.minor_version = c->meta.minor_version;
    EXPECT_EQ(c->meta, want);
    ASSERT_EQ(c->snapshots.size(), snaps.size());
    for (size_t i = 0; i < snaps.size(); ++i) expect_same_snapshot(c->snapshots[i], snaps[i]);
    ASSERT_EQ(c->notes.size(), 2u);
    EXPECT_EQ(c->notes[0].ts_ns, 5u);
    EXPECT_EQ(c->notes[0].text, "target 4242 exited at +3.2 s");
    EXPECT_EQ(c->notes[1].text, "usdt: attached 4 probes to /proc/4242/exe");
    EXPECT_EQ(c->stop_reason, kStopTargetExited);
    EXPECT_GT(c->end_boottime_ns, 0u);
    EXPECT_TRUE(c->complete);
    EXPECT_FALSE(c->truncated);
    EXPECT_EQ(c->event_count, nevents);
    std::vector<uint16_t> types;
    EXPECT_EQ(collect_events(*c, &types), events);
    ASSERT_GE(types.size(), kEventsPerBatch);
    EXPECT_EQ(types[0], PLATOON_EV_SWITCH);
    EXPECT_EQ(types[8], PLATOON_EV_STEAL);
    auto sw = event_as<platoon_ev_switch>(c->events.data(), sizeof(platoon_ev_switch));
    ASSERT_TRUE(sw);
    EXPECT_STREQ(sw->next_comm, "master-poller");
    EXPECT_EQ(sw->next_prio, -1);

    // The same events through a callback, without keeping them.
    std::vector<uint8_t> streamed;
    ReadOptions ro;
    ro.on_event = [&](const platoon_event_header&, const void* rec, size_t size) {
      auto p = static_cast<const uint8_t*>(rec);
      streamed.insert(streamed.end(), p, p + size);
    };
    auto c2 = read_trace(file, &error, ro);
    ASSERT_TRUE(c2) << error;
    EXPECT_TRUE(c2->events.empty());
    EXPECT_EQ(c2->event_count, nevents);
    EXPECT_EQ(streamed, events);
  }
  // Compression pays on these snapshots and events.
  EXPECT_LT(std::filesystem::file_size(path("z.plt")) * 2, std::filesystem::file_size(path("s.plt")));
}

TEST_F(TraceFileTest, WriterFillsHostClockAndCpusWhenLeftEmpty) {
  std::string error;
  auto w = TraceWriter::create(path("t.plt"), TraceMeta{}, &error);
  ASSERT_TRUE(w) << error;
  ASSERT_TRUE(w->finish(std::string(kStopInterrupted)));
  auto c = read_trace(path("t.plt"), &error);
  ASSERT_TRUE(c) << error;
  EXPECT_FALSE(c->meta.hostname.empty());
  EXPECT_FALSE(c->meta.kernel.empty());
  EXPECT_GT(c->meta.ncpus, 0u);
  EXPECT_GT(c->meta.start_boottime_ns, 0u);
  EXPECT_GT(c->meta.start_realtime_ns, c->meta.start_boottime_ns);
  EXPECT_GE(c->end_boottime_ns, c->meta.start_boottime_ns);
  EXPECT_TRUE(c->snapshots.empty());
  EXPECT_TRUE(c->complete);
}

// Writes a small trace and returns its bytes and the offset where each chunk ends.
std::vector<uint8_t> chunked_trace(const std::string& file, std::vector<uint64_t>* ends) {
  std::string error;
  auto w = TraceWriter::create(file, sample_meta(), &error);
  EXPECT_TRUE(w) << error;
  ends->push_back(w->bytes_written());  // header + META
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(w->write_snapshot(sample_snapshot(i)));
    ends->push_back(w->bytes_written());
    uint64_t n = 0;
    auto ev = sample_events(i, &n);
    EXPECT_TRUE(w->write_events(ev.data(), ev.size(), n));
    ends->push_back(w->bytes_written());
  }
  EXPECT_TRUE(w->write_note(9, "target 4242 exited at +3.2 s"));
  ends->push_back(w->bytes_written());
  EXPECT_TRUE(w->finish(std::string(kStopDuration)));
  ends->push_back(w->bytes_written());
  return slurp(file);
}

TEST_F(TraceFileTest, TruncatedAtEveryOffsetKeepsCompleteChunks) {
  std::vector<uint64_t> ends;
  auto bytes = chunked_trace(path("full.plt"), &ends);
  ASSERT_EQ(ends.back(), bytes.size());
  // Every offset from the start of the fifth-last chunk to one byte short of the end.
  for (uint64_t cut = ends[ends.size() - 6]; cut < bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    std::string error;
    auto c = read_trace_bytes(std::span(bytes.data(), cut), &error);
    ASSERT_TRUE(c) << error;
    // Chunks that end at or before the cut (the first entry is header + META).
    size_t whole = size_t(std::upper_bound(ends.begin(), ends.end(), cut) - ends.begin()) - 1;
    uint64_t boundary = ends[whole];
    EXPECT_EQ(c->truncated, cut != boundary);
    if (c->truncated) {
      EXPECT_EQ(c->truncated_at, boundary);
      EXPECT_THAT(c->truncated_reason, HasSubstr("incomplete"));
    }
    EXPECT_FALSE(c->complete);
    // Chunks alternate SNAP, EVTS after META; then NOTE and STOP.
    size_t data_chunks = std::min<size_t>(whole, 6);
    EXPECT_EQ(c->snapshots.size(), (data_chunks + 1) / 2);
    EXPECT_EQ(c->event_count, kEventsPerBatch * (data_chunks / 2));
    EXPECT_EQ(c->notes.size(), whole >= 7 ? 1u : 0u);
    for (size_t i = 0; i < c->snapshots.size(); ++i) expect_same_snapshot(c->snapshots[i], sample_snapshot(i));
  }
  // And through the file path, as a crashed recorder leaves it.
  ASSERT_EQ(::truncate(path("full.plt").c_str(), off_t(ends[3] + 5)), 0);
  std::string error;
  auto c = read_trace(path("full.plt"), &error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->truncated);
  EXPECT_EQ(c->truncated_at, ends[3]);
  EXPECT_EQ(c->snapshots.size(), 2u);
}

TEST_F(TraceFileTest, FlippedByteIsCaughtByTheChecksum) {
  std::vector<uint64_t> ends;
  auto bytes = chunked_trace(path("full.plt"), &ends);
  // Every byte of the second SNAP chunk (ends[2]..ends[3]), one at a time.
  for (uint64_t at = ends[2]; at < ends[3]; ++at) {
    SCOPED_TRACE("flip at " + std::to_string(at));
    auto bad = bytes;
    bad[at] ^= 0x40;
    std::string error;
    auto c = read_trace_bytes(bad, &error);
    ASSERT_TRUE(c) << error;
    EXPECT_TRUE(c->truncated);
    EXPECT_EQ(c->truncated_at, ends[2]);
    EXPECT_EQ(c->snapshots.size(), 1u);
    EXPECT_EQ(c->event_count, kEventsPerBatch);
    EXPECT_FALSE(c->complete);
    if (at >= ends[2] + 8) {  // not the length field
      EXPECT_EQ(c->truncated_reason, "checksum mismatch");
    }
  }
  // In META it is an error: without the metadata nothing can be interpreted.
  auto bad = bytes;
  bad[kTraceHeaderBytes + kChunkHeaderBytes + 3] ^= 1;
  std::string error;
  EXPECT_FALSE(read_trace_bytes(bad, &error));
  EXPECT_EQ(error, "trace metadata missing or corrupt (checksum mismatch at byte 16)");
}

TEST_F(TraceFileTest, CreatedWithMode0600EvenIfTheFileExisted) {
  std::string file = path("perm.plt");
  {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fchmod(fd, 0644), 0);
    ASSERT_EQ(::write(fd, "old contents", 12), 12);
    ::close(fd);
  }
  mode_t old_mask = ::umask(0);
  std::string error;
  auto w = TraceWriter::create(file, sample_meta(), &error);
  ::umask(old_mask);
  ASSERT_TRUE(w) << error;
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_TRUE(w->finish(std::string(kStopDuration)));
  auto c = read_trace(file, &error);
  ASSERT_TRUE(c) << error;  // old contents gone (O_TRUNC)
  EXPECT_TRUE(c->complete);

  std::string other = path("new.plt");
  w = TraceWriter::create(other, sample_meta(), &error);
  ASSERT_TRUE(w) << error;
  ASSERT_EQ(::stat(other.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(TraceFileTest, DocumentedOneLineErrors) {
  std::string error;
  std::string text = path("notes.txt");
  const std::string words = "these are not the bytes you are looking for\n";
  spit(text, std::span(reinterpret_cast<const uint8_t*>(words.data()), words.size()));
  EXPECT_FALSE(read_trace(text, &error));
  EXPECT_EQ(error, text + ": not a platoon trace");
  spit(path("empty"), {});
  EXPECT_FALSE(read_trace(path("empty"), &error));
  EXPECT_EQ(error, path("empty") + ": not a platoon trace");
  EXPECT_FALSE(read_trace(path("missing.plt"), &error));
  EXPECT_EQ(error, path("missing.plt") + ": No such file or directory");
  EXPECT_FALSE(read_trace(dir_, &error));
  EXPECT_EQ(error, dir_ + ": not a regular file");

  std::vector<uint64_t> ends;
  auto bytes = chunked_trace(path("full.plt"), &ends);
  auto newer = bytes;
  newer[8] = 4;  // major version, little-endian u16
  spit(path("newer.plt"), newer);
  EXPECT_FALSE(read_trace(path("newer.plt"), &error));
  EXPECT_EQ(error, path("newer.plt") + ": unsupported trace version 4 (this platoon reads 1 to 3)");
  EXPECT_FALSE(read_trace_bytes(std::span(bytes.data(), 12), &error));
  EXPECT_EQ(error, "truncated trace header");
  EXPECT_FALSE(read_trace_bytes(std::span(bytes.data(), 20), &error));
  EXPECT_EQ(error, "trace metadata missing or corrupt (incomplete chunk header at byte 16)");

  // A newer minor version reads fine.
  auto minor = bytes;
  minor[10] = 7;
  auto c = read_trace_bytes(minor, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->meta.minor_version, 7u);
  EXPECT_TRUE(c->complete);
}

// A chunk as a writer would frame it, for hand-made hostile content with a valid checksum.
std::vector<uint8_t> frame(uint32_t type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> c(kChunkHeaderBytes);
  auto put = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) c[at + size_t(i)] = uint8_t(v >> (8 * i));
  };
  put(0, type);
  put(4, uint32_t(payload.size()));
  put(8, chunk_crc(c.data(), payload.data(), payload.size()));
  c.insert(c.end(), payload.begin(), payload.end());
  return c;
}

TEST_F(TraceFileTest, HostileChunksEndTheReadWithoutHarm) {
  std::string error;
  {
    auto w = TraceWriter::create(path("base.plt"), sample_meta(), &error);
    ASSERT_TRUE(w) << error;
    ASSERT_TRUE(w->write_snapshot(sample_snapshot(0)));
  }  // no finish: like a recorder that died
  const auto base = slurp(path("base.plt"));
  auto read_with = [&](const std::vector<uint8_t>& chunk) {
    auto bytes = base;
    bytes.insert(bytes.end(), chunk.begin(), chunk.end());
    auto c = read_trace_bytes(bytes, &error);
    EXPECT_TRUE(c) << error;
    if (c) {
      EXPECT_EQ(c->snapshots.size(), 1u);
      EXPECT_EQ(c->truncated_at, base.size());
    }
    return c ? c->truncated_reason : std::string("no contents");
  };
  const uint32_t evts = static_cast<uint32_t>(ChunkType::events);
  const uint32_t snap = static_cast<uint32_t>(ChunkType::snapshot);

  // A length of 4 GiB - 1: refused before any allocation.
  std::vector<uint8_t> huge = frame(snap, {0, 1, 2});
  huge[4] = huge[5] = huge[6] = huge[7] = 0xff;
  EXPECT_EQ(read_with(huge), "chunk length over the format's limit");
  // A zlib body claiming 16 MiB from 3 bytes.
  EXPECT_EQ(read_with(frame(snap, {1, 0x80, 0x80, 0x80, 0x08, 0x78, 0x01, 0x03})), "bad compressed length");
  EXPECT_EQ(read_with(frame(snap, {1, 0x10, 0x78, 0x01, 0x03})), "bad compressed data");
  // The same as zstd: a frame header (magic 28 b5 2f fd) claiming 16 MiB, and garbage.
  EXPECT_EQ(read_with(frame(snap, {2, 0x80, 0x80, 0x80, 0x08, 0x28, 0xb5, 0x2f})), "bad compressed length");
  EXPECT_EQ(read_with(frame(snap, {2, 0x10, 0x28, 0xb5, 0x2f, 0xfd, 0x00})), "bad compressed data");
  EXPECT_EQ(read_with(frame(snap, {9})), "unknown chunk encoding 9");
  // A snapshot claiming 2^60 threads, a bad source, an 11-byte varint.
  EXPECT_EQ(read_with(frame(snap, {0, 1, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10})),
            "malformed chunk");
  EXPECT_EQ(read_with(frame(snap, {0, 1, 7, 0})), "malformed chunk");
  EXPECT_EQ(read_with(frame(snap, {0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})),
            "malformed chunk");
  // A thread whose run-queue histogram claims more slots than the format has.
  {
    std::vector<uint8_t> p = {0, 1, 0, 0, 0, 0, 0, 0, /*threads*/ 1, /*tid*/ 1, /*pid*/ 1, /*comm*/ 0,
                              /*exited*/ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /*runq slots*/ 41};
    p.resize(p.size() + 300, 0);
    EXPECT_EQ(read_with(frame(snap, p)), "malformed chunk");
  }
  // Events: an unknown type, a record cut short, a count that does not match.
  std::vector<uint8_t> rec(sizeof(platoon_ev_exit), 0);
  rec[8] = 42;  // type
  auto events_payload = [](uint8_t count, const std::vector<uint8_t>& records) {
    std::vector<uint8_t> p = {0, count};
    p.insert(p.end(), records.begin(), records.end());
    return p;
  };
  EXPECT_EQ(read_with(frame(evts, events_payload(1, rec))), "malformed chunk");
  rec[8] = PLATOON_EV_SWITCH;  // 72 bytes needed, 24 present
  EXPECT_EQ(read_with(frame(evts, events_payload(1, rec))), "malformed chunk");
  rec[8] = PLATOON_EV_EXIT;
  EXPECT_EQ(read_with(frame(evts, events_payload(2, rec))), "malformed chunk");
  EXPECT_EQ(read_with(frame(static_cast<uint32_t>(ChunkType::meta), {0})), "malformed chunk");

  // Unknown chunk types (a newer minor version) are skipped, not fatal.
  auto bytes = base;
  auto unknown = frame(fourcc('X', 'T', 'R', 'A'), {0, 1, 2, 3});
  bytes.insert(bytes.end(), unknown.begin(), unknown.end());
  auto good = frame(evts, events_payload(1, rec));
  bytes.insert(bytes.end(), good.begin(), good.end());
  auto c = read_trace_bytes(bytes, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_FALSE(c->truncated);
  EXPECT_EQ(c->skipped_chunks, 1u);
  EXPECT_EQ(c->event_count, 1u);
}

TEST_F(TraceFileTest, WriterRefusesRecordsThatDoNotParse) {
  std::string error;
  auto w = TraceWriter::create(path("w.plt"), sample_meta(), &error);
  ASSERT_TRUE(w) << error;
  uint64_t n = 0;
  auto ev = sample_events(0, &n);
  EXPECT_FALSE(w->write_events(ev.data(), ev.size() - 1, n));
  EXPECT_THAT(w->error(), HasSubstr("do not parse"));
  // The writer stays failed: nothing half-valid goes after a refused batch.
  EXPECT_FALSE(w->write_snapshot(sample_snapshot(0)));
  auto w2 = TraceWriter::create(path("w2.plt"), sample_meta(), &error);
  ASSERT_TRUE(w2);
  EXPECT_FALSE(w2->write_events(ev.data(), ev.size(), n + 1));
  auto w3 = TraceWriter::create(path("w3.plt"), sample_meta(), &error);
  ASSERT_TRUE(w3);
  ev[8] = 77;  // unknown type in the first record
  EXPECT_FALSE(w3->write_events(ev.data(), ev.size(), n));
  EXPECT_FALSE(TraceWriter::create(path("no/such/dir.plt"), sample_meta(), &error));
  EXPECT_THAT(error, HasSubstr("no/such/dir.plt"));
  EXPECT_THAT(error, HasSubstr(": No such file or directory"));
}

// A writer in a forked child: `body(fd)` runs there with the write end of a pipe and exits with
// its return value; the parent gets the pid and the read end.
struct ForkedWriter {
  pid_t pid = -1;
  int from_child = -1;
};
template <typename Body>
ForkedWriter fork_writer(Body body) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipefd[0]);
    ::_exit(body(pipefd[1]));
  }
  ::close(pipefd[1]);
  return {child, pipefd[0]};
}

// A write the file system refuses (here: RLIMIT_FSIZE, EFBIG; ENOSPC takes the same path) is an
// error with the reason, and the file still ends on a chunk boundary.
TEST_F(TraceFileTest, FailedWriteIsAnErrorAndLeavesAReadableFile) {
  std::string file = path("limited.plt");
  const ForkedWriter child = fork_writer([&](int to_parent) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{20000, 20000};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string err;
    auto w = TraceWriter::create(file, sample_meta(), TraceWriter::Options{false, true}, &err);
    if (!w) return 2;
    for (uint64_t i = 0; i < 1000; ++i)
      if (!w->write_snapshot(sample_snapshot(i))) break;
    std::string msg = w->error();
    (void)!::write(to_parent, msg.data(), msg.size());
    return w->write_note(1, "after failure") ? 3 : 0;
  });
  ASSERT_GT(child.pid, 0);
  char buf[512] = {};
  ssize_t got = ::read(child.from_child, buf, sizeof buf - 1);
  ::close(child.from_child);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_GT(got, 0);
  EXPECT_EQ(std::string(buf), file + ": write: File too large");
  std::string error;
  auto c = read_trace(file, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_FALSE(c->truncated);
  EXPECT_FALSE(c->complete);
  EXPECT_GT(c->snapshots.size(), 2u);
}

TEST_F(TraceFileTest, WriterKilledMidRunLeavesAReadableFile) {
  std::string file = path("killed.plt");
  const ForkedWriter child = fork_writer([&](int to_parent) {
    std::string err;
    auto w = TraceWriter::create(file, sample_meta(), &err);
    if (!w) return 2;
    uint64_t n = 0;
    auto ev = sample_events(0, &n);
    for (uint64_t i = 0;; ++i) {
      if (!w->write_snapshot(sample_snapshot(i, 50)) || !w->write_events(ev.data(), ev.size(), n)) return 3;
      if (i == 20) (void)!::write(to_parent, "x", 1);  // enough is on disk: kill me any time
    }
  });
  ASSERT_GT(child.pid, 0);
  char x = 0;
  ASSERT_EQ(::read(child.from_child, &x, 1), 1);
  ::close(child.from_child);
  ::kill(child.pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  std::string error;
  auto c = read_trace(file, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_FALSE(c->complete);
  EXPECT_GE(c->snapshots.size(), 21u);
  EXPECT_GE(c->event_count, 21u * kEventsPerBatch);
  for (size_t i = 0; i < c->snapshots.size(); i += 7) expect_same_snapshot(c->snapshots[i], sample_snapshot(i, 50));
}

// Seeds for tests/fuzz/corpus/trace_reader_fuzz: PLATOON_WRITE_FUZZ_SEEDS=DIR model_tests
// --gtest_filter='*FuzzSeeds*' (small files, so libFuzzer's default max_len covers them).
TEST_F(TraceFileTest, WritesFuzzSeedsWhenAsked) {
  const char* out = std::getenv("PLATOON_WRITE_FUZZ_SEEDS");
  if (!out) GTEST_SKIP() << "PLATOON_WRITE_FUZZ_SEEDS not set";
  std::string error;
  for (int codec : {0, 1, 2}) {
    const bool compress = codec != 0;
    std::string file = std::string(out) + (codec == 2 ? "/small-zstd.plt" : codec == 1 ? "/small-zlib.plt" : "/small-stored.plt");
    TraceWriter::Options opts;
    opts.compress = compress;
    opts.zlib = codec == 1;
    auto w = TraceWriter::create(file, sample_meta(), opts, &error);
    ASSERT_TRUE(w) << error;
    ASSERT_TRUE(w->write_snapshot(sample_snapshot(1, 2)));
    uint64_t n = 0;
    auto ev = sample_events(0, &n);
    ASSERT_TRUE(w->write_events(ev.data(), ev.size(), n));
    ASSERT_TRUE(w->write_note(3, "target 4242 exited at +3.2 s"));
    ASSERT_TRUE(w->finish(std::string(kStopTargetExited)));
    ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  }
}

// The codec iterates the field list; so does this test, so a field added to the list but left
// out of (or special-cased wrongly in) the writer or the reader fails here, by name.
TEST_F(TraceFileTest, EveryListedFieldRoundTrips) {
  Snapshot snap;
  snap.ts_ns = 9'000'000'000;
  for (uint32_t tid : {300u, 301u}) {
    ThreadSample& t = snap.threads.emplace_back();
    t.tid = tid;
    t.pid = 300;
    t.comm = "listed-" + std::to_string(tid);
    t.first_seen_ns = tid * 11;
    t.last_cpu = tid % 2;
    t.exited = tid % 2 == 1;
    for_each_thread_field(SetEveryListedField{t, uint64_t{tid} * 1'000'000'000'000});
  }
  for (bool compress : {true, false}) {
    SCOPED_TRACE(compress ? "compressed" : "stored");
    const std::string file = path(compress ? "listed-z.plt" : "listed-s.plt");
    std::string error;
    TraceWriter::Options opts;
    opts.compress = compress;
    auto w = TraceWriter::create(file, sample_meta(), opts, &error);
    ASSERT_TRUE(w) << error;
    ASSERT_TRUE(w->write_snapshot(snap)) << w->error();
    ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
    auto c = read_trace(file, &error);
    ASSERT_TRUE(c) << error;
    ASSERT_EQ(c->snapshots.size(), 1u);
    ASSERT_EQ(c->snapshots[0].threads.size(), snap.threads.size());
    // The identity fields, then every listed one by name.
    for (size_t i = 0; i < snap.threads.size(); ++i) expect_same_thread(c->snapshots[0].threads[i], snap.threads[i]);
  }
}

// Format 1.2's minor-2 tail: the machine's per-CPU times, the CPU cgroups and which thread is
// in which, and the META's runtime, come back as written (sorted groups, quota -1 kept).
TEST_F(TraceFileTest, MachineContextRoundTrips) {
  Snapshot snap;
  snap.ts_ns = 5'000'000'000;
  snap.tick_ns = 10'000'000;
  snap.cpus = {CpuTimes{0, 1, 2, 3, 4, 5, 6, 7, 8}, CpuTimes{7, 10, 20, 30, 40, 50, 60, 70, 80}};
  snap.cgroups = {CgroupCpu{"/a", 1, 20000, 100000, 5, 4, 3'000'000, 9}, CgroupCpu{"/b c", 2, -1, 100000, 0, 0, 0, 0}};
  for (uint32_t tid : {40u, 41u, 42u}) {
    ThreadSample& t = snap.threads.emplace_back();
    t.tid = tid;
    t.pid = 40;
    t.comm = "m";
    t.cgroup = tid == 40 ? "/a" : tid == 41 ? "/b c" : "";
    t.wait_throttled_ns = tid == 40 ? 77 : 0;
  }
  const std::string file = path("machine.plt");
  std::string error;
  TraceMeta meta = sample_meta();
  meta.runtime = "jvm";
  auto w = TraceWriter::create(file, meta, {}, &error);
  ASSERT_TRUE(w) << error;
  ASSERT_TRUE(w->write_snapshot(snap)) << w->error();
  ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
  auto c = read_trace(file, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->meta.runtime, "jvm");
  EXPECT_EQ(c->meta.minor_version, kTraceMinorVersion);
  ASSERT_EQ(c->snapshots.size(), 1u);
  const Snapshot& got = c->snapshots[0];
  EXPECT_EQ(got.tick_ns, snap.tick_ns);
  ASSERT_EQ(got.cpus.size(), 2u);
  EXPECT_EQ(got.cpus[1].cpu, 7u);
  EXPECT_EQ(got.cpus[1].steal, 80u);
  EXPECT_EQ(got.cpus[0].irq, 6u);
  ASSERT_EQ(got.cgroups.size(), 2u);
  EXPECT_EQ(got.cgroups[0].path, "/a");
  EXPECT_EQ(got.cgroups[0].quota_us, 20000);
  EXPECT_EQ(got.cgroups[0].throttled_ns, 3'000'000u);
  EXPECT_EQ(got.cgroups[0].usage_ns, 9u);
  EXPECT_EQ(got.cgroups[1].quota_us, -1);
  EXPECT_EQ(got.cgroups[1].version, 2u);
  ASSERT_EQ(got.threads.size(), 3u);
  EXPECT_EQ(got.threads[0].cgroup, "/a");
  EXPECT_EQ(got.threads[1].cgroup, "/b c");
  EXPECT_EQ(got.threads[2].cgroup, "");
  EXPECT_EQ(got.threads[0].wait_throttled_ns, 77u);
}

}  // namespace
}  // namespace platoon::tests
