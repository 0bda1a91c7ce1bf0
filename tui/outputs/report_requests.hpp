// The report's requests section: per server port, per remote endpoint the targets called, and
// per reading thread, the latency percentiles and the socket wait by the reader's state. Text and
// JSON (docs: ../shared/ARCHITECTURE.md, "Requests"); both are absent when the window has no
// request data.
#pragma once

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <string>

#include "tui/analysis/window.hpp"

namespace platoon::outputs {

std::string text_requests(const analysis::Window& w);
// The "requests" object; call only when w.has(kFieldRequests).
void json_requests(rapidjson::PrettyWriter<rapidjson::StringBuffer>& j, const analysis::Window& w);

}  // namespace platoon::outputs
