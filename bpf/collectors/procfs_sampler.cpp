#include "bpf/collectors/procfs_sampler.hpp"
#include "bpf/collectors/cgroup_members.hpp"
#include "bpf/snapshot/clock.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <unordered_map>

namespace platoon::collectors {

// ---- small RAII and I/O helpers: one open and (usually) one read per file, no iostreams ----

namespace procfs_io {  // named, not anonymous: ProcfsSampler::Task holds an Fd
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};
}  // namespace procfs_io
using procfs_io::Fd;

namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};
using Dir = std::unique_ptr<DIR, DirCloser>;

// Reads a whole small file relative to dirfd into buf; the view is empty on any error (a task
// that exits between readdir and open is normal, not an error).
std::string_view read_at(int dirfd, const char* path, char* buf, size_t cap) {
  Fd fd(openat(dirfd, path, O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return {};
  size_t len = 0;
  while (len < cap) {
    const ssize_t n = read(fd.get(), buf + len, cap - len);
    if (n < 0) return {};
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  return {buf, len};
}

template <typename T>
std::optional<T> parse_uint(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// Splits at whitespace, calling f(index, field) until it returns false.
template <typename F>
void for_each_field(std::string_view s, F&& f) {
  size_t i = 0, index = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
    if (i == s.size()) break;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\n') ++j;
    if (!f(index++, s.substr(i, j - i))) return;
    i = j;
  }
}

// "name   :   value" lines of /proc/.../sched and status; f(name, value).
template <typename F>
void for_each_line_kv(std::string_view text, F&& f) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) f(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
}

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

}  // namespace

// ---- parsers ----

namespace procfs {

std::optional<SchedStat> parse_schedstat(std::string_view text) {
  SchedStat s;
  int got = 0;
  for_each_field(text, [&](size_t i, std::string_view f) {
    auto v = parse_uint<uint64_t>(f);
    if (!v) return false;
    (i == 0 ? s.run_ns : i == 1 ? s.wait_ns : s.timeslices) = *v;
    return ++got < 3;
  });
  if (got < 3) return std::nullopt;
  return s;
}

std::optional<Sched> parse_sched(std::string_view text) {
  Sched s;
  int got = 0;
  for_each_line_kv(text, [&](std::string_view name, std::string_view value) {
    uint64_t* dst = name == "se.nr_migrations"          ? &s.migrations
                    : name == "nr_voluntary_switches"   ? &s.voluntary
                    : name == "nr_involuntary_switches" ? &s.involuntary
                                                        : nullptr;
    if (!dst) return;
    if (auto v = parse_uint<uint64_t>(value)) {
      *dst = *v;
      ++got;
    }
  });
  if (got < 3) return std::nullopt;
  return s;
}

std::optional<Stat> parse_stat(std::string_view text) {
  // The comm may hold spaces and parentheses: it ends at the last ')'.
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  Stat s;
  s.comm = std::string(text.substr(open + 1, close - open - 1));
  bool have_start = false, have_cpu = false;
  // Fields after the comm are numbered from 3 (state).
  for_each_field(text.substr(close + 1), [&](size_t i, std::string_view f) {
    const size_t field = i + 3;
    if (field == 22) {
      auto v = parse_uint<uint64_t>(f);
      if (v) s.starttime_ticks = *v;
      have_start = v.has_value();
    }
    if (field == 39) {
      auto v = parse_uint<uint32_t>(f);
      if (v) s.processor = *v;
      have_cpu = v.has_value();
      return false;
    }
    return true;
  });
  if (!have_start || !have_cpu) return std::nullopt;
  return s;
}

std::optional<uint32_t> parse_status_tgid(std::string_view text) {
  std::optional<uint32_t> tgid;
  for_each_line_kv(text, [&](std::string_view name, std::string_view value) {
    if (name == "Tgid") tgid = parse_uint<uint32_t>(value);
  });
  return tgid;
}

}  // namespace procfs

// ---- the sampler ----

struct ProcfsSampler::Task {
  Fd schedstat, sched, stat;  // kept open between samples while the budget allows
  bool has_sample = false;
  procfs::SchedStat last_ss;
  uint32_t since_full = 0;    // samples since sched and stat were last read
  uint64_t round = 0;         // last sample that saw it
  snapshot::ThreadSample sample;

  size_t open_fds() const {
    return size_t{schedstat.get() >= 0} + size_t{sched.get() >= 0} + size_t{stat.get() >= 0};
  }
};

void ProcfsSampler::TaskDeleter::operator()(Task* t) const { delete t; }

std::optional<ProcfsSampler> ProcfsSampler::open(const ProcfsTarget& target, std::string* error,
                                                 std::string proc_root) {
  std::vector<uint32_t> pids;
  Fd root(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (uint32_t pid : target.pids) {
    char path[32], buf[2048];
    snprintf(path, sizeof path, "%u/status", pid);
    auto tgid = procfs::parse_status_tgid(read_at(root.get(), path, buf, sizeof buf));
    if (pid == 0 || !tgid) {
      if (error) *error = "no such process: " + std::to_string(pid);
      return std::nullopt;
    }
    pids.push_back(*tgid);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  ProcfsSampler s(std::move(pids), target.comm, std::move(proc_root), target.follow_forks && !target.all && target.cgroup_dir.empty());
  s.all_ = target.all;
  s.cgroup_dir_ = target.cgroup_dir;
  return s;
}

ProcfsSampler::ProcfsSampler(std::vector<uint32_t> pids, std::string comm, std::string proc_root, bool follow_forks)
    : fixed_pids_(std::move(pids)),
      comm_(std::move(comm)),
      follow_forks_(follow_forks),
      proc_root_(std::move(proc_root)),
      pids_(fixed_pids_),
      ns_per_tick_(1'000'000'000u / static_cast<uint64_t>(std::max(1L, sysconf(_SC_CLK_TCK)))) {
  // The machine's context comes from the real /proc only (tests hand a made-up proc_root).
  if (proc_root_ == "/proc") context_ = std::make_unique<MachineContext>();
  // The kernel keeps 15 characters of a comm; match what /proc/PID/comm can show.
  if (comm_.size() > PLATOON_COMM_LEN - 1) comm_.resize(PLATOON_COMM_LEN - 1);
  // Keep at most half of the descriptor limit open, leaving the rest to the program; threads
  // beyond it are read by path (open, read, close) every sample, which is slower but correct.
  rlimit rl{};
  const rlim_t soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  fd_budget_ = soft == RLIM_INFINITY ? 1u << 20 : static_cast<size_t>(soft / 2);
}

void ProcfsSampler::rescan_comm() {
  pids_ = fixed_pids_;
  if (all_ || !cgroup_dir_.empty()) {
    const auto found = all_ ? all_processes(proc_root_) : cgroup_members(cgroup_dir_);
    const auto self = static_cast<uint32_t>(getpid());
    for (pid_t p : found)
      if (static_cast<uint32_t>(p) != self || !all_) pids_.push_back(static_cast<uint32_t>(p));
  }
  if (!comm_.empty()) {
    Dir proc(opendir(proc_root_.c_str()));
    const int fd = proc ? dirfd(proc.get()) : -1;
    while (proc) {
      dirent* e = readdir(proc.get());
      if (!e) break;
      if (!all_digits(e->d_name)) continue;
      char path[300], buf[64];
      snprintf(path, sizeof path, "%s/comm", e->d_name);
      std::string_view comm = trim(read_at(fd, path, buf, sizeof buf));
      if (comm != comm_) continue;
      if (auto pid = parse_uint<uint32_t>(e->d_name)) pids_.push_back(*pid);
    }
  }
  std::sort(pids_.begin(), pids_.end());
  pids_.erase(std::unique(pids_.begin(), pids_.end()), pids_.end());
}

// Adds to pids_ every live descendant of what is in it: one pass over /proc/*/stat for the
// parent pids (/proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN), about what the comm
// rescan costs. A child whose parent exited was reparented and is found no more: the pids that
// were followed once are kept in pids_ as long as they live, through followed_.
void ProcfsSampler::rescan_children() {
  if (!follow_forks_) return;
  Dir proc(opendir(proc_root_.c_str()));
  if (!proc) return;
  const int fd = dirfd(proc.get());
  std::unordered_multimap<uint32_t, uint32_t> children;  // ppid -> pid
  std::vector<uint32_t> alive;
  while (dirent* e = readdir(proc.get())) {
    if (!all_digits(e->d_name)) continue;
    char path[300], buf[1024];
    snprintf(path, sizeof path, "%s/stat", e->d_name);
    std::string_view stat = read_at(fd, path, buf, sizeof buf);
    const size_t paren = stat.rfind(')');
    auto pid = parse_uint<uint32_t>(e->d_name);
    if (!pid || paren == std::string_view::npos || paren + 4 >= stat.size()) continue;
    alive.push_back(*pid);
    std::string_view rest = stat.substr(paren + 4);  // ") S " then the ppid
    if (auto ppid = parse_uint<uint32_t>(rest.substr(0, rest.find(' ')))) children.emplace(*ppid, *pid);
  }
  std::sort(alive.begin(), alive.end());
  std::vector<uint32_t> followed;
  for (uint32_t p : followed_)
    if (std::binary_search(alive.begin(), alive.end(), p)) followed.push_back(p);
  std::vector<uint32_t> todo = pids_;
  todo.insert(todo.end(), followed.begin(), followed.end());
  std::vector<uint32_t> seen = todo;
  std::sort(seen.begin(), seen.end());
  while (!todo.empty()) {
    const uint32_t p = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(p);
    for (auto it = lo; it != hi; ++it) {
      auto at = std::lower_bound(seen.begin(), seen.end(), it->second);
      if (at != seen.end() && *at == it->second) continue;
      seen.insert(at, it->second);
      followed.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  std::sort(followed.begin(), followed.end());
  followed.erase(std::unique(followed.begin(), followed.end()), followed.end());
  followed_ = followed;
  pids_.insert(pids_.end(), followed.begin(), followed.end());
  std::sort(pids_.begin(), pids_.end());
  pids_.erase(std::unique(pids_.begin(), pids_.end()), pids_.end());
}

// One of a task's files: through its kept descriptor (pread at 0 makes the kernel format the file
// afresh, and fails with ESRCH once that task is gone, even if a new thread got the same tid, so a
// reused tid never reads as the old thread), or by path when the descriptor budget is spent.
std::string_view ProcfsSampler::read_file(Fd& fd, int task_dirfd, const char* tid_name, const char* name,
                                          char* buf, size_t cap) {
  if (fd.get() < 0) {
    char path[300];
    snprintf(path, sizeof path, "%s/%s", tid_name, name);
    if (open_fds_ >= fd_budget_) return read_at(task_dirfd, path, buf, cap);
    fd.reset(openat(task_dirfd, path, O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return {};
    ++open_fds_;
  }
  const ssize_t n = pread(fd.get(), buf, cap, 0);
  return n > 0 ? std::string_view(buf, static_cast<size_t>(n)) : std::string_view();
}

// Refreshes one task's sample; false when it cannot be read (it is exiting, or its tid was
// just reused: the caller then reports the old thread as exited).
bool ProcfsSampler::read_task(int task_dirfd, const char* tid_name, uint32_t pid, Task& task) {
  char buf[4096];  // /proc/.../sched is the largest, about 2 KB
  std::string_view text = read_file(task.schedstat, task_dirfd, tid_name, "schedstat", buf, sizeof buf);
  auto ss = procfs::parse_schedstat(text);
  if (!ss) return false;

  const bool ran = !task.has_sample || ss->run_ns != task.last_ss.run_ns ||
                   ss->wait_ns != task.last_ss.wait_ns || ss->timeslices != task.last_ss.timeslices;
  if (ran || task.since_full + 1 >= kFullReadEvery) {
    auto sc = procfs::parse_sched(read_file(task.sched, task_dirfd, tid_name, "sched", buf, sizeof buf));
    if (!sc) return false;
    auto st = procfs::parse_stat(read_file(task.stat, task_dirfd, tid_name, "stat", buf, sizeof buf));
    if (!st) return false;
    snapshot::ThreadSample& t = task.sample;
    t.comm = std::move(st->comm);
    t.first_seen_ns = st->starttime_ticks * ns_per_tick_;
    t.last_cpu = st->processor;
    t.switches_voluntary = sc->voluntary;
    t.switches_involuntary = sc->involuntary;
    t.migrations = sc->migrations;
    task.since_full = 0;
  } else {
    ++task.since_full;
  }
  snapshot::ThreadSample& t = task.sample;
  t.pid = pid;
  t.run_ns = ss->run_ns;
  t.wait_ns = ss->wait_ns;
  t.switch_ins = ss->timeslices;
  task.last_ss = *ss;
  task.has_sample = true;
  return true;
}

namespace {
// Spread the periodic full reads over kFullReadEvery samples instead of doing them all at once.
template <typename Ptr>
void new_task(Ptr& slot, uint32_t tid) {
  slot.reset(new typename Ptr::element_type);
  slot->since_full = tid % ProcfsSampler::kFullReadEvery;
}
}  // namespace

void ProcfsSampler::read_process(uint32_t pid, snapshot::Snapshot& out) {
  char path[300];
  snprintf(path, sizeof path, "%s/%u/task", proc_root_.c_str(), pid);
  Dir dir(opendir(path));
  if (!dir) return;  // the process is gone: its threads are reported exited
  const int fd = dirfd(dir.get());
  while (dirent* e = readdir(dir.get())) {
    if (!all_digits(e->d_name)) continue;
    auto tid = parse_uint<uint32_t>(e->d_name);
    if (!tid) continue;
    TaskPtr& slot = tasks_[*tid];
    if (!slot) new_task(slot, *tid);
    if (!read_task(fd, e->d_name, pid, *slot)) {
      // Gone, or the tid now names a new thread: report what we knew once, start over.
      if (slot->has_sample) {
        slot->sample.exited = true;
        out.threads.push_back(std::move(slot->sample));
      }
      open_fds_ -= slot->open_fds();
      new_task(slot, *tid);
      if (!read_task(fd, e->d_name, pid, *slot)) continue;  // exiting mid-read: normal
    }
    slot->sample.tid = *tid;
    slot->round = round_;
    out.threads.push_back(slot->sample);
  }
}

void ProcfsSampler::report_exited(snapshot::Snapshot& out) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    Task& task = *it->second;
    if (task.round == round_) {
      ++it;
      continue;
    }
    if (task.has_sample) {
      task.sample.exited = true;  // reported once: the entry goes away now
      out.threads.push_back(std::move(task.sample));
    }
    open_fds_ -= task.open_fds();
    it = tasks_.erase(it);
  }
}

snapshot::Snapshot ProcfsSampler::sample() {
  snapshot::Snapshot s;
  s.source = snapshot::Source::procfs;
  s.fields = snapshot::kFieldsProcfs;
  ++round_;
  s.threads.reserve(tasks_.size() + 16);  // ThreadSample is ~1.4 KB: no regrowth copies
  const uint64_t t0 = snapshot::boottime_ns();
  rescan_comm();
  rescan_children();
  for (uint32_t pid : pids_) read_process(pid, s);
  const uint64_t t1 = snapshot::boottime_ns();
  // The reads are spread over [t0, t1]; the midpoint is the best single instant for all of them.
  s.ts_ns = t0 + (t1 - t0) / 2;
  report_exited(s);
  std::sort(s.threads.begin(), s.threads.end(), [](const snapshot::ThreadSample& a, const snapshot::ThreadSample& b) {
    return std::pair{a.tid, a.first_seen_ns} < std::pair{b.tid, b.first_seen_ns};
  });
  if (context_) context_->fill(s);
  return s;
}

}  // namespace platoon::collectors
