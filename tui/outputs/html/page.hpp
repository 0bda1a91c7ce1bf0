// One self-contained HTML file: the page skeleton with the style, the chart library, the
// report's script and the data inlined, so it opens from a file with no network.
#pragma once

#include <string>

namespace platoon::outputs::html {

// Text as HTML shows it rather than interprets it (& < > " escaped).
std::string escape_text(const std::string& s);

// data_json: page_data_json's document. The title is escaped; the data is made safe to sit
// inside a <script> element.
std::string page(const std::string& title, const std::string& data_json);

}  // namespace platoon::outputs::html
