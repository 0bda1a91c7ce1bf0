// hook_floor: attaches bench/hook_floor/hook_floor.bpf.c's do-nothing programs (the scheduler
// tracepoints and epoll exits platoon's aggregates hook) and holds them until SIGINT or SIGTERM.
// What a traced server pays under it is the price of the hooks themselves, which no program body
// can undercut; scripts/bench-observer-cpu.sh runs it as the `floor` condition.
//
// usage: hook_floor [--sched-only | --requests-only]   (prints "attached" once every program is in place)
//   --sched-only: the scheduler tracepoints without the epoll exits, so that the difference
//   prices the epoll hooks (which also put every syscall on the machine on the traced path).
//   --requests-only: only the socket tracepoints the request programs use, whose ns per run
//   is the floor those programs are held to (scripts/bench-request-cost.sh).
#include <bpf/libbpf.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "hook_floor.skel.h"
#include "server/common/process.hpp"

namespace {

struct SkelDeleter {
  void operator()(hook_floor_bpf* s) const { hook_floor_bpf__destroy(s); }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && mode != "--sched-only" && mode != "--requests-only"))
    return std::fprintf(stderr, "usage: hook_floor [--sched-only | --requests-only]\n"), 2;
  // Blocked before anything is attached, so that a signal at any point reaches sigwait below
  // and the skeleton's destructor detaches everything.
  const sigset_t stop = platoon::process::block_stop_signals();
  std::unique_ptr<hook_floor_bpf, SkelDeleter> skel(hook_floor_bpf__open());
  if (skel) {
    auto& p = skel->progs;
    const bool socket_only = mode == "--requests-only";
    for (bpf_program* x : {p.floor_switch, p.floor_waking, p.floor_wakeup, p.floor_migrate})
      bpf_program__set_autoload(x, !socket_only);
    for (bpf_program* x : {p.floor_epoll_wait, p.floor_epoll_pwait, p.floor_epoll_pwait2})
      bpf_program__set_autoload(x, mode.empty());
    for (bpf_program* x : {p.floor_data_ready, p.floor_recv, p.floor_send_start, p.floor_sock_state})
      bpf_program__set_autoload(x, socket_only);
  }
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
