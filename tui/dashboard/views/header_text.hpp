// The header lines over `platoon top`'s table.
#pragma once

#include <string>
#include <vector>

#include "tui/dashboard/state/top_state.hpp"

namespace platoon::dashboard {

// Header lines over the table: target (and the process whose threads are shown, once one is
// opened in the process view), interval, source, losses, recording; process totals; carriers'
// queue depth at drain; status.
std::vector<std::string> header_lines(const TopState& st);

}  // namespace platoon::dashboard
