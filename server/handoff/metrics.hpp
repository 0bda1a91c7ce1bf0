// GET /metrics: the runtime's per-carrier counters in the Prometheus text exposition format.
#pragma once

#include <cstdint>
#include <string>

namespace platoon::rt { class Runtime; }

namespace platoon::server {

struct ServerCounters;

std::string prometheus_metrics(const rt::Runtime& rt, const ServerCounters& counters, int64_t backend_connections);

}  // namespace platoon::server
