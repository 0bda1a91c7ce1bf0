#include "server/mock/responses.hpp"


#include "server/common/fruits.hpp"

namespace platoon::mock {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    default: return "Unknown";
  }
}

std::string make_response(int status, std::string_view content_type, std::string_view body, bool closing) {
  std::string r;
  r.reserve(128 + body.size());
  r.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(reason_phrase(status));
  r.append("\r\nContent-Type: ").append(content_type);
  r.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  r.append("\r\nConnection: ").append(closing ? "close" : "keep-alive");
  r.append("\r\n\r\n").append(body);
  return r;
}

namespace {
CannedResponse canned(int status, std::string_view content_type, std::string_view body) {
  return {make_response(status, content_type, body, false), make_response(status, content_type, body, true)};
}
}  // namespace

const Responses& Responses::get() {
  static const Responses r{
      canned(200, "application/json", fruits::backend_body()),
      canned(500, "application/json", "{\"error\":\"injected failure (--fail-rate)\"}\n"),
      canned(200, "text/plain", "ok"),
      canned(404, "text/plain", "not found\n"),
      canned(405, "text/plain", "method not allowed\n"),
  };
  return r;
}

}  // namespace platoon::mock
