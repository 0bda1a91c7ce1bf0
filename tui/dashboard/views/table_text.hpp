// The table of `platoon top`: which columns fit, their header and each row's cells, for threads
// and (whole-machine mode) processes. Cells come from the metric catalog.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tui/dashboard/state/top_state.hpp"
#include "tui/dashboard/views/glyphs.hpp"

namespace platoon::tui {

// The shown columns that fit in `width` (lowest priority dropped first), in table order.
std::vector<model::Column> visible_columns(const model::TopState& st, size_t width, bool with_history);
std::string column_header(const std::vector<model::Column>& cols, const model::TopState& st);
std::string row_text(const std::vector<model::Column>& cols, const model::ThreadWindow& t,
                     const model::TopState& st, Glyphs g);

// The process view's columns (whole-machine mode), the same way.
std::vector<model::ProcColumn> visible_process_columns(const model::TopState& st, size_t width);
std::string process_column_header(const std::vector<model::ProcColumn>& cols, const model::TopState& st);
std::string process_row_text(const std::vector<model::ProcColumn>& cols, const model::ProcessWindow& p,
                             const model::TopState& st);

}  // namespace platoon::tui
