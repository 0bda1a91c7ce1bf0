// Figures: summaries of repetitions (median, percentile) and the small JSON writer the report uses.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/runtime_bench/bench.hpp"
#include "server/common/json.hpp"

namespace platoon::bench {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {  // nearest rank
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  if (rank < 1) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

std::string jstr(const std::string& s) { return json::quoted(s); }

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string jarr(const std::vector<double>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + jnum(v[i]);
  return o + "]";
}

std::string jarr_int(const std::vector<int>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + std::to_string(v[i]);
  return o + "]";
}

std::string Figure::json() const {
  const double m = med();
  return "{\"median\": " + jnum(m) + ", \"min\": " + jnum(lo()) + ", \"max\": " + jnum(hi()) +
         ", \"spread_pct\": " + jnum(m != 0 ? 100.0 * (hi() - lo()) / m : NAN) +
         ", \"unit\": " + jstr(unit) + ", \"reps\": " + jarr(reps) +
         (note.empty() ? "" : ", \"note\": " + jstr(note)) + "}";
}

}  // namespace platoon::bench
