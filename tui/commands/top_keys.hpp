// `platoon top`'s keys: what each key action does to the model, and what it asks of the loop
// (top.cpp). The keys themselves are named in dashboard/input/keymap.hpp.
#pragma once

#include "tui/dashboard/state/top_state.hpp"

namespace platoon::cli {

// What a key asks of the loop beyond changing the model.
enum class Intent { none, redraw, quit, retime, record, step_forward, step_back };
Intent apply_key(int key, dashboard::TopState& st, int page);

}  // namespace platoon::cli
