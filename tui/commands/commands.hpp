// The subcommands of `platoon`, one file each under tui/commands/. Each file registers its own
// subcommand (add_<cmd>: its options, then what runs it), returns the process's exit status and
// prints its own one-line errors ("platoon <cmd>: ...") to stderr. main.cpp lists them.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bpf/collectors/bpf_cost_sampler.hpp"
#include "bpf/snapshot/snapshot.hpp"
#include "bpf/snapshot/source.hpp"
#include "tui/commands/target.hpp"

namespace CLI { class App; }

namespace platoon::cli {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// "platoon CMD: MSG" on stderr; returns kExitUsage. cmd empty: "platoon: MSG".
int usage_error(const std::string& cmd, const std::string& msg);
// The same line for a command that was used rightly and could not finish; returns kExitFailure.
int command_failure(const std::string& cmd, const std::string& msg);

// What runs a subcommand once the line is parsed; `command` is what followed "--".
using CommandRun = std::function<int(const std::vector<std::string>& command)>;

// One row of main's table: `add_options` adds the options to the subcommand CLI11 made from
// name and description, keeping their values where the returned CommandRun reads them.
struct CommandSpec {
  const char* name;
  const char* description;
  CommandRun (*add_options)(CLI::App& sub);
  bool takes_command;   // accepts "-- CMD" (the live commands)
};
CommandRun add_record(CLI::App& sub);
CommandRun add_top(CLI::App& sub);
CommandRun add_report(CLI::App& sub);
CommandRun add_export(CLI::App& sub);
CommandRun add_doctor(CLI::App& sub);
CommandRun add_exporter(CLI::App& sub);

// How a live source is chosen and set up; shared by record, top, doctor --pid and exporter.
struct LiveOptions {
  TargetSpec target;
  bool procfs = false;        // sample /proc instead of loading BPF
  bool raw_tp = false;        // force the raw_tp attach (tests and old kernels)
  bool verbose = false;       // libbpf's own messages
  bool usdt = true;           // attach the runtime's USDT probes when the target has them
  size_t ringbuf_mb = 16;
  // Follow processes the targets fork (in the kernel, like perf's inherit). Unset: on for
  // -- CMD, off for --pid and --comm; --follow-forks / --no-follow-forks set it.
  std::optional<bool> follow_forks;
  bool follows_forks() const { return follow_forks.value_or(!target.command.empty()); }
  // -- CMD: when platoon ends for any reason but the command's own exit, the command's
  // process group gets SIGTERM, then SIGKILL after kill_after_s, unless keep_running.
  double kill_after_s = 2.0;
  bool keep_running = false;
  // Map sizes and pair aging (0: the collector's defaults, bpf/collectors/collector.hpp): for machines
  // with more threads than the defaults, and for tests that fill the maps on purpose.
  uint32_t threads_max = 0;
  uint32_t pairs_max = 0;
  double pair_idle_s = 0;
  // snapshot::Field bits the command shows (top: its columns, from the metric catalog); the
  // collector loads no program for the rest.
  uint32_t fields = snapshot::kFieldsBpf;
  // How the kernel counts the run time of platoon's programs, so that the source's cost() says
  // what they cost: sampled unless --no-bpf-stats or --bpf-stats-always (doctor: off).
  collectors::BpfStatsMode bpf_stats = collectors::BpfStatsMode::sampled;
};

struct RecordOptions {
  LiveOptions live;
  double duration_s = 0;      // 0: until Ctrl-C (or the command ends)
  double interval_s = 1.0;    // one snapshot chunk per interval
  std::string output;
  bool events = true;         // raw scheduler events besides the aggregates
  bool drain_events = false;  // and raw drain/steal events of platoon-runtime targets (a uprobe trap
                              // per drain; their aggregates come from the runtime's table anyway)
  bool quiet = false;
};
int run_record(const RecordOptions& opt);

struct ReportOptions {
  std::string file;
  std::string vs;
  std::string format = "text";  // text, json or html
  std::string output;           // empty: standard output
};
int run_report(const ReportOptions& opt);

struct ExportOptions {
  std::string file;
  std::string format;         // perfetto, chrome, csv or requests-csv (export.cpp's kFormats)
  std::string output;
};
int run_export(const ExportOptions& opt);

// platoon doctor: findings from a trace file, or from a live target watched for duration_s.
struct DoctorOptions {
  std::string file;           // a trace file; empty: live (live.target is set)
  LiveOptions live;
  double duration_s = 5.0;    // live: how long to watch
  std::string vs;             // a second trace: which run is healthier and why
  std::string format = "text";
};
int run_doctor(const DoctorOptions& opt);

// platoon exporter: Prometheus exposition of per-thread scheduling metrics over HTTP.
struct ExporterOptions {
  LiveOptions live;
  std::string listen = "127.0.0.1:9464";   // HOST:PORT or :PORT
  size_t max_threads = 512;   // series bound: at most this many threads are exported (busiest first)
  std::string web_config;     // exporter-toolkit web configuration file (TLS, basic auth, headers)
  std::string user = "nobody";  // who to become once set up (started as root); "root": stay root
};
int run_exporter(const ExporterOptions& opt);

struct TopOptions {
  LiveOptions live;
  double interval_s = 1.0;
  bool batch = false;         // plain-text table every interval (also when stdout is not a tty)
  long iterations = 0;        // --batch: stop after N intervals; 0 = until Ctrl-C or the target ends
  std::string replay;         // --replay FILE instead of a live target
  // --columns: the catalog keys of the metric columns on screen (TID and NAME always are);
  // empty: the default set. A live top collects only what they need (LiveOptions::fields).
  std::vector<std::string> columns;
};
int run_top(const TopOptions& opt);

// "10", "10s", "250ms", "1.5m" → seconds; false on anything else.
bool parse_seconds(const std::string& text, double& out);

}  // namespace platoon::cli
