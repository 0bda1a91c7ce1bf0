#include "tui/outputs/report_requests.hpp"

#include <fmt/format.h>

#include <array>
#include <iterator>
#include <optional>

#include "tui/analysis/requests.hpp"

namespace platoon::outputs {

namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;
using analysis::RequestRow;
using snapshot::LatencyHistogram;

// The percentiles every latency shows, with their JSON keys and text headers.
struct Percentile {
  const char* key;
  const char* title;
  double p;
};
constexpr std::array<Percentile, 4> kPercentiles{{{"p50", "p50", 50}, {"p99", "p99", 99}, {"p999", "p99.9", 99.9},
                                                  {"max", "max", 100}}};

// The latencies of a row, in output order: what each side measures.
struct Latency {
  const char* key;    // JSON: "<key>_us"
  const char* label;  // text
  LatencyHistogram snapshot::RequestGroup::*hist;
};
constexpr std::array<Latency, 3> kServerLatencies{{{"socket_wait", "socket wait", &snapshot::RequestGroup::wait},
                                                   {"service", "service", &snapshot::RequestGroup::service},
                                                   {"server_time", "server time", &snapshot::RequestGroup::total}}};
constexpr std::array<Latency, 2> kClientLatencies{{{"backend_time", "backend time", &snapshot::RequestGroup::service},
                                                   {"socket_wait", "socket wait", &snapshot::RequestGroup::wait}}};

// "  socket wait      35.2    900.1   2100.0   4000.0" in µs.
template <size_t N>
void text_latencies(auto o, const RequestRow& r, const std::array<Latency, N>& lats) {
  for (const Latency& l : lats) {
    fmt::format_to(o, "    {:<13}", l.label);
    for (const Percentile& p : kPercentiles) fmt::format_to(o, " {:>9.1f}", analysis::us((r.sum.*l.hist).percentile_ns(p.p)));
    fmt::format_to(o, "\n");
  }
}

void text_row_head(auto o, const RequestRow& r, const char* what) {
  fmt::format_to(o, "  {} {} (pid {}): {} requests, {:.1f}/s", what, r.endpoint(), r.pid, r.sum.count, r.rate);
  if (r.sum.partial) fmt::format_to(o, ", {} partial", r.sum.partial);
  if (r.approximate()) fmt::format_to(o, ", approximate ({} overlapped)", r.sum.overlapped);
  fmt::format_to(o, "\n    {:<13}", "µs");
  for (const Percentile& p : kPercentiles) fmt::format_to(o, " {:>9}", p.title);
  fmt::format_to(o, "\n");
}

void text_wait_parts(auto o, const RequestRow& r) {
  const auto pct = r.wait_by_part_pct();
  fmt::format_to(o, "    socket wait by the reader's state:");
  for (size_t i = 0; i < pct.size(); ++i) fmt::format_to(o, " {} {:.1f}%", analysis::kWaitParts[i], pct[i]);
  fmt::format_to(o, "\n");
}

void json_latency(Writer& j, const LatencyHistogram& h) {
  j.StartObject();
  for (const Percentile& p : kPercentiles) j.Key(p.key), j.Double(analysis::us(h.percentile_ns(p.p)));
  j.EndObject();
}

template <size_t N>
void json_latencies(Writer& j, const RequestRow& r, const std::array<Latency, N>& lats) {
  for (const Latency& l : lats) j.Key((std::string(l.key) + "_us").c_str()), json_latency(j, r.sum.*l.hist);
}

void json_server(Writer& j, const RequestRow& r) {
  j.StartObject();
  j.Key("port"), j.Uint(r.port);
  j.Key("pid"), j.Uint(r.pid);
  j.Key("count"), j.Uint64(r.sum.count);
  j.Key("rate"), j.Double(r.rate);
  json_latencies(j, r, kServerLatencies);
  j.Key("socket_wait_by_state_pct"), j.StartObject();
  const auto pct = r.wait_by_part_pct();
  for (size_t i = 0; i < pct.size(); ++i) j.Key(analysis::kWaitParts[i]), j.Double(pct[i]);
  j.EndObject();
  j.Key("partial"), j.Uint64(r.sum.partial);
  j.Key("overlapped"), j.Uint64(r.sum.overlapped);
  j.Key("unattributed"), j.Uint64(r.sum.unattributed);
  j.Key("approximate"), j.Bool(r.approximate());
  j.EndObject();
}

void json_client(Writer& j, const RequestRow& r) {
  j.StartObject();
  const std::string remote = r.endpoint();
  j.Key("remote"), j.String(remote.c_str(), static_cast<rapidjson::SizeType>(remote.size()));
  j.Key("pid"), j.Uint(r.pid);
  j.Key("count"), j.Uint64(r.sum.count);
  j.Key("rate"), j.Double(r.rate);
  json_latencies(j, r, kClientLatencies);
  j.Key("partial"), j.Uint64(r.sum.partial);
  j.Key("approximate"), j.Bool(r.approximate());
  j.EndObject();
}

void json_thread(Writer& j, const RequestRow& r) {
  j.StartObject();
  j.Key("tid"), j.Uint(r.tid);
  j.Key("comm"), j.String(r.comm.c_str(), static_cast<rapidjson::SizeType>(r.comm.size()));
  j.Key("count"), j.Uint64(r.sum.count);
  j.Key("socket_wait_us"), json_latency(j, r.sum.wait);
  j.EndObject();
}

// The request programs' (bpf/requests.bpf.h, names req_*) run time per request the window
// holds, both sides and partial ones included; none when the stats were off or no request ran.
std::optional<double> bpf_ns_per_request(const analysis::ObserverCost* cost, const analysis::RequestsView& v) {
  if (!cost || cost->stats != snapshot::BpfStats::on) return std::nullopt;
  uint64_t requests = 0, ns = 0;
  for (const auto* rows : {&v.server, &v.client})
    for (const RequestRow& r : *rows) requests += r.sum.count + r.sum.partial;
  for (const analysis::ProgramRate& p : cost->programs)
    if (p.name.starts_with("req_")) ns += p.run_ns;
  if (requests == 0) return std::nullopt;
  return double(ns) / double(requests);
}

}  // namespace

std::string text_requests(const analysis::Window& w, const analysis::ObserverCost* cost) {
  if (!w.has(snapshot::kFieldRequests)) return {};
  const analysis::RequestsView v = analysis::requests_view(w);
  std::string s;
  auto o = std::back_inserter(s);
  fmt::format_to(o, "\nRequests (socket wait: bytes ready until a target thread read them; service: read until "
                    "the response began)\n");
  if (v.empty()) fmt::format_to(o, "  none on the targets' TCP connections\n");
  for (const RequestRow& r : v.server) {
    text_row_head(o, r, "server");
    text_latencies(o, r, kServerLatencies);
    text_wait_parts(o, r);
  }
  for (const RequestRow& r : v.client) {
    text_row_head(o, r, "client of");
    text_latencies(o, r, kClientLatencies);
  }
  if (!v.threads.empty()) {
    fmt::format_to(o, "  {:>8}  {:<16} {:>9}  socket wait µs", "TID", "NAME", "requests");
    for (const Percentile& p : kPercentiles) fmt::format_to(o, " {:>9}", p.title);
    fmt::format_to(o, "\n");
  }
  for (const RequestRow& r : v.threads) {
    fmt::format_to(o, "  {:>8}  {:<16} {:>9}  {:14}", r.tid, r.comm, r.sum.count, "");
    for (const Percentile& p : kPercentiles) fmt::format_to(o, " {:>9.1f}", analysis::us(r.sum.wait.percentile_ns(p.p)));
    fmt::format_to(o, "\n");
  }
  if (v.lost) fmt::format_to(o, "  lost: {} requests (ring or group table full)\n", v.lost);
  if (const auto ns = bpf_ns_per_request(cost, v)) fmt::format_to(o, "  BPF cost: {:.0f} ns per request (req_* programs)\n", *ns);
  return s;
}

void json_requests(Writer& j, const analysis::Window& w, const analysis::ObserverCost* cost) {
  const analysis::RequestsView v = analysis::requests_view(w);
  j.StartObject();
  j.Key("server"), j.StartArray();
  for (const RequestRow& r : v.server) json_server(j, r);
  j.EndArray();
  j.Key("client"), j.StartArray();
  for (const RequestRow& r : v.client) json_client(j, r);
  j.EndArray();
  j.Key("threads"), j.StartArray();
  for (const RequestRow& r : v.threads) json_thread(j, r);
  j.EndArray();
  j.Key("lost"), j.Uint64(v.lost);
  if (const auto ns = bpf_ns_per_request(cost, v)) j.Key("bpf_ns_per_request"), j.Double(*ns);
  j.EndObject();
}

}  // namespace platoon::outputs
