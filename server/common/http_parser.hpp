// HTTP/1.1 message parsing on llhttp, one message at a time (pipelining-safe): parse() stops
// after each complete message and says how many bytes it used.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace platoon::http {

struct Message {
  std::string method;  // requests
  std::string url;     // requests
  int status = 0;      // responses
  std::string body;
  bool keep_alive = true;
  size_t header_bytes = 0;
  // The one header the tools care about beyond framing; others are skipped.
  std::string content_type;
};

class Parser {
 public:
  enum class Kind { request, response };
  enum class Status { need_more, message, error };

  explicit Parser(Kind kind, size_t max_header_bytes = 8192, size_t max_body_bytes = 1 << 20);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // Consumes bytes from `data` up to the end of the first complete message (then returns
  // Status::message) or all of them (Status::need_more). On Status::error the connection is
  // beyond repair: answer error_status() and close.
  Status parse(const char* data, size_t len, size_t& consumed);
  // For responses framed by connection close: call at EOF.
  Status finish();

  Message& message() { return msg_; }
  int error_status() const { return error_status_; }  // 400, 431 or 413
  const std::string& error() const { return error_; }

  struct Impl;  // llhttp state; defined in the .cpp

 private:
  std::unique_ptr<Impl> impl_;
  Message msg_;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace platoon::http
