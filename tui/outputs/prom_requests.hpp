// The exporter's request families (exporter --requests): per process and server port, and per
// process and remote endpoint it calls, histograms of server time, socket wait and backend time
// and the socket wait by the reading thread's state as counters. Groups are merged over the
// reading threads, so the label sets stay bounded by ports and endpoints, not threads; at most
// kMaxRequestSeries endpoints per family, the rest counted in platoon_requests_series_over_limit.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/outputs/prom_out.hpp"

namespace platoon::outputs {

inline constexpr size_t kMaxRequestSeries = 64;

// Nothing when the snapshot has no request data (kFieldRequests).
void request_families(Out& out, const snapshot::Snapshot& s, const std::map<uint32_t, std::string>& process_names);

}  // namespace platoon::outputs
