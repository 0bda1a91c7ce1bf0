// The detail view of one thread in `platoon top`: titled sections (epoll batches, drains, why it
// waited, run-queue latency, CPUs, preemptors and wakers, history).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tui/dashboard/state/top_state.hpp"
#include "tui/dashboard/views/glyphs.hpp"

namespace platoon::dashboard {

// One titled block of the detail view.
struct Section {
  std::string title;
  std::vector<std::string> lines;
};
std::vector<Section> detail_sections(const TopState& st, const analysis::ThreadWindow& t,
                                     size_t width, size_t max_rows, Glyphs g);

}  // namespace platoon::dashboard
