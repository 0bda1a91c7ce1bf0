// One client connection of a mock loop. Requests are parsed as they arrive (pipelining allowed);
// each gets a Slot in a FIFO. A slot is ready at once or when its think-time timer fires, and
// ready slots leave the FIFO head in order into a small output buffer that is written straight
// away; a write event is armed only when the socket pushes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "server/common/http_parser.hpp"

struct event;

namespace platoon::mock {

class Loop;
class Connection;

// A response owed to the client, in request order.
struct Slot {
  Connection* conn = nullptr;
  event* timer = nullptr;  // the think time; owned by the slot, reused with it
  bool ready = false;
  const std::string* canned = nullptr;  // or, when null, `dynamic`
  std::string dynamic;
  const std::string& bytes() const { return canned ? *canned : dynamic; }
};

class Connection {
 public:
  Connection(Loop& loop, int fd);  // takes the fd; starts reading
  ~Connection();                   // closes the fd, cancels pending timers
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The loop's intrusive list.
  Connection* prev = nullptr;
  Connection* next = nullptr;

 private:
  friend class Loop;  // arms slot timers with on_think_done
  static void on_readable(int fd, short what, void* arg);
  static void on_writable(int fd, short what, void* arg);
  static void on_think_done(int fd, short what, void* arg);
  static void on_linger_timeout(int fd, short what, void* arg);

  // Each of these may destroy the connection: callers return right after.
  void read_requests();
  void pump();  // ready head slots -> output buffer -> socket; closes when done
  void finish_close();
  void destroy();

  void handle(const http::Message& m);
  void bad_request(int status);
  void set_reading(bool on);
  void answer_admin_think(const std::string& query, Slot* s, bool closing);

  Loop& loop_;
  const int fd_;
  http::Parser parser_{http::Parser::Kind::request};
  event* read_ev_ = nullptr;
  event* write_ev_ = nullptr;
  event* linger_ev_ = nullptr;
  std::deque<Slot*> slots_;
  std::string out_;
  size_t out_off_ = 0;
  uint64_t requests_ = 0;
  bool reading_ = false;
  bool writing_ = false;
  bool closing_ = false;    // no more requests: answer those queued, then close
  bool peer_eof_ = false;   // the client shut its side
  bool lingering_ = false;  // we shut our side; draining the client's until it closes
};

}  // namespace platoon::mock
