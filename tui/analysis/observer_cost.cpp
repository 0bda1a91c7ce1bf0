#include "tui/analysis/observer_cost.hpp"

#include <sys/resource.h>
#include <time.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "bpf/snapshot/clock.hpp"

namespace platoon::analysis {

namespace {

constexpr std::string_view kNotePrefix = "observer cost: ";
constexpr std::string_view kDataSep = " | ";

uint64_t timeval_ns(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(tv.tv_usec) * 1000ull;
}

double per_s(uint64_t n, double wall_s) { return wall_s > 0 ? static_cast<double>(n) / wall_s : 0.0; }

// "950", "12.3k", "4.1M": runs per second at a glance.
std::string rate(double v) {
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

// Percentages of a CPU are small: two decimals below 1%, so that 0.04% does not read as 0.
std::string pct(double v) { return v < 1 ? fmt::format("{:.2f}", v) : fmt::format("{:.1f}", v); }

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::optional<snapshot::BpfStats> parse_stats(std::string_view s) {
  if (s == "on") return snapshot::BpfStats::on;
  if (s == "unknown") return snapshot::BpfStats::unknown;
  if (s == "none") return snapshot::BpfStats::none;
  return std::nullopt;
}

// NAME/RUNS/NS/MISSES
std::optional<snapshot::ProgramCost> parse_program(std::string_view s) {
  snapshot::ProgramCost p;
  uint64_t* fields[] = {&p.run_cnt, &p.run_time_ns, &p.misses};
  size_t slash = s.find('/');
  if (slash == 0 || slash == std::string_view::npos) return std::nullopt;
  p.name = std::string(s.substr(0, slash));
  s.remove_prefix(slash + 1);
  for (size_t i = 0; i < 3; ++i) {
    slash = s.find('/');
    if ((i < 2) != (slash != std::string_view::npos)) return std::nullopt;
    if (!parse_u64(s.substr(0, slash), *fields[i])) return std::nullopt;
    if (i < 2) s.remove_prefix(slash + 1);
  }
  return p;
}

}  // namespace

uint64_t self_cpu_ns() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return timeval_ns(ru.ru_utime) + timeval_ns(ru.ru_stime);
}

CostSample take_cost_sample(const snapshot::SnapshotSource& source) {
  return {source.cost(), snapshot::clock_ns(CLOCK_BOOTTIME), self_cpu_ns()};
}

ObserverCost observer_cost(snapshot::BpfStats stats, std::string why, uint64_t wall_ns, uint64_t self_ns,
                           const std::vector<snapshot::ProgramCost>& deltas, uint64_t counted_ns) {
  ObserverCost c;
  c.stats = stats;
  c.why = std::move(why);
  c.wall_ns = wall_ns;
  c.counted_ns = counted_ns;
  c.wall_s = static_cast<double>(wall_ns) / 1e9;
  c.self_cpu_ns = self_ns;
  c.self_cpu_pct = c.wall_s > 0 ? static_cast<double>(self_ns) / static_cast<double>(wall_ns) * 100.0 : 0.0;
  // Without the kernel's stats the counters stand still at whatever they were: not a cost of 0.
  if (stats != snapshot::BpfStats::on) return c;
  for (const snapshot::ProgramCost& d : deltas) {
    if (d.run_cnt == 0 && d.run_time_ns == 0 && d.misses == 0) continue;
    ProgramRate r;
    r.name = d.name;
    r.runs = d.run_cnt;
    r.run_ns = d.run_time_ns;
    r.misses = d.misses;
    r.ns_per_s = per_s(d.run_time_ns, c.wall_s);
    r.cpu_pct = r.ns_per_s / 1e9 * 100.0;
    r.runs_per_s = per_s(d.run_cnt, c.wall_s);
    if (d.run_cnt) r.ns_per_run = static_cast<double>(d.run_time_ns) / static_cast<double>(d.run_cnt);
    c.bpf_runs += d.run_cnt;
    c.bpf_run_ns += d.run_time_ns;
    c.bpf_misses += d.misses;
    c.programs.push_back(std::move(r));
  }
  std::stable_sort(c.programs.begin(), c.programs.end(),
                   [](const ProgramRate& a, const ProgramRate& b) { return a.run_ns > b.run_ns; });
  c.bpf_ns_per_s = per_s(c.bpf_run_ns, c.wall_s);
  c.bpf_cpu_pct = c.bpf_ns_per_s / 1e9 * 100.0;
  return c;
}

uint64_t counted_between(const CostSample& from, const CostSample& to) {
  const uint64_t before = from.bpf.sampled ? from.bpf.counted_ns : 0;
  return to.bpf.counted_ns > before ? to.bpf.counted_ns - before : 0;
}

ObserverCost observer_cost(const CostSample& from, const CostSample& to) {
  std::vector<snapshot::ProgramCost> deltas;
  for (const snapshot::ProgramCost& b : to.bpf.programs) {
    snapshot::ProgramCost d = b;
    auto a = std::find_if(from.bpf.programs.begin(), from.bpf.programs.end(),
                          [&](const snapshot::ProgramCost& p) { return p.name == b.name; });
    if (a != from.bpf.programs.end() && a->run_cnt <= b.run_cnt && a->run_time_ns <= b.run_time_ns &&
        a->misses <= b.misses) {
      d.run_cnt -= a->run_cnt;
      d.run_time_ns -= a->run_time_ns;
      d.misses -= a->misses;
    }
    deltas.push_back(std::move(d));
  }
  // The stats must have been on for the whole span: on at the end only, the first part of the
  // span ran uncounted and the rate would read low.
  snapshot::BpfStats stats = to.bpf.stats;
  std::string why = to.bpf.why;
  if (from.bpf.stats != snapshot::BpfStats::on && to.bpf.stats == snapshot::BpfStats::on) {
    stats = snapshot::BpfStats::unknown;
    why = "BPF run-time stats were off for part of the time (" + from.bpf.why + ")";
  }
  const uint64_t wall = to.wall_ns > from.wall_ns ? to.wall_ns - from.wall_ns : 0;
  const uint64_t self = to.self_cpu_ns > from.self_cpu_ns ? to.self_cpu_ns - from.self_cpu_ns : 0;
  uint64_t counted = 0;
  if (stats == snapshot::BpfStats::on && to.bpf.sampled) {
    counted = counted_between(from, to);
    if (counted == 0) {
      stats = snapshot::BpfStats::unknown;
      why = "no BPF stats sampling window in this span (" + why + ")";
    }
    // Counted work over counted time, as the span's estimate. The windows are timed apart from
    // the samples, so counted may read a hair over wall: never scale down.
    const long double scale = counted && wall > counted ? static_cast<long double>(wall) / counted : 1.0L;
    for (snapshot::ProgramCost& d : deltas) {
      d.run_cnt = static_cast<uint64_t>(d.run_cnt * scale + 0.5L);
      d.run_time_ns = static_cast<uint64_t>(d.run_time_ns * scale + 0.5L);
    }
  }
  return observer_cost(stats, std::move(why), wall, self, deltas, counted);
}

std::string cost_summary(const ObserverCost& c, const std::string& self, size_t max_programs) {
  std::string s;
  if (c.stats == snapshot::BpfStats::on) {
    s = fmt::format("BPF {}% of a CPU", pct(c.bpf_cpu_pct));
    std::string progs;
    for (size_t i = 0; i < c.programs.size() && i < max_programs; ++i) {
      const ProgramRate& p = c.programs[i];
      progs += fmt::format("{}{} {} ns/run {}/s", progs.empty() ? "" : ", ", p.name,
                           p.ns_per_run ? fmt::format("{:.0f}", *p.ns_per_run) : std::string("-"), rate(p.runs_per_s));
    }
    if (c.programs.size() > max_programs) progs += fmt::format(", {} more", c.programs.size() - max_programs);
    if (c.counted_ns) progs += fmt::format("{}sampled {:.1f} of {:.1f} s", progs.empty() ? "" : "; ",
                                           static_cast<double>(c.counted_ns) / 1e9, c.wall_s);
    if (!progs.empty()) s += " (" + progs + ")";
  } else if (c.stats == snapshot::BpfStats::unknown) {
    s = "BPF unknown (" + c.why + ")";
  } else {
    s = "no BPF (" + c.why + ")";
  }
  return s + fmt::format(", {} {}% CPU", self, pct(c.self_cpu_pct));
}

std::string cost_short(const ObserverCost& c) {
  const std::string bpf = c.stats == snapshot::BpfStats::on        ? fmt::format("{:.1f}%", c.bpf_cpu_pct)
                          : c.stats == snapshot::BpfStats::unknown ? std::string("?")
                                                         : std::string("-");
  return fmt::format("cost: bpf {} cpu, self {:.1f}%", bpf, c.self_cpu_pct);
}

std::string cost_note(const ObserverCost& c) {
  std::string s = std::string(kNotePrefix) + cost_summary(c) + std::string(kDataSep);
  fmt::format_to(std::back_inserter(s), "stats={} wall_ns={} self_cpu_ns={}", to_string(c.stats),
                 c.wall_ns, c.self_cpu_ns);
  if (c.counted_ns) fmt::format_to(std::back_inserter(s), " counted_ns={}", c.counted_ns);
  for (const ProgramRate& p : c.programs)
    fmt::format_to(std::back_inserter(s), " prog={}/{}/{}/{}", p.name, p.runs, p.run_ns, p.misses);
  // Last: the reason is free text, spaces and all.
  return s + " why=" + c.why;
}

bool is_cost_note(std::string_view text) { return text.substr(0, kNotePrefix.size()) == kNotePrefix; }

std::optional<ObserverCost> parse_cost_note(std::string_view text) {
  if (!is_cost_note(text)) return std::nullopt;
  const size_t sep = text.rfind(kDataSep);
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view data = text.substr(sep + kDataSep.size());
  std::optional<snapshot::BpfStats> stats;
  std::optional<uint64_t> wall, self;
  uint64_t counted = 0;
  std::string why;
  std::vector<snapshot::ProgramCost> progs;
  while (!data.empty()) {
    if (data.substr(0, 4) == "why=") {
      why = std::string(data.substr(4));
      break;
    }
    const size_t end = data.find(' ');
    const std::string_view tok = data.substr(0, end);
    data = end == std::string_view::npos ? std::string_view() : data.substr(end + 1);
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = tok.substr(0, eq), value = tok.substr(eq + 1);
    uint64_t n = 0;
    if (key == "stats") {
      if (!(stats = parse_stats(value))) return std::nullopt;
    } else if (key == "wall_ns" || key == "self_cpu_ns") {
      if (!parse_u64(value, n)) return std::nullopt;
      (key == "wall_ns" ? wall : self) = n;
    } else if (key == "counted_ns") {
      if (!parse_u64(value, counted)) return std::nullopt;
    } else if (key == "prog") {
      auto p = parse_program(value);
      if (!p) return std::nullopt;
      progs.push_back(std::move(*p));
    }  // an unknown key is a newer writer's: skipped
  }
  if (!stats || !wall || !self) return std::nullopt;
  return observer_cost(*stats, std::move(why), *wall, *self, progs, counted);
}

}  // namespace platoon::analysis
