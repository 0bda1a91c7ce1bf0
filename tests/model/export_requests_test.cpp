// The exports of request records against values chosen here: a trace written with TraceWriter
// holds six requests (both sides, partial, unattributed, two overlapping on one connection,
// IPv6, a reader and a process no snapshot names), stored out of time order. The requests CSV
// must be the rows spelled out below, and the Perfetto export, read back by proto_decode.hpp
// and nested the way trace_processor nests track events, must hold the slices, phases and flows
// listed below. With PLATOON_WRITE_REQUEST_TRACES=DIR the test also leaves the trace (and one
// without requests) in DIR, for tests/model/export_requests_test.sh to export with the program.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/model/builders.hpp"
#include "tests/model/proto_decode.hpp"
#include "tests/model/temp_dir.hpp"
#include "tui/outputs/export_perfetto.hpp"
#include "tui/outputs/export_requests_csv.hpp"
#include "tui/outputs/export_targets.hpp"
#include "tui/trace/trace_reader.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

constexpr uint64_t kT0 = 1'000'000'000;

platoon_ev_request request(uint16_t side, uint32_t pid, uint32_t tid, uint64_t conn, uint64_t end, uint64_t wait,
                           uint64_t service, uint16_t flags = 0) {
  return {.h = {.ts_ns = end, .type = PLATOON_EV_REQUEST, .tid = tid}, .pid = pid, .side = side, .flags = flags,
          .family = AF_INET, .conn = conn, .wait_ns = wait, .service_ns = service};
}
void ipv4(platoon_ev_request& r, uint16_t local, std::array<uint8_t, 4> addr, uint16_t port) {
  r.local_port = local;
  std::copy(addr.begin(), addr.end(), r.remote_addr);
  r.remote_port = port;
}

// The six requests, in the order the file holds them (time order: 2, 1, 4, 5, 3, 6).
std::vector<platoon_ev_request> requests() {
  auto r1 = request(PLATOON_REQ_SERVER, 100, 101, 7, kT0 + 50'000, 20'000, 30'000);
  ipv4(r1, 8080, {127, 0, 0, 1}, 40001);
  r1.state_ns[PLATOON_REQ_RUNNABLE] = 5'000;
  r1.state_ns[PLATOON_REQ_RUNNING] = 10'000;
  r1.state_ns[PLATOON_REQ_BLOCKED] = 5'000;
  auto r2 = request(PLATOON_REQ_CLIENT, 100, 101, 9, kT0 + 40'000, 4'000, 25'000, PLATOON_REQ_OVERLAPPED);
  ipv4(r2, 45000, {10, 0, 0, 2}, 9090);
  r2.state_ns[PLATOON_REQ_RUNNABLE] = 1'000;
  r2.state_ns[PLATOON_REQ_THROTTLED] = 500;
  r2.state_ns[PLATOON_REQ_RUNNING] = 1'500;
  r2.state_ns[PLATOON_REQ_BLOCKED] = 1'000;
  auto r3 = request(PLATOON_REQ_SERVER, 100, 102, 8, kT0 + 200'000, 0, 70'000,
                    PLATOON_REQ_PARTIAL | PLATOON_REQ_UNATTRIBUTED);
  r3.family = AF_INET6;
  r3.local_port = 8080;
  r3.remote_addr[15] = 1;  // ::1
  r3.remote_port = 40002;
  auto r4 = request(PLATOON_REQ_SERVER, 100, 102, 7, kT0 + 120'000, 15'000, 10'000, PLATOON_REQ_UNATTRIBUTED);
  ipv4(r4, 8080, {127, 0, 0, 1}, 40001);
  // Pipelined behind 4 on its connection: starts before 4 ends. Read by a thread no snapshot has.
  auto r5 = request(PLATOON_REQ_SERVER, 100, 999, 7, kT0 + 130'000, 25'000, 5'000, PLATOON_REQ_OVERLAPPED);
  ipv4(r5, 8080, {127, 0, 0, 1}, 40001);
  for (auto& ns : r5.state_ns) ns = 5'000;
  r5.state_ns[PLATOON_REQ_RUNNABLE] = 10'000;
  // A process no snapshot has.
  auto r6 = request(PLATOON_REQ_CLIENT, 200, 201, 11, kT0 + 300'000, 1'000, 2'000);
  ipv4(r6, 46000, {10, 0, 0, 3}, 9091);
  r6.state_ns[PLATOON_REQ_BLOCKED] = 1'000;
  return {r3, r1, r2, r5, r4, r6};
}

// Writes the recording: a snapshot before the requests (none yet), the records, and a snapshot
// after them holding their groups, as platoon record --requests writes them.
void write_trace(const std::string& path, const std::vector<platoon_ev_request>& records) {
  std::vector<ThreadSample> threads{test::thread_sample(101, 100, "carrier-0"),
                                    test::thread_sample(102, 100, "carrier,\"1\"")};
  Snapshot first = test::snapshot_at(kT0 - 1'000'000, threads, kFieldsBpf | kFieldRequests);
  Snapshot last = test::snapshot_at(kT0 + 1'000'000, threads, kFieldsBpf | kFieldRequests);
  for (const auto& r : records) add_request(last.requests, r, 64, &last.lost_requests);
  std::string error;
  auto w = TraceWriter::create(path, TraceMeta{}, {}, &error);
  ASSERT_TRUE(w) << error;
  ASSERT_TRUE(w->write_snapshot(first)) << w->error();
  if (!records.empty()) {
    ASSERT_TRUE(w->write_events(records.data(), records.size() * sizeof records[0], records.size())) << w->error();
  }
  ASSERT_TRUE(w->write_snapshot(last)) << w->error();
  ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
}

class ExportRequestsTest : public test::TempDirTest {
 protected:
  void SetUp() override {
    test::TempDirTest::SetUp();
    const std::string file = path("requests.trace");
    write_trace(file, requests());
    std::string error;
    auto c = read_trace(file, &error);
    ASSERT_TRUE(c) << error;
    contents_ = std::move(*c);
    if (const char* dir = std::getenv("PLATOON_WRITE_REQUEST_TRACES"); dir && *dir) {
      std::filesystem::copy_file(file, std::string(dir) + "/requests.trace",
                                 std::filesystem::copy_options::overwrite_existing);
      write_trace(std::string(dir) + "/none.trace", {});
    }
  }
  TraceContents contents_;
};

TEST_F(ExportRequestsTest, CsvHasOneRowPerRequestInTimeOrder) {
  std::ostringstream out;
  write_requests_csv_header(out);
  RequestsCsv csv(out, targets_of(contents_.snapshots));
  for_each_event(contents_, [&](const platoon_event_header& h, const void* rec, size_t size) { csv.add(h, rec, size); });
  EXPECT_EQ(csv.finish(), 6u);
  EXPECT_EQ(csv.late(), 0u);
  // Empty cells: not measured for that request (a client's service, a server's backend time, a
  // partial request's socket wait, an unattributed one's split).
  EXPECT_EQ(out.str(),
            "end_ns,start_ns,side,pid,tid,comm,conn,local_port,remote,socket_wait_ns,service_ns,backend_time_ns,"
            "server_time_ns,runnable_ns,throttled_ns,running_ns,blocked_ns,partial,unattributed,overlapped\n"
            "1000040000,1000011000,client,100,101,carrier-0,9,45000,10.0.0.2:9090,4000,,25000,,1000,500,1500,1000,0,0,1\n"
            "1000050000,1000000000,server,100,101,carrier-0,7,8080,127.0.0.1:40001,20000,30000,,50000,5000,0,10000,5000,0,0,0\n"
            "1000120000,1000095000,server,100,102,\"carrier,\"\"1\"\"\",7,8080,127.0.0.1:40001,15000,10000,,25000,,,,,0,1,0\n"
            "1000130000,1000100000,server,100,999,,7,8080,127.0.0.1:40001,25000,5000,,30000,10000,5000,5000,5000,0,0,1\n"
            "1000200000,1000130000,server,100,102,\"carrier,\"\"1\"\"\",8,8080,[::1]:40002,,70000,,,,,,,1,1,0\n"
            "1000300000,1000297000,client,200,201,,11,46000,10.0.0.3:9091,1000,,2000,,0,0,0,1000,0,0,0\n");
}

// The Perfetto export decoded: tracks by uuid, and each track's events nested into slices.
struct Decoded {
  struct Track {
    std::string name;
    uint64_t parent = 0;
    uint32_t tid = 0, pid = 0;  // a thread's, a process's
  };
  struct Slice {
    uint64_t track, ts, dur = 0;
    int depth;
    std::string name;
    std::map<std::string, std::string> args;
    std::vector<uint64_t> flow_out, flow_in;
  };
  std::map<uint64_t, Track> tracks;
  std::vector<Slice> slices;
  std::string label(const Slice& s) const;
};

Decoded decode(const std::string& trace) {
  Decoded d;
  struct Event {
    uint64_t ts;
    std::vector<Field> fields;
  };
  std::vector<Event> events;
  for (const Field& p : all(parse(trace), 1)) {
    const auto packet = parse(p.bytes);
    if (const Field* td = one(packet, 60)) {
      const auto t = parse(td->bytes);
      Decoded::Track track;
      if (const Field* n = one(t, 2)) track.name = n->bytes;
      if (const Field* parent = one(t, 5)) track.parent = parent->value;
      if (const Field* th = one(t, 4)) track.tid = static_cast<uint32_t>(one(parse(th->bytes), 2)->value);
      if (const Field* pr = one(t, 3)) track.pid = static_cast<uint32_t>(one(parse(pr->bytes), 1)->value);
      d.tracks[one(t, 1)->value] = track;
    }
    if (const Field* te = one(packet, 11)) events.push_back({one(packet, 8)->value, parse(te->bytes)});
  }
  // trace_processor sorts by timestamp, keeping the file order of equal stamps.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  std::map<uint64_t, std::vector<size_t>> open;
  for (const Event& e : events) {
    const uint64_t type = one(e.fields, 9)->value, track = one(e.fields, 11)->value;
    if (type == 4) continue;  // a counter
    auto& stack = open[track];
    if (type == 2) {
      EXPECT_FALSE(stack.empty()) << "an end without a begin at " << e.ts;
      if (stack.empty()) continue;
      d.slices[stack.back()].dur = e.ts - d.slices[stack.back()].ts;
      stack.pop_back();
      continue;
    }
    Decoded::Slice s{track, e.ts, 0, static_cast<int>(stack.size()), one(e.fields, 23)->bytes, {}, {}, {}};
    for (const Field& a : all(e.fields, 4)) {
      const auto af = parse(a.bytes);
      const Field* v = one(af, 3) ? one(af, 3) : one(af, 2);
      s.args[one(af, 10)->bytes] = (v->number == 2 ? (v->value ? "true" : "false") : std::to_string(v->value));
    }
    for (const Field& f : all(e.fields, 47)) s.flow_out.push_back(f.value);
    for (const Field& f : all(e.fields, 48)) s.flow_in.push_back(f.value);
    d.slices.push_back(s);
    if (type == 1) stack.push_back(d.slices.size() - 1);
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "slices left open on " << track;
  return d;
}

// "track|depth|name|ts|dur"; a thread's track as "tid N", an overlap track with " (2)".
std::string Decoded::label(const Slice& s) const {
  const Track& t = tracks.at(s.track);
  std::string track = t.tid ? "tid " + std::to_string(t.tid) : t.name;
  if (tracks.count(t.parent) && !tracks.at(t.parent).pid) track += " (2)";
  return track + "|" + std::to_string(s.depth) + "|" + s.name + "|" + std::to_string(s.ts - kT0) + "|" +
         std::to_string(s.dur);
}

TEST_F(ExportRequestsTest, PerfettoHasASlicePerRequestWithPhasesAndAFlowToTheReader) {
  std::ostringstream out;
  PerfettoStats stats;
  ASSERT_TRUE(write_perfetto_trace(out, contents_.meta, contents_.events, contents_.snapshots, &stats));
  EXPECT_EQ(stats.requests.requests, 6u);
  EXPECT_EQ(stats.requests.partial, 1u);
  EXPECT_EQ(stats.requests.flows, 5u);
  const Decoded d = decode(out.str());

  std::vector<std::string> slices;
  std::map<uint64_t, std::string> flow_from, flow_to;
  for (const auto& s : d.slices) {
    slices.push_back(d.label(s));
    for (uint64_t f : s.flow_out) flow_from[f] = d.label(s);
    for (uint64_t f : s.flow_in) flow_to[f] = d.label(s);
  }
  std::sort(slices.begin(), slices.end());
  const std::string s8080 = "server :8080 <- 127.0.0.1:40001";
  std::vector<std::string> want{
      // Stamps in µs·1000 after kT0: start = end - wait - service.
      s8080 + "|0|request|0|50000", s8080 + "|1|socket wait|0|20000", s8080 + "|1|service|20000|30000",
      "client :45000 -> 10.0.0.2:9090|0|request|11000|29000", "client :45000 -> 10.0.0.2:9090|1|backend|11000|25000",
      "client :45000 -> 10.0.0.2:9090|1|socket wait|36000|4000",
      s8080 + "|0|request|95000|25000", s8080 + "|1|socket wait|95000|15000", s8080 + "|1|service|110000|10000",
      s8080 + " (2)|0|request|100000|30000", s8080 + " (2)|1|socket wait|100000|25000",
      s8080 + " (2)|1|service|125000|5000",
      "server :8080 <- [::1]:40002|0|request (partial)|130000|70000",
      "client :46000 -> 10.0.0.3:9091|0|request|297000|3000", "client :46000 -> 10.0.0.3:9091|1|backend|297000|2000",
      "client :46000 -> 10.0.0.3:9091|1|socket wait|299000|1000",
      "tid 101|0|read request|20000|0", "tid 101|0|read reply|40000|0", "tid 102|0|read request|110000|0",
      "tid 999|0|read request|125000|0", "tid 201|0|read reply|300000|0"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(slices, want);

  // Each flow: from a socket wait to the read on its reader's track, at the read.
  std::vector<std::string> flows;
  for (const auto& [id, from] : flow_from) flows.push_back(from + " -> " + flow_to[id]);
  std::sort(flows.begin(), flows.end());
  std::vector<std::string> want_flows{
      s8080 + "|1|socket wait|0|20000 -> tid 101|0|read request|20000|0",
      "client :45000 -> 10.0.0.2:9090|1|socket wait|36000|4000 -> tid 101|0|read reply|40000|0",
      s8080 + "|1|socket wait|95000|15000 -> tid 102|0|read request|110000|0",
      s8080 + " (2)|1|socket wait|100000|25000 -> tid 999|0|read request|125000|0",
      "client :46000 -> 10.0.0.3:9091|1|socket wait|299000|1000 -> tid 201|0|read reply|300000|0"};
  std::sort(want_flows.begin(), want_flows.end());
  EXPECT_EQ(flows, want_flows);
  EXPECT_EQ(flow_from.size(), flow_to.size());

  // Tracks: connections under their reader's process (made for pid 200, which no snapshot has),
  // the overlap track under its connection's, a track for reader 999 under process 100.
  std::map<std::string, std::vector<uint32_t>> parents;  // connection track name -> parent pids
  for (const auto& [uuid, t] : d.tracks) {
    if (t.name.rfind("server :", 0) != 0 && t.name.rfind("client :", 0) != 0) continue;
    const Decoded::Track* p = &d.tracks.at(t.parent);
    if (!p->pid) p = &d.tracks.at(p->parent);
    parents[t.name].push_back(p->pid);
  }
  EXPECT_EQ(parents, (std::map<std::string, std::vector<uint32_t>>{{s8080, {100, 100}},
                                                                   {"client :45000 -> 10.0.0.2:9090", {100}},
                                                                   {"server :8080 <- [::1]:40002", {100}},
                                                                   {"client :46000 -> 10.0.0.3:9091", {200}}}));
  bool reader_999 = false;
  for (const auto& [uuid, t] : d.tracks) reader_999 |= t.tid == 999 && d.tracks.at(t.parent).pid == 100;
  EXPECT_TRUE(reader_999);

  // The arguments of request 1 (complete, attributed) and of the partial one.
  std::map<std::string, std::map<std::string, std::string>> args;
  for (const auto& s : d.slices)
    if (s.depth == 0 && s.name.rfind("request", 0) == 0) args[d.label(s)] = s.args;
  EXPECT_EQ(args.at(s8080 + "|0|request|0|50000"),
            (std::map<std::string, std::string>{{"socket_wait_ns", "20000"}, {"service_ns", "30000"},
                                                {"server_time_ns", "50000"}, {"runnable_ns", "5000"},
                                                {"throttled_ns", "0"}, {"running_ns", "10000"},
                                                {"blocked_ns", "5000"}, {"partial", "false"},
                                                {"unattributed", "false"}, {"overlapped", "false"}}));
  EXPECT_EQ(args.at("server :8080 <- [::1]:40002|0|request (partial)|130000|70000"),
            (std::map<std::string, std::string>{{"service_ns", "70000"}, {"partial", "true"},
                                                {"unattributed", "true"}, {"overlapped", "false"}}));
}

// A connection idle for over 10 s is forgotten once the connections held have doubled, so a
// recording of short connections holds a bounded number: used again, it gets a new track.
TEST(PerfettoRequests, ForgetsConnectionsIdleForTenSeconds) {
  std::vector<platoon_ev_request> records;
  for (uint64_t i = 0; i < 2048; ++i) records.push_back(request(PLATOON_REQ_SERVER, 100, 101, 1000 + i, kT0 + i * 1000, 100, 100));
  records.push_back(request(PLATOON_REQ_SERVER, 100, 101, 1000, kT0 + 5 * test::kSec, 100, 100));       // reused: same track
  records.push_back(request(PLATOON_REQ_SERVER, 100, 101, 9999, kT0 + 20 * test::kSec, 100, 100));      // new: sweeps
  records.push_back(request(PLATOON_REQ_SERVER, 100, 101, 1001, kT0 + 21 * test::kSec, 100, 100));      // forgotten
  const auto* bytes = reinterpret_cast<const uint8_t*>(records.data());
  std::ostringstream out;
  PerfettoStats stats;
  ASSERT_TRUE(write_perfetto_trace(out, TraceMeta{}, {bytes, records.size() * sizeof records[0]}, {}, &stats));
  EXPECT_EQ(stats.requests.requests, 2051u);
  EXPECT_EQ(stats.requests.tracks, 2048u + 1 + 1);
}

}  // namespace
}  // namespace platoon::tests
