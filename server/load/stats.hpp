// What a worker thread counts while it runs; merged into one after the run.
#pragma once

#include <cstdint>
#include <vector>

#include "server/load/histogram.hpp"

namespace platoon::load {

enum class ErrorKind { connect, read, write, status, timeout };

struct Errors {
  uint64_t connect = 0, read = 0, write = 0, status = 0, timeout = 0;

  void count(ErrorKind k) {
    switch (k) {
      case ErrorKind::connect: ++connect; break;
      case ErrorKind::read: ++read; break;
      case ErrorKind::write: ++write; break;
      case ErrorKind::status: ++status; break;
      case ErrorKind::timeout: ++timeout; break;
    }
  }
  uint64_t total() const { return connect + read + write + status + timeout; }
  uint64_t socket_errors() const { return connect + read + write + timeout; }
  Errors& operator+=(const Errors& o) {
    connect += o.connect;
    read += o.read;
    write += o.write;
    status += o.status;
    timeout += o.timeout;
    return *this;
  }
};

struct ThreadStats {
  // Nanoseconds. corrected: completion − intended send time (coordinated omission corrected);
  // uncorrected: completion − actual send time.
  Histogram corrected, uncorrected;
  // Actual − intended send time of each request (fixed rate): how far behind its schedule the
  // generator itself ran. Large values mean too few connections or threads for the rate.
  Histogram send_lag;
  uint64_t requests = 0;  // complete responses, any status
  uint64_t bytes = 0;     // bytes read
  Errors errors;
  std::vector<double> rate_samples;  // this thread's requests/s over successive 100 ms windows
  int64_t measure_start_ns = 0;      // when the counters were last reset (or the run began)
  int64_t measure_end_ns = 0;        // when the thread stopped

  void reset(int64_t now) {
    corrected.reset();
    uncorrected.reset();
    send_lag.reset();
    requests = bytes = 0;
    errors = Errors{};
    rate_samples.clear();
    measure_start_ns = now;
  }
  void merge(const ThreadStats& o) {
    corrected.merge(o.corrected);
    uncorrected.merge(o.uncorrected);
    send_lag.merge(o.send_lag);
    requests += o.requests;
    bytes += o.bytes;
    errors += o.errors;
    rate_samples.insert(rate_samples.end(), o.rate_samples.begin(), o.rate_samples.end());
  }
};

}  // namespace platoon::load
