// The report's sections about the machine and the container rather than the threads' own
// counters: why the threads waited (the wait split), each CPU's steal and interrupt
// time, and the CPU cgroups with their quota and throttling. Text and JSON, from the Window.
#pragma once

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <string>
#include <vector>

#include "tui/analysis/window.hpp"

namespace platoon::outputs {

// Text sections (each "" when the window has nothing for it), in report order.
std::string text_wait_split(const analysis::Window& w, const std::vector<const analysis::ThreadWindow*>& threads);
std::string text_cpus(const analysis::Window& w);
std::string text_cgroups(const analysis::Window& w);

// JSON: the report's "cpus" and "cgroups" arrays (empty arrays when not read).
void json_cpus(rapidjson::PrettyWriter<rapidjson::StringBuffer>& j, const analysis::Window& w);
void json_cgroups(rapidjson::PrettyWriter<rapidjson::StringBuffer>& j, const analysis::Window& w);

}  // namespace platoon::outputs
