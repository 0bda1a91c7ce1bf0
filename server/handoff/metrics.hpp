// GET /metrics: the runtime's per-carrier counters in the Prometheus text exposition format.
#pragma once

#include <string>

namespace platoon::rt { class Runtime; }

namespace platoon::server {

struct ServerCounters;

std::string prometheus_metrics(const rt::Runtime& rt, const ServerCounters& counters);

}  // namespace platoon::server
