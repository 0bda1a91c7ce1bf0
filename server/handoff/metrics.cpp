#include "server/handoff/metrics.hpp"

#include <cstdint>
#include <vector>

#include "runtime/runtime.hpp"
#include "server/handoff/server.hpp"

namespace platoon::server {

namespace {
void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double v) {
  header(out, name, type, help);
  out += name;
  out += ' ';
  out += std::to_string(static_cast<int64_t>(v));
  out += '\n';
}

// One family per exported runtime counter (runtime/stats.hpp), one sample per carrier.
void carrier_families(std::string& out, const std::vector<rt::CarrierStats>& stats) {
  for (const rt::CarrierCounterInfo& c : rt::kCarrierCounters) {
    if (*c.metric == '\0') continue;
    header(out, c.metric, c.kind, c.help);
    for (const rt::CarrierStats& s : stats) {
      out += c.metric;
      out += "{carrier=\"";
      out += s.name;
      out += "\"} ";
      out += std::to_string(s.*c.value);
      out += '\n';
    }
  }
}
}  // namespace

std::string prometheus_metrics(const rt::Runtime& rt, const ServerCounters& c, int64_t backend_connections) {
  std::string out;
  out.reserve(4096);
  carrier_families(out, rt.stats());
  scalar(out, "platoon_fibers_live", "gauge", "Fibers spawned and not finished.", static_cast<double>(rt.live_fibers()));
  scalar(out, "platoon_fiber_stacks", "gauge", "Fiber records (stacks) allocated.", static_cast<double>(rt.fiber_records()));
  scalar(out, "platoon_connections_open", "gauge", "Client connections open.", static_cast<double>(c.connections_open.load()));
  scalar(out, "platoon_connections_accepted_total", "counter", "Client connections accepted.",
         static_cast<double>(c.connections_accepted.load()));
  scalar(out, "platoon_connections_rejected_total", "counter", "Connections closed at accept: over --max-connections.",
         static_cast<double>(c.connections_rejected.load()));
  scalar(out, "platoon_connection_failures_total", "counter",
         "Connections closed because their fiber got no stack or an exception escaped it.",
         static_cast<double>(c.connection_failures.total()));
  scalar(out, "platoon_request_timeouts_total", "counter", "Started requests not complete within the request timeout (408).",
         static_cast<double>(c.request_timeouts.load()));
  scalar(out, "platoon_backend_connections_open", "gauge", "Connections to the backend, idle or busy.",
         static_cast<double>(backend_connections));
  scalar(out, "platoon_requests_total", "counter", "Requests parsed.", static_cast<double>(c.requests.load()));
  header(out, "platoon_responses_total", "counter", "Responses by status class.");
  out += "platoon_responses_total{class=\"2xx\"} " + std::to_string(c.responses_2xx.load()) + "\n";
  out += "platoon_responses_total{class=\"4xx\"} " + std::to_string(c.responses_4xx.load()) + "\n";
  out += "platoon_responses_total{class=\"5xx\"} " + std::to_string(c.responses_5xx.load()) + "\n";
  scalar(out, "platoon_backend_errors_total", "counter", "Backend calls that failed (502/504).",
         static_cast<double>(c.backend_errors.load()));
  return out;
}

}  // namespace platoon::server
