#include "tui/web/tls.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>

namespace platoon::web {
namespace {

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  return e ? tls_error_text(e) : "unknown error";
}

// RequestClientCert and RequireAnyClientCert ask for a certificate without checking it.
int accept_any(int, X509_STORE_CTX*) { return 1; }

struct X509Free { void operator()(X509* x) const { X509_free(x); } };

// The certificate's end date, when it has passed ("" otherwise).
std::string expired(const std::string& cert_file) {
  FILE* f = std::fopen(cert_file.c_str(), "r");
  if (!f) return {};
  std::unique_ptr<X509, X509Free> cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!cert || X509_cmp_current_time(X509_get0_notAfter(cert.get())) >= 0) return {};
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio) return "a past date";
  ASN1_TIME_print(bio, X509_get0_notAfter(cert.get()));
  char* text = nullptr;
  const long n = BIO_get_mem_data(bio, &text);
  std::string out(text, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace

std::string tls_error_text(unsigned long code) {
  const char* reason = ERR_reason_error_string(code);
  return reason ? reason : "error " + std::to_string(code);
}

std::unique_ptr<TlsContext> TlsContext::create(const TlsServerConfig& c, std::string& error, std::string& warning) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    error = "cannot set up TLS: " + openssl_error();
    return nullptr;
  }
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, c.min_version ? c.min_version : TLS1_2_VERSION);
  if (c.max_version) SSL_CTX_set_max_proto_version(ctx, c.max_version);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(ctx, c.cert_file.c_str()) != 1) {
    error = "cert_file " + c.cert_file + ": " + openssl_error();
    return nullptr;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, c.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    error = "key_file " + c.key_file + (mismatch ? " does not match cert_file " + c.cert_file : ": " + openssl_error());
    ERR_clear_error();
    return nullptr;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    error = "key_file " + c.key_file + " does not match cert_file " + c.cert_file;
    return nullptr;
  }
  if (!c.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, c.client_ca_file.c_str(), nullptr) != 1) {
      error = "client_ca_file " + c.client_ca_file + ": " + openssl_error();
      return nullptr;
    }
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.client_ca_file.c_str())) SSL_CTX_set_client_CA_list(ctx, names);
  }
  // Without it OpenSSL fails a resumed TLS 1.2 session whenever it asks for a certificate.
  static const unsigned char kSessionContext[] = "platoon exporter";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  // A verifying policy without client_ca_file checks against the system's CAs, as Go does.
  if (c.client_ca_file.empty() && (c.client_auth == ClientAuth::verify_if_given || c.client_auth == ClientAuth::require_and_verify))
    SSL_CTX_set_default_verify_paths(ctx);
  switch (c.client_auth) {
    case ClientAuth::none: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::request: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any); break;
    case ClientAuth::require_any:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
      break;
    case ClientAuth::verify_if_given: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr); break;
    case ClientAuth::require_and_verify:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  if (const std::string when = expired(c.cert_file); !when.empty())
    warning = "the certificate in " + c.cert_file + " expired on " + when + "; serving it anyway, as node_exporter does";
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

ssl_st* TlsContext::new_ssl() const { return SSL_new(ctx_); }

}  // namespace platoon::web
