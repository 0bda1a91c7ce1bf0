#include "tui/trace/request_codec.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace platoon::trace {

namespace {

// A histogram: its bucket count, then (bucket - previous bucket, count) pairs in bucket order,
// so that neighbouring buckets take one byte each.
void encode_hist(ByteWriter& w, const snapshot::LatencyHistogram& h) {
  const auto& b = h.buckets();
  w.varint(b.size());
  uint32_t prev = 0;
  for (const auto& [bucket, n] : b) {
    w.varint(bucket - prev);
    w.varint(n);
    prev = bucket;
  }
}

bool decode_hist(ByteReader& r, snapshot::LatencyHistogram& h) {
  const size_t n = r.count(kMaxHistogramBuckets);
  std::vector<std::pair<uint32_t, uint64_t>> b;
  b.reserve(n);
  uint64_t bucket = 0;
  for (size_t i = 0; i < n && r.ok(); ++i) {
    bucket += r.varint();
    const uint64_t count = r.varint();
    if (bucket > kMaxHistogramBuckets || (i > 0 && bucket == b.back().first)) return false;
    b.emplace_back(static_cast<uint32_t>(bucket), count);
  }
  h.set_buckets(std::move(b));
  return r.ok();
}

// The group's fields in the format's order, for Put and Get alike.
template <typename Io, typename Group>
void group_fields(Io&& io, Group& g) {
  io(g.key.pid), io(g.key.tid), io(g.key.port), io(g.key.remote);
  io(g.count), io(g.partial), io(g.overlapped), io(g.unattributed), io(g.unattributed_ns);
  for (auto& ns : g.state_ns) io(ns);
}

struct PutGroup {
  ByteWriter& w;
  void operator()(const std::string& s) { w.str(s); }
  void operator()(uint64_t v) { w.varint(v); }
};
struct GetGroup {
  ByteReader& r;
  void operator()(std::string& s) { s = r.str(); }
  void operator()(uint16_t& v) {
    const uint64_t x = r.varint();
    if (x > 0xffff) r.fail();
    v = static_cast<uint16_t>(x);
  }
  void operator()(uint32_t& v) { v = r.varint32(); }
  void operator()(uint64_t& v) { v = r.varint(); }
};

}  // namespace

void encode_request_tail(ByteWriter& w, const snapshot::Snapshot& s) {
  w.varint(s.lost_requests);
  const size_t n = std::min<size_t>(s.requests.size(), kMaxListItems);
  w.varint(n);
  for (size_t i = 0; i < n; ++i) {
    const snapshot::RequestGroup& g = s.requests[i];
    w.u8(static_cast<uint8_t>(g.key.side));
    group_fields(PutGroup{w}, g);
    for (const auto* h : {&g.wait, &g.service, &g.total}) encode_hist(w, *h);
  }
}

bool decode_request_tail(ByteReader& r, snapshot::Snapshot& s) {
  s.lost_requests = r.varint();
  const size_t n = r.count(kMaxListItems);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    snapshot::RequestGroup g;
    const uint8_t side = r.u8();
    if (side > PLATOON_REQ_CLIENT) return false;
    g.key.side = static_cast<snapshot::RequestSide>(side);
    group_fields(GetGroup{r}, g);
    for (auto* h : {&g.wait, &g.service, &g.total})
      if (!decode_hist(r, *h)) return false;
    if (i < kKeepRequestGroups) s.requests.push_back(std::move(g));
    else ++s.lost_requests;
  }
  if (!r.ok()) return false;
  std::sort(s.requests.begin(), s.requests.end(),
            [](const snapshot::RequestGroup& a, const snapshot::RequestGroup& b) { return a.key < b.key; });
  return true;
}

}  // namespace platoon::trace
