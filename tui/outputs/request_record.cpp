#include "tui/outputs/request_record.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <limits>

#include "bpf/snapshot/requests.hpp"

namespace platoon::outputs {
namespace {

// A damaged record's durations can add up past its stamp, or past 2^64: its moments then stay
// within [0, end] rather than wrapping.
uint64_t sum_clamped(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

bool is_server(const platoon_ev_request& r) { return r.side != PLATOON_REQ_CLIENT; }
bool has(const platoon_ev_request& r, unsigned flag) { return (r.flags & flag) != 0; }

std::optional<uint64_t> wait_split(const platoon_ev_request& r, size_t state) {
  if (has(r, PLATOON_REQ_PARTIAL) || has(r, PLATOON_REQ_UNATTRIBUTED)) return std::nullopt;
  return r.state_ns[state];
}

std::vector<RequestField> make_fields() {
  using R = const platoon_ev_request&;
  std::vector<RequestField> fields{
      {"socket_wait_ns", false, [](R r) { return request_partial(r) ? std::nullopt : std::optional(r.wait_ns); }},
      {"service_ns", false, [](R r) { return is_server(r) ? std::optional(r.service_ns) : std::nullopt; }},
      {"backend_time_ns", false, [](R r) { return is_server(r) ? std::nullopt : std::optional(r.service_ns); }},
      {"server_time_ns", false, [](R r) {
         return is_server(r) && !request_partial(r) ? std::optional(sum_clamped(r.wait_ns, r.service_ns)) : std::nullopt;
       }},
  };
  for (size_t i = 0; i < snapshot::kRequestStates.size(); ++i)
    fields.push_back({std::string(snapshot::kRequestStates[i]) + "_ns", false, [i](R r) { return wait_split(r, i); }});
  for (const auto& named : {std::pair{"partial", PLATOON_REQ_PARTIAL}, std::pair{"unattributed", PLATOON_REQ_UNATTRIBUTED},
                            std::pair{"overlapped", PLATOON_REQ_OVERLAPPED}}) {
    const unsigned flag = named.second;  // a copy: lambdas capture no structured bindings before clang 16
    fields.push_back({named.first, true, [flag](R r) { return std::optional<uint64_t>(has(r, flag) ? 1 : 0); }});
  }
  return fields;
}

}  // namespace

uint64_t request_start_ns(const platoon_ev_request& r) {
  const uint64_t took = sum_clamped(r.wait_ns, r.service_ns);
  return r.h.ts_ns > took ? r.h.ts_ns - took : 0;
}

uint64_t request_read_ns(const platoon_ev_request& r) {
  return is_server(r) ? std::min<uint64_t>(sum_clamped(request_start_ns(r), r.wait_ns), r.h.ts_ns) : r.h.ts_ns;
}

bool request_partial(const platoon_ev_request& r) { return has(r, PLATOON_REQ_PARTIAL); }

const char* request_side(const platoon_ev_request& r) {
  return snapshot::to_string(is_server(r) ? snapshot::RequestSide::server : snapshot::RequestSide::client);
}

std::string request_remote(const platoon_ev_request& r) {
  char text[INET6_ADDRSTRLEN] = {};
  const bool v6 = r.family == AF_INET6;
  if (!inet_ntop(v6 ? AF_INET6 : AF_INET, r.remote_addr, text, sizeof text)) text[0] = '\0';
  const std::string port = ":" + std::to_string(r.remote_port);
  return v6 ? "[" + std::string(text) + "]" + port : text + port;
}

std::vector<RequestPhase> request_phases(const platoon_ev_request& r) {
  if (request_partial(r)) return {};
  const uint64_t start = request_start_ns(r), end = r.h.ts_ns;
  if (is_server(r)) {
    const uint64_t read = request_read_ns(r);
    return {{"socket wait", start, read, true}, {"service", read, end, false}};
  }
  const uint64_t ready = std::min<uint64_t>(sum_clamped(start, r.service_ns), end);
  return {{"backend", start, ready, false}, {"socket wait", ready, end, true}};
}

const std::vector<RequestField>& request_fields() {
  static const std::vector<RequestField> fields = make_fields();
  return fields;
}

}  // namespace platoon::outputs
