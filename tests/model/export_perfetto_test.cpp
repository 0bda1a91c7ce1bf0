// The Perfetto export on synthetic recordings, read back by a minimal wire-format decoder
// (proto_decode.hpp, written from the protobuf encoding rules, not from the encoder): varints,
// nested messages, the per-CPU bundles in time order, the kinds exported and left out, counters,
// losses, prev_state.
#include "tui/outputs/export_perfetto.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tui/outputs/export_targets.hpp"
#include "tui/outputs/proto_encoder.hpp"
#include "tests/model/proto_decode.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

TEST(ProtoEncoder, WireFormat) {
  ProtoMessage m;
  m.add_varint(1, 300);                       // 08 ac 02
  m.add_int(2, -1);                           // 10 + ten bytes
  m.add_bytes(3, "hi");                       // 1a 02 68 69
  EXPECT_EQ(m.bytes().substr(0, 3), std::string("\x08\xac\x02", 3));
  EXPECT_EQ(m.bytes().substr(3, 11), std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));
  EXPECT_EQ(m.bytes().substr(14), std::string("\x1a\x02hi", 4));
  ProtoMessage outer;
  outer.add_message(491, m);                  // a two-byte tag: (491 << 3) | 2 = 3930
  outer.add_double(44, 2.5);
  auto fs = parse(outer.bytes());
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].number, 491u);
  EXPECT_EQ(fs[0].bytes, m.bytes());
  double d;
  std::memcpy(&d, &fs[1].value, 8);
  EXPECT_EQ(fs[1].wire, 1u);
  EXPECT_DOUBLE_EQ(d, 2.5);
}

TEST(ExportTargets, Utf8SafeKeepsValidNamesAndMasksBrokenOnes) {
  EXPECT_EQ(utf8_safe("carrier-0"), "carrier-0");
  EXPECT_EQ(utf8_safe("caf\xc3\xa9"), "caf\xc3\xa9");
  // A comm the kernel cut inside a character: the lead byte at the very end.
  EXPECT_EQ(utf8_safe("abc\xf0"), "abc?");
  EXPECT_EQ(utf8_safe("\xe2\x82"), "??");
  EXPECT_EQ(utf8_safe("ab\xe2\x82\xac\xe2\x82"), "ab\xe2\x82\xac??");   // the whole € is kept
  EXPECT_EQ(utf8_safe("\xed\xa0\x80x"), "???x");                          // a surrogate is not UTF-8
  EXPECT_EQ(utf8_safe("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");            // 4 bytes
  EXPECT_EQ(utf8_safe("\xc0\xaf"), "??");                                  // overlong
  EXPECT_EQ(utf8_safe(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(PerfettoExport, PrevStateAsTheKernelReportsIt) {
  EXPECT_EQ(report_prev_state(0), 0x100);      // preempted: R+
  EXPECT_EQ(report_prev_state(0x1), 0x1);      // TASK_INTERRUPTIBLE: S
  EXPECT_EQ(report_prev_state(0x2), 0x2);      // TASK_UNINTERRUPTIBLE: D
  EXPECT_EQ(report_prev_state(0x102), 0x2);    // TASK_KILLABLE: D
  EXPECT_EQ(report_prev_state(0x402), 0x80);   // TASK_IDLE: I
  EXPECT_EQ(report_prev_state(0x8), 0x8);      // __TASK_TRACED: t
  EXPECT_EQ(report_prev_state(0x80), 0x10);    // TASK_DEAD: X
}

template <class T>
void append(std::vector<uint8_t>& buf, const T& rec) {
  const auto* p = reinterpret_cast<const uint8_t*>(&rec);
  buf.insert(buf.end(), p, p + sizeof rec);
}
platoon_event_header header(uint64_t ts, uint16_t type, uint16_t cpu, uint32_t tid) {
  platoon_event_header h{};
  h.ts_ns = ts;
  h.type = type;
  h.cpu = cpu;
  h.tid = tid;
  return h;
}

TEST(PerfettoExport, BundlesPerCpuInTimeOrderWithDescriptorsAndCounters) {
  std::vector<uint8_t> ev;
  platoon_ev_switch sw{};
  sw.h = header(3000, PLATOON_EV_SWITCH, 1, 11);   // delivered before an earlier one
  sw.next_tid = 0;
  sw.prev_state = 1;
  sw.prev_prio = 120;
  std::strcpy(sw.prev_comm, "carrier-0");
  std::strcpy(sw.next_comm, "swapper/1");
  append(ev, sw);
  sw.h = header(1000, PLATOON_EV_SWITCH, 1, 0);
  sw.next_tid = 11;
  sw.prev_state = 0;
  std::strcpy(sw.prev_comm, "swapper/1");
  std::strcpy(sw.next_comm, "carrier-0");
  append(ev, sw);
  platoon_ev_wake wk{};
  wk.h = header(900, PLATOON_EV_WAKING, 0, 11);
  wk.waker_tid = 42;
  wk.target_cpu = 1;
  std::strcpy(wk.comm, "carrier-0");
  append(ev, wk);
  wk.h = header(950, PLATOON_EV_WAKEUP, 1, 11);    // left out: Perfetto uses waking
  append(ev, wk);
  platoon_ev_migrate mg{};
  mg.h = header(800, PLATOON_EV_MIGRATE, 0, 11);
  mg.orig_cpu = 0;
  mg.dest_cpu = 1;
  append(ev, mg);
  platoon_ev_epoll ep{};
  ep.h = header(2000, PLATOON_EV_EPOLL, 1, 11);
  ep.nevents = 7;
  append(ev, ep);
  ep.h = header(2100, PLATOON_EV_EPOLL, 1, 11);
  ep.nevents = -4;                                   // EINTR: no batch, no sample
  append(ev, ep);
  platoon_ev_runtime dr{};
  dr.h = header(2200, PLATOON_EV_DRAIN, 1, 11);
  dr.a = 5;
  append(ev, dr);

  Snapshot a, b;
  a.ts_ns = 500;
  b.ts_ns = 5000;
  ThreadSample t;
  t.tid = 11;
  t.pid = 10;
  t.comm = "carrier-0";
  t.first_seen_ns = 1;
  a.threads = {t};
  t.run_ns = 2000;
  t.wait_ns = 900;
  b.threads = {t};
  b.lost_events_per_cpu = {0, 3};
  std::vector<Snapshot> snaps = {a, b};
  TraceMeta meta;
  meta.kernel = "6.1.0-test";
  meta.ncpus = 2;

  std::ostringstream out;
  PerfettoStats stats;
  ASSERT_TRUE(write_perfetto_trace(out, meta, ev, snaps, &stats));
  const auto packets = all(parse(out.str()), 1);
  ASSERT_EQ(packets.size(), stats.packets);

  std::map<uint32_t, std::vector<uint64_t>> ts_per_cpu;
  std::map<uint32_t, bool> lost;
  std::vector<std::string> thread_names, counter_names;
  std::vector<double> counter_values;
  for (size_t i = 0; i < packets.size(); ++i) {
    const auto p = parse(packets[i].bytes);
    ASSERT_NE(one(p, 10), nullptr) << "every packet names its sequence";
    EXPECT_EQ(one(p, 13) != nullptr, i == 0) << "only the first packet clears the sequence state";
    if (const auto* sys = one(p, 45)) {
      const auto uts = parse(one(parse(sys->bytes), 1)->bytes);
      EXPECT_EQ(one(uts, 3)->bytes, "6.1.0-test");
    }
    if (const auto* bundle = one(p, 1)) {
      const auto fs = parse(bundle->bytes);
      const auto cpu = static_cast<uint32_t>(one(fs, 1)->value);
      if (const auto* l = one(fs, 3)) lost[cpu] = l->value != 0;
      for (const auto& e : all(fs, 2)) {
        const auto ef = parse(e.bytes);
        ts_per_cpu[cpu].push_back(one(ef, 1)->value);
        if (const auto* s = one(ef, 4)) {
          const auto sf = parse(s->bytes);
          if (one(sf, 2)->value == 11) {
            EXPECT_EQ(one(sf, 1)->bytes, "carrier-0");
            EXPECT_EQ(one(sf, 4)->value, 1u);       // S
            EXPECT_EQ(one(ef, 2)->value, 11u);      // common pid = prev
          } else {
            EXPECT_EQ(one(sf, 4)->value, 0u);       // the idle task: R
          }
        }
        if (const auto* w = one(ef, 20)) {
          EXPECT_EQ(one(ef, 2)->value, 42u);        // the waker
          EXPECT_EQ(one(parse(w->bytes), 5)->value, 1u);
        }
        EXPECT_EQ(one(ef, 17), nullptr) << "no sched_wakeup";
      }
    }
    if (const auto* td = one(p, 60)) {
      const auto tf = parse(td->bytes);
      if (const auto* th = one(tf, 4)) thread_names.push_back(one(parse(th->bytes), 5)->bytes);
      if (one(tf, 8)) counter_names.push_back(one(tf, 2)->bytes);
    }
    if (const auto* te = one(p, 11)) {
      double v;
      std::memcpy(&v, &one(parse(te->bytes), 44)->value, 8);
      counter_values.push_back(v);
    }
  }
  EXPECT_EQ(ts_per_cpu[0], (std::vector<uint64_t>{800, 900}));   // migrate, waking
  EXPECT_EQ(ts_per_cpu[1], (std::vector<uint64_t>{1000, 3000}));  // sorted, wakeup left out
  EXPECT_TRUE(lost[1]);
  EXPECT_FALSE(lost.count(0));
  EXPECT_EQ(stats.cpus[1].sched_switch, 2u);
  EXPECT_EQ(stats.cpus[0].sched_waking, 1u);
  EXPECT_EQ(stats.cpus[0].sched_migrate_task, 1u);
  EXPECT_EQ(thread_names, std::vector<std::string>{"carrier-0"});
  EXPECT_EQ(counter_names, (std::vector<std::string>{"carrier-0 events per cycle", "carrier-0 queue depth at drain",
                                                     "carrier-0 %wait"}));
  // By time: %wait of the interval (stamped at its start, 500), then 7 events, then depth 5.
  ASSERT_EQ(counter_values.size(), 3u);
  EXPECT_DOUBLE_EQ(counter_values[0], 900.0 / 4500 * 100);
  EXPECT_DOUBLE_EQ(counter_values[1], 7);
  EXPECT_DOUBLE_EQ(counter_values[2], 5);
}

TEST(PerfettoExport, StreamsThroughABoundedReorderBuffer) {
  // 20,000 switches 1 ms apart on two CPUs, delivered in pairs swapped (out of order by 1 ms),
  // then one 400 ms late (twice the horizon): memory holds the horizon's worth, order is restored, the late one is
  // written anyway and counted.
  std::vector<uint8_t> ev;
  platoon_ev_switch sw{};
  const uint64_t ms = 1'000'000;
  for (uint64_t i = 0; i < 20000; i += 2) {
    for (uint64_t j : {i + 1, i}) {
      sw.h = header(1'000'000'000 + j * ms, PLATOON_EV_SWITCH, static_cast<uint16_t>(j % 2), 11);
      append(ev, sw);
    }
  }
  sw.h = header(1'000'000'000 + 19600 * ms, PLATOON_EV_SWITCH, 0, 11);
  append(ev, sw);
  Snapshot a;
  a.ts_ns = 1;
  ThreadSample t;
  t.tid = 11;
  t.pid = 10;
  t.comm = "carrier-0";
  a.threads = {t};
  std::vector<Snapshot> snaps = {a};
  std::ostringstream out;
  PerfettoStats stats;
  ASSERT_TRUE(write_perfetto_trace(out, TraceMeta{}, ev, snaps, &stats));
  EXPECT_LE(stats.max_pending, kReorderHorizonNs / ms + 3);
  EXPECT_EQ(stats.late_events, 1u);
  EXPECT_EQ(stats.cpus[0].sched_switch + stats.cpus[1].sched_switch, 20001u);
  size_t out_of_order = 0;
  std::map<uint64_t, uint64_t> last;  // cpu → last stamp
  for (const auto& pk : all(parse(out.str()), 1)) {
    const auto fields = parse(pk.bytes);
    const auto* bundle = one(fields, 1);
    if (!bundle) continue;
    const auto fs = parse(bundle->bytes);
    const uint64_t cpu = one(fs, 1)->value;
    for (const auto& e : all(fs, 2)) {
      const uint64_t ts = one(parse(e.bytes), 1)->value;
      if (ts < last[cpu]) ++out_of_order;
      last[cpu] = ts;
    }
  }
  EXPECT_EQ(out_of_order, 1u) << "only the late event is out of order";
}

}  // namespace
}  // namespace platoon::tests
