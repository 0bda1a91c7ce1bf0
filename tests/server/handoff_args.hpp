// What the handoff server tests share: the body /fruits must answer, the server's command
// line against a backend port, starting it, and one counter read from its /metrics.
#pragma once

#include <string>
#include <vector>

#include "server/common/fruits.hpp"
#include "tests/server/http_client.hpp"
#include "tests/server/subprocess.hpp"

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

// The value of an unlabelled counter in /metrics; -1 when it is not there.
inline long metric(int port, const std::string& name) {
  Conn c(port);
  const auto m = c.get("/metrics");
  const auto at = m.body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stol(m.body.substr(at + name.size() + 2));
}

}  // namespace platoon::test

// Starts platoon-server with ARGS as the Child `srv` and its port as `port`; ASSERTs it came up
// (a macro: an ASSERT in a helper function would not end the test).
#define START_SERVER(srv, port, ARGS)                        \
  platoon::test::Child srv("platoon-server", ARGS);          \
  const int port = srv.wait_port();                          \
  ASSERT_GT(port, 0) << srv.output()
