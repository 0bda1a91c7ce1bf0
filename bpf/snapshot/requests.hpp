// Request latency as the socket programs measure it (bpf/requests.bpf.h): each completed request
// is one PLATOON_EV_REQUEST record, and a snapshot holds their sums per group (side, process,
// reading thread, endpoint), cumulative like every other counter, so that two snapshots give a
// window by subtraction.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bpf/platoon.h"

namespace platoon::snapshot {

// Nanoseconds in HdrHistogram's log-linear shape: exact below 2^kSubBits * 2, then every power of
// two in 2^kSubBits equal steps, so a value read back from its bucket (its highest equivalent
// value) is within 1/64 (1.6%) of the value recorded. The scheduler's log2 slots would put a
// p99 anywhere within 2x. Kept sparse: a request group's waits fill a few dozen buckets.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 6;
  static uint32_t bucket_of(uint64_t ns);
  static uint64_t bucket_low(uint32_t bucket);
  static uint64_t bucket_high(uint32_t bucket);  // the bucket's largest value

  void add(uint64_t ns, uint64_t n = 1);
  void add(const LatencyHistogram& other);
  // This minus an earlier state of the same histogram (a window); buckets never go below 0.
  LatencyHistogram minus(const LatencyHistogram& earlier) const;
  uint64_t count() const { return count_; }
  // The highest equivalent value of the bucket holding rank ceil(p/100 * count) (at least 1);
  // 0 when empty. p = 100: the largest recorded value's bucket.
  uint64_t percentile_ns(double p) const;
  // (bucket, count), sorted by bucket, counts > 0: for the trace codec.
  const std::vector<std::pair<uint32_t, uint64_t>>& buckets() const { return buckets_; }
  void set_buckets(std::vector<std::pair<uint32_t, uint64_t>> b);

  bool operator==(const LatencyHistogram&) const = default;

 private:
  std::vector<std::pair<uint32_t, uint64_t>> buckets_;
  uint64_t count_ = 0;
};

enum class RequestSide : uint8_t { server = PLATOON_REQ_SERVER, client = PLATOON_REQ_CLIENT };
const char* to_string(RequestSide s);

// The reader's states a socket wait is split into, in platoon.h's order (state_ns).
inline constexpr std::array<const char*, PLATOON_REQ_STATES> kRequestStates{"runnable", "throttled", "running",
                                                                             "blocked"};

struct RequestKey {
  RequestSide side = RequestSide::server;
  uint32_t pid = 0;
  uint32_t tid = 0;          // the reading thread
  uint16_t port = 0;         // server: the local port it listens on; client: the remote port
  std::string remote;        // client: the remote address ("127.0.0.1", "::1"); server: ""
  auto operator<=>(const RequestKey&) const = default;
};

// The requests of one group. A partial request (its connection predates the attach) is only
// counted: its wait is unknown. An unattributed one (read by another thread than the expected
// reader) is in the histograms, and its wait in unattributed_ns rather than state_ns.
struct RequestGroup {
  RequestKey key;
  uint64_t count = 0;        // complete requests: the histograms' count
  uint64_t partial = 0;
  uint64_t overlapped = 0;   // on connections where requests overlapped (pipelining, HTTP/2)
  uint64_t unattributed = 0;
  uint64_t unattributed_ns = 0;
  std::array<uint64_t, PLATOON_REQ_STATES> state_ns{};
  LatencyHistogram wait;     // socket wait: ready to read
  LatencyHistogram service;  // server: read to the response; client: the backend time
  LatencyHistogram total;    // server time (wait + service); client: sent to read

  bool operator==(const RequestGroup&) const = default;
};

// The key a record belongs to.
RequestKey request_key(const platoon_ev_request& r);
// Adds one record to its group in `groups` (sorted by key), or counts it in *lost when the
// group is new and `groups` already holds max_groups.
void add_request(std::vector<RequestGroup>& groups, const platoon_ev_request& r, size_t max_groups, uint64_t* lost);
// Adds g's counts and histograms to `into` (its key stays).
void merge_group(RequestGroup& into, const RequestGroup& g);
// later - earlier per key (a group absent earlier is taken whole).
std::vector<RequestGroup> requests_minus(const std::vector<RequestGroup>& later, const std::vector<RequestGroup>& earlier);

}  // namespace platoon::snapshot
