// One event-loop thread of the mock (mock-loop-N): a libevent base with precise timers, its own
// SO_REUSEPORT listener, and the connections it accepted. Nothing is shared between loops but
// the think time (an atomic in Shared); a loop's connections live and die on its thread.
#pragma once

#include <cstdint>
#include <string>
#include <sys/time.h>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "server/mock/config.hpp"

struct event;
struct event_base;

namespace platoon::mock {

class Connection;
struct Slot;

struct LoopStats {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t responses = 0;
  uint64_t bad_requests = 0;   // malformed: answered 400 (or 413/431) and closed
  uint64_t failures = 0;       // injected 500s (--fail-rate)
};

class Loop {
 public:
  // Takes ownership of listen_fd. Throws std::runtime_error when libevent cannot make a base.
  Loop(int index, int listen_fd, Shared& shared);
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void start();  // spawns the thread; returns once it runs (tid() is then valid)
  void stop();   // from any thread: the loop closes its connections and its thread ends
  void join();

  pid_t tid() const { return tid_; }
  std::string name() const { return "mock-loop-" + std::to_string(index_); }
  const LoopStats& stats() const { return stats_; }  // read after join()

 private:
  friend class Connection;

  void run();
  static void on_accept(int fd, short what, void* arg);
  static void on_accept_resume(int fd, short what, void* arg);
  static void on_stop(int fd, short what, void* arg);

  // Connections' helpers.
  Slot* take_slot(Connection* owner);
  void give_slot(Slot* s);
  const timeval* think_timeout(int64_t ns);  // libevent common timeout for this duration
  bool roll_failure();                       // true with probability cfg.fail_rate
  void unlink(Connection* c);

  const int index_;
  Shared& shared_;
  event_base* base_ = nullptr;
  int listen_fd_;
  int stop_fd_ = -1;  // eventfd: stop() writes, the loop breaks
  event* accept_ev_ = nullptr;
  event* accept_resume_ev_ = nullptr;  // re-arms accept after EMFILE
  event* stop_ev_ = nullptr;
  std::thread thread_;
  pid_t tid_ = 0;

  std::vector<char> read_buf_;      // every connection reads here; the parser keeps its own state
  std::vector<Slot*> free_slots_;   // pooled, each with its timer event
  Connection* conns_ = nullptr;     // intrusive list of open connections
  int64_t cached_think_ns_ = -1;
  const timeval* cached_think_tv_ = nullptr;
  timeval plain_think_tv_{};
  uint64_t rng_;
  LoopStats stats_;
};

}  // namespace platoon::mock
