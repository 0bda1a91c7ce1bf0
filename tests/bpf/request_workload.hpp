// A request workload whose own log is the truth for the kernel's request records
// (PLATOON_EV_REQUEST): a TCP server on 127.0.0.1 in a forked child (so a collector can target
// its pid) with ONE reader thread running a plain epoll loop, and a client that sends
// fixed-size requests over one persistent connection, each after the answer to the last.
//
// After each answer (and after the accept) the reader goes through a designed phase, and the
// client sends the next request in the middle of it, so what the reader is doing while the
// request sits in its socket is known:
//   blocked   - it sleeps in nanosleep (not in epoll, so the arrival does not wake it early);
//   running   - it spins without a system call (at a real-time priority, so nothing else runs);
//   runnable  - it wakes a SCHED_FIFO burster pinned to its own CPU, which preempts it at once
//               (inside its write() to the eventfd, so it stays runnable) and spins;
//   throttled - its process is in a CPU cgroup with a 10% quota and it spins between
//               non-blocking polls, so the requests land while the group is throttled.
// Both sides log CLOCK_BOOTTIME, the clock of bpf_ktime_get_boot_ns. The server's log lives in
// a shared anonymous mapping that the test reads once the connection is closed.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "bpf/snapshot/clock.hpp"
#include "tests/bpf/cpu_cgroup.hpp"
#include "tests/bpf/workloads.hpp"

namespace platoon::testing {

enum class ReaderPhase { blocked, running, runnable, throttled };

inline const char* phase_name(ReaderPhase p) {
  switch (p) {
    case ReaderPhase::blocked: return "blocked";
    case ReaderPhase::running: return "running";
    case ReaderPhase::runnable: return "runnable";
    case ReaderPhase::throttled: return "throttled";
  }
  return "?";
}

constexpr size_t kMessageBytes = 64;  // every request and every response
constexpr int kMaxRequests = 256;
constexpr int kMaxGaps = 32;             // per request, the spinning reader's times off its CPU
// A spinning reader reads the clock every few tens of ns: a longer silence is time off its CPU.
// Above the few µs of an interrupt, which the kernel counts as the reader's running time.
constexpr uint64_t kGapNs = 20'000;

struct RequestPlan {
  ReaderPhase phase = ReaderPhase::blocked;
  int requests = 150;
  uint64_t idle_ns = 6'000'000;        // D: the reader's phase after each answer (sleep, spin, burst)
  uint64_t gap_ns = 3'000'000;         // the client's pause from an answer to the next request
  uint64_t service_spin_ns = 100'000;  // the reader's work between read and write
  uint64_t service_sleep_ns = 0;
  uint64_t poll_spin_ns = 20'000;      // throttled: the spin between non-blocking polls
  long quota_us = 0, period_us = 0;    // throttled: the group's CPU quota
  int reader_cpu = 0, client_cpu = 1;
  bool reader_fifo = false;            // the reader SCHED_FIFO (else CFS at nice -20)
  int timeout_s = 15;                  // the client's deadline; the server's alarm() too
  std::string cgroup_dir;              // throttled: the group the server joins before anything
};

// The client sends D/2 into the reader's phase of D, so each request waits about D/2 with the
// reader in the designed state; 150 requests take 1 to 2 s (6 ms each, 12 with a service of D).
inline RequestPlan request_plan(ReaderPhase phase) {
  RequestPlan p;
  p.phase = phase;
  // Where the design needs the reader on its CPU as soon as it can run (asleep until its
  // deadline, or spinning), it is real-time: on a machine shared with other work (a build and
  // another test run beside this one) a CFS reader, even at nice -20, was queued for 12-30% of
  // its spin and woke up to ms late. The runnable and throttled readers must stay CFS: a FIFO
  // burst preempts them, a CPU quota throttles them.
  p.reader_fifo = phase == ReaderPhase::blocked || phase == ReaderPhase::running;
  if (phase == ReaderPhase::runnable || phase == ReaderPhase::running) {
    // A service of D asleep keeps the real-time spin (the burst, the reader's) near half of the
    // CPU: with a short service it would hold it ~98% of the time, past the kernel's RT limit
    // (sched_rt_runtime_us, 95%), and throttled it would let CFS tasks run mid-phase.
    p.service_spin_ns = 0;
    p.service_sleep_ns = p.idle_ns;
  }
  if (phase == ReaderPhase::throttled) {
    // 5 ms of CPU per 50 ms period: the reader spins through its quota in the first ~5 ms
    // (a tick later at HZ=250), and a request sent 7 ms after an answer finds the group
    // throttled and waits for the next period, ~40 ms. 100 requests: about 5 s.
    p.requests = 100;
    p.idle_ns = 0;
    p.gap_ns = 7'000'000;
    p.quota_us = 5000;
    p.period_us = 50000;
    p.timeout_s = 25;
  }
  return p;
}

struct ServerEntry {
  // The reader's phase before this request: from the end of the previous answer (the accept,
  // for the first) until its own part is over (slept, spun, preempted and back).
  uint64_t idle_start_ns = 0, idle_end_ns = 0;
  uint64_t sleep_until_ns = 0;  // blocked: the nanosleep's deadline (it never returns before)
  uint64_t burst_start_ns = 0, burst_end_ns = 0;  // runnable: the burster's spin in that phase
  uint64_t last_poll_ns = 0;    // throttled: the start of the last poll that found nothing
  uint64_t read_call_ns = 0;    // right before the read() that returned the request's bytes
  uint64_t read_ns = 0;         // right after it
  uint64_t write_ns = 0;        // right before the write() of the response
  uint64_t written_ns = 0;      // right after it returned
  uint64_t on_cpu_ns = 0;       // the reader's CPU time from idle_start to read
  uint64_t run_delay_ns = 0;    // its schedstat run_delay (waiting for a CPU) over that span
  uint32_t sleeps = 0;          // its voluntary switches over that span (0: it never slept)
  uint32_t seq = 0;             // the number the request carried
  uint32_t reads = 0;           // read() calls it took (1 unless it came in pieces)
  // running: the spinning reader's silences (off its CPU), the last one stretched to cover
  // any beyond kMaxGaps.
  uint32_t gaps = 0;
  uint64_t gap_start_ns[kMaxGaps] = {}, gap_end_ns[kMaxGaps] = {};
};

// spin_until, noting each silence longer than kGapNs in `e`.
inline void spin_noting_gaps(uint64_t until_ns, ServerEntry& e) {
  for (uint64_t prev = snapshot::boottime_ns(); prev < until_ns;) {
    const uint64_t now = snapshot::boottime_ns();
    if (now - prev > kGapNs) {
      const uint32_t i = e.gaps < kMaxGaps ? e.gaps++ : kMaxGaps - 1;
      if (i != kMaxGaps - 1 || e.gap_start_ns[i] == 0) e.gap_start_ns[i] = prev;
      e.gap_end_ns[i] = now;
    }
    prev = now;
  }
}

enum ServerStage : int { kFailed = -1, kStarting = 0, kListening = 1, kAccepted = 2, kClosed = 3 };

// Written by the server child, read by the test after kClosed (kFailed: `error` says why).
struct ServerLog {
  std::atomic<int> stage{kStarting};
  std::atomic<uint32_t> answered{0};
  uint32_t reader_tid = 0, burster_tid = 0;
  uint16_t port = 0;
  long long voluntary[2] = {}, nonvoluntary[2] = {};  // the reader's switches at accept, at close
  char error[200] = {};
  ServerEntry entries[kMaxRequests];
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the log's atomics are shared between processes");

// The ServerLog in a mapping that survives fork() shared, so the child writes what the test reads.
class SharedServerLog {
 public:
  SharedServerLog() {
    void* p = mmap(nullptr, sizeof(ServerLog), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) log_ = new (p) ServerLog();
  }
  ~SharedServerLog() {
    if (!log_) return;
    log_->~ServerLog();
    munmap(log_, sizeof(ServerLog));
  }
  SharedServerLog(const SharedServerLog&) = delete;
  SharedServerLog& operator=(const SharedServerLog&) = delete;
  ServerLog* get() const { return log_; }

 private:
  ServerLog* log_ = nullptr;
};

inline void sleep_until_boottime(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

inline void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

inline sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

inline uint16_t local_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 ? ntohs(a.sin_port) : 0;
}

// "REQ 000017" / "RSP 000017", padded to kMessageBytes and ended by a newline.
inline void format_message(char (&out)[kMessageBytes], const char* kind, uint32_t seq) {
  std::memset(out, '.', sizeof out);
  char head[16];
  const int n = std::snprintf(head, sizeof head, "%s %06u", kind, seq);
  std::memcpy(out, head, static_cast<size_t>(n));
  out[kMessageBytes - 1] = '\n';
}

// The server child's body: never returns (parks once the client has closed, or on failure,
// until the test kills it; its alarm() ends it if the test never does).
class RequestServer {
 public:
  RequestServer(const RequestPlan& plan, ServerLog* log) : plan_(plan), log_(log) {}

  [[noreturn]] void run() {
    alarm(static_cast<unsigned>(plan_.timeout_s + 10));
    setup();
    log_->stage.store(kListening);
    loop();
    record_switches(1);
    log_->stage.store(kClosed);
    park();
  }

 private:
  void setup() {
    log_->reader_tid = static_cast<uint32_t>(this_tid());
    if (!plan_.cgroup_dir.empty() && !write_file(plan_.cgroup_dir + "/cgroup.procs", std::to_string(getpid())))
      fail("could not join the cgroup " + plan_.cgroup_dir);
    if (!pin_to_cpu(plan_.reader_cpu)) fail("could not pin the reader");
    // Other work on its CPU takes less from it (request_plan says why it matters, and where
    // the reader is real-time instead).
    if (setpriority(PRIO_PROCESS, 0, -20) != 0) fail("could not renice the reader to -20");
    sched_param fifo{};
    fifo.sched_priority = 5;
    if (plan_.reader_fifo && sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) fail("could not make the reader SCHED_FIFO");
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const sockaddr_in a = loopback(0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
        listen(listen_fd_, 4) != 0)
      fail("could not listen on 127.0.0.1");
    log_->port = local_port(listen_fd_);
    schedstat_fd_ = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    status_fd_ = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (schedstat_fd_ < 0 || status_fd_ < 0 || ep_ < 0) fail("schedstat, status or epoll");
    watch(listen_fd_);
    if (plan_.phase == ReaderPhase::runnable) start_burster();
  }

  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) fail("epoll_ctl");
  }

  void start_burster() {
    efd_ = eventfd(0, EFD_CLOEXEC);
    if (efd_ < 0) fail("eventfd");
    std::thread([this] { burster(); }).detach();
    while (burster_state_.load() == 0) usleep(100);
    if (burster_state_.load() < 0) fail("could not make the burster SCHED_FIFO on the reader's CPU");
  }

  // Each wake: D ms on the reader's CPU at a real-time priority, which no CFS task can take
  // from it, so the reader it preempted stays runnable (queued) all that time.
  void burster() {
    log_->burster_tid = static_cast<uint32_t>(this_tid());
    sched_param sp{};
    sp.sched_priority = 10;
    if (!pin_to_cpu(plan_.reader_cpu) || sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
      burster_state_.store(-1);
      return;
    }
    burster_state_.store(1);
    for (;;) {
      uint64_t v;
      if (read(efd_, &v, sizeof v) != sizeof v) continue;
      const uint64_t t0 = snapshot::boottime_ns();
      spin_until(t0 + plan_.idle_ns);
      ServerEntry& e = log_->entries[log_->answered.load() % kMaxRequests];
      e.burst_start_ns = t0;
      e.burst_end_ns = snapshot::boottime_ns();
    }
  }

  // Until the client closes the connection. Throttled: non-blocking polls with a spin between,
  // so the reader is always on its CPU or waiting for it, never asleep.
  void loop() {
    const int timeout = plan_.phase == ReaderPhase::throttled ? 0 : -1;
    epoll_event ev[4];
    for (;;) {
      // A throttled task is stopped on its way back to user space, often at this call's
      // return: the poll looked at the socket when it began, not when it returned.
      const uint64_t poll_ns = snapshot::boottime_ns();
      const int n = epoll_wait(ep_, ev, 4, timeout);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("epoll_wait");
      if (n == 0) {
        last_poll_ns_ = poll_ns;
        spin_until(snapshot::boottime_ns() + plan_.poll_spin_ns);
        continue;
      }
      for (int i = 0; i < n; ++i) {
        if (ev[i].data.fd == listen_fd_) {
          accept_one();
        } else if (!on_readable()) {
          return;
        }
      }
    }
  }

  void accept_one() {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (conn_ >= 0) fail("a second connection");
    conn_ = fd;
    set_nodelay(conn_);
    watch(conn_);
    record_switches(0);
    begin_idle();  // the client times the first request from this phase's start
    log_->stage.store(kAccepted);
    idle_phase();
  }

  // One read() per readiness (epoll is level-triggered), so no read ever finds the socket empty.
  bool on_readable() {
    char buf[1024];
    const uint64_t call_ns = snapshot::boottime_ns();
    const ssize_t n = read(conn_, buf, sizeof buf);
    const uint64_t now = snapshot::boottime_ns();
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      fail("read");
    }
    const uint32_t i = log_->answered.load();
    ServerEntry& e = log_->entries[i];
    if (pending_ == 0) {
      e.read_call_ns = call_ns;
      e.read_ns = now;
      e.on_cpu_ns = snapshot::clock_ns(CLOCK_THREAD_CPUTIME_ID) - idle_cpu_ns_;
      e.run_delay_ns = run_delay_ns() - idle_delay_ns_;
      e.sleeps = static_cast<uint32_t>(voluntary_switches() - idle_voluntary_);
      e.last_poll_ns = last_poll_ns_;
    }
    ++e.reads;
    if (pending_ + static_cast<size_t>(n) > kMessageBytes) fail("more than one request at once: the client does not pipeline");
    std::memcpy(request_ + pending_, buf, static_cast<size_t>(n));
    pending_ += static_cast<size_t>(n);
    if (pending_ == kMessageBytes) {
      pending_ = 0;
      answer(e, i);
    }
    return true;
  }

  void answer(ServerEntry& e, uint32_t i) {
    if (std::sscanf(request_, "REQ %u", &e.seq) != 1) fail("a request without its number");
    if (plan_.service_spin_ns) spin_until(snapshot::boottime_ns() + plan_.service_spin_ns);
    if (plan_.service_sleep_ns) sleep_until_boottime(snapshot::boottime_ns() + plan_.service_sleep_ns);
    char response[kMessageBytes];
    format_message(response, "RSP", e.seq);
    e.write_ns = snapshot::boottime_ns();
    const ssize_t w = write(conn_, response, sizeof response);
    e.written_ns = snapshot::boottime_ns();
    if (w != static_cast<ssize_t>(sizeof response)) fail("write");
    if (i + 1 >= kMaxRequests) fail("more requests than the log holds");
    log_->answered.store(i + 1);
    begin_idle();
    idle_phase();
  }

  void begin_idle() {
    log_->entries[log_->answered.load()].idle_start_ns = snapshot::boottime_ns();
    idle_cpu_ns_ = snapshot::clock_ns(CLOCK_THREAD_CPUTIME_ID);
    idle_delay_ns_ = run_delay_ns();
    idle_voluntary_ = voluntary_switches();
  }

  void idle_phase() {
    ServerEntry& e = log_->entries[log_->answered.load()];
    switch (plan_.phase) {
      case ReaderPhase::blocked:
        e.sleep_until_ns = snapshot::boottime_ns() + plan_.idle_ns;
        sleep_until_boottime(e.sleep_until_ns);
        break;
      case ReaderPhase::running: spin_noting_gaps(snapshot::boottime_ns() + plan_.idle_ns, e); break;
      case ReaderPhase::runnable: {
        // Preempted inside this write() by the burster it wakes, and back once the burst is over.
        const uint64_t one = 1;
        if (write(efd_, &one, sizeof one) != static_cast<ssize_t>(sizeof one)) fail("eventfd write");
        break;
      }
      case ReaderPhase::throttled: break;  // the loop's polling is the phase
    }
    e.idle_end_ns = snapshot::boottime_ns();
    last_poll_ns_ = e.idle_end_ns;
  }

  // The second field of /proc/thread-self/schedstat: time spent queued for a CPU. It is brought
  // up to date at each switch-in, so read while running it holds every wait before now.
  uint64_t run_delay_ns() {
    char buf[128];
    const ssize_t n = pread(schedstat_fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    unsigned long long run = 0, delay = 0;
    return std::sscanf(buf, "%llu %llu", &run, &delay) == 2 ? delay : 0;
  }

  uint64_t voluntary_switches() {
    char buf[4096];
    const ssize_t n = pread(status_fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char* line = std::strstr(buf, "\nvoluntary_ctxt_switches:");
    return line ? std::strtoull(line + std::strlen("\nvoluntary_ctxt_switches:"), nullptr, 10) : 0;
  }

  void record_switches(int k) {
    log_->voluntary[k] = read_keyed("/proc/thread-self/status", "voluntary_ctxt_switches");
    log_->nonvoluntary[k] = read_keyed("/proc/thread-self/status", "nonvoluntary_ctxt_switches");
  }

  [[noreturn]] void fail(const std::string& what) {
    std::snprintf(log_->error, sizeof log_->error, "server: %s (errno %d: %s)", what.c_str(), errno, std::strerror(errno));
    log_->stage.store(kFailed);
    park();
  }
  [[noreturn]] static void park() {
    for (;;) pause();
  }

  const RequestPlan plan_;
  ServerLog* log_;
  int listen_fd_ = -1, conn_ = -1, ep_ = -1, efd_ = -1, schedstat_fd_ = -1, status_fd_ = -1;
  std::atomic<int> burster_state_{0};  // 1 ready, -1 failed
  char request_[kMessageBytes] = {};
  size_t pending_ = 0;
  uint64_t idle_cpu_ns_ = 0, idle_delay_ns_ = 0, idle_voluntary_ = 0, last_poll_ns_ = 0;
};

inline void run_request_server(const RequestPlan& plan, ServerLog* log) { RequestServer(plan, log).run(); }

// Until the server reaches `stage` (true) or fails or `timeout_ms` passes (false).
inline bool wait_for_stage(const ServerLog& log, int stage, int timeout_ms) {
  const uint64_t until = snapshot::boottime_ns() + uint64_t(timeout_ms) * 1'000'000;
  while (log.stage.load() < stage) {
    if (log.stage.load() == kFailed || snapshot::boottime_ns() > until) return false;
    usleep(100);
  }
  return true;
}

struct ClientEntry {
  uint64_t send_ns = 0;   // right before send()
  uint64_t sent_ns = 0;   // right after it returned
  uint64_t recv_ns = 0;   // once the whole response was in
};
struct ClientRun {
  std::vector<ClientEntry> entries;
  uint16_t local_port = 0;
  std::string error;      // empty: every request was answered and the server saw the close
};

// Connected to the server, with a 2 s limit on every send and receive so nothing hangs.
inline int connect_to_server(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  set_nodelay(fd);
  const timeval limit{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  const sockaddr_in a = loopback(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline bool recv_exact(int fd, char* out, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t r = recv(fd, out + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// The requests on one connection (see run_request_client); the first error ends them.
inline void exchange_requests(const RequestPlan& plan, ServerLog* log, ClientRun* out) {
  ClientRun& run = *out;
  const int fd = connect_to_server(log->port);
  if (fd < 0) {
    run.error = "could not connect to 127.0.0.1:" + std::to_string(log->port);
    return;
  }
  run.local_port = local_port(fd);
  if (!wait_for_stage(*log, kAccepted, 5000)) run.error = "the server did not accept within 5 s";
  const uint64_t deadline = snapshot::boottime_ns() + uint64_t(plan.timeout_s) * 1'000'000'000;
  uint64_t next = log->entries[0].idle_start_ns + plan.gap_ns;
  for (int i = 0; i < plan.requests && run.error.empty(); ++i) {
    sleep_until_boottime(next);
    char request[kMessageBytes], response[kMessageBytes];
    format_message(request, "REQ", static_cast<uint32_t>(i));
    ClientEntry e;
    e.send_ns = snapshot::boottime_ns();
    const ssize_t sent = send(fd, request, sizeof request, MSG_NOSIGNAL);
    e.sent_ns = snapshot::boottime_ns();
    if (sent != static_cast<ssize_t>(sizeof request)) {
      run.error = "send of request " + std::to_string(i) + " failed";
    } else if (!recv_exact(fd, response, sizeof response)) {
      run.error = "no answer to request " + std::to_string(i) + " within 2 s";
    } else {
      e.recv_ns = snapshot::boottime_ns();
      run.entries.push_back(e);
      next = e.recv_ns + plan.gap_ns;
      if (e.recv_ns > deadline) run.error = "past the run's deadline of " + std::to_string(plan.timeout_s) + " s";
    }
  }
  close(fd);
  if (run.error.empty() && !wait_for_stage(*log, kClosed, 2000)) run.error = "the server did not see the close within 2 s";
}


// The client, on the calling thread (pinned to plan.client_cpu for the run): plan.requests
// requests, each sent gap_ns after the answer to the last (the first, gap_ns into the reader's
// phase after the accept), then the close.
inline ClientRun run_request_client(const RequestPlan& plan, ServerLog* log) {
  ClientRun run;
  if (!pin_to_cpu(plan.client_cpu)) run.error = "could not pin the client";
  // Real-time for the run so that it sends on time: as a CFS task next to other work it woke
  // up to 5 ms late, after the reader's phase was over. It sleeps nearly all the time.
  const int policy = sched_getscheduler(0);
  sched_param normal{}, fifo{};
  sched_getparam(0, &normal);
  fifo.sched_priority = 10;
  if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) run.error = "could not make the client SCHED_FIFO";
  if (run.error.empty()) exchange_requests(plan, log, &run);
  sched_setscheduler(0, policy, &normal);
  return run;
}


}  // namespace platoon::testing
