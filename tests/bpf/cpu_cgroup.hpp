// A CPU cgroup with a quota for the C++ tests, made and removed the way tests/lib/cgroups.sh
// does for the shell tests: on the v1 cpu hierarchy when one is mounted (this project's
// machines), else on cgroup v2 when its root lists the cpu controller. Everything is decided
// from /proc/self/mountinfo and the cgroup files themselves, never from platoon's own readers,
// since those are what the tests hold to account.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace platoon::testing {

struct CpuCgroupRoot {
  std::string dir;   // the mount point of the hierarchy that holds the cpu controller
  int version = 0;   // 1 or 2; 0: none on this machine
};

// The mount that /proc/self/mountinfo lists for the cpu controller: a v1 "cgroup" mount whose
// super options name cpu, else a "cgroup2" mount whose cgroup.controllers lists cpu.
inline CpuCgroupRoot find_cpu_cgroup_root() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, v2;
  while (std::getline(in, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string field, mount, fstype, source, options;
    for (int i = 0; i < 5 && head >> field; ++i) mount = field;  // the fifth field
    tail >> fstype >> source >> options;
    if (fstype == "cgroup") {
      std::istringstream opts(options);
      while (std::getline(opts, field, ','))
        if (field == "cpu") return {mount, 1};
    } else if (fstype == "cgroup2" && v2.empty()) {
      v2 = mount;
    }
  }
  if (v2.empty()) return {};
  std::ifstream controllers(v2 + "/cgroup.controllers");
  std::string name;
  while (controllers >> name)
    if (name == "cpu") return {v2, 2};
  return {};
}

inline bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// A group under the cpu hierarchy's root with QUOTA_US of CPU per PERIOD_US; removed on
// destruction (whatever is still in it moves to the root first), so a failed assertion does
// not leave it behind. Destroy it after the processes in it are reaped.
class CpuCgroup {
 public:
  // nullopt and a one-line reason when it could not be made; *no_controller tells the one
  // case a test may skip for (the machine has no cpu controller at all).
  static std::optional<CpuCgroup> make(const std::string& name, long quota_us, long period_us,
                                       std::string* why, bool* no_controller) {
    const CpuCgroupRoot root = find_cpu_cgroup_root();
    *no_controller = root.version == 0;
    if (root.version == 0) {
      *why = "no cgroup cpu controller: no v1 cpu mount and no cgroup2 mount listing cpu in /proc/self/mountinfo";
      return std::nullopt;
    }
    if (root.version == 2 && !write_file(root.dir + "/cgroup.subtree_control", "+cpu")) {
      *why = "could not enable +cpu in " + root.dir + "/cgroup.subtree_control";
      return std::nullopt;
    }
    CpuCgroup g(root, root.dir + "/" + name);
    if (mkdir(g.dir_.c_str(), 0755) != 0 && errno != EEXIST) {
      *why = "mkdir " + g.dir_ + ": " + std::strerror(errno);
      g.dir_.clear();
      return std::nullopt;
    }
    const bool set = root.version == 2
                         ? write_file(g.dir_ + "/cpu.max", std::to_string(quota_us) + " " + std::to_string(period_us))
                         : write_file(g.dir_ + "/cpu.cfs_period_us", std::to_string(period_us)) &&
                               write_file(g.dir_ + "/cpu.cfs_quota_us", std::to_string(quota_us));
    if (!set) {
      *why = "could not set the quota of " + g.dir_;
      return std::nullopt;  // g's destructor removes the directory
    }
    return std::optional<CpuCgroup>(std::move(g));
  }
  ~CpuCgroup() { remove(); }
  CpuCgroup(CpuCgroup&& o) noexcept : root_(o.root_), dir_(std::move(o.dir_)) { o.dir_.clear(); }
  CpuCgroup& operator=(CpuCgroup&& o) noexcept {
    if (this != &o) {
      remove();
      root_ = o.root_;
      dir_ = std::move(o.dir_);
      o.dir_.clear();
    }
    return *this;
  }
  CpuCgroup(const CpuCgroup&) = delete;
  CpuCgroup& operator=(const CpuCgroup&) = delete;

  const std::string& dir() const { return dir_; }
  int version() const { return root_.version; }

  struct Stat {
    uint64_t nr_periods = 0, nr_throttled = 0, throttled_ns = 0;
  };
  // cpu.stat: v1 counts throttled_time in ns, v2 throttled_usec in µs.
  Stat stat() const {
    Stat s;
    std::ifstream in(dir_ + "/cpu.stat");
    std::string key;
    uint64_t value;
    while (in >> key >> value) {
      if (key == "nr_periods") s.nr_periods = value;
      if (key == "nr_throttled") s.nr_throttled = value;
      if (key == "throttled_time") s.throttled_ns = value;
      if (key == "throttled_usec") s.throttled_ns = value * 1000;
    }
    return s;
  }

 private:
  CpuCgroup(CpuCgroupRoot root, std::string dir) : root_(std::move(root)), dir_(std::move(dir)) {}

  // A process killed a moment ago may still be leaving the group, hence the retries.
  void remove() {
    if (dir_.empty()) return;
    for (int attempt = 0; attempt < 50; ++attempt) {
      std::ifstream procs(dir_ + "/cgroup.procs");
      std::vector<std::string> pids;
      for (std::string pid; procs >> pid;) pids.push_back(pid);
      for (const std::string& pid : pids) write_file(root_.dir + "/cgroup.procs", pid);
      if (rmdir(dir_.c_str()) == 0 || errno == ENOENT) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    dir_.clear();
  }

  CpuCgroupRoot root_;
  std::string dir_;
};

}  // namespace platoon::testing
