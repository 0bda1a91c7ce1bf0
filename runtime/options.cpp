#include "runtime/options.hpp"

namespace platoon::rt {

std::optional<Scheduler> parse_scheduler(std::string_view s) {
  if (s == "carrier") return Scheduler::carrier;
  if (s == "pool") return Scheduler::pool;
  return std::nullopt;
}

std::optional<PollerMode> parse_poller(std::string_view s) {
  if (s == "carrier") return PollerMode::carrier;
  if (s == "master") return PollerMode::master;
  return std::nullopt;
}

const char* to_string(Scheduler s) { return s == Scheduler::carrier ? "carrier" : "pool"; }
const char* to_string(PollerMode p) { return p == PollerMode::carrier ? "carrier" : "master"; }

}  // namespace platoon::rt
