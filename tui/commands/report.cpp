// platoon report: the per-thread tables of one recording (first to last snapshot), or two side
// by side with --vs; as text, JSON, or one self-contained HTML page of charts (tui/outputs/html/).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "tui/commands/commands.hpp"
#include "tui/commands/doctor_run.hpp"
#include "tui/commands/version.hpp"
#include "tui/analysis/observer_cost.hpp"
#include "tui/outputs/html/page.hpp"
#include "tui/outputs/html/report_data.hpp"
#include "tui/outputs/output_file.hpp"
#include "tui/outputs/report.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::cli {
namespace {

struct Loaded {
  trace::TraceContents contents;
  analysis::Window window;
  outputs::ReportHeader header;
  std::vector<std::string> reader_notes;  // what was said on stderr of the file itself
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
  std::vector<std::string> said;
  if (c->truncated)
    said.push_back("is truncated at byte " + std::to_string(c->truncated_at) + " (" + c->truncated_reason +
                   "): the recording was cut short; reporting its " + std::to_string(recording.snapshots()) +
                   " complete snapshots");
  else if (!c->complete)
    said.push_back("was not finished (the recorder did not stop cleanly)");
  for (const std::string& note : {c->cap_note(), recording.cap_note()})
    if (!note.empty()) said.push_back(": " + note);
  for (std::string& line : said) {
    line = path + (line.starts_with(":") ? "" : " ") + line;
    std::fprintf(stderr, "platoon report: %s\n", line.c_str());
  }
  Loaded l{std::move(*c), recording.window(), {}, std::move(said)};
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

// What the HTML page needs beyond the tables: each interval (tapped from doctor's pass over the
// file) and the diagnosis with its batch tracker.
struct Pictures {
  std::unique_ptr<DoctorRun> run = std::make_unique<DoctorRun>();
  outputs::html::IntervalSeries series;
  analysis::doctor::Diagnosis diagnosis;
};

std::unique_ptr<Pictures> load_pictures(const std::string& path, std::string& error) {
  auto p = std::make_unique<Pictures>();
  if (!load_doctor_file(path, *p->run, error, [&p](const snapshot::Snapshot& s) { p->series.add(s); })) return nullptr;
  p->diagnosis = diagnose(*p->run);
  return p;
}

outputs::html::Recording recording(const Loaded& l, const Pictures& p) {
  return {l.header, l.window, p.series, p.diagnosis, p.run->has_batches ? &p.run->batches : nullptr,
          p.run->input.no_events_reason, l.reader_notes};
}

std::string html_page(const ReportOptions& opt, const Loaded& a, const Loaded* b, std::string& error) {
  auto pa = load_pictures(opt.file, error);
  if (!pa) return {};
  std::unique_ptr<Pictures> pb;
  if (b && !(pb = load_pictures(opt.vs, error))) return {};
  std::string command = "platoon report " + opt.file + (b ? " --vs " + opt.vs : "") + " --format html";
  if (!opt.output.empty()) command += " -o " + opt.output;
  const outputs::html::PageInfo info{
      .title = "platoon report: " + opt.file + (b ? " vs " + opt.vs : ""), .command = command, .version = kVersion};
  const auto ra = recording(a, *pa);
  if (!b) return outputs::html::page(info.title, outputs::html::page_data_json(info, ra));
  const auto rb = recording(*b, *pb);
  return outputs::html::page(info.title, outputs::html::page_data_json(info, ra, &rb));
}

int fail(const std::string& msg) { return command_failure("report", msg); }

}  // namespace

int run_report(const ReportOptions& opt) {
  std::string error;
  auto a = load(opt.file, error);
  if (!a) return fail(error);
  std::optional<Loaded> b;
  if (!opt.vs.empty() && !(b = load(opt.vs, error))) return fail(error);
  std::string out;
  if (opt.format == "html") {
    if (opt.output.empty() && isatty(STDOUT_FILENO))
      return usage_error("report", "--format html writes a page: give -o OUT.html (or redirect the output)");
    out = html_page(opt, *a, b ? &*b : nullptr, error);
    if (out.empty()) return fail(error);
  } else if (opt.vs.empty()) {
    out = opt.format == "json" ? outputs::report_json(a->header, a->window) : outputs::report_text(a->header, a->window);
  } else {
    outputs::Side sa{a->header, a->window}, sb{b->header, b->window};
    out = opt.format == "json" ? outputs::compare_json(sa, sb) : outputs::compare_text(sa, sb);
  }
  if (!opt.output.empty()) {
    bool replaced = false;
    if (!outputs::write_whole_file(opt.output, out, &error, &replaced)) return fail(error);
    if (replaced) std::fprintf(stderr, "platoon report: replaced the earlier %s\n", opt.output.c_str());
    return 0;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
  return std::fflush(stdout) == 0 ? 0 : kExitFailure;
}

CommandRun add_report(CLI::App& sub) {
  auto opt = std::make_shared<ReportOptions>();
  sub.add_option("file", opt->file, "trace file written by platoon record")->required();
  sub.add_option("--vs", opt->vs, "a second trace: print both side by side with ratios");
  sub.add_option("-f,--format", opt->format, "text, json or html (one self-contained page of charts)")
      ->capture_default_str();
  sub.add_option("-o,--output", opt->output, "write to this file instead of standard output");
  sub.footer("Examples:\n  platoon report run.trace\n  platoon report run.trace --format html -o run.html\n"
             "  platoon report unpinned.trace --vs pinned.trace --format html -o compare.html");
  return [opt](const std::vector<std::string>&) {
    if (opt->format != "text" && opt->format != "json" && opt->format != "html")
      return usage_error("report", "--format must be text, json or html, not '" + opt->format + "'");
    return run_report(*opt);
  };
}

}  // namespace platoon::cli
