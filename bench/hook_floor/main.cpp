// hook_floor: attaches bench/hook_floor/hook_floor.bpf.c's do-nothing programs (the scheduler
// tracepoints and epoll exits platoon's aggregates hook) and holds them until SIGINT or SIGTERM.
// What a traced server pays under it is the price of the hooks themselves, which no program body
// can undercut; scripts/bench-observer-cpu.sh runs it as the `floor` condition.
//
// usage: hook_floor [--sched-only]   (prints "attached" once every program is in place)
//   --sched-only: the scheduler tracepoints without the epoll exits, so that the difference
//   prices the epoll hooks (which also put every syscall on the machine on the traced path).
#include <bpf/libbpf.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "hook_floor.skel.h"
#include "server/common/process.hpp"

namespace {

struct SkelDeleter {
  void operator()(hook_floor_bpf* s) const { hook_floor_bpf__destroy(s); }
};

}  // namespace

int main(int argc, char** argv) {
  const bool sched_only = argc == 2 && std::strcmp(argv[1], "--sched-only") == 0;
  if (argc > 2 || (argc == 2 && !sched_only))
    return std::fprintf(stderr, "usage: hook_floor [--sched-only]\n"), 2;
  // Blocked before anything is attached, so that a signal at any point reaches sigwait below
  // and the skeleton's destructor detaches everything.
  const sigset_t stop = platoon::process::block_stop_signals();
  std::unique_ptr<hook_floor_bpf, SkelDeleter> skel(hook_floor_bpf__open());
  if (skel && sched_only)
    for (bpf_program* p : {skel->progs.floor_epoll_wait, skel->progs.floor_epoll_pwait, skel->progs.floor_epoll_pwait2})
      bpf_program__set_autoload(p, false);
  if (skel && hook_floor_bpf__load(skel.get()) != 0) skel.reset();
  if (!skel) return std::fprintf(stderr, "hook_floor: cannot load the programs (root and BTF needed)\n"), 1;
  if (const int err = hook_floor_bpf__attach(skel.get()); err != 0)
    return std::fprintf(stderr, "hook_floor: cannot attach: %d (is tracefs mounted?)\n", err), 1;
  std::printf("attached\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
