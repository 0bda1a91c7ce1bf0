// Text pieces of `platoon top` that need no curses: table cells, the header lines, sparklines,
// bars, histogram rows and the detail sections. The curses views place them on screen; --batch
// prints them as they are. Glyphs are UTF-8 block characters or an ASCII fallback.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tui/dashboard/state/top_state.hpp"

namespace platoon::tui {

struct Glyphs {
  bool utf8 = false;
};

// Terminal columns of a UTF-8 string (every glyph used here is one column wide).
size_t text_width(const std::string& s);
// Cut or pad to exactly `width` columns.
std::string fit(const std::string& s, size_t width, bool left = true);

std::string sparkline(const std::deque<double>& values, size_t width, double max, Glyphs g);
std::string bar(double fraction, size_t width, Glyphs g);

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

// Header lines over the table: target (and the process whose threads are shown, once one is
// opened in the process view), interval, source, losses, recording; process totals; carriers'
// queue depth at drain; status.
std::vector<std::string> header_lines(const model::TopState& st);

// One titled block of the detail view.
struct Section {
  std::string title;
  std::vector<std::string> lines;
};
std::vector<Section> detail_sections(const model::TopState& st, const model::ThreadWindow& t,
                                     size_t width, size_t max_rows, Glyphs g);

// `--batch`: the header and the whole table as plain text, one block per interval; in
// whole-machine mode the process table.
std::string batch_text(const model::TopState& st);

}  // namespace platoon::tui
