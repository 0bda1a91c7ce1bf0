// The mock's answers, built once as complete HTTP/1.1 responses (status line, headers, body) so
// that answering is one append to the connection's output buffer.
#pragma once

#include <string>
#include <string_view>

namespace platoon::mock {

// One response in its two framings: "Connection: keep-alive" and "Connection: close".
struct CannedResponse {
  std::string keep_alive;
  std::string close;
  const std::string& pick(bool closing) const { return closing ? close : keep_alive; }
};

struct Responses {
  CannedResponse fruits;       // 200 application/json, fruits::backend_body()
  CannedResponse failure;      // 500, for --fail-rate
  CannedResponse health;       // 200 "ok"
  CannedResponse not_found;    // 404
  CannedResponse not_allowed;  // 405, for methods other than GET on known paths

  static const Responses& get();
};

// Any response; the canned ones are built with it.
std::string make_response(int status, std::string_view content_type, std::string_view body, bool closing);
std::string_view reason_phrase(int status);

}  // namespace platoon::mock
