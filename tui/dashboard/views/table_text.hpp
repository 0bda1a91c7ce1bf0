// The table of `platoon top`: which columns fit, their header and each row's cells, for threads
// and (whole-machine mode) processes. Cells come from the metric catalog.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tui/dashboard/state/top_state.hpp"
#include "tui/dashboard/views/glyphs.hpp"

namespace platoon::dashboard {

// The shown columns that fit in `width` (lowest priority dropped first), in table order.
std::vector<Column> visible_columns(const TopState& st, size_t width, bool with_history);
std::string column_header(const std::vector<Column>& cols, const TopState& st);
std::string row_text(const std::vector<Column>& cols, const analysis::ThreadWindow& t,
                     const TopState& st, Glyphs g);

// The process view's columns (whole-machine mode), the same way.
std::vector<ProcColumn> visible_process_columns(const TopState& st, size_t width);
std::string process_column_header(const std::vector<ProcColumn>& cols, const TopState& st);
std::string process_row_text(const std::vector<ProcColumn>& cols, const analysis::ProcessWindow& p,
                             const TopState& st);

}  // namespace platoon::dashboard
