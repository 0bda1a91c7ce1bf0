// The diagnosis: the Context every check reads, then each check of doctor_checks.hpp's list
// that the data can answer, findings sorted most severe first, then the key numbers.
#include "tui/analysis/doctor.hpp"

#include <algorithm>
#include <cmath>

#include "tui/analysis/doctor_checks.hpp"

namespace platoon::analysis::doctor {

// ---- Value ----

const Value* find(const Object& o, std::string_view key) {
  for (const auto& [k, v] : o)
    if (k == key) return &v;
  return nullptr;
}
const Value* Value::find(std::string_view key) const {
  const Object* o = object();
  return o ? doctor::find(*o, key) : nullptr;
}

double round_to(double v, int decimals) {
  const double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}

const char* to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warn: return "warn";
    case Severity::critical: return "critical";
  }
  return "info";
}

size_t Diagnosis::count(Severity s) const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(), [s](const Finding& f) { return f.severity == s; }));
}
int Diagnosis::score() const {
  return static_cast<int>(100 * count(Severity::critical) + 10 * count(Severity::warn) + count(Severity::info));
}

Diagnosis diagnose(const DoctorInput& in) {
  Diagnosis d;
  static const Window kEmpty;
  const Window& w = in.window ? *in.window : kEmpty;
  d.label = in.label;
  d.source = to_string(w.source);
  d.duration_s = w.wall_s;
  d.runtime = in.runtime;
  const Context c(in, w);
  for (const ThreadWindow* t : c.roles.carriers) {
    d.carriers.push_back(c.name(*t));
    d.carrier_wait.push_back({c.name(*t), t->tid, t->wait_pct,
                              w.has(snapshot::kFieldWaitSplit) ? std::optional<WaitSplit>(t->wait_split) : std::nullopt,
                              w.fields});
  }
  for (const Check& check : checks()) {
    if (std::optional<std::string> why = missing(c, check.needs)) {
      d.not_evaluated.push_back({check.id, std::move(*why)});
      continue;
    }
    CheckResult r;
    check.run(c, r);
    if (!r.not_evaluated.empty()) d.not_evaluated.push_back({check.id, std::move(r.not_evaluated)});
    for (Finding& f : r.findings) {
      f.id = check.id;
      d.findings.push_back(std::move(f));
    }
  }
  std::stable_sort(d.findings.begin(), d.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  d.key = key_numbers(c);
  return d;
}

}  // namespace platoon::analysis::doctor
