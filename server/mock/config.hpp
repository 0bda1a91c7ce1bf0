// platoon-mock's settings: the flags, plus the one knob that changes at run time (think time,
// through GET /admin/think), shared by every loop thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace platoon::mock {

struct Config {
  std::string host = "127.0.0.1";
  uint16_t port = 8081;
  int threads = 1;
  double think_time_ms = 1.0;
  // Fault knobs for testing the handoff server.
  uint64_t close_after = 0;     // close each connection after this many responses (0: never)
  bool close_silently = false;  // ...without announcing it in a Connection: close header
  double fail_rate = 0.0;       // probability that GET /fruits answers 500 (after the think time)
  // Back-pressure: a connection stops being read while this many responses are queued or this
  // many bytes wait to be written (a client that pipelines without reading).
  size_t max_queued_responses = 4096;
  size_t max_output_bytes = 4 << 20;
};

// What every loop reads; think_ns is written by GET /admin/think on any loop.
struct Shared {
  explicit Shared(const Config& c) : cfg(c), think_ns(ms_to_ns(c.think_time_ms)) {}
  static int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * 1e6 + 0.5); }

  const Config cfg;
  std::atomic<int64_t> think_ns;
};

}  // namespace platoon::mock
