// A window's requests as the report, top and doctor show them: per server port, per remote
// endpoint a target called, and per reading thread, each with its latency percentiles and its
// socket wait split by what the reader was doing (bpf/requests.bpf.h measures; snapshot/requests.hpp
// sums).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/snapshot/requests.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::analysis {

// The parts of the socket wait, in output order: the reader's states, then the wait of requests
// another thread read (unattributed). Keys are the report JSON's socket_wait_by_state_pct.
inline constexpr std::array<const char*, PLATOON_REQ_STATES + 1> kWaitParts{"runnable", "throttled", "running",
                                                                            "blocked", "unattributed"};
static_assert(PLATOON_REQ_RUNNABLE == 0 && PLATOON_REQ_BLOCKED == 3, "kWaitParts follows platoon.h's states");

struct RequestRow {
  snapshot::RequestSide side = snapshot::RequestSide::server;
  uint32_t pid = 0;
  uint16_t port = 0;            // server: the port listened on; client: the remote port
  std::string remote;           // client: the remote address
  uint32_t tid = 0;             // a thread's row: the reader
  std::string comm;             // its name
  snapshot::RequestGroup sum;   // the requests, merged
  double rate = 0;              // complete requests per second of the window

  bool approximate() const { return sum.overlapped > 0; }
  // The socket wait of all its requests, ns: the reader's states and the unattributed part.
  uint64_t wait_ns() const;
  // Each kWaitParts entry in % of the socket wait; all 0 when there was none.
  std::array<double, kWaitParts.size()> wait_by_part_pct() const;
  // "127.0.0.1:9090" or ":8080".
  std::string endpoint() const;
};

struct RequestsView {
  std::vector<RequestRow> server;   // by pid, port
  std::vector<RequestRow> client;   // by pid, remote, port
  std::vector<RequestRow> threads;  // by tid: all the requests each thread read, both sides
  uint64_t lost = 0;
  bool empty() const { return server.empty() && client.empty(); }
};

RequestsView requests_view(const Window& w);
// All the requests thread `tid` read in the window (both sides), merged; count 0 when none.
RequestRow thread_requests(const Window& w, uint32_t tid);
// All the server-side requests of the window, merged (top's header line).
RequestRow server_requests(const Window& w);

// A latency in µs from a histogram's ns, for tables and JSON.
double us(uint64_t ns);

}  // namespace platoon::analysis
