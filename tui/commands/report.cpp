// platoon report: the per-thread tables of one recording (first to last snapshot), or two side
// by side with --vs.
#include <cstdio>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "tui/commands/commands.hpp"
#include "tui/analysis/observer_cost.hpp"
#include "tui/outputs/report.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::cli {
namespace {

struct Loaded {
  trace::TraceContents contents;
  analysis::Window window;
  outputs::ReportHeader header;
};

std::optional<Loaded> load(const std::string& path, std::string& error) {
  // Streamed: the tables need the first snapshot and each thread's last sample, not every
  // interval of a long recording held in memory at once.
  analysis::RecordingWindow recording;
  trace::ReadOptions ro;
  ro.on_event = [](const platoon_event_header&, const void*, size_t) {};
  ro.on_snapshot = [&recording](snapshot::Snapshot&& s) { recording.add(std::move(s)); };
  auto c = trace::read_trace(path, &error, ro);
  if (!c) return std::nullopt;
  if (recording.snapshots() == 0) {
    error = path + ": the recording holds no snapshot";
    return std::nullopt;
  }
  if (c->truncated)
    std::fprintf(stderr, "platoon report: %s is truncated at byte %llu (%s): the recording was cut short; "
                 "reporting its %zu complete snapshots\n", path.c_str(),
                 static_cast<unsigned long long>(c->truncated_at), c->truncated_reason.c_str(),
                 recording.snapshots());
  else if (!c->complete)
    std::fprintf(stderr, "platoon report: %s was not finished (the recorder did not stop cleanly)\n", path.c_str());
  for (const std::string& note : {c->cap_note(), recording.cap_note()})
    if (!note.empty()) std::fprintf(stderr, "platoon report: %s: %s\n", path.c_str(), note.c_str());
  Loaded l{std::move(*c), recording.window(), {}};
  l.header = outputs::header_for(l.window, path);
  l.header.attach_mode = l.contents.meta.attach_mode;
  l.header.target = l.contents.meta.target;
  // The recorder's periodic cost notes: the last one covers the whole recording, and it is
  // shown once as "observer cost" rather than every few seconds' worth among the notes.
  for (const auto& n : l.contents.notes) {
    if (!analysis::is_cost_note(n.text)) l.header.notes.push_back(n.text);
    else if (auto cost = analysis::parse_cost_note(n.text)) l.header.cost = std::move(cost);
  }
  if (!l.contents.stop_reason.empty()) l.header.notes.push_back("stopped: " + l.contents.stop_reason);
  return l;
}

}  // namespace

int run_report(const ReportOptions& opt) {
  std::string error;
  auto a = load(opt.file, error);
  if (!a) {
    std::fprintf(stderr, "platoon report: %s\n", error.c_str());
    return kExitFailure;
  }
  std::string out;
  if (opt.vs.empty()) {
    out = opt.format == "json" ? outputs::report_json(a->header, a->window) : outputs::report_text(a->header, a->window);
  } else {
    auto b = load(opt.vs, error);
    if (!b) {
      std::fprintf(stderr, "platoon report: %s\n", error.c_str());
      return kExitFailure;
    }
    outputs::Side sa{a->header, a->window}, sb{b->header, b->window};
    out = opt.format == "json" ? outputs::compare_json(sa, sb) : outputs::compare_text(sa, sb);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
  return std::fflush(stdout) == 0 ? 0 : kExitFailure;
}

CommandRun add_report(CLI::App& sub) {
  auto opt = std::make_shared<ReportOptions>();
  sub.add_option("file", opt->file, "trace file written by platoon record")->required();
  sub.add_option("--vs", opt->vs, "a second trace: print both side by side with ratios");
  sub.add_option("-f,--format", opt->format, "text or json")->capture_default_str();
  return [opt](const std::vector<std::string>&) {
    if (opt->format != "text" && opt->format != "json")
      return usage_error("report", "--format must be text or json, not '" + opt->format + "'");
    return run_report(*opt);
  };
}

}  // namespace platoon::cli
