#include "bpf/collectors/cgroup_members.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "bpf/collectors/cgroup_cpu_reader.hpp"

namespace platoon::collectors {
namespace {

bool is_cgroup_dir(const std::string& dir) {
  struct stat st{};
  return !dir.empty() && stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         access((dir + "/cgroup.procs").c_str(), R_OK) == 0;
}

bool numeric(const char* name, long& value) {
  if (!name[0]) return false;
  char* end = nullptr;
  value = std::strtol(name, &end, 10);
  return *end == '\0' && value > 0;
}

void read_procs(const std::string& dir, std::vector<pid_t>& out) {
  std::ifstream in(dir + "/cgroup.procs");
  long pid = 0;
  while (in >> pid)
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
}

}  // namespace

std::string resolve_cgroup_dir(const std::string& path, std::string& error) {
  if (path.empty()) {
    error = "--cgroup needs a path";
    return {};
  }
  if (is_cgroup_dir(path)) {
    char real[4096];
    return realpath(path.c_str(), real) ? std::string(real) : path;
  }
  if (path[0] == '/' && path.rfind("/sys/", 0) != 0) {
    // A path inside a hierarchy, as /proc/PID/cgroup prints it.
    const CgroupCpuReader reader;
    const std::string in_cpu = reader.directory(path);
    if (is_cgroup_dir(in_cpu)) return in_cpu;
    std::ifstream mountinfo("/proc/self/mountinfo");
    const std::string text((std::istreambuf_iterator<char>(mountinfo)), std::istreambuf_iterator<char>());
    const CgroupMounts m = parse_mountinfo(text);
    if (!m.v2.empty() && is_cgroup_dir(m.v2 + path)) return m.v2 + path;
  }
  error = "no such cgroup: '" + path +
          "' (give its directory under /sys/fs/cgroup, or its path as /proc/PID/cgroup shows it)";
  return {};
}

std::vector<pid_t> cgroup_members(const std::string& dir, size_t max_groups) {
  std::vector<pid_t> out;
  std::vector<std::string> todo{dir};
  size_t groups = 0;
  while (!todo.empty() && groups < max_groups) {
    const std::string d = std::move(todo.back());
    todo.pop_back();
    ++groups;
    read_procs(d, out);
    DIR* dp = opendir(d.c_str());
    if (!dp) continue;
    while (const dirent* e = readdir(dp)) {
      if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)) continue;
      const std::string child = d + "/" + e->d_name;
      if (e->d_type == DT_DIR || is_cgroup_dir(child)) todo.push_back(child);
    }
    closedir(dp);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<pid_t> all_processes(const std::string& proc_root) {
  std::vector<pid_t> out;
  DIR* dp = opendir(proc_root.c_str());
  if (!dp) return out;
  while (const dirent* e = readdir(dp)) {
    long v = 0;
    if (numeric(e->d_name, v)) out.push_back(static_cast<pid_t>(v));
  }
  closedir(dp);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace platoon::collectors
