#include "tui/web/web_config.hpp"

#include <openssl/ssl.h>

#include <array>
#include <filesystem>
#include <set>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace platoon::web {
namespace {

// The keys of the format platoon does not implement: refused by name, so the operator knows the
// file is right and platoon is what falls short.
constexpr std::array<std::string_view, 5> kTlsNotImplemented{
    "client_allowed_sans", "cipher_suites", "prefer_server_cipher_suites", "curve_preferences", "client_ca"};

struct Refusal {
  std::string what;
};

[[noreturn]] void refuse(std::string what) { throw Refusal{std::move(what)}; }

std::string scalar(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) refuse(key + " must be a string");
  return n.Scalar();
}

// A path as exporter-toolkit takes it: relative to the config file's folder.
std::string resolve(const std::string& path, const std::filesystem::path& dir) {
  if (path.empty()) return path;
  const std::filesystem::path p(path);
  return (p.is_absolute() ? p : dir / p).lexically_normal().string();
}

int tls_version(const std::string& key, const std::string& v) {
  if (v == "TLS10") return TLS1_VERSION;
  if (v == "TLS11") return TLS1_1_VERSION;
  if (v == "TLS12") return TLS1_2_VERSION;
  if (v == "TLS13") return TLS1_3_VERSION;
  refuse(key + " '" + v + "' is not one of TLS10, TLS11, TLS12, TLS13");
}

ClientAuth client_auth(const std::string& v) {
  if (v == "NoClientCert" || v.empty()) return ClientAuth::none;
  if (v == "RequestClientCert") return ClientAuth::request;
  if (v == "RequireAnyClientCert") return ClientAuth::require_any;
  if (v == "VerifyClientCertIfGiven") return ClientAuth::verify_if_given;
  if (v == "RequireAndVerifyClientCert") return ClientAuth::require_and_verify;
  refuse("client_auth_type '" + v + "' is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, "
         "VerifyClientCertIfGiven, RequireAndVerifyClientCert");
}

void check_readable(const std::string& key, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) refuse(key + " " + path + " is not a readable file");
  if (FILE* f = std::fopen(path.c_str(), "rb")) std::fclose(f);
  else refuse(key + " " + path + " cannot be read");
}

// A key of the format set to what it is when absent: an operator's file that spells out a
// default means nothing platoon does not do.
bool is_default(const std::string& key, const YAML::Node& v) {
  if (key == "prefer_server_cipher_suites") return v.IsScalar() && v.Scalar() == "true";
  if (key == "cipher_suites" || key == "curve_preferences" || key == "client_allowed_sans")
    return v.IsNull() || (v.IsSequence() && v.size() == 0);
  return false;
}

TlsServerConfig tls_config(const YAML::Node& n, const std::filesystem::path& dir) {
  if (!n.IsMap()) refuse("tls_server_config must be a mapping");
  TlsServerConfig t;
  std::string auth = "NoClientCert";
  std::set<std::string> seen;
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) refuse("tls_server_config." + key + " is given twice");
    if (is_default(key, kv.second)) continue;  // what Go does anyway
    for (std::string_view no : kTlsNotImplemented)
      if (key == no) refuse("tls_server_config." + key + " is not implemented by platoon");
    if (key == "cert_file") t.cert_file = resolve(scalar(kv.second, key), dir);
    else if (key == "key_file") t.key_file = resolve(scalar(kv.second, key), dir);
    else if (key == "client_ca_file") t.client_ca_file = resolve(scalar(kv.second, key), dir);
    else if (key == "client_auth_type") auth = scalar(kv.second, key);
    else if (key == "min_version") t.min_version = tls_version(key, scalar(kv.second, key));
    else if (key == "max_version") t.max_version = tls_version(key, scalar(kv.second, key));
    else if (key == "cert" || key == "key") refuse("tls_server_config." + key + " (inline PEM) is not implemented by platoon: use " + key + "_file");
    else refuse("tls_server_config." + key + " is not a key of the web configuration format");
  }
  t.client_auth = client_auth(auth);
  // exporter-toolkit's own checks, in its words where it has them.
  if (t.cert_file.empty()) refuse("tls_server_config: missing cert_file");
  if (t.key_file.empty()) refuse("tls_server_config: missing key_file");
  check_readable("cert_file", t.cert_file);
  check_readable("key_file", t.key_file);
  if (!t.client_ca_file.empty()) {
    check_readable("client_ca_file", t.client_ca_file);
    if (t.client_auth == ClientAuth::none)
      refuse("tls_server_config: client_ca_file is set but client_auth_type is NoClientCert: set a policy or drop the file");
  }
  if (t.max_version && (t.min_version ? t.min_version : TLS1_2_VERSION) > t.max_version)
    refuse("tls_server_config: max_version is below min_version (TLS12 unless set)");
  return t;
}

// exporter-toolkit's list: these headers only, and for two of them only these values.
void add_headers(const YAML::Node& n, WebConfig& c) {
  if (!n.IsMap()) refuse("http_server_config.headers must be a mapping");
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    const std::string value = scalar(kv.second, "http_server_config.headers." + name);
    if (name == "X-Content-Type-Options" && value != "nosniff")
      refuse("http_server_config.headers.X-Content-Type-Options must be nosniff, not '" + value + "'");
    if (name == "X-Frame-Options" && value != "deny" && value != "sameorigin")
      refuse("http_server_config.headers.X-Frame-Options must be deny or sameorigin, not '" + value + "'");
    if (name != "X-Content-Type-Options" && name != "X-Frame-Options" && name != "Strict-Transport-Security" &&
        name != "X-XSS-Protection" && name != "Content-Security-Policy")
      refuse("http_server_config.headers." + name + " is not a header the web configuration format allows");
    if (value.find_first_of("\r\n") != std::string::npos) refuse("http_server_config.headers." + name + " holds a line break");
    if (!value.empty()) c.headers.emplace_back(name, value);
  }
}

void http_config(const YAML::Node& n, WebConfig& c) {
  if (!n.IsMap()) refuse("http_server_config must be a mapping");
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (key == "headers") add_headers(kv.second, c);
    else if (key == "http2") refuse("http_server_config.http2 is not implemented by platoon (it serves HTTP/1.1 only)");
    else refuse("http_server_config." + key + " is not a key of the web configuration format");
  }
}

// bcrypt only, as exporter-toolkit: libcrypt would verify other kinds ($1$, $5$, $6$, $y$) too.
void users(const YAML::Node& n, WebConfig& c) {
  if (n.IsNull()) return;
  if (!n.IsMap()) refuse("basic_auth_users must be a mapping of user names to bcrypt hashes");
  std::set<std::string> seen;
  for (const auto& kv : n) {
    const std::string user = kv.first.Scalar();
    if (!seen.insert(user).second) refuse("basic_auth_users." + user + " is given twice");
    const std::string hash = scalar(kv.second, "basic_auth_users." + user);
    if (user.empty() || user.find(':') != std::string::npos) refuse("basic_auth_users: '" + user + "' cannot be a user name");
    const bool bcrypt = hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
                        (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$';
    if (!bcrypt) refuse("basic_auth_users." + user + ": not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)");
    c.users[user] = hash;
  }
}

}  // namespace

std::optional<WebConfig> load_web_config(const std::string& path, std::string& error) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    error = path + ": cannot be read";
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    error = path + ": not YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")";
    return std::nullopt;
  }
  WebConfig c;
  try {
    if (root.IsNull()) return c;
    if (!root.IsMap()) refuse("the file must be a mapping");
    const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
    std::set<std::string> seen;
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) refuse(key + " is given twice");
      if (key == "tls_server_config") c.tls = tls_config(kv.second, dir);
      else if (key == "http_server_config") http_config(kv.second, c);
      else if (key == "basic_auth_users") users(kv.second, c);
      else if (key == "rate_limit") refuse("rate_limit is not implemented by platoon");
      else refuse(key + " is not a key of the web configuration format");
    }
  } catch (const Refusal& r) {
    error = path + ": " + r.what;
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    error = path + ": " + e.msg;
    return std::nullopt;
  }
  return c;
}

}  // namespace platoon::web
