// The exposition's writer, shared by the families of prom_metrics.cpp and prom_requests.cpp:
// HELP/TYPE lines, samples and histograms in the text format 0.0.4, counting the samples.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <string_view>

#include "tui/outputs/prom_metrics.hpp"

namespace platoon::outputs {

// Appends exposition text; counts the samples it writes.
class Out {
 public:
  explicit Out(std::string& text) : text_(text) {}
  void family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n", name, prom_escape_help(help), name, type);
  }
  void sample(std::string_view name, std::string_view labels, uint64_t v) {
    fmt::format_to(std::back_inserter(text_), "{}{{{}}} {}\n", name, labels, v);
    ++samples_;
  }
  void sample(std::string_view name, std::string_view labels, double v) {
    fmt::format_to(std::back_inserter(text_), "{}{{{}}} {}\n", name, labels, v);
    ++samples_;
  }
  void bare(std::string_view name, double v) {
    fmt::format_to(std::back_inserter(text_), "{} {}\n", name, v);
    ++samples_;
  }
  // A histogram's buckets, _sum and _count. `cumulative(i)` is the count at or below edge i.
  void histogram(std::string_view name, std::string_view labels, std::span<const std::string> le,
                 const std::function<uint64_t(size_t)>& cumulative, uint64_t total, double sum) {
    for (size_t i = 0; i < le.size(); ++i)
      fmt::format_to(std::back_inserter(text_), "{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le[i], cumulative(i));
    fmt::format_to(std::back_inserter(text_), "{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, total);
    fmt::format_to(std::back_inserter(text_), "{}_sum{{{}}} {}\n", name, labels, sum);
    fmt::format_to(std::back_inserter(text_), "{}_count{{{}}} {}\n", name, labels, total);
    samples_ += le.size() + 3;
  }
  size_t samples() const { return samples_; }

 private:
  std::string& text_;
  size_t samples_ = 0;
};

}  // namespace platoon::outputs
