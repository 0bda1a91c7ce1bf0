// detect_runtime (bpf/collectors/runtime_detect.hpp) against real processes: platoon-server from
// the build, a JVM running a single source file, a Go program built here, /bin/sleep, and pids
// that do not exist. The truth each case waits on comes from the kernel (/proc/PID/exe names the
// program, /proc/PID/maps shows libjvm.so), not from the detector. Then its pure pieces on text
// and bytes. Needs no root. java, go, cc and <sys/sdt.h> come from scripts/install-deps.sh
// (openjdk-17-jdk-headless, golang-go, g++, systemtap-sdt-dev): a machine without one is not set
// up, and the case fails saying which package, rather than skipping the runtime it covers.
#include "bpf/collectors/runtime_detect.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "tests/lib/namespaces.hpp"

extern char** environ;

namespace platoon::tests {
namespace {

namespace fs = std::filesystem;
using snapshot::RuntimeKind;
using Clock = std::chrono::steady_clock;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "platoon-detect-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A child process running ARGV (with ENV before this one's environment), its output in LOG; killed and
// reaped however the test ends.
class Child {
 public:
  Child(std::vector<std::string> argv, const fs::path& log, std::vector<std::string> env = {}) {
    std::vector<char*> args, envp;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    // Ours first: glibc's getenv and Go's os.Getenv both take the first of duplicate names.
    for (auto& e : env) envp.push_back(e.data());
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = fork();
    if (pid_ == 0) {
      if (out >= 0) dup2(out, 1), dup2(out, 2);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, 0);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    if (out >= 0) close(out);
    log_ = log;
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  std::string output() const { return slurp(log_); }
  bool alive() {
    if (pid_ <= 0 || reaped_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) reaped_ = true, status_ = status;
    return !reaped_;
  }
  // The exit status once it has ended within TIMEOUT; nullopt while it still runs.
  std::optional<int> wait_exit(std::chrono::seconds timeout) {
    const auto until = Clock::now() + timeout;
    while (alive() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!reaped_) return std::nullopt;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  fs::path log_;
};

// Polls COND every 20 ms until it holds or TIMEOUT passes, or the child ends.
bool wait_for(Child& c, std::chrono::seconds timeout, const std::function<bool()>& cond) {
  const auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    if (cond()) return true;
    if (!c.alive()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

// The kernel's word that PID now runs FILE: /proc/PID/exe is that inode.
bool runs(pid_t pid, const fs::path& file) {
  struct stat a{}, b{};
  return ::stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &a) == 0 && ::stat(file.c_str(), &b) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The kernel's word that PID has a libjvm.so mapped, read here without the detector's parser.
bool maps_show_libjvm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line))
    if (line.size() > 10 && line.compare(line.size() - 10, 10, "/libjvm.so") == 0) return true;
  return false;
}

fs::path bin_dir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

bool executable(const fs::path& p) { return access(p.c_str(), X_OK) == 0; }

ElfTraits traits_of_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ElfTraits t = elf_traits(fd);
  close(fd);
  return t;
}

// Waits until the kernel says C runs FILE, then holds the detector to KIND and FILE's ELF traits
// to what that program carries (platoon's probes, Go's build info). The last step of a case.
void expect_detected(Child& c, const fs::path& file, RuntimeKind kind, bool platoon_probes, bool go) {
  ASSERT_TRUE(wait_for(c, std::chrono::seconds(20), [&] { return runs(c.pid(), file); })) << c.output();
  EXPECT_EQ(detect_runtime(c.pid()), kind) << to_string(detect_runtime(c.pid()));
  EXPECT_TRUE(c.alive()) << "it exited: " << c.output();
  const ElfTraits t = traits_of_file(file);
  EXPECT_TRUE(t.elf);
  EXPECT_EQ(t.platoon_probes, platoon_probes);
  EXPECT_EQ(t.go, go);
}

// ---- against live processes ----

TEST(RuntimeDetect, PlatoonServerIsPlatoon) {
  const fs::path server = bin_dir() / "platoon-server";
  ASSERT_TRUE(executable(server)) << server << " is built with bpf_tests";
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  // The backend need not answer: the server listens without it, and only its binary matters.
  Child c({server.string(), "--port", "0", "--backend", "127.0.0.1:1", "--carriers", "1"}, tmp.path() / "log");
  expect_detected(c, server, RuntimeKind::platoon, /*platoon_probes=*/true, /*go=*/false);
}

TEST(RuntimeDetect, JavaIsJvm) {
  const fs::path java = "/usr/bin/java";
  ASSERT_TRUE(executable(java)) << java << " is missing: scripts/install-deps.sh installs openjdk-17-jdk-headless";
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path src = tmp.path() / "Idle.java";
  std::ofstream(src) << "public class Idle {\n"
                        "  public static void main(String[] args) throws Exception {\n"
                        "    while (true) Thread.sleep(1000);\n"
                        "  }\n"
                        "}\n";
  Child c({java.string(), "-Xmx64m", src.string()}, tmp.path() / "log");
  ASSERT_TRUE(wait_for(c, std::chrono::seconds(60), [&] { return maps_show_libjvm(c.pid()); }))
      << "no libjvm.so in the maps of java: " << c.output();
  EXPECT_EQ(detect_runtime(c.pid()), RuntimeKind::jvm) << to_string(detect_runtime(c.pid()));
  EXPECT_TRUE(c.alive()) << c.output();
}

TEST(RuntimeDetect, GoProgramIsGo) {
  const fs::path go = "/usr/bin/go";
  ASSERT_TRUE(executable(go)) << go << " is missing: scripts/install-deps.sh installs golang-go";
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path dir = tmp.path();
  std::ofstream(dir / "main.go") << "package main\n\n"
                                    "import \"time\"\n\n"
                                    "func main() {\n"
                                    "\tfor {\n"
                                    "\t\ttime.Sleep(time.Second)\n"
                                    "\t}\n"
                                    "}\n";
  const fs::path prog = dir / "idle";
  {
    // Standard library only, so offline; caches in the temp dir, never the user's.
    Child build({go.string(), "build", "-o", prog.string(), (dir / "main.go").string()}, dir / "build.log",
                {"GOCACHE=" + (dir / "cache").string(), "GOPATH=" + (dir / "gopath").string(),
                 "HOME=" + dir.string(), "GOPROXY=off", "GOFLAGS=", "GO111MODULE=auto", "CGO_ENABLED=0"});
    const std::optional<int> status = build.wait_exit(std::chrono::seconds(300));
    ASSERT_TRUE(status) << "go build did not finish: " << build.output();
    ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "go build failed: " << build.output();
  }
  Child c({prog.string()}, dir / "log");
  expect_detected(c, prog, RuntimeKind::go, /*platoon_probes=*/false, /*go=*/true);
}

TEST(RuntimeDetect, SleepIsOther) {
  const fs::path sleep = "/bin/sleep";
  ASSERT_TRUE(executable(sleep));
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  Child c({sleep.string(), "1000"}, tmp.path() / "log");
  expect_detected(c, sleep, RuntimeKind::other, /*platoon_probes=*/false, /*go=*/false);
}

TEST(RuntimeDetect, NoSuchProcessIsOther) {
  // pid_max itself is never a pid (pids are below it), whatever the kernel is configured to.
  long pid_max = 0;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  ASSERT_GT(pid_max, 0);
  EXPECT_EQ(detect_runtime(static_cast<pid_t>(pid_max)), RuntimeKind::other);
  EXPECT_EQ(detect_runtime(0), RuntimeKind::other);
  EXPECT_EQ(detect_runtime(-1), RuntimeKind::other);
  // A child that has been reaped: its pid is free until the kernel wraps around to it.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  if (kill(gone, 0) != 0 && errno == ESRCH) {
    EXPECT_EQ(detect_runtime(gone), RuntimeKind::other);
  }
}

// The server's binary unlinked while it runs (an upgrade in place): /proc/PID/exe still reads it.
TEST(RuntimeDetect, DeletedExecutableIsStillPlatoon) {
  const fs::path server = bin_dir() / "platoon-server";
  ASSERT_TRUE(executable(server));
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path copy = tmp.path() / "platoon-server";
  ASSERT_TRUE(fs::copy_file(server, copy));
  Child c({copy.string(), "--port", "0", "--backend", "127.0.0.1:1", "--carriers", "1"}, tmp.path() / "log");
  ASSERT_TRUE(wait_for(c, std::chrono::seconds(20), [&] { return runs(c.pid(), copy); })) << c.output();
  ASSERT_TRUE(fs::remove(copy));
  const std::string exe = fs::read_symlink("/proc/" + std::to_string(c.pid()) + "/exe").string();
  ASSERT_TRUE(exe.ends_with(" (deleted)")) << exe;  // the kernel's word that it is gone
  EXPECT_EQ(detect_runtime(c.pid()), RuntimeKind::platoon) << to_string(detect_runtime(c.pid()));
  EXPECT_TRUE(c.alive()) << c.output();
}

// The runtime as a shared object: a library with one stapsdt probe of PROVIDER, built here and
// preloaded into /bin/sleep (whose own binary has no such probe).
void preload_probe_library(const std::string& provider, RuntimeKind want) {
  const fs::path cc = "/usr/bin/cc";
  ASSERT_TRUE(executable(cc)) << cc << " is missing: scripts/install-deps.sh installs g++";
  ASSERT_TRUE(access("/usr/include/x86_64-linux-gnu/sys/sdt.h", R_OK) == 0 || access("/usr/include/sys/sdt.h", R_OK) == 0)
      << "<sys/sdt.h> is missing: scripts/install-deps.sh installs systemtap-sdt-dev";
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path src = tmp.path() / "probe.c", lib = tmp.path() / "libprobe.so";
  std::ofstream(src) << "#include <sys/sdt.h>\n"
                        "void detect_test_probe(int x) { STAP_PROBE1(" << provider << ", detect_test, x); }\n";
  {
    Child build({cc.string(), "-shared", "-fPIC", "-O1", "-o", lib.string(), src.string()}, tmp.path() / "build.log");
    const std::optional<int> status = build.wait_exit(std::chrono::seconds(120));
    ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << build.output();
  }
  const fs::path sleep = "/bin/sleep";
  Child c({sleep.string(), "1000"}, tmp.path() / "log", {"LD_PRELOAD=" + lib.string()});
  struct stat so{};
  ASSERT_EQ(::stat(lib.c_str(), &so), 0);
  // The kernel's word that the library is mapped: a maps line of its inode.
  auto mapped = [&] {
    std::ifstream in("/proc/" + std::to_string(c.pid()) + "/maps");
    std::string line;
    while (std::getline(in, line))
      if (line.find(" " + std::to_string(so.st_ino) + " ") != std::string::npos && line.ends_with(lib.string()))
        return true;
    return false;
  };
  ASSERT_TRUE(wait_for(c, std::chrono::seconds(20), [&] { return runs(c.pid(), sleep) && mapped(); })) << c.output();
  EXPECT_EQ(detect_runtime(c.pid()), want) << to_string(detect_runtime(c.pid()));
  EXPECT_TRUE(c.alive()) << c.output();
}

TEST(RuntimeDetect, PlatoonProbesInASharedObjectArePlatoon) { preload_probe_library("platoon", RuntimeKind::platoon); }
TEST(RuntimeDetect, OtherProvidersProbesAreOther) { preload_probe_library("notplatoon", RuntimeKind::other); }

// ---- the pure pieces ----

TEST(RuntimeDetectParse, LibjvmInMaps) {
  const std::string anon = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n";
  const std::string libc = "7f0000001000-7f0000002000 r-xp 00000000 fe:00 11 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
  const std::string jvm = "7f0000002000-7f0000003000 r-xp 00251000 fe:00 12 /opt/jdk-21/lib/server/libjvm.so\n";
  const std::string deleted = "7f0000002000-7f0000003000 r--p 00000000 fe:00 13 /opt/jdk/lib/server/libjvm.so (deleted)\n";
  EXPECT_FALSE(maps_map_libjvm(""));
  EXPECT_FALSE(maps_map_libjvm(anon + libc));
  EXPECT_TRUE(maps_map_libjvm(anon + libc + jvm));
  EXPECT_TRUE(maps_map_libjvm(deleted));
  EXPECT_TRUE(maps_map_libjvm(jvm.substr(0, jvm.size() - 1)));  // a last line without its newline
  // Names that only look like it.
  EXPECT_FALSE(maps_map_libjvm("7f0000002000-7f0000003000 r--p 00000000 fe:00 14 /tmp/libjvm.so.bak\n"));
  EXPECT_FALSE(maps_map_libjvm("7f0000002000-7f0000003000 r--p 00000000 fe:00 15 /tmp/notlibjvm.so\n"));
  EXPECT_FALSE(maps_map_libjvm("garbage libjvm.so\n"));
}

TEST(RuntimeDetectParse, MappedObjectsOfSelfMatchTheFiles) {
  const std::string maps = slurp("/proc/self/maps");
  const std::vector<MappedObject> objs = mapped_objects(maps);
  ASSERT_FALSE(objs.empty());
  struct stat exe{};
  ASSERT_EQ(::stat("/proc/self/exe", &exe), 0);
  bool saw_exe = false;
  for (const MappedObject& o : objs) {
    EXPECT_LT(o.start, o.end);
    struct stat st{};
    // Each is the file the kernel says it maps (its path names the same inode).
    if (::stat(o.path.c_str(), &st) == 0) {
      EXPECT_EQ(st.st_ino, o.ino) << o.path;
      EXPECT_EQ(st.st_dev, o.dev) << o.path;
    }
    saw_exe |= o.dev == exe.st_dev && o.ino == exe.st_ino;
    for (const MappedObject& p : objs)
      if (&p != &o) {
        EXPECT_FALSE(p.dev == o.dev && p.ino == o.ino) << "listed twice: " << o.path;
      }
  }
  EXPECT_TRUE(saw_exe);
}

TEST(RuntimeDetectParse, StapsdtProvider) {
  auto desc = [](size_t addr_bytes, const std::string& strings) {
    std::vector<unsigned char> d(addr_bytes, 0xab);
    d.insert(d.end(), strings.begin(), strings.end());
    return d;
  };
  const std::string probe("platoon\0drain\0-8@%rax\0", 22);
  EXPECT_EQ(stapsdt_provider(desc(24, probe), true), "platoon");
  EXPECT_EQ(stapsdt_provider(desc(12, probe), false), "platoon");
  EXPECT_EQ(stapsdt_provider(desc(24, std::string("libstdcxx\0throw\0\0", 17)), true), "libstdcxx");
  EXPECT_EQ(stapsdt_provider(desc(24, "platoon"), true), "");  // no terminator
  EXPECT_EQ(stapsdt_provider(desc(20, probe.substr(0, 4)), true), "");  // shorter than its addresses
  EXPECT_EQ(stapsdt_provider({}, true), "");
}

TEST(RuntimeDetectParse, NotElf) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  std::ofstream(tmp.path() / "text") << "not an ELF file\n";
  const ElfTraits t = traits_of_file(tmp.path() / "text");
  EXPECT_FALSE(t.elf);
  EXPECT_FALSE(t.platoon_probes);
  EXPECT_FALSE(t.go);
  EXPECT_FALSE(elf_traits(-1).elf);
}

}  // namespace
}  // namespace platoon::tests
