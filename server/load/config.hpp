// What one platoon-load run is asked to do, after the command line has been checked.
#pragma once

#include <cstdint>
#include <string>

#include "server/load/url.hpp"

namespace platoon::load {

struct Config {
  Url url;
  Endpoint endpoint;
  double rate = 0;          // requests per second over all connections; 0 = closed loop
  int connections = 10;
  int threads = 2;
  double duration_s = 10;   // measured part, after the warm-up
  double warmup_s = 0;      // histograms and counters are reset when it ends
  double timeout_s = 2;     // a request without a complete response by then is a timeout
  bool latency = false;     // print the percentile distributions
  std::string json_path;    // empty: no JSON

  bool fixed_rate() const { return rate > 0; }
};

}  // namespace platoon::load
