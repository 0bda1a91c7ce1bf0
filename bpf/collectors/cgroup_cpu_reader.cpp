#include "bpf/collectors/cgroup_cpu_reader.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace platoon::collectors {

namespace {

// Splits on one character; empty fields are kept.
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

template <class F>
void for_each_line(std::string_view text, F f) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

template <class T>
bool number(std::string_view s, T* v) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
}

// mountinfo escapes blanks and backslashes in paths as three octal digits (\040).
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool octal = s[i] == '\\' && s.size() - i > 3 && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                       s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7';
    if (octal) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The group's path as seen from the mount: a mount of a sub-tree (a container's cgroup
// namespace bind mount) has root "/a/b", and a path outside it is not reachable there.
std::optional<std::string> under_root(const std::string& path, const std::string& root) {
  if (root.empty() || root == "/") return path;
  if (path == root) return std::string("/");
  if (path.compare(0, root.size(), root) == 0 && path.size() > root.size() && path[root.size()] == '/')
    return path.substr(root.size());
  return std::nullopt;
}

}  // namespace

CgroupRef parse_proc_cgroup(std::string_view text) {
  CgroupRef v1, v2;
  for_each_line(text, [&](std::string_view line) {
    // hierarchy-ID:controller-list:path; the path may itself hold ':'.
    const size_t a = line.find(':');
    if (a == std::string_view::npos) return;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) return;
    const std::string_view id = line.substr(0, a), ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (path.empty() || path.front() != '/') return;
    if (id == "0" && ctrls.empty()) {
      v2 = {std::string(path), 2};
      return;
    }
    for (std::string_view c : split(ctrls, ','))
      if (c == "cpu") v1 = {std::string(path), 1};
  });
  return v1.version ? v1 : v2;
}

CgroupMounts parse_mountinfo(std::string_view text) {
  CgroupMounts m;
  for_each_line(text, [&](std::string_view line) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    const auto f = split(line, ' ');
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 5 || dash + 1 >= f.size()) return;
    const std::string_view fstype = f[dash + 1];
    const std::string root = unescape(f[3]), point = unescape(f[4]);
    if (fstype == "cgroup2" && m.v2.empty()) {
      m.v2 = point;
      m.v2_root = root;
    } else if (fstype == "cgroup" && dash + 3 < f.size() && m.v1_cpu.empty()) {
      for (std::string_view o : split(f[dash + 3], ','))
        if (o == "cpu") {
          m.v1_cpu = point;
          m.v1_cpu_root = root;
        }
    }
  });
  return m;
}

void parse_cpu_stat(std::string_view text, uint8_t version, snapshot::CgroupCpu& g) {
  for_each_line(text, [&](std::string_view line) {
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return;
    const std::string_view key = line.substr(0, sp);
    uint64_t v = 0;
    if (!number(line.substr(sp + 1), &v)) return;
    if (key == "nr_periods") g.nr_periods = v;
    else if (key == "nr_throttled") g.nr_throttled = v;
    else if (version == 1 && key == "throttled_time") g.throttled_ns = v;
    else if (version == 2 && key == "throttled_usec") g.throttled_ns = v * 1000;
    else if (version == 2 && key == "usage_usec") g.usage_ns = v * 1000;
  });
}

bool parse_cpu_max(std::string_view text, snapshot::CgroupCpu& g) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const auto f = split(text, ' ');
  if (f.size() != 2) return false;
  uint64_t period = 0;
  if (!number(f[1], &period)) return false;
  int64_t quota = -1;
  if (f[0] != "max" && (!number(f[0], &quota) || quota < 0)) return false;
  g.quota_us = quota;
  g.period_us = period;
  return true;
}

CgroupCpuReader::CgroupCpuReader(std::string proc_root) : proc_root_(std::move(proc_root)) {
  if (auto text = slurp(proc_root_ + "/self/mountinfo")) mounts_ = parse_mountinfo(*text);
  if (!mounts_.v2.empty())
    if (auto ctrls = slurp(mounts_.v2 + "/cgroup.controllers"))
      for (std::string_view c : split(*ctrls, ' '))
        if (c == "cpu" || c == "cpu\n") v2_has_cpu_ = true;
}

uint8_t CgroupCpuReader::version() const {
  if (!mounts_.v1_cpu.empty()) return 1;
  return v2_has_cpu_ ? 2 : 0;
}

std::optional<std::string> CgroupCpuReader::path_of(pid_t pid, pid_t tid) const {
  auto text = slurp(proc_root_ + "/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/cgroup");
  if (!text) return std::nullopt;
  CgroupRef ref = parse_proc_cgroup(*text);
  // A v1 line is only useful with a v1 cpu mount, and the v2 line with a v2 cpu controller.
  if (ref.version == 1 && mounts_.v1_cpu.empty()) return std::nullopt;
  if (ref.version == 2 && !v2_has_cpu_) return std::nullopt;
  if (ref.version == 0) return std::nullopt;
  return ref.path;
}

std::string CgroupCpuReader::directory(const std::string& path) const {
  const bool v1 = !mounts_.v1_cpu.empty();
  const std::string& mount = v1 ? mounts_.v1_cpu : mounts_.v2;
  if (mount.empty() || (!v1 && !v2_has_cpu_)) return {};
  auto rel = under_root(path, v1 ? mounts_.v1_cpu_root : mounts_.v2_root);
  if (!rel || rel->find("/..") != std::string::npos) return {};
  return *rel == "/" ? mount : mount + *rel;
}

std::optional<snapshot::CgroupCpu> CgroupCpuReader::read(const std::string& path) const {
  const std::string dir = directory(path);
  if (dir.empty()) return std::nullopt;
  const uint8_t v = version();
  auto stat = slurp(dir + "/cpu.stat");
  if (!stat) return std::nullopt;
  snapshot::CgroupCpu g;
  g.path = path;
  g.version = v;
  parse_cpu_stat(*stat, v, g);
  if (v == 2) {
    if (auto max = slurp(dir + "/cpu.max")) parse_cpu_max(*max, g);  // absent at the root
  } else {
    int64_t quota = -1;
    uint64_t period = 0;
    auto q = slurp(dir + "/cpu.cfs_quota_us");
    auto p = slurp(dir + "/cpu.cfs_period_us");
    if (q && number(std::string_view(*q).substr(0, q->find('\n')), &quota)) g.quota_us = quota < 0 ? -1 : quota;
    if (p && number(std::string_view(*p).substr(0, p->find('\n')), &period)) g.period_us = period;
    // cpuacct is often co-mounted (cpu,cpuacct); its usage is ns.
    uint64_t usage = 0;
    if (auto u = slurp(dir + "/cpuacct.usage"); u && number(std::string_view(*u).substr(0, u->find('\n')), &usage))
      g.usage_ns = usage;
  }
  return g;
}

}  // namespace platoon::collectors
