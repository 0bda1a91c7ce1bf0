// libFuzzer target: arbitrary bytes through the trace reader. Each input is read twice: as a
// reader normally does (checksums on: mutations mostly end at the CRC, which is the point of
// testing truncation and corruption paths) and with checksums off, so that mutated payloads
// reach the chunk decoders, the inflater and the event validation. Every event is walked and
// every snapshot field touched, so a reader that hands out bad lengths is caught here too.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tui/trace/events.hpp"  // event_as
#include "tui/trace/trace_reader.hpp"
#include "tests/lib/namespaces.hpp"

using namespace platoon::tests;

namespace {

volatile uint64_t g_sink;  // keeps the reads below from being optimised away

void touch(const TraceContents& c) {
  uint64_t sum = c.meta.ncpus + c.meta.interval_ns + c.meta.pids.size() + c.meta.command.size();
  for (const auto& s : c.snapshots) {
    sum += s.ts_ns + s.lost_events_per_cpu.size();
    for (const auto& t : s.threads) {
      sum += t.tid + t.run_ns + t.comm.size() + t.cpu_switch_ins.size();
      for (uint64_t v : t.runq_hist) sum += v;
      for (uint64_t v : t.io_events_hist) sum += v;
      for (uint64_t v : t.drain_depth_hist) sum += v;
    }
    for (const auto& p : s.pairs) sum += p.count + p.other_comm.size();
  }
  for (const auto& n : c.notes) sum += n.ts_ns + n.text.size();
  uint64_t walked = 0;
  bool ok = for_each_event(c, [&](const platoon_event_header& h, const void* rec, size_t size) {
    ++walked;
    sum += h.ts_ns + h.tid + size;
    if (auto sw = event_as<platoon_ev_switch>(rec, size)) sum += sw->next_tid + sw->next_comm[15];
  });
  // The reader validated every record: walking them again must agree with it.
  if (!ok || (c.events.size() && walked != c.event_count)) __builtin_trap();
  g_sink = sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  for (bool verify : {true, false}) {
    ReadOptions options;
    options.verify_crc = verify;
    std::string error;
    auto contents = read_trace_bytes(bytes, &error, options);
    if (contents) {
      touch(*contents);
    } else if (error.empty() || error.find('\n') != std::string::npos) {
      __builtin_trap();  // errors are one non-empty line
    }
  }
  return 0;
}
