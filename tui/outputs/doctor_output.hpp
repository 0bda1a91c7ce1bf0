// doctor's diagnosis as text and JSON (docs/doctor.md gives the schema), alone or two side by
// side (--vs) with the verdict on which run is healthier.
#pragma once

#include <string>
#include <vector>

#include "tui/analysis/doctor.hpp"

namespace platoon::outputs::doctor {

std::string text(const analysis::doctor::Diagnosis& d);
std::string json(const analysis::doctor::Diagnosis& d, bool pretty = true);

// --vs: which run is healthier and why.
struct Comparison {
  int healthier = 0;           // 0: A, 1: B, -1: neither
  std::vector<std::string> reasons;
};
Comparison compare(const analysis::doctor::Diagnosis& a, const analysis::doctor::Diagnosis& b);
std::string compare_text(const analysis::doctor::Diagnosis& a, const analysis::doctor::Diagnosis& b);
std::string compare_json(const analysis::doctor::Diagnosis& a, const analysis::doctor::Diagnosis& b,
                         bool pretty = true);

}  // namespace platoon::outputs::doctor
