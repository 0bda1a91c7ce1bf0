#include "bpf/snapshot/requests.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace platoon::snapshot {

namespace {

constexpr uint32_t kSteps = 1u << LatencyHistogram::kSubBits;  // per power of two
constexpr uint32_t kExact = 2 * kSteps;                         // values below are their own bucket
constexpr int kFirstLog = LatencyHistogram::kSubBits + 1;       // log2(kExact)

// Appends b's count n to a sorted bucket list, or adds to the bucket already there.
void bump(std::vector<std::pair<uint32_t, uint64_t>>& v, uint32_t b, uint64_t n) {
  auto it = std::lower_bound(v.begin(), v.end(), b, [](const auto& e, uint32_t x) { return e.first < x; });
  if (it != v.end() && it->first == b) it->second += n;
  else v.insert(it, {b, n});
}

}  // namespace

uint32_t LatencyHistogram::bucket_of(uint64_t ns) {
  if (ns < kExact) return static_cast<uint32_t>(ns);
  const int log = std::bit_width(ns) - 1;  // >= kFirstLog
  const int shift = log - kSubBits;
  const uint32_t step = static_cast<uint32_t>(ns >> shift) - kSteps;  // 0 .. kSteps-1
  return kExact + static_cast<uint32_t>(log - kFirstLog) * kSteps + step;
}

uint64_t LatencyHistogram::bucket_low(uint32_t bucket) {
  if (bucket < kExact) return bucket;
  const uint32_t k = bucket - kExact;
  const int shift = static_cast<int>(k / kSteps) + kFirstLog - kSubBits;
  return uint64_t{kSteps + k % kSteps} << shift;
}

uint64_t LatencyHistogram::bucket_high(uint32_t bucket) {
  if (bucket < kExact) return bucket;
  const int shift = static_cast<int>((bucket - kExact) / kSteps) + kFirstLog - kSubBits;
  return bucket_low(bucket) + (uint64_t{1} << shift) - 1;
}

void LatencyHistogram::add(uint64_t ns, uint64_t n) {
  if (n == 0) return;
  bump(buckets_, bucket_of(ns), n);
  count_ += n;
}

void LatencyHistogram::add(const LatencyHistogram& other) {
  for (const auto& [b, n] : other.buckets_) bump(buckets_, b, n);
  count_ += other.count_;
}

LatencyHistogram LatencyHistogram::minus(const LatencyHistogram& earlier) const {
  LatencyHistogram out;
  auto e = earlier.buckets_.begin();
  for (const auto& [b, n] : buckets_) {
    while (e != earlier.buckets_.end() && e->first < b) ++e;
    const uint64_t before = e != earlier.buckets_.end() && e->first == b ? e->second : 0;
    if (n > before) out.buckets_.push_back({b, n - before}), out.count_ += n - before;
  }
  return out;
}

uint64_t LatencyHistogram::percentile_ns(double p) const {
  if (count_ == 0) return 0;
  const double q = std::clamp(p, 0.0, 100.0) / 100.0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (const auto& [b, n] : buckets_) {
    seen += n;
    if (seen >= rank) return bucket_high(b);
  }
  return bucket_high(buckets_.back().first);
}

void LatencyHistogram::set_buckets(std::vector<std::pair<uint32_t, uint64_t>> b) {
  std::sort(b.begin(), b.end());
  buckets_.clear();
  count_ = 0;
  for (const auto& [bucket, n] : b) {
    if (n == 0) continue;
    if (!buckets_.empty() && buckets_.back().first == bucket) buckets_.back().second += n;
    else buckets_.push_back({bucket, n});
    count_ += n;
  }
}

const char* to_string(RequestSide s) { return s == RequestSide::server ? "server" : "client"; }

RequestKey request_key(const platoon_ev_request& r) {
  RequestKey k;
  k.side = r.side == PLATOON_REQ_CLIENT ? RequestSide::client : RequestSide::server;
  k.pid = r.pid;
  k.tid = r.h.tid;
  if (k.side == RequestSide::server) {
    k.port = r.local_port;
    return k;
  }
  k.port = r.remote_port;
  char text[INET6_ADDRSTRLEN] = {};
  const int family = r.family == AF_INET6 ? AF_INET6 : AF_INET;
  if (inet_ntop(family, r.remote_addr, text, sizeof text)) k.remote = text;
  return k;
}

void add_request(std::vector<RequestGroup>& groups, const platoon_ev_request& r, size_t max_groups, uint64_t* lost) {
  RequestKey key = request_key(r);
  auto it = std::lower_bound(groups.begin(), groups.end(), key,
                             [](const RequestGroup& g, const RequestKey& k) { return g.key < k; });
  if (it == groups.end() || it->key != key) {
    if (groups.size() >= max_groups) {
      ++*lost;
      return;
    }
    it = groups.insert(it, RequestGroup{.key = std::move(key)});
  }
  RequestGroup& g = *it;
  if (r.flags & PLATOON_REQ_PARTIAL) {
    ++g.partial;
    return;
  }
  ++g.count;
  if (r.flags & PLATOON_REQ_OVERLAPPED) ++g.overlapped;
  if (r.flags & PLATOON_REQ_UNATTRIBUTED) {
    ++g.unattributed;
    g.unattributed_ns += r.wait_ns;
  } else {
    for (size_t i = 0; i < g.state_ns.size(); ++i) g.state_ns[i] += r.state_ns[i];
  }
  g.wait.add(r.wait_ns);
  g.service.add(r.service_ns);
  g.total.add(r.wait_ns + r.service_ns);
}

void merge_group(RequestGroup& into, const RequestGroup& g) {
  into.count += g.count;
  into.partial += g.partial;
  into.overlapped += g.overlapped;
  into.unattributed += g.unattributed;
  into.unattributed_ns += g.unattributed_ns;
  for (size_t i = 0; i < into.state_ns.size(); ++i) into.state_ns[i] += g.state_ns[i];
  into.wait.add(g.wait);
  into.service.add(g.service);
  into.total.add(g.total);
}

std::vector<RequestGroup> requests_minus(const std::vector<RequestGroup>& later, const std::vector<RequestGroup>& earlier) {
  std::vector<RequestGroup> out;
  for (const RequestGroup& g : later) {
    auto e = std::lower_bound(earlier.begin(), earlier.end(), g.key,
                              [](const RequestGroup& x, const RequestKey& k) { return x.key < k; });
    if (e == earlier.end() || e->key != g.key) {
      out.push_back(g);
      continue;
    }
    auto minus = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    RequestGroup d{.key = g.key};
    d.count = minus(g.count, e->count);
    d.partial = minus(g.partial, e->partial);
    d.overlapped = minus(g.overlapped, e->overlapped);
    d.unattributed = minus(g.unattributed, e->unattributed);
    d.unattributed_ns = minus(g.unattributed_ns, e->unattributed_ns);
    for (size_t i = 0; i < d.state_ns.size(); ++i) d.state_ns[i] = minus(g.state_ns[i], e->state_ns[i]);
    d.wait = g.wait.minus(e->wait);
    d.service = g.service.minus(e->service);
    d.total = g.total.minus(e->total);
    if (d.count || d.partial) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace platoon::snapshot
