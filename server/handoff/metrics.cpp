#include "server/handoff/metrics.hpp"

#include <cstdint>
#include <functional>

#include "runtime/runtime.hpp"
#include "server/handoff/server.hpp"

namespace platoon::server {

namespace {
struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::function<uint64_t(const rt::CarrierStats&)> value;
};

void scalar(std::string& out, const char* name, const char* type, const char* help, double v) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  out += name;
  out += ' ';
  out += std::to_string(static_cast<int64_t>(v));
  out += '\n';
}
}  // namespace

std::string prometheus_metrics(const rt::Runtime& rt, const ServerCounters& c, int64_t backend_connections) {
  static const Family families[] = {
      {"platoon_carrier_cycles_total", "counter", "Carrier loop iterations (each starts with a poll).",
       [](const rt::CarrierStats& s) { return s.cycles; }},
      {"platoon_carrier_io_events_total", "counter", "Event callbacks run by the carrier's loop.",
       [](const rt::CarrierStats& s) { return s.io_events; }},
      {"platoon_carrier_fibers_run_total", "counter", "Fiber resumptions.",
       [](const rt::CarrierStats& s) { return s.fibers_run; }},
      {"platoon_carrier_queue_depth_high_water", "gauge", "Highest runnable queue depth seen at drain start.",
       [](const rt::CarrierStats& s) { return s.queue_depth_hwm; }},
      {"platoon_carrier_steals_total", "counter", "Successful steals by this carrier.",
       [](const rt::CarrierStats& s) { return s.steals; }},
      {"platoon_carrier_stolen_fibers_total", "counter", "Fibers taken by this carrier's steals.",
       [](const rt::CarrierStats& s) { return s.stolen_fibers; }},
      {"platoon_carrier_sleeps_total", "counter", "Times the carrier blocked waiting for work.",
       [](const rt::CarrierStats& s) { return s.sleeps; }},
      {"platoon_carrier_wakeups_total", "counter", "Wakeups written to the carrier by other threads.",
       [](const rt::CarrierStats& s) { return s.wakeups; }},
      {"platoon_carrier_budget_cuts_total", "counter", "Drains stopped by the time budget with fibers left.",
       [](const rt::CarrierStats& s) { return s.budget_cuts; }},
      {"platoon_carrier_off_home_runs_total", "counter", "Resumptions of fibers whose home is another carrier.",
       [](const rt::CarrierStats& s) { return s.off_home_runs; }},
  };
  const std::vector<rt::CarrierStats> stats = rt.stats();
  std::string out;
  out.reserve(4096);
  for (const Family& f : families) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += f.help;
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += f.type;
    out += '\n';
    for (const rt::CarrierStats& s : stats) {
      out += f.name;
      out += "{carrier=\"";
      out += s.name;
      out += "\"} ";
      out += std::to_string(f.value(s));
      out += '\n';
    }
  }
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
  out += "# HELP platoon_responses_total Responses by status class.\n# TYPE platoon_responses_total counter\n";
  out += "platoon_responses_total{class=\"2xx\"} " + std::to_string(c.responses_2xx.load()) + "\n";
  out += "platoon_responses_total{class=\"4xx\"} " + std::to_string(c.responses_4xx.load()) + "\n";
  out += "platoon_responses_total{class=\"5xx\"} " + std::to_string(c.responses_5xx.load()) + "\n";
  scalar(out, "platoon_backend_errors_total", "counter", "Backend calls that failed (502/504).",
         static_cast<double>(c.backend_errors.load()));
  return out;
}

}  // namespace platoon::server
