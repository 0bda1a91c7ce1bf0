#include "tui/web/basic_auth.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace platoon::web {
namespace {

// Outcomes kept at most; past it the cache starts again (a flood of distinct guesses costs the
// guesser as much bcrypt time as it costs us).
constexpr size_t kMaxCached = 1024;

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// An unknown user costs the same bcrypt check as a known one, against a hash of no password at
// the users' highest cost, so the time taken does not tell which user names exist.
std::string dummy_hash_for(const std::map<std::string, std::string>& users) {
  int cost = 4;
  for (const auto& [user, hash] : users) cost = std::max(cost, std::atoi(hash.substr(4, 2).c_str()));
  unsigned char random[16];
  if (RAND_bytes(random, sizeof random) != 1) return {};
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  crypt_data data{};
  if (!crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), reinterpret_cast<const char*>(random), sizeof random,
                        setting, sizeof setting))
    return {};
  const char* h = crypt_rn("\x01no password\x01", setting, &data, sizeof data);
  return h && h[0] == '$' ? h : std::string();
}

std::array<unsigned char, 32> digest(std::string_view user, std::string_view password, std::string_view hash) {
  std::array<unsigned char, 32> out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const unsigned char sep = 0;
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, user.data(), user.size());
  EVP_DigestUpdate(ctx, &sep, 1);
  EVP_DigestUpdate(ctx, password.data(), password.size());
  EVP_DigestUpdate(ctx, &sep, 1);
  EVP_DigestUpdate(ctx, hash.data(), hash.size());
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx, out.data(), &n);
  EVP_MD_CTX_free(ctx);
  return out;
}

// "Basic dXNlcjpwYXNz" → "user:pass"; false when it is not that.
bool decode(const char* header, std::string& out) {
  std::string_view h(header);
  constexpr std::string_view kScheme = "Basic ";
  if (h.size() <= kScheme.size() || strncasecmp(h.data(), kScheme.data(), kScheme.size()) != 0) return false;
  h.remove_prefix(kScheme.size());
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
  if (h.empty() || h.size() % 4 != 0 || h.size() > 4096) return false;
  std::vector<unsigned char> buf(h.size() / 4 * 3 + 1);
  const int n = EVP_DecodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(h.data()), static_cast<int>(h.size()));
  if (n < 0) return false;
  // Padding only at the end (OpenSSL would read a '=' inside as zero bits).
  const size_t eq = h.find('=');
  if (eq != std::string_view::npos && h.find_first_not_of('=', eq) != std::string_view::npos) return false;
  size_t len = static_cast<size_t>(n);
  for (size_t i = h.size(); i > 0 && h[i - 1] == '=' && len > 0; --i) --len;  // DecodeBlock counts the padding
  out.assign(reinterpret_cast<const char*>(buf.data()), len);
  // libcrypt would stop reading the password at a NUL: "pass\0junk" must not pass as "pass".
  return out.find('\0') == std::string::npos;
}

}  // namespace

struct BasicAuth::Scratch {
  crypt_data data;
};

BasicAuth::BasicAuth(std::map<std::string, std::string> users)
    : users_(std::move(users)), dummy_hash_(dummy_hash_for(users_)), refilled_s_(now_s()),
      scratch_(std::make_unique<Scratch>()) {}

bool BasicAuth::may_check() {
  const double now = now_s();
  tokens_ = std::min(2 * kNewChecksPerSecond, tokens_ + (now - refilled_s_) * kNewChecksPerSecond);
  refilled_s_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}
BasicAuth::~BasicAuth() = default;

bool BasicAuth::verify(const std::string& password, const std::string& hash) {
  std::memset(&scratch_->data, 0, sizeof scratch_->data);
  const char* got = crypt_rn(password.c_str(), hash.c_str(), &scratch_->data, sizeof scratch_->data);
  return got && std::strlen(got) == hash.size() && CRYPTO_memcmp(got, hash.data(), hash.size()) == 0;
}

BasicAuth::Result BasicAuth::check(const char* header) {
  Result r;
  if (!header) return r;
  std::string pair;
  if (!decode(header, pair)) {
    r.verdict = Verdict::malformed;
    return r;
  }
  const auto colon = pair.find(':');
  if (colon == std::string::npos) {
    r.verdict = Verdict::malformed;
    return r;
  }
  r.user = pair.substr(0, colon);
  const std::string password = pair.substr(colon + 1);
  const auto it = users_.find(r.user);
  const std::string& hash = it == users_.end() ? dummy_hash_ : it->second;
  const auto key = digest(r.user, password, hash);
  bool ok;
  if (auto c = cache_.find(key); c != cache_.end()) {
    ok = c->second;
  } else if (!may_check()) {
    r.verdict = Verdict::throttled;
    return r;
  } else {
    ok = verify(password, hash) && it != users_.end();
    if (cache_.size() >= kMaxCached)  // full: the refusals go, the credentials that passed stay
      std::erase_if(cache_, [](const auto& e) { return !e.second; });
    if (cache_.size() < kMaxCached) cache_.emplace(key, ok);
  }
  r.verdict = ok ? Verdict::allowed : it == users_.end() ? Verdict::unknown_user : Verdict::wrong_password;
  return r;
}

const char* to_string(BasicAuth::Verdict v) {
  switch (v) {
    case BasicAuth::Verdict::allowed: return "allowed";
    case BasicAuth::Verdict::no_credentials: return "no credentials";
    case BasicAuth::Verdict::malformed: return "a malformed Authorization header";
    case BasicAuth::Verdict::unknown_user: return "an unknown user";
    case BasicAuth::Verdict::wrong_password: return "a wrong password";
    case BasicAuth::Verdict::throttled: return "new credentials arriving faster than they may be checked";
  }
  return "?";
}

}  // namespace platoon::web
