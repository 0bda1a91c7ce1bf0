// What snapshot.hpp declares beyond the plain structs: names of sources and fields, loss sums.
#include "bpf/snapshot/snapshot.hpp"

#include <numeric>

namespace platoon::snapshot {

const char* to_string(Source s) {
  switch (s) {
    case Source::bpf: return "bpf";
    case Source::procfs: return "procfs";
  }
  return "unknown";
}

namespace {
// One name per Field bit, in bit order; the names are what "lacks: ..." prints and what the
// JSON "fields_missing" holds, so they follow the report's vocabulary rather than the enum's.
struct FieldName {
  Field field;
  const char* name;
};
constexpr FieldName kFieldNames[] = {
    {kFieldRunWait, "run_wait"},
    {kFieldSwitches, "switches"},
    {kFieldMigrations, "migrations"},
    {kFieldCpuDist, "cpu_distribution"},
    {kFieldRunqHist, "runq_latency"},
    {kFieldPairs, "preempted_by/woken_by"},
    {kFieldIo, "io"},
    {kFieldDrain, "drain"},
    {kFieldWakeups, "wakeups"},
    {kFieldWaitSplit, "wait split"},
    {kFieldWaitIrq, "irq_wait"},
};
}  // namespace

std::vector<std::string> missing_fields(uint32_t fields) {
  std::vector<std::string> out;
  for (const auto& f : kFieldNames) {
    if ((fields & f.field) == 0) out.emplace_back(f.name);
  }
  return out;
}

uint64_t Snapshot::lost_events() const {
  return std::accumulate(lost_events_per_cpu.begin(), lost_events_per_cpu.end(), uint64_t{0});
}

}  // namespace platoon::snapshot
