// One request record (bpf/platoon.h's platoon_ev_request) in the terms the exports show it: its
// moments, its phases, its remote end, and the measured fields that the requests CSV gives as
// columns and the Perfetto export as a slice's arguments, listed once here for both.
//
// A record is stamped at the request's end; it started wait_ns + service_ns before. Server
// side: the request became readable (start), waited in the socket, was read, and was served
// until the response began (end). Client side: the call was sent (start), the backend took
// service_ns until the reply became readable, which then waited in the socket until read (end).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bpf/platoon.h"

namespace platoon::outputs {

uint64_t request_start_ns(const platoon_ev_request& r);
// When the reader (h.tid) read it: server, start + socket wait; client, the end.
uint64_t request_read_ns(const platoon_ev_request& r);
bool request_partial(const platoon_ev_request& r);
const char* request_side(const platoon_ev_request& r);  // "server" or "client"
// The remote end as address:port ("127.0.0.1:40312", "[::1]:9090").
std::string request_remote(const platoon_ev_request& r);

// The request's phases in time order, back to back from its start to its end: server, socket
// wait then service; client, backend then socket wait. None for a partial request: its
// connection predates the attach, so where its socket wait began is unknown.
struct RequestPhase {
  const char* name;
  uint64_t start_ns, end_ns;
  bool socket_wait;
};
std::vector<RequestPhase> request_phases(const platoon_ev_request& r);

// A measured field of a request. value is nullopt where the record does not measure it: the
// service of a client request, the backend time of a server one, the socket wait (and what it
// is made of) of a partial request, the wait split of an unattributed one. flag: 0 or 1.
struct RequestField {
  std::string key;
  bool flag;
  std::function<std::optional<uint64_t>(const platoon_ev_request&)> value;
};
// In column order: socket_wait_ns, service_ns, backend_time_ns, server_time_ns, the split of
// the socket wait by the reader's state (snapshot::kRequestStates, each + "_ns"), partial,
// unattributed, overlapped.
const std::vector<RequestField>& request_fields();

}  // namespace platoon::outputs
