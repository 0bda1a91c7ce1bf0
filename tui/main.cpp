// platoon: the command users run. Subcommands live in tui/commands/; this file only parses the
// command line (CLI11) and dispatches.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "tui/commands/commands.hpp"
#include "tui/version.hpp"

namespace {
using namespace platoon::cli;

int usage_error(const std::string& cmd, const std::string& msg) {
  std::fprintf(stderr, "platoon%s%s: %s\n", cmd.empty() ? "" : " ", cmd.c_str(), msg.c_str());
  return kExitUsage;
}

// Target options shared by the live subcommands.
struct TargetFlags {
  std::string pids, comm, kill_after, pair_idle;
  uint32_t threads_max = 0, pairs_max = 0;
  bool follow = false, no_follow = false, keep_running = false;
  void add_to(CLI::App* sub) {
    sub->add_option("-p,--pid", pids, "process id(s) to watch, comma separated");
    sub->add_option("-c,--comm", comm, "watch every process with this name, also ones started later");
    sub->add_flag("--follow-forks", follow, "also watch processes the targets fork (default for -- CMD)");
    sub->add_flag("--no-follow-forks", no_follow, "watch only the targets themselves");
    sub->add_option("--kill-after", kill_after,
                    "-- CMD: when platoon stops first, SIGTERM the command's process group, SIGKILL after this (default 2s)");
    sub->add_flag("--keep-running", keep_running, "-- CMD: leave the command running when platoon stops");
    sub->add_option("--threads-max", threads_max, "BPF thread map entries (default 16384)")->group("Maps");
    sub->add_option("--pairs-max", pairs_max, "BPF preemptor/waker pair map entries (default 16384)")->group("Maps");
    sub->add_option("--pair-idle", pair_idle, "age a pair out of the kernel map after this long unchanged (default 10s)")
        ->group("Maps");
  }
  bool resolve(const std::vector<std::string>& command, LiveOptions& live, std::string& error) const {
    if (!pids.empty() && !parse_pid_list(pids, live.target.pids, error)) return false;
    live.target.comm = comm;
    live.target.command = command;
    if (follow && no_follow) {
      error = "give only one of --follow-forks and --no-follow-forks";
      return false;
    }
    if (follow || no_follow) live.follow_forks = follow;
    if (!kill_after.empty() && (!parse_seconds(kill_after, live.kill_after_s) || live.kill_after_s < 0 ||
                                live.kill_after_s > 3600)) {
      error = "bad --kill-after '" + kill_after + "': give 0 to 3600 seconds (2, 500ms, 1m)";
      return false;
    }
    if ((keep_running || !kill_after.empty()) && command.empty()) {
      error = std::string(keep_running ? "--keep-running" : "--kill-after") + " applies only to -- CMD";
      return false;
    }
    if (keep_running && !kill_after.empty()) {
      error = "give only one of --keep-running and --kill-after";
      return false;
    }
    live.keep_running = keep_running;
    if ((threads_max && (threads_max < 8 || threads_max > (1u << 22))) ||
        (pairs_max && (pairs_max < 8 || pairs_max > (1u << 22)))) {
      error = "--threads-max and --pairs-max must be 8..4194304";
      return false;
    }
    live.threads_max = threads_max;
    live.pairs_max = pairs_max;
    if (!pair_idle.empty() && (!parse_seconds(pair_idle, live.pair_idle_s) || live.pair_idle_s <= 0)) {
      error = "bad --pair-idle '" + pair_idle + "': give a positive time (10, 500ms, 1m)";
      return false;
    }
    return validate_target(live.target, error);
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the command to launch and watch.
  std::vector<std::string> command;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      for (int j = i + 1; j < argc; ++j) command.emplace_back(argv[j]);
      break;
    }
    args.push_back(argv[i]);
  }

  CLI::App app{"platoon: how the Linux scheduler treats the threads of event-loop and fiber servers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("platoon ") + platoon::kVersion);

  RecordOptions rec;
  TargetFlags rec_target;
  std::string rec_duration, rec_interval = "1";
  bool rec_no_events = false, rec_no_usdt = false;
  CLI::App* record = app.add_subcommand("record", "record scheduler aggregates and events of a process to a trace file");
  rec_target.add_to(record);
  record->add_option("-d,--duration", rec_duration, "stop after this long (10, 10s, 500ms, 2m); default: until Ctrl-C");
  record->add_option("-i,--interval", rec_interval, "one aggregate snapshot per interval")->capture_default_str();
  record->add_option("-o,--output", rec.output, "trace file to write (mode 0600)")->required();
  record->add_flag("--procfs", rec.live.procfs, "sample /proc instead of loading BPF (fewer fields)");
  record->add_flag("--no-events", rec_no_events, "aggregates only, no raw scheduler events");
  record->add_option("--ringbuf-mb", rec.live.ringbuf_mb, "ring buffer size for raw events")->capture_default_str();
  record->add_flag("--no-usdt", rec_no_usdt, "do not attach the runtime's USDT probes (platoon-server targets)");
  record->add_flag("--raw-tp", rec.live.raw_tp, "attach with raw_tp even if tp_btf works");
  record->add_flag("-q,--quiet", rec.quiet, "no progress lines");
  record->add_flag("-v,--verbose", rec.live.verbose, "show libbpf's messages");
  record->footer("Examples:\n  platoon record --pid 1234 --duration 10 -o run.trace\n"
                 "  platoon record --comm nginx -o nginx.trace\n"
                 "  platoon record -o server.trace -- build/bin/platoon-server --port 8080 --backend 127.0.0.1:9090");

  TopOptions top_opt;
  TargetFlags top_target;
  std::string top_interval = "1";
  bool top_no_usdt = false;
  CLI::App* top = app.add_subcommand("top", "live per-thread scheduling dashboard of a process (ncurses)");
  top_target.add_to(top);
  top->add_option("-i,--interval", top_interval, "refresh interval (0.25 to 3600 s; + and - change it live)")->capture_default_str();
  top->add_flag("-b,--batch", top_opt.batch, "print the table every interval as plain text (default when stdout is not a terminal)");
  top->add_option("-n,--iterations", top_opt.iterations, "with --batch: stop after N intervals");
  top->add_option("--replay", top_opt.replay, "play a trace file written by platoon record (or top's r key)");
  top->add_flag("--procfs", top_opt.live.procfs, "sample /proc instead of loading BPF (fewer fields)");
  top->add_flag("--no-usdt", top_no_usdt, "do not attach the runtime's USDT probes");
  top->add_flag("--raw-tp", top_opt.live.raw_tp, "attach with raw_tp even if tp_btf works");
  top->add_flag("-v,--verbose", top_opt.live.verbose, "show libbpf's messages");
  top->footer("Examples:\n  platoon top --pid 1234\n  platoon top --comm platoon-server --batch --iterations 5\n"
              "  platoon top -- build/bin/platoon-server --port 8080 --backend 127.0.0.1:9090\n"
              "  platoon top --replay run.trace\nKeys: ? in the dashboard.");

  ReportOptions rep;
  CLI::App* report = app.add_subcommand("report", "print the per-thread scheduling tables of a trace file");
  report->add_option("file", rep.file, "trace file written by platoon record")->required();
  report->add_option("--vs", rep.vs, "a second trace: print both side by side with ratios");
  report->add_option("-f,--format", rep.format, "text or json")->capture_default_str();

  ExportOptions exp;
  CLI::App* exporter = app.add_subcommand("export", "convert a trace file for other tools (Perfetto UI, spreadsheets)");
  exporter->add_option("file", exp.file, "trace file written by platoon record")->required();
  exporter->add_option("-f,--format", exp.format, "perfetto (protobuf), chrome (Trace Event JSON) or csv")->required();
  exporter->add_option("-o,--output", exp.output, "file to write")->required();
  exporter->footer("Examples:\n  platoon export run.trace --format perfetto -o run.pftrace   # open in ui.perfetto.dev\n"
                   "  platoon export run.trace --format chrome -o run.json\n"
                   "  platoon export run.trace --format csv -o run.csv");

  DoctorOptions doc;
  TargetFlags doc_target;
  std::string doc_duration = "5";
  bool doc_no_usdt = false;
  CLI::App* doctor = app.add_subcommand("doctor", "diagnose a trace file or a live process: findings, evidence, remedies");
  doctor->add_option("file", doc.file, "trace file written by platoon record (or use --pid/--comm/-- CMD)");
  doc_target.add_to(doctor);
  doctor->add_option("-d,--duration", doc_duration, "live: how long to watch")->capture_default_str();
  doctor->add_option("--vs", doc.vs, "a second trace: say which run is healthier and why");
  doctor->add_option("-f,--format", doc.format, "text or json")->capture_default_str();
  doctor->add_flag("--procfs", doc.live.procfs, "live: sample /proc instead of loading BPF (fewer findings)");
  doctor->add_flag("--no-usdt", doc_no_usdt, "live: do not attach the runtime's USDT probes");
  doctor->footer("Examples:\n  platoon doctor run.trace\n  platoon doctor unpinned.trace --vs pinned.trace\n"
                 "  platoon doctor --pid 1234 --duration 10 --format json");

  ExporterOptions prom;
  TargetFlags prom_target;
  bool prom_no_usdt = false;
  CLI::App* prom_cmd = app.add_subcommand("exporter", "serve per-thread scheduling metrics to Prometheus (GET /metrics)");
  prom_target.add_to(prom_cmd);
  prom_cmd->add_option("-l,--listen", prom.listen, "HOST:PORT or :PORT to listen on")->capture_default_str();
  prom_cmd->add_option("--max-threads", prom.max_threads, "export at most this many threads (busiest first)")->capture_default_str();
  prom_cmd->add_flag("--procfs", prom.live.procfs, "sample /proc instead of loading BPF (fewer metrics)");
  prom_cmd->add_flag("--no-usdt", prom_no_usdt, "do not attach the runtime's USDT probes");
  prom_cmd->footer("Examples:\n  platoon exporter --comm platoon-server --listen :9464\n"
                   "  platoon exporter --pid 1234 --listen 127.0.0.1:9464");

  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    return usage_error("", msg + " (see platoon --help)");
  }

  std::string error;
  if (record->parsed()) {
    if (!rec_target.resolve(command, rec.live, error)) return usage_error("record", error);
    if (!rec_duration.empty() && (!parse_seconds(rec_duration, rec.duration_s) || rec.duration_s <= 0))
      return usage_error("record", "bad --duration '" + rec_duration + "'");
    if (!parse_seconds(rec_interval, rec.interval_s) || rec.interval_s < 0.01 || rec.interval_s > 3600)
      return usage_error("record", "bad --interval '" + rec_interval + "' (10ms to 1h)");
    if (rec.live.ringbuf_mb < 1 || rec.live.ringbuf_mb > 1024)
      return usage_error("record", "--ringbuf-mb must be 1..1024");
    rec.events = !rec_no_events;
    rec.live.usdt = !rec_no_usdt;
    return run_record(rec);
  }
  if (top->parsed()) {
    if (!top_opt.replay.empty()) {
      if (!top_target.pids.empty() || !top_target.comm.empty() || !command.empty())
        return usage_error("top", "--replay takes no --pid, --comm or -- CMD");
    } else if (!top_target.resolve(command, top_opt.live, error)) {
      return usage_error("top", error);
    }
    if (!parse_seconds(top_interval, top_opt.interval_s) || top_opt.interval_s < 0.25 || top_opt.interval_s > 3600)
      return usage_error("top", "bad --interval '" + top_interval + "' (0.25 s to 1 h)");
    if (top_opt.iterations < 0) return usage_error("top", "--iterations must be positive");
    top_opt.live.usdt = !top_no_usdt;
    return run_top(top_opt);
  }
  if (doctor->parsed()) {
    if (!doc.file.empty()) {
      if (!doc_target.pids.empty() || !doc_target.comm.empty() || !command.empty())
        return usage_error("doctor", "give a trace file or --pid/--comm/-- CMD, not both");
    } else {
      if (!doc.vs.empty()) return usage_error("doctor", "--vs compares two trace files");
      if (!doc_target.resolve(command, doc.live, error))
        return usage_error("doctor", "give a trace file or a live target: " + error);
    }
    if (!parse_seconds(doc_duration, doc.duration_s) || doc.duration_s <= 0 || doc.duration_s > 86400)
      return usage_error("doctor", "bad --duration '" + doc_duration + "'");
    if (doc.format != "text" && doc.format != "json")
      return usage_error("doctor", "--format must be text or json, not '" + doc.format + "'");
    doc.live.usdt = !doc_no_usdt;
    return run_doctor(doc);
  }
  if (prom_cmd->parsed()) {
    if (!prom_target.resolve(command, prom.live, error)) return usage_error("exporter", error);
    if (prom.max_threads < 1 || prom.max_threads > 100000)
      return usage_error("exporter", "--max-threads must be 1..100000");
    prom.live.usdt = !prom_no_usdt;
    return run_exporter(prom);
  }
  if (!command.empty()) return usage_error("", "'-- CMD' is only for record, top, doctor and exporter");
  if (report->parsed()) {
    if (rep.format != "text" && rep.format != "json")
      return usage_error("report", "--format must be text or json, not '" + rep.format + "'");
    return run_report(rep);
  }
  if (exporter->parsed()) {
    if (exp.format != "perfetto" && exp.format != "chrome" && exp.format != "csv")
      return usage_error("export", "--format must be perfetto, chrome or csv, not '" + exp.format + "'");
    return run_export(exp);
  }
  return kExitUsage;
}
