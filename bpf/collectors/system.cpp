#include "bpf/collectors/system.hpp"

#include <dirent.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <memory>

namespace platoon::collectors {

namespace {

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace

std::string ensure_tracefs(std::string* error) {
  // libbpf looks under /sys/kernel/debug/tracing first when that exists, else
  // /sys/kernel/tracing: either is fine as long as the events are there.
  const std::string tracing = "/sys/kernel/tracing";
  const std::string debug_tracing = "/sys/kernel/debug/tracing";
  if (exists(debug_tracing + "/events")) return debug_tracing + "/events";
  if (exists(tracing + "/events")) return tracing + "/events";
  if (exists(debug_tracing)) {
    // debugfs is mounted but its tracing automount is not usable: libbpf would still pick
    // that path, so mount tracefs there.
    if (mount("nodev", debug_tracing.c_str(), "tracefs", 0, nullptr) == 0) return debug_tracing + "/events";
  }
  if (mount("nodev", tracing.c_str(), "tracefs", 0, nullptr) != 0) {
    if (error) *error = "cannot mount tracefs on " + tracing + ": " + std::strerror(errno);
    return "";
  }
  return tracing + "/events";
}

bool process_exists(pid_t pid) {
  return pid > 0 && exists("/proc/" + std::to_string(pid) + "/stat");
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string thread_comm(pid_t pid, pid_t tid) {
  return read_first_line("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
}

bool thread_running(pid_t pid, pid_t tid) {
  const std::string line = read_first_line("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  // The state follows the parenthesised comm, which may itself hold ") ".
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  return line[close + 2] == 'R';
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  auto number = [&](int& v) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v < 1 << 20) v = v * 10 + (text[i++] - '0');
    return true;
  };
  while (i < text.size()) {
    int lo = 0, hi = 0;
    if (!number(lo)) return {};
    hi = lo;
    if (i < text.size() && text[i] == '-' && (++i, !number(hi))) return {};
    if (hi < lo || hi - lo > 1 << 16) return {};
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    if (i == text.size()) break;
    if (text[i] != ',' || ++i == text.size()) return {};  // a separator, and more after it
  }
  return out;
}

std::vector<int> read_online_cpus() {
  std::vector<int> cpus = parse_cpu_list(read_first_line("/sys/devices/system/cpu/online"));
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

std::string exe_path(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<pid_t> pids_with_comm(const std::string& comm) {
  std::vector<pid_t> out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc"), closedir);
  if (!dir) return out;
  while (const dirent* d = readdir(dir.get())) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (read_first_line("/proc/" + std::string(d->d_name) + "/comm") == comm) out.push_back(static_cast<pid_t>(pid));
  }
  return out;
}

std::vector<pid_t> descendants_of(const std::vector<pid_t>& roots) {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc"), closedir);
  if (!dir) return {};
  while (const dirent* d = readdir(dir.get())) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    // "pid (comm) state ppid ...": the comm may hold anything, so parse after the last ')'.
    const std::string stat = read_first_line("/proc/" + std::string(d->d_name) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 >= stat.size()) continue;
    const long ppid = std::strtol(stat.c_str() + paren + 4, nullptr, 10);
    if (ppid > 0) children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
  }
  std::vector<pid_t> out;
  std::set<pid_t> seen(roots.begin(), roots.end());
  std::vector<pid_t> todo(roots.begin(), roots.end());
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(p);
    for (auto it = lo; it != hi; ++it)
      if (seen.insert(it->second).second) {
        out.push_back(it->second);
        todo.push_back(it->second);
      }
  }
  return out;
}

}  // namespace platoon::collectors
