// platoon export: a trace file in formats other tools read. csv (one row per thread per
// interval) works from the snapshots alone; chrome (Trace Event JSON) needs the raw events.
// perfetto (protobuf) too, streamed in two passes. requests-csv (one row per request) needs the
// request records of platoon record --requests.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <cstring>
#include <iterator>
#include <map>
#include <ext/stdio_filebuf.h>
#include <ostream>
#include <optional>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "tui/commands/commands.hpp"
#include "tui/outputs/export_chrome.hpp"
#include "tui/outputs/export_csv.hpp"
#include "tui/outputs/export_perfetto.hpp"
#include "tui/outputs/export_requests_csv.hpp"
#include "tui/outputs/output_file.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::cli {
namespace {

int fail(const std::string& msg) { return command_failure("export", msg); }

// The output is written next to OUT under a temporary name (a new 0600 file) and renamed into
// place only when complete: a bad input or a full disk never leaves a half-written OUT (or
// clobbers an old one), and OUT is refused unless it is absent or a regular file
// (tui/outputs/output_file.hpp).
class ExportFile {
 public:
  explicit ExportFile(const std::string& path)
      : file_(outputs::OutputFile::create(path, outputs::OutputFile::Existing::replace, &error_)) {
    if (file_) {
      buf_.emplace(file_->take_fd().release(), std::ios::out | std::ios::binary);  // closes it
      stream_.rdbuf(&*buf_);
    } else {
      stream_.setstate(std::ios::badbit);
    }
  }
  ExportFile(const ExportFile&) = delete;
  ExportFile& operator=(const ExportFile&) = delete;

  bool ok() const { return file_.has_value(); }
  const std::string& error() const { return error_; }
  std::ostream& stream() { return stream_; }
  bool commit() {
    stream_.flush();
    const bool flushed = stream_.good() && buf_->close() != nullptr;  // the filebuf owns the fd's writes
    if (!flushed) error_ = "writing " + file_->path() + " failed: " + std::strerror(errno);
    else if (file_->publish(&error_) && file_->replaced())
      std::fprintf(stderr, "platoon export: replaced the earlier %s\n", file_->path().c_str());
    return file_->published();
  }

 private:
  std::string error_;  // first: file_'s initialiser writes it
  std::optional<outputs::OutputFile> file_;
  std::optional<__gnu_cxx::stdio_filebuf<char>> buf_;
  std::ostream stream_{nullptr};
};

void warn_incomplete(const std::string& path, const trace::TraceContents& c) {
  if (c.truncated)
    std::fprintf(stderr, "platoon export: %s is truncated at byte %llu (%s): exporting what precedes it\n",
                 path.c_str(), static_cast<unsigned long long>(c.truncated_at), c.truncated_reason.c_str());
  else if (!c.complete)
    std::fprintf(stderr, "platoon export: %s was not finished (the recorder did not stop cleanly)\n", path.c_str());
  if (const std::string note = c.cap_note(); !note.empty())
    std::fprintf(stderr, "platoon export: %s: %s\n", path.c_str(), note.c_str());
}

int export_csv(const ExportOptions& opt) {
  ExportFile out(opt.output);
  if (!out.ok()) return fail(out.error());
  outputs::write_csv_header(out.stream());
  // Streamed: rows go out as snapshots are read, events are dropped unread into memory.
  outputs::CsvExporter csv(out.stream());
  trace::ReadOptions ro;
  ro.on_event = [](const platoon_event_header&, const void*, size_t) {};
  ro.on_snapshot = [&csv](snapshot::Snapshot&& s) { csv.add(std::move(s)); };
  std::string error;
  auto c = trace::read_trace(opt.file, &error, ro);
  if (!c) return fail(error);
  if (c->snapshot_count == 0) return fail(opt.file + ": the recording holds no snapshot");
  warn_incomplete(opt.file, *c);
  return out.commit() ? 0 : fail(out.error());
}

void warn_lost(uint64_t lost) {
  if (lost > 0)
    std::fprintf(stderr, "platoon export: %llu events were lost while recording (ring buffer full): the timeline has gaps\n",
                 static_cast<unsigned long long>(lost));
}

// Chrome holds the recording in memory: slices are built from switches sorted by time, and the
// ring buffer does not deliver them strictly in order (perfetto streams, with a reorder buffer).
// Bounded (kKeep*Bytes in trace_format.hpp): past it the rest is cut and warn_incomplete says so.
std::optional<trace::TraceContents> read_with_events(const ExportOptions& opt, std::string& error) {
  trace::ReadOptions ro;
  ro.max_snapshot_bytes = trace::kKeepSnapshotBytes;
  ro.max_event_bytes = trace::kKeepEventBytes;
  auto c = trace::read_trace(opt.file, &error, ro);
  if (!c) return std::nullopt;
  if (c->snapshots.empty())
    error = opt.file + (c->cut_snapshots ? ": its first snapshot is over chrome export's memory cap (use --format perfetto)"
                                         : ": the recording holds no snapshot");
  else if (c->event_count == 0 || c->snapshots.front().source == snapshot::Source::procfs)
    error = opt.file + " has no raw events (recorded with --no-events or --procfs): " + opt.format +
            " export needs them";
  if (!error.empty()) return std::nullopt;
  warn_incomplete(opt.file, *c);
  warn_lost(c->snapshots.back().lost_events());
  return c;
}

// Two passes over the file (see export_perfetto.hpp): memory stays flat however long the
// recording is.
int export_perfetto(const ExportOptions& opt) {
  ExportFile out(opt.output);
  if (!out.ok()) return fail(out.error());
  outputs::PerfettoExport exp(out.stream());
  trace::ReadOptions scan;
  scan.on_event = [&exp](const platoon_event_header& h, const void* rec, size_t size) { exp.scan_event(h, rec, size); };
  uint64_t lost = 0;
  snapshot::Source source = snapshot::Source::bpf;
  scan.on_snapshot = [&](snapshot::Snapshot&& s) {
    lost = s.lost_events();
    source = s.source;
    exp.scan_snapshot(s);
  };
  std::string error;
  auto c = trace::read_trace(opt.file, &error, scan);
  if (!c) return fail(error);
  if (c->snapshot_count == 0) return fail(opt.file + ": the recording holds no snapshot");
  if (c->event_count == 0 || source == snapshot::Source::procfs)
    return fail(opt.file + " has no raw events (recorded with --no-events or --procfs): perfetto export needs them");
  warn_incomplete(opt.file, *c);
  warn_lost(lost);
  exp.begin(c->meta);
  trace::ReadOptions write;
  write.on_event = [&exp](const platoon_event_header& h, const void* rec, size_t size) { exp.write_event(h, rec, size); };
  write.on_snapshot = [](snapshot::Snapshot&&) {};
  if (!trace::read_trace(opt.file, &error, write)) return fail(error);
  outputs::PerfettoStats stats;
  if (!exp.finish(&stats) || !out.commit())
    return fail(out.error().empty() ? "writing " + opt.output + " failed" : out.error());
  if (stats.late_events > 0)
    std::fprintf(stderr, "platoon export: %llu events came more than %.0f ms out of order: written late, Perfetto sorts them\n",
                 static_cast<unsigned long long>(stats.late_events), trace::kReorderHorizonNs / 1e6);
  return 0;
}

int export_chrome(const ExportOptions& opt) {
  ExportFile out(opt.output);
  if (!out.ok()) return fail(out.error());
  std::string error;
  auto c = read_with_events(opt, error);
  if (!c) return fail(error);
  outputs::ChromeStats stats;
  if (!outputs::write_chrome_trace(out.stream(), c->events, c->snapshots, &stats) || !out.commit())
    return fail(out.error().empty() ? "writing " + opt.output + " failed" : out.error());
  if (stats.dropped > 0)
    std::fprintf(stderr, "platoon export: %zu running slices dropped: their switch-in or switch-out event was lost\n",
                 stats.dropped);
  return 0;
}

// Two passes: the first learns the readers' names from the snapshots and whether the recording
// has any request at all (no output is made for one without), the second writes the rows.
int export_requests_csv(const ExportOptions& opt) {
  std::map<uint32_t, outputs::ExportThread> threads;
  uint64_t requests = 0;
  trace::ReadOptions scan;
  scan.on_event = [&requests](const platoon_event_header& h, const void*, size_t) {
    if (h.type == PLATOON_EV_REQUEST) ++requests;
  };
  scan.on_snapshot = [&threads](snapshot::Snapshot&& s) { outputs::add_targets(threads, s); };
  std::string error;
  auto c = trace::read_trace(opt.file, &error, scan);
  if (!c) return fail(error);
  if (requests == 0) return fail("no request records in " + opt.file + ": record with --requests");
  warn_incomplete(opt.file, *c);
  ExportFile out(opt.output);
  if (!out.ok()) return fail(out.error());
  outputs::write_requests_csv_header(out.stream());
  outputs::RequestsCsv csv(out.stream(), std::move(threads));
  trace::ReadOptions write;
  write.on_event = [&csv](const platoon_event_header& h, const void* rec, size_t size) { csv.add(h, rec, size); };
  write.on_snapshot = [](snapshot::Snapshot&&) {};
  if (!trace::read_trace(opt.file, &error, write)) return fail(error);
  csv.finish();
  if (!out.commit()) return fail(out.error());
  if (csv.late() > 0)
    std::fprintf(stderr, "platoon export: %llu requests came more than %.0f ms out of order: their rows are out of time order\n",
                 static_cast<unsigned long long>(csv.late()), trace::kReorderHorizonNs / 1e6);
  return 0;
}

struct Format {
  const char* name;
  const char* what;
  int (*run)(const ExportOptions&);
};
constexpr Format kFormats[] = {
    {"perfetto", "protobuf", export_perfetto},
    {"chrome", "Trace Event JSON", export_chrome},
    {"csv", "a row per thread per interval", export_csv},
    {"requests-csv", "a row per request", export_requests_csv},
};

// "perfetto, chrome, csv or requests-csv", each with what it is when `described`.
std::string format_list(bool described) {
  std::string list;
  for (size_t i = 0; i < std::size(kFormats); ++i) {
    if (i > 0) list += i + 1 == std::size(kFormats) ? " or " : ", ";
    list += kFormats[i].name;
    if (described) list += std::string(" (") + kFormats[i].what + ")";
  }
  return list;
}

const Format* format_named(const std::string& name) {
  for (const Format& f : kFormats)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace

int run_export(const ExportOptions& opt) {
  if (const Format* f = format_named(opt.format)) return f->run(opt);
  std::fprintf(stderr, "platoon export: --format must be %s, not '%s'\n", format_list(false).c_str(), opt.format.c_str());
  return kExitUsage;
}

CommandRun add_export(CLI::App& sub) {
  auto opt = std::make_shared<ExportOptions>();
  sub.add_option("file", opt->file, "trace file written by platoon record")->required();
  sub.add_option("-f,--format", opt->format, format_list(true))->required();
  sub.add_option("-o,--output", opt->output, "file to write")->required();
  sub.footer("Examples:\n  platoon export run.trace --format perfetto -o run.pftrace   # open in ui.perfetto.dev\n"
             "  platoon export run.trace --format chrome -o run.json\n"
             "  platoon export run.trace --format csv -o run.csv\n"
             "  platoon export run.trace --format requests-csv -o requests.csv   # recorded with --requests");
  return [opt](const std::vector<std::string>&) {
    if (!format_named(opt->format))
      return usage_error("export", "--format must be " + format_list(false) + ", not '" + opt->format + "'");
    return run_export(*opt);
  };
}

}  // namespace platoon::cli
