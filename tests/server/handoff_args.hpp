// What the handoff server tests share: the body /fruits must answer and the server's command
// line against a backend port.
#pragma once

#include <string>
#include <vector>

#include "server/common/fruits.hpp"

namespace platoon::test {

inline const std::string& expected_body() {
  static const std::string body = fruits::compact_json(fruits::catalogue());
  return body;
}

inline std::vector<std::string> server_args(int backend_port, std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"--port", "0", "--backend", "127.0.0.1:" + std::to_string(backend_port)};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace platoon::test
