#include "bpf/collectors/runtime_usdt.hpp"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "platoon.skel.h"

namespace platoon::collectors {

std::vector<UsdtProbe> usdt_probes(platoon_bpf* s) {
  auto& p = s->progs;
  // Not poll, drain_start or drain_end: a uprobe hit costs a trap, and `drain` carries what
  // the three would (the epoll syscalls give the I/O side). stats first: whether the others
  // book depends on it.
  return {{"stats", p.usdt_stats, UsdtRole::stats},       {"drain", p.usdt_drain, UsdtRole::book},
          {"steal", p.usdt_steal, UsdtRole::book},        {"drain", p.usdt_drain_event, UsdtRole::event},
          {"steal", p.usdt_steal_event, UsdtRole::event}};
}

void UsdtLinkDeleter::operator()(bpf_link* l) const { bpf_link__destroy(l); }

RuntimeProbes attach_runtime_probes(platoon_bpf* skel, pid_t pid, const std::string& exe, bool drain_events) {
  RuntimeProbes r;
  // Attach through /proc/PID/exe: it names the right file even when the target lives in
  // another mount namespace or its binary was replaced on disk.
  const std::string path = "/proc/" + std::to_string(pid) + "/exe";
  // The table is opened (its baseline taken) before the stats probe raises the semaphore, so
  // the counts start exactly when the carriers start keeping them.
  std::string why;
  r.table = RuntimeStatsReader::open(pid, &why);
  int attached = 0;
  int first_err = 0;
  for (const UsdtProbe& u : usdt_probes(skel)) {
    const bool want = u.role == UsdtRole::stats ? r.table != nullptr
                      : u.role == UsdtRole::book ? r.table == nullptr
                                                 : r.table != nullptr && drain_events;
    if (!want) continue;
    bpf_link* link = bpf_program__attach_usdt(u.prog, pid, path.c_str(), "platoon", u.name, nullptr);
    if (!link) {
      const int err = errno;
      if (!first_err) first_err = -err;
      if (u.role == UsdtRole::stats) why = std::string("cannot attach platoon:stats: ") + std::strerror(err), r.table.reset();
      continue;
    }
    r.links.emplace_back(link);
    ++attached;
  }
  const std::string who = (exe.empty() ? path : exe) + " (pid " + std::to_string(pid) + ")";
  if (r.table)
    r.notes.push_back("usdt: drains and steals of " + who + " read from its runtime stats table" +
                      (drain_events ? ", raw drain events from probes" : ""));
  else if (attached)
    r.notes.push_back("usdt: no runtime stats table in " + who + " (" + why + "): drains booked per probe hit");
  if (attached == 0 && (first_err == -ENOENT || first_err == -ESRCH))
    r.notes.push_back("usdt: no platoon probes in " + who);
  else if (attached == 0)
    r.notes.push_back("usdt: cannot attach to " + who + ": " + std::strerror(-first_err));
  else
    r.notes.push_back("usdt: attached " + std::to_string(attached) + " probes to " + who);
  return r;
}

}  // namespace platoon::collectors
