#include "tui/outputs/prom_requests.hpp"

#include <array>
#include <tuple>
#include <vector>

#include "tui/analysis/requests.hpp"

namespace platoon::outputs {

namespace {

// Bucket edges in seconds, 10 µs to 2.5 s: a socket wait's floor is a wakeup (~10 µs), a server
// time's tail a stalled carrier.
constexpr std::array<double, 17> kEdges{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
                                        1e-2, 2.5e-2, 5e-2, 0.1,  0.25,   0.5,  1,    2.5};

const std::vector<std::string>& edge_labels() {
  static const std::vector<std::string> le = [] {
    std::vector<std::string> v;
    for (double e : kEdges) v.push_back(fmt::format("{}", e));
    return v;
  }();
  return le;
}

// Requests at or below each edge: a bucket counts below an edge when its largest value is
// (values within a bucket differ by at most 1/64, so an edge inside one moves them that little).
void latency(Out& out, std::string_view name, const std::string& labels, const snapshot::LatencyHistogram& h) {
  std::array<uint64_t, kEdges.size()> below{};
  double sum = 0;
  for (const auto& [bucket, n] : h.buckets()) {
    const uint64_t high = snapshot::LatencyHistogram::bucket_high(bucket);
    const uint64_t low = snapshot::LatencyHistogram::bucket_low(bucket);
    sum += (double(low) + double(high)) / 2e9 * double(n);
    for (size_t i = 0; i < kEdges.size(); ++i)
      if (double(high) <= kEdges[i] * 1e9) below[i] += n;
  }
  out.histogram(name, labels, edge_labels(), [&](size_t i) { return below[i]; }, h.count(), sum);
}

struct Series {
  std::string labels;
  snapshot::RequestGroup sum;
};

// The groups of one side merged per (pid, endpoint), with their labels; over the bound, counted.
std::vector<Series> merged(const snapshot::Snapshot& s, snapshot::RequestSide side,
                           const std::map<uint32_t, std::string>& names, uint64_t* over) {
  std::map<std::tuple<uint32_t, std::string, uint16_t>, Series> by;
  for (const snapshot::RequestGroup& g : s.requests) {
    if (g.key.side != side) continue;
    const auto key = std::make_tuple(g.key.pid, g.key.remote, g.key.port);
    auto it = by.find(key);
    if (it == by.end()) {
      if (by.size() >= kMaxRequestSeries) {
        ++*over;
        continue;
      }
      const auto n = names.find(g.key.pid);
      const std::string process = n == names.end() ? std::string() : n->second;
      const std::string endpoint = side == snapshot::RequestSide::server
                                       ? fmt::format("port=\"{}\"", g.key.port)
                                       : fmt::format("remote=\"{}:{}\"", prom_escape_label(g.key.remote), g.key.port);
      it = by.emplace(key, Series{fmt::format("pid=\"{}\",process=\"{}\",{}", g.key.pid, prom_escape_label(process), endpoint), {}})
               .first;
    }
    snapshot::merge_group(it->second.sum, g);
  }
  std::vector<Series> out;
  for (auto& [k, v] : by) out.push_back(std::move(v));
  return out;
}

void wait_by_state(Out& out, const char* name, const std::vector<Series>& series) {
  out.family(name, "counter",
             "Socket wait of the requests by what the reading thread did meanwhile (runnable: waiting for a CPU; "
             "unattributed: read by another thread than the expected reader).");
  for (const Series& x : series) {
    for (size_t i = 0; i < x.sum.state_ns.size(); ++i)
      out.sample(name, fmt::format("{},state=\"{}\"", x.labels, analysis::kWaitParts[i]), double(x.sum.state_ns[i]) / 1e9);
    out.sample(name, fmt::format("{},state=\"unattributed\"", x.labels), double(x.sum.unattributed_ns) / 1e9);
  }
}

}  // namespace

void request_families(Out& out, const snapshot::Snapshot& s, const std::map<uint32_t, std::string>& names) {
  if (!(s.fields & snapshot::kFieldRequests)) return;
  uint64_t over = 0;
  const auto server = merged(s, snapshot::RequestSide::server, names, &over);
  const auto client = merged(s, snapshot::RequestSide::client, names, &over);
  struct Family {
    const char* name;
    const char* help;
    const std::vector<Series>* series;
    snapshot::LatencyHistogram snapshot::RequestGroup::*hist;
  };
  const Family families[] = {
      {"platoon_requests_server_time_seconds", "Time in the server of the requests on a port the process listens on: "
       "bytes ready until the response began.", &server, &snapshot::RequestGroup::total},
      {"platoon_requests_socket_wait_seconds", "Part of the server time the request waited in its socket until a "
       "thread of the process read it.", &server, &snapshot::RequestGroup::wait},
      {"platoon_requests_backend_time_seconds", "Time from the process's request to a remote endpoint until the reply "
       "was readable.", &client, &snapshot::RequestGroup::service},
      {"platoon_requests_reply_wait_seconds", "Time the endpoint's replies waited in their socket until a thread of "
       "the process read them.", &client, &snapshot::RequestGroup::wait},
  };
  for (const Family& f : families) {
    out.family(f.name, "histogram", f.help);
    for (const Series& x : *f.series) latency(out, f.name, x.labels, x.sum.*f.hist);
  }
  wait_by_state(out, "platoon_requests_socket_wait_by_state_seconds_total", server);
  out.family("platoon_requests_partial_total", "counter",
             "Requests on connections that predate the watching: counted, not in the histograms.");
  for (const Series& x : server) out.sample("platoon_requests_partial_total", x.labels, x.sum.partial);
  out.family("platoon_requests_lost_total", "counter",
             "Requests not counted: the kernel's request ring or the group table was full.");
  out.bare("platoon_requests_lost_total", double(s.lost_requests));
  out.family("platoon_requests_series_over_limit", "gauge", "Endpoints beyond the exporter's bound, not exported.");
  out.bare("platoon_requests_series_over_limit", double(over));
}

}  // namespace platoon::outputs
