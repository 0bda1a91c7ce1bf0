// The exporter's TLS: an OpenSSL server context made once at start from the web configuration
// (certificate, key and client CAs read before the privilege drop; a restart picks up rotated
// ones), and one SSL object per accepted connection for libevent's TLS bufferevents.
#pragma once

#include <memory>
#include <string>

#include "tui/web/web_config.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace platoon::web {

class TlsContext {
 public:
  // Null with a one-line error when a file cannot be read or the key does not match. A
  // certificate past its end date is served (as node_exporter serves it) with `warning` set.
  static std::unique_ptr<TlsContext> create(const TlsServerConfig& config, std::string& error, std::string& warning);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_st* new_ssl() const;  // owned by the caller (the bufferevent frees it)

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// The reason of the most recent OpenSSL error (error code as bufferevent_get_openssl_error gives
// it), for a log line: "wrong version number", "peer did not return a certificate".
std::string tls_error_text(unsigned long code);

}  // namespace platoon::web
