// libFuzzer target: whatever the trace reader accepts (checksums off, so mutated payloads get
// through) must also go through everything that consumes a recording without a crash, a hang
// or undefined behaviour: the window and report, the csv, requests-csv, chrome and perfetto exports
// and the doctor (its raw-event analysis and both outputs). The reader validates records; these check
// nothing about the numbers in them (timestamps out of order, tids that never switched in,
// counters that go backwards), which is what this target throws at them.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <span>
#include <string>

#include "tui/analysis/doctor.hpp"
#include "tui/outputs/doctor_output.hpp"
#include "tui/outputs/export_chrome.hpp"
#include "tui/outputs/export_csv.hpp"
#include "tui/outputs/export_perfetto.hpp"
#include "tui/outputs/export_requests_csv.hpp"
#include "tui/outputs/report.hpp"
#include "tui/trace/trace_reader.hpp"
#include "tui/analysis/window.hpp"
#include "tests/lib/namespaces.hpp"

using namespace platoon::tests;

volatile size_t g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReadOptions options;
  options.verify_crc = false;
  std::string error;
  auto c = read_trace_bytes(std::span<const uint8_t>(data, size), &error, options);
  if (!c) return 0;
  size_t out = 0;
  const Window w = make_window(c->snapshots);
  const ReportHeader h = header_for(w, "fuzz");
  out += report_text(h, w).size() + report_json(h, w).size();

  std::ostringstream csv, chrome, perfetto;
  write_csv_header(csv);
  {
    CsvExporter exporter(csv);
    for (auto s : c->snapshots) exporter.add(std::move(s));
  }
  write_chrome_trace(chrome, c->events, c->snapshots);
  write_perfetto_trace(perfetto, c->meta, c->events, c->snapshots);
  out += csv.str().size() + chrome.str().size() + perfetto.str().size();
  std::ostringstream requests;
  write_requests_csv_header(requests);
  RequestsCsv rows(requests, targets_of(c->snapshots));
  for_each_event(*c, [&](const platoon_event_header& eh, const void* rec, size_t n) { rows.add(eh, rec, n); });
  out += rows.finish() + requests.str().size();

  platoon::analysis::doctor::BatchTracker batches;
  for_each_event(*c, [&](const platoon_event_header& eh, const void* rec, size_t n) { batches.add(eh, rec, n); });
  batches.finish();
  platoon::analysis::doctor::DoctorInput in;
  in.label = "fuzz";
  in.window = &w;
  in.ncpus = c->meta.ncpus;
  in.batches = c->event_count ? &batches : nullptr;
  in.snapshots = c->snapshots.size();
  const platoon::analysis::doctor::Diagnosis d = platoon::analysis::doctor::diagnose(in);
  out += platoon::outputs::doctor::text(d).size() + platoon::outputs::doctor::json(d).size() +
         platoon::outputs::doctor::compare_json(d, d).size();
  g_sink = out;
  return 0;
}
