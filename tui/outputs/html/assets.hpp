// The HTML report's page, style, script and chart library, inlined at build time
// (embed_assets.py), so a report opens anywhere without fetching anything.
#pragma once

#include <string_view>

namespace platoon::outputs::html {

extern const std::string_view kPageHtml;    // page.html: the skeleton, with {{...}} slots
extern const std::string_view kReportCss;   // report.css
extern const std::string_view kReportJs;    // charts.js and report.js: draw the charts from the data
extern const std::string_view kChartLib;    // Vega, from Debian's libjs-vega

}  // namespace platoon::outputs::html
