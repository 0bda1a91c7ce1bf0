// The report's requests section: per server port, per remote endpoint the targets called, and
// per reading thread, the latency percentiles and the socket wait by the reader's state. Text and
// JSON (docs: ../shared/ARCHITECTURE.md, "Requests"); both are absent when the window has no
// request data.
#pragma once

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <string>

#include "tui/analysis/observer_cost.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::outputs {

// cost: what the recorder's programs cost (none: unknown); the request programs' share is shown
// per request.
std::string text_requests(const analysis::Window& w, const analysis::ObserverCost* cost);
// The "requests" object; call only when w.has(kFieldRequests).
void json_requests(rapidjson::PrettyWriter<rapidjson::StringBuffer>& j, const analysis::Window& w,
                   const analysis::ObserverCost* cost);

}  // namespace platoon::outputs
