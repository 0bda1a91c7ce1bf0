// HTTP basic authentication against the web configuration's users and their bcrypt hashes
// (verified by Debian's libcrypt). One bcrypt check costs tens of milliseconds on the listener's
// only thread, so each outcome is kept, keyed by a SHA-256 of the credentials: a scraper pays
// it once, not on every scrape, and so does an attacker repeating one guess.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace platoon::web {

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);
  ~BasicAuth();
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  enum class Verdict { allowed, no_credentials, malformed, unknown_user, wrong_password };
  struct Result {
    Verdict verdict = Verdict::no_credentials;
    std::string user;  // as the client sent it (for the log), "" when none
  };
  // header: the request's Authorization header, nullptr when it sent none.
  Result check(const char* header);

 private:
  bool verify(const std::string& password, const std::string& hash);
  std::map<std::string, std::string> users_;
  std::map<std::array<unsigned char, 32>, bool> cache_;
  struct Scratch;                     // libcrypt's crypt_data: 32 KB, kept off the stack
  std::unique_ptr<Scratch> scratch_;
};

const char* to_string(BasicAuth::Verdict v);

}  // namespace platoon::web
