#include "tui/outputs/html/page.hpp"

#include <string_view>

#include "tui/outputs/html/assets.hpp"

namespace platoon::outputs::html {
namespace {

// In JSON, '<' can only stand inside a string, where \u003c means the same: so no thread name
// can close the <script> element that holds the data.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

}  // namespace

std::string escape_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string page(const std::string& title, const std::string& data_json) {
  const std::pair<std::string_view, std::string> slots[] = {
      {"{{TITLE}}", escape_text(title)},       {"{{CSS}}", std::string(kReportCss)},
      {"{{CHART_LIB}}", std::string(kChartLib)}, {"{{DATA}}", script_safe(data_json)},
      {"{{APP}}", std::string(kReportJs)},
  };
  // One pass over the skeleton: a slot's text is never searched again for slots.
  std::string out;
  const std::string_view tpl = kPageHtml;
  for (size_t i = 0; i < tpl.size();) {
    bool filled = false;
    if (tpl[i] == '{')
      for (const auto& [name, text] : slots)
        if (tpl.substr(i, name.size()) == name) {
          out += text;
          i += name.size();
          filled = true;
          break;
        }
    if (!filled) out += tpl[i++];
  }
  return out;
}

}  // namespace platoon::outputs::html
