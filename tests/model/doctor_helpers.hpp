// What doctor's tests ask of a Diagnosis: a finding by id, whether a check was not evaluated, and
// a number of its evidence or threshold (a missing or non-numeric key fails the test); and a
// diagnosis of a synthetic window, made the one way they share.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tui/analysis/doctor.hpp"
#include "tui/outputs/doctor_output.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::analysis::doctor {

// The tests read a diagnosis and its text, JSON and --vs verdict as one, beside the rest of the
// program's names (tests/lib/namespaces.hpp).
using namespace platoon::outputs::doctor;
using namespace platoon::tests;

inline const Finding* finding(const Diagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

inline bool not_evaluated(const Diagnosis& d, const std::string& id) {
  for (const auto& n : d.not_evaluated)
    if (n.id == id) return true;
  return false;
}

// The diagnosis of w on a 2-CPU machine, for a target of this runtime.
inline Diagnosis diagnosis_of(const Window& w, snapshot::RuntimeKind runtime = snapshot::RuntimeKind::other) {
  DoctorInput in;
  in.label = "test";
  in.window = &w;
  in.ncpus = 2;
  in.runtime = runtime;
  return diagnose(in);
}

inline double num(const Object& o, const char* key) {
  const Value* v = find(o, key);
  EXPECT_TRUE(v && v->number()) << key;
  return v && v->number() ? *v->number() : -1;
}

}  // namespace platoon::analysis::doctor
