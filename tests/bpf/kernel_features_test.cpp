// Older kernels: the programs hold no instruction a pre-5.12 verifier rejects, and each feature
// the kernel may lack is dropped (and named) rather than failing the whole load. Missing features
// are simulated with PLATOON_INJECT_LOAD_FAIL (bpf/collectors/features.hpp); a refusal for want
// of capabilities is real (a child that drops them all).
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "platoon.skel.h"
#include "tests/bpf/fixture.hpp"
#include "tests/bpf/kernel_config.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using namespace platoon::testing;

class KernelFeaturesTest : public BpfTest {
 protected:
  std::unique_ptr<Collector> open_injected(const char* inject, CollectorOptions o = {}) {
    setenv("PLATOON_INJECT_LOAD_FAIL", inject, 1);
    auto c = open(o);
    unsetenv("PLATOON_INJECT_LOAD_FAIL");
    if (c)
      for (const auto& n : c->notes()) std::printf("  note: %s\n", n.c_str());
    return c;
  }
  // An open on this process that `inject` makes fail: whether it opened after all, and the
  // error kind and message it gave.
  struct Refusal {
    bool opened = false;
    OpenError kind = OpenError::none;
    std::string message;
  };
  static Refusal open_refused(const char* inject) {
    setenv("PLATOON_INJECT_LOAD_FAIL", inject, 1);
    CollectorOptions o;
    o.pids = {getpid()};
    Refusal r;
    r.opened = Collector::open(o, &r.kind, &r.message) != nullptr;
    unsetenv("PLATOON_INJECT_LOAD_FAIL");
    return r;
  }
  static bool has_note(const Collector& c, const std::string& text) {
    for (const auto& n : c.notes())
      if (n.find(text) != std::string::npos) return true;
    return false;
  }
};

// BPF_ATOMIC with an op other than a plain add (or, and, xor, fetch, xchg, cmpxchg) needs 5.12;
// a program holding one does not load before that, whether or not the code is reachable.
TEST_F(KernelFeaturesTest, ProgramsUseOnlyAtomicAddsThatEveryKernelAccepts) {
  size_t size = 0;
  const void* elf = platoon_bpf__elf_bytes(&size);
  bpf_object* obj = bpf_object__open_mem(elf, size, nullptr);
  ASSERT_TRUE(obj);
  size_t atomics = 0, progs = 0;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    ++progs;
    const bpf_insn* insn = bpf_program__insns(prog);
    for (size_t i = 0; i < bpf_program__insn_cnt(prog); ++i) {
      const uint8_t code = insn[i].code;
      if (BPF_CLASS(code) != BPF_STX || BPF_MODE(code) != BPF_ATOMIC) continue;
      ++atomics;
      EXPECT_EQ(insn[i].imm, BPF_ADD) << bpf_program__name(prog) << " insn " << i << ": atomic op 0x" << std::hex
                                      << insn[i].imm;
    }
  }
  std::printf("  %zu programs, %zu atomic instructions, all plain adds\n", progs, atomics);
  EXPECT_GT(atomics, 0u);
  bpf_object__close(obj);
}

TEST_F(KernelFeaturesTest, TpBtfFailingToLoadFallsBackToRawTp) {
  auto c = open_injected("tp_btf");
  ASSERT_TRUE(c);
  EXPECT_STREQ(c->attach_mode(), "raw_tp");
  EXPECT_TRUE(has_note(*c, "tp_btf: tp_btf programs failed to load"));
  EXPECT_TRUE(has_note(*c, "using raw_tp"));
}

TEST_F(KernelFeaturesTest, NoProgramSetLoadingIsUnsupportedWithTheReason) {
  const auto [opened, kind, message] = open_refused("tp_btf,raw_tp");
  std::printf("  %s\n", message.c_str());
  EXPECT_FALSE(opened);
  EXPECT_EQ(kind, OpenError::unsupported);
  EXPECT_NE(message.find("do not load on this kernel"), std::string::npos);
  EXPECT_NE(message.find("raw_tp: raw_tp programs failed to load"), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// In a child that drops every capability (root's uid kept): the kernel refuses BPF, and the
// message carries the errno the kernel gives the same child for a one-entry array map, asked
// directly with bpf(2).
TEST_F(KernelFeaturesTest, WithoutCapabilitiesTheRefusalCarriesTheKernelsErrno) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    const bool dropped = syscall(SYS_capset, &hdr, none) == 0;
    std::ifstream status("/proc/self/status");
    std::string line, capeff = "?";
    while (std::getline(status, line))
      if (line.rfind("CapEff:", 0) == 0) capeff = line.substr(line.find_first_not_of(" \t", 7));
    bpf_attr attr{};
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    const long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
    const std::string kernel_says = fd < 0 ? std::strerror(errno) : "created";
    CollectorOptions o;
    o.pids = {getppid()};
    OpenError kind = OpenError::none;
    std::string message;
    const bool opened = Collector::open(o, &kind, &message) != nullptr;
    std::ostringstream out;
    out << dropped << '\n' << capeff << '\n' << kernel_says << '\n' << opened << '\n'
        << (kind == OpenError::permission) << '\n' << message << '\n';
    const std::string text = out.str();
    const bool written = write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  std::istringstream in(text);
  std::string dropped, capeff, kernel_says, opened, permission, message;
  std::getline(in, dropped), std::getline(in, capeff), std::getline(in, kernel_says);
  std::getline(in, opened), std::getline(in, permission), std::getline(in, message);
  std::printf("  CapEff %s, bpf(BPF_MAP_CREATE): %s\n  %s\n", capeff.c_str(), kernel_says.c_str(), message.c_str());
  ASSERT_EQ(dropped, "1");
  ASSERT_EQ(capeff.find_first_not_of('0'), std::string::npos) << "CapEff " << capeff;
  ASSERT_NE(kernel_says, "created");
  EXPECT_EQ(opened, "0");
  EXPECT_EQ(permission, "1");
  EXPECT_NE(message.find(kernel_says), std::string::npos) << message;
}

TEST_F(KernelFeaturesTest, NoBootClockIsUnsupported) {
  const auto [opened, kind, message] = open_refused("boot_clock");
  EXPECT_FALSE(opened);
  EXPECT_EQ(kind, OpenError::unsupported);
  EXPECT_NE(message.find("bpf_ktime_get_boot_ns"), std::string::npos);
}

TEST_F(KernelFeaturesTest, NoRingBufferRecordsAggregatesOnly) {
  CollectorOptions o;
  o.record_events = true;
  auto c = open_injected("ringbuf", o);
  ASSERT_TRUE(c);
  EXPECT_TRUE(has_note(*c, "events: kernel has no BPF ring buffer"));
  Worker w([] {
    for (int i = 0; i < 50; ++i) usleep(500);
  });
  w.wait_parked();
  const snapshot::Snapshot s = c->snapshot();
  const snapshot::ThreadSample* t = find(s, w.tid());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->switches_voluntary, static_cast<uint64_t>(read_voluntary(w.tid())));
  EXPECT_EQ(c->poll_events(0, [](const void*, size_t) {}), 0);
  EXPECT_EQ(lost(s), 0u);
}

// Socket programs a kernel refuses cost requests alone: the rest still loads as tp_btf, and the
// notes say why there are no requests.
TEST_F(KernelFeaturesTest, RefusedRequestProgramsKeepTheRestOnTpBtf) {
  CollectorOptions o;
  o.requests = true;
  auto c = open_injected("requests", o);
  ASSERT_TRUE(c);
  EXPECT_STREQ(c->attach_mode(), "tp_btf");
  EXPECT_EQ(c->fields() & snapshot::kFieldRequests, 0u);
  EXPECT_NE(c->fields() & snapshot::kFieldRunqHist, 0u);
  EXPECT_TRUE(has_note(*c, "requests: the socket programs failed to load"));
  auto plain = open_injected("", o);  // and without the injection they load
  ASSERT_TRUE(plain);
  EXPECT_NE(plain->fields() & snapshot::kFieldRequests, 0u);
  EXPECT_FALSE(has_note(*plain, "requests:"));
}

// A kernel without tcp:tcp_sendmsg_locked: requests still, with writes seen at their end (noted).
TEST_F(KernelFeaturesTest, NoSendStartCountsWritesAtTheirEnd) {
  CollectorOptions o;
  o.requests = true;
  auto c = open_injected("tcp_send_start", o);
  ASSERT_TRUE(c);
  EXPECT_NE(c->fields() & snapshot::kFieldRequests, 0u);
  EXPECT_TRUE(has_note(*c, "requests: a write counts at its end"));
}

TEST_F(KernelFeaturesTest, NoTaskIteratorSkipsTheSeedWalk) {
  auto c = open_injected("task_iter");
  ASSERT_TRUE(c);
  EXPECT_STREQ(c->attach_mode(), "tp_btf");
  EXPECT_TRUE(has_note(*c, "seed: kernel has no task iterator"));
  for (const auto& t : c->snapshot().threads) EXPECT_NE(t.tid, 0u);
}

TEST_F(KernelFeaturesTest, NoUsdtOrEpollDropsThoseFields) {
  auto c = open_injected("usdt,epoll");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->fields() & snapshot::kFieldDrain, 0u);
  EXPECT_EQ(c->fields() & snapshot::kFieldIo, 0u);
  EXPECT_EQ(c->snapshot().fields, c->fields());
  EXPECT_NE(c->fields() & snapshot::kFieldPairs, 0u);
  auto names = snapshot::missing_fields(c->fields());
  std::string lacks;
  for (const auto& n : names) lacks += n + " ";
  std::printf("  lacks: %s\n", lacks.c_str());
  // Those two, and irq_wait only where the kernel's own config says it does not account IRQ
  // time (not what the collector concluded).
  std::set<std::string> want{"drain", "io"};
  const std::optional<bool> irq_time = testing::kernel_config_has("CONFIG_IRQ_TIME_ACCOUNTING");
  ASSERT_TRUE(irq_time.has_value()) << "neither /boot/config-<release> nor /proc/config.gz can be read";
  if (!*irq_time) want.insert("irq_wait");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), want) << lacks;
  EXPECT_EQ(names.size(), want.size()) << lacks;
}

// Before 5.18 sched_switch has no prev_state: the programs read prev's state instead, and
// voluntary/involuntary still equal /proc (the one difference, a signal-cancelled block, does
// not happen here). Both attach modes.
TEST_F(KernelFeaturesTest, NoSwitchStateArgumentStillCountsSwitchesLikeProc) {
  for (const char* inject : {"switch_state_arg", "switch_state_arg,tp_btf"}) {
    auto c = open_injected(inject);
    ASSERT_TRUE(c);
    EXPECT_TRUE(has_note(*c, "no prev_state argument"));
    Worker sleeper([] {
      for (int i = 0; i < 200; ++i) {
        usleep(500);
        spin_until(platoon::tests::boottime_ns() + 200'000);
      }
    });
    sleeper.wait_parked();
    const snapshot::Snapshot s = c->snapshot();
    const snapshot::ThreadSample* t = find(s, sleeper.tid());
    ASSERT_TRUE(t);
    std::printf("  %s (%s): voluntary %llu / proc %lld, involuntary %llu / proc %lld\n", inject, c->attach_mode(),
                (unsigned long long)t->switches_voluntary, read_voluntary(sleeper.tid()),
                (unsigned long long)t->switches_involuntary, read_nonvoluntary(sleeper.tid()));
    EXPECT_EQ(t->switches_voluntary, static_cast<uint64_t>(read_voluntary(sleeper.tid())));
    EXPECT_EQ(t->switches_involuntary, static_cast<uint64_t>(read_nonvoluntary(sleeper.tid())));
    EXPECT_GE(t->switches_voluntary, 200u);
  }
}

}  // namespace
}  // namespace platoon::tests::testing
