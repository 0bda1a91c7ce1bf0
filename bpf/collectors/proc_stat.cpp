#include "bpf/collectors/proc_stat.hpp"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace platoon::collectors {

namespace {

bool next_number(std::string_view& s, uint64_t* v) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  return true;
}

}  // namespace

std::vector<snapshot::CpuTimes> parse_proc_stat(std::string_view text) {
  std::vector<snapshot::CpuTimes> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    line.remove_prefix(3);
    uint64_t cpu = 0;
    snapshot::CpuTimes t;
    // user nice system idle iowait irq softirq steal: steal is the 8th (2.6.11+).
    if (!next_number(line, &cpu) || !next_number(line, &t.user) || !next_number(line, &t.nice) ||
        !next_number(line, &t.system) || !next_number(line, &t.idle) || !next_number(line, &t.iowait) ||
        !next_number(line, &t.irq) || !next_number(line, &t.softirq) || !next_number(line, &t.steal) ||
        cpu > UINT32_MAX)
      continue;
    t.cpu = static_cast<uint32_t>(cpu);
    out.push_back(t);
  }
  return out;
}

std::vector<snapshot::CpuTimes> read_proc_stat() {
  std::ifstream in("/proc/stat");
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_proc_stat(text.str());
}

double seconds_per_tick() {
  static const double s = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
  }();
  return s;
}

}  // namespace platoon::collectors
