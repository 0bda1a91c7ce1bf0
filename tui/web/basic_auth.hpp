// HTTP basic authentication against the web configuration's users and their bcrypt hashes
// (verified by Debian's libcrypt). One bcrypt check costs tens of milliseconds on the listener's
// only thread, so each outcome is kept, keyed by a SHA-256 of the credentials: a scraper pays
// it once, not on every scrape. And credentials not seen before are checked at most
// kNewChecksPerSecond a second (a burst of twice that): past it they are refused unchecked, so a
// client sending a stream of guesses cannot take the thread from the scrapes.
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

  static constexpr double kNewChecksPerSecond = 4;
  enum class Verdict { allowed, no_credentials, malformed, unknown_user, wrong_password, throttled };
  struct Result {
    Verdict verdict = Verdict::no_credentials;
    std::string user;  // as the client sent it (for the log), "" when none
  };
  // header: the request's Authorization header, nullptr when it sent none.
  Result check(const char* header);

 private:
  bool verify(const std::string& password, const std::string& hash);
  bool may_check();              // the budget of new checks
  std::map<std::string, std::string> users_;
  std::string dummy_hash_;       // of no password, at the users' highest cost
  std::map<std::array<unsigned char, 32>, bool> cache_;
  double tokens_ = 2 * kNewChecksPerSecond;
  double refilled_s_ = 0;
  struct Scratch;                     // libcrypt's crypt_data: 32 KB, kept off the stack
  std::unique_ptr<Scratch> scratch_;
};

const char* to_string(BasicAuth::Verdict v);

}  // namespace platoon::web
