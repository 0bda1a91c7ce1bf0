// The exporter-toolkit web configuration file (`--web.config.file`, as node_exporter and the
// other Prometheus exporters read it), so that an operator reuses the file and the scrape
// config they already have:
//
//   tls_server_config:
//     cert_file: server.crt          # paths relative to the file's own folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: ca.crt
//     min_version: TLS12             # TLS10 .. TLS13; max_version too
//   http_server_config:
//     headers: {Strict-Transport-Security: max-age=31536000}
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt only
//
// Every key of the format is either implemented or refused with a one-line error, so a file
// never leaves an exporter running that accepts what the operator meant to forbid. Unknown keys
// are refused too (exporter-toolkit reads the file strictly).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace platoon::web {

// exporter-toolkit's client_auth_type values, Go's tls.ClientAuthType in the same order.
enum class ClientAuth {
  none,                // NoClientCert
  request,             // RequestClientCert: asked for, not required, not verified
  require_any,         // RequireAnyClientCert: required, not verified
  verify_if_given,     // VerifyClientCertIfGiven
  require_and_verify,  // RequireAndVerifyClientCert
};

struct TlsServerConfig {
  std::string cert_file;       // absolute (resolved against the config file's folder)
  std::string key_file;
  std::string client_ca_file;  // "" none
  ClientAuth client_auth = ClientAuth::none;
  int min_version = 0;         // OpenSSL's TLS1_x_VERSION; 0 = TLS 1.2, exporter-toolkit's default
  int max_version = 0;         // 0 = the newest OpenSSL offers
};

struct WebConfig {
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> users;                   // name → bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;   // added to every response
  bool empty() const { return !tls && users.empty() && headers.empty(); }
};

// Reads and checks the file; nullopt with a one-line error naming the key at fault.
std::optional<WebConfig> load_web_config(const std::string& path, std::string& error);

}  // namespace platoon::web
