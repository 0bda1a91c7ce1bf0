#include "bpf/collectors/sources.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "bpf/collectors/bpf_cost_sampler.hpp"
#include "bpf/collectors/collector.hpp"
#include "bpf/collectors/procfs_sampler.hpp"

namespace platoon::collectors {
namespace {

std::vector<snapshot::ProgramCost> program_costs(const Collector& c) {
  std::vector<snapshot::ProgramCost> out;
  for (const auto& p : c.program_stats()) out.push_back({p.name, p.run_cnt, p.run_time_ns, p.recursion_misses});
  return out;
}

class BpfSource final : public snapshot::SnapshotSource {
 public:
  BpfSource(std::unique_ptr<Collector> c, bool events, BpfStatsMode stats)
      : c_(std::move(c)), events_(events), cost_(stats, [c = c_.get()] { return program_costs(*c); }) {}
  // rescan --comm, adopt forked children (their runtime probes), age idle pairs.
  void refresh() override { c_->refresh(); }
  snapshot::Snapshot snapshot() override { return c_->snapshot(); }
  int events(int timeout_ms, const EventSink& sink) override {
    const int n = c_->poll_events(timeout_ms, sink);
    if (n == 0 && !events_) std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return n;
  }
  snapshot::Source source() const override { return snapshot::Source::bpf; }
  std::string attach_mode() const override { return c_->attach_mode(); }
  std::vector<std::string> notes() const override { return c_->notes(); }
  std::vector<std::string> cost_notes() const override {
    std::vector<std::string> out;
    for (const auto& p : cost_.reading().programs) {   // what the kernel counted: ns/run is exact
      if (p.run_cnt == 0 || p.run_time_ns == 0) continue;
      char line[160];
      std::snprintf(line, sizeof line, "bpf cost: %s %.1f ns/run over %llu runs", p.name.c_str(),
                    static_cast<double>(p.run_time_ns) / static_cast<double>(p.run_cnt),
                    static_cast<unsigned long long>(p.run_cnt));
      out.emplace_back(line);
    }
    return out;
  }
  snapshot::CostReading cost() const override { return cost_.reading(); }

 private:
  std::unique_ptr<Collector> c_;
  bool events_;   // without a ring buffer the poll returns at once: wait out the timeout
  BpfCostSampler cost_;   // after c_: its thread reads c_'s programs until it stops
};

class ProcfsSource final : public snapshot::SnapshotSource {
 public:
  ProcfsSource(ProcfsSampler s, std::string reason) : s_(std::move(s)), reason_(std::move(reason)) {}
  snapshot::Snapshot snapshot() override { return s_.sample(); }
  int events(int timeout_ms, const EventSink&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return 0;
  }
  snapshot::Source source() const override { return snapshot::Source::procfs; }
  std::string attach_mode() const override { return "procfs"; }
  snapshot::CostReading cost() const override { return {snapshot::BpfStats::none, "source procfs runs no BPF programs", {}}; }
  std::vector<std::string> notes() const override {
    std::string lacks;
    for (const auto& f : snapshot::missing_fields(snapshot::kFieldsProcfs)) lacks += (lacks.empty() ? "" : ", ") + f;
    std::vector<std::string> out{"source: procfs (lacks: " + lacks + ")"};
    if (!reason_.empty()) out.push_back(reason_);
    return out;
  }

 private:
  ProcfsSampler s_;
  std::string reason_;   // why BPF was not used, when it was tried
};

}  // namespace

std::unique_ptr<snapshot::SnapshotSource> open_procfs_source(const SourceOptions& opt, std::string& error,
                                                          std::string reason) {
  ProcfsTarget t;
  // A --cgroup's members are re-read every sample: none is watched for good.
  if (opt.cgroup_dir.empty())
    for (pid_t p : opt.pids) t.pids.push_back(static_cast<uint32_t>(p));
  t.comm = opt.comm;
  t.follow_forks = opt.follow_forks;
  t.all = opt.all;
  t.cgroup_dir = opt.cgroup_dir;
  auto s = ProcfsSampler::open(t, &error);
  if (!s) return nullptr;
  return std::make_unique<ProcfsSource>(std::move(*s), std::move(reason));
}

std::unique_ptr<snapshot::SnapshotSource> open_source(const SourceOptions& opt, std::string& error, std::string& note) {
  if (opt.procfs) return open_procfs_source(opt, error);
  OpenError kind = OpenError::none;
  std::string message;
  if (auto c = Collector::open(opt, &kind, &message))
    return std::make_unique<BpfSource>(std::move(c), opt.record_events, opt.bpf_stats);
  // Without BPF privileges or BTF the same tables come from /proc, with fewer fields; anything
  // else is a real failure and is reported as such.
  // The permission message carries the kernel's errno ("... (loading the programs: Operation not
  // permitted): run as root, ..."): the note and the recording keep it, without the advice.
  if (kind == OpenError::permission) {
    const std::string why = message.substr(0, message.rfind(": run as root"));
    note = why + "; run as root for every table; sampling /proc instead (source: procfs)";
    return open_procfs_source(opt, error, "bpf: " + why);
  }
  if (kind == OpenError::no_btf) {
    note = message.substr(0, message.find(':')) + "; sampling /proc instead (source: procfs)";
    return open_procfs_source(opt, error);
  }
  // A kernel too old (or too locked down) for the programs: the message is libbpf's reason.
  if (kind == OpenError::unsupported) {
    note = message + "; sampling /proc instead (source: procfs)";
    return open_procfs_source(opt, error, "bpf: " + message);
  }
  error = message;
  return nullptr;
}

}  // namespace platoon::collectors
