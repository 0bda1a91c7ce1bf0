// `platoon top --batch`: the header and the whole table as plain text.
#pragma once

#include <string>

#include "tui/dashboard/state/top_state.hpp"

namespace platoon::dashboard {

// `--batch`: the header and the whole table as plain text, one block per interval; in
// whole-machine mode the process table.
std::string batch_text(const TopState& st);

}  // namespace platoon::dashboard
