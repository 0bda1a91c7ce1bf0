// platoon: the command users run. Each subcommand lives in a file of this folder and registers
// its own options; this file lists them (in the order `platoon --help` shows them), parses the
// command line (CLI11) and runs the one given.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tui/commands/commands.hpp"
#include "tui/commands/version.hpp"

namespace {
using namespace platoon::cli;

constexpr CommandSpec kCommands[] = {
    {"record", "record scheduler aggregates and events of a process to a trace file", add_record, true},
    {"top", "live per-thread scheduling dashboard of a process (ncurses)", add_top, true},
    {"report", "print the per-thread scheduling tables of a trace file", add_report, false},
    {"export", "convert a trace file for other tools (Perfetto UI, spreadsheets)", add_export, false},
    {"doctor", "diagnose a trace file or a live process: findings, evidence, remedies", add_doctor, true},
    {"exporter", "serve per-thread scheduling metrics to Prometheus (GET /metrics)", add_exporter, true},
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
  app.set_version_flag("--version", std::string("platoon ") + kVersion);
  struct Registered {
    const CommandSpec& spec;
    CLI::App* sub;
    CommandRun run;
  };
  std::vector<Registered> registered;
  for (const CommandSpec& spec : kCommands) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    registered.push_back({spec, sub, spec.add_options(*sub)});
  }

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

  for (const Registered& r : registered) {
    if (!r.sub->parsed()) continue;
    if (!r.spec.takes_command && !command.empty())
      return usage_error("", "'-- CMD' is only for record, top, doctor and exporter");
    return r.run(command);
  }
  return kExitUsage;
}
