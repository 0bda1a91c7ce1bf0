// The running kernel's build configuration, as the tests' independent truth for what the kernel
// can measure (the collector decides the same from BTF; a test must not ask it).
#pragma once

#include <sys/utsname.h>
#include <zlib.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {

// The config text from /boot/config-<release>, else /proc/config.gz; empty when neither reads.
inline std::string kernel_config_text() {
  utsname u{};
  if (uname(&u) == 0) {
    std::ifstream in(std::string("/boot/config-") + u.release);
    if (in) {
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    }
  }
  std::string text;
  if (gzFile gz = gzopen("/proc/config.gz", "rb")) {
    char buf[65536];
    int n = 0;
    while ((n = gzread(gz, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    gzclose(gz);
  }
  return text;
}

// Whether OPTION is built in (=y); nullopt when the config cannot be read.
inline std::optional<bool> kernel_config_has(const std::string& option) {
  const std::string text = kernel_config_text();
  if (text.empty()) return std::nullopt;
  return text.find("\n" + option + "=y\n") != std::string::npos || text.rfind(option + "=y\n", 0) == 0;
}

}  // namespace platoon::tests::testing
