// kernel.bpf_stats_enabled is global: a test that needs it in one state puts it there for its
// own lifetime and puts back what it found, even when an assertion ends the test early.
#pragma once

#include <fstream>
#include <string>
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {

class StatsSysctl {
 public:
  // Writes want (0 or 1); written() says whether the write took.
  explicit StatsSysctl(int want) {
    std::ifstream in(kPath);
    if (!(in >> was_)) return;
    written_ = write(want);
  }
  ~StatsSysctl() {
    if (was_ >= 0) write(was_);
  }
  StatsSysctl(const StatsSysctl&) = delete;
  StatsSysctl& operator=(const StatsSysctl&) = delete;

  bool written() const { return written_; }

 private:
  static constexpr const char* kPath = "/proc/sys/kernel/bpf_stats_enabled";
  static bool write(int v) {
    std::ofstream out(kPath);
    out << v << '\n';
    out.flush();
    return bool(out);
  }
  int was_ = -1;
  bool written_ = false;
};

}  // namespace platoon::tests::testing
