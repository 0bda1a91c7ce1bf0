// One live attachment, owned in one place by record, top, doctor --pid and the exporter: the
// `-- CMD` launched held before exec, the source opened (BPF, or procfs when BPF cannot load)
// with the note saying why it fell back, the stop signals, the release of the command once the
// caller has its baseline, noticing targets that ended, and ending the command with platoon.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tui/commands/commands.hpp"
#include "bpf/snapshot/source.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tui/commands/target.hpp"

namespace platoon::cli {

// SIGINT, SIGTERM and SIGHUP set a flag the loops poll, so that they end cleanly (the terminal
// restored by the Screen's destructor, the trace finished) rather than inside a handler. No
// SA_RESTART: the loops' waits return at once with EINTR. SIGPIPE is ignored (a write error).
void install_stop_signals();
bool stop_requested();

class LiveSession {
 public:
  struct Setup {
    bool record_events = false;   // raw events besides the aggregates (record, doctor)
    bool drain_events = false;    // with them, each drain and steal of platoon-runtime targets
    bool stop_signals = true;     // false: the caller's event loop handles them (exporter)
  };
  // Starts `-- CMD` (held before exec) and opens the source for the targets; null with a
  // one-line error. The command runs only once release() is called.
  static std::unique_ptr<LiveSession> open(const LiveOptions& opt, Setup setup, std::string& error);
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;
  ~LiveSession();   // ends the command unless --keep-running (see CommandLifetime)

  snapshot::SnapshotSource& source() { return *source_; }
  const snapshot::SnapshotSource& source() const { return *source_; }
  // Why BPF was not used when it fell back to procfs; empty otherwise.
  const std::string& note() const { return note_; }
  const LiveOptions& options() const { return opt_; }
  // The watched processes: the given pids, or the launched command.
  const std::vector<pid_t>& pids() const { return pids_; }
  // "bpf (tp_btf)", or "procfs" when mode and source agree.
  std::string source_line() const;
  // The header of a recording of this session (record, top's r): the source, the target, the
  // machine, and both clocks read now.
  trace::TraceMeta trace_meta(double interval_s) const;

  // Lets the launched command exec (after the caller took its baseline); true without one.
  bool release(std::string& error);
  // Once the launched command has ended, how ("exited with status 0"); empty before, and
  // always without a command.
  std::string command_status();
  // Given pids (never the command) that are gone since the last call, each reported once.
  std::vector<pid_t> newly_gone();
  // What ended the watch: "command exited with status N", "target exited", "all targets
  // exited"; empty while any target is alive, and always with --comm, --cgroup and --all
  // (new ones may come).
  std::string targets_gone();
  // Ends the command now (SIGTERM to its group, SIGKILL after --kill-after) unless it has
  // exited or --keep-running; the destructor does the same.
  void end_command();

 private:
  explicit LiveSession(const LiveOptions& opt) : opt_(opt) {}
  LiveOptions opt_;
  std::optional<LaunchedCommand> child_;
  std::vector<pid_t> pids_;
  std::unique_ptr<snapshot::SnapshotSource> source_;
  std::string note_;
  std::string command_status_;
  std::set<pid_t> gone_;
};

}  // namespace platoon::cli
