// platoon export --format requests-csv: one row per request the recording holds (PLATOON_EV_REQUEST
// records, platoon record --requests), in time order of their ends, for spreadsheets and pandas.
// The per-thread `--format csv` stays one table of intervals; requests are a table of their own.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>

#include "tui/outputs/export_targets.hpp"
#include "tui/trace/events.hpp"

namespace platoon::outputs {

// The header line (with its newline): the request's identity (end_ns, start_ns, side, pid, tid,
// comm, conn, local_port, remote), then request_fields() (tui/outputs/request_record.hpp).
void write_requests_csv_header(std::ostream& out);

// Takes a recording's event records in file order (any type; only requests make rows) and writes
// each request's row once the reorder buffer lets it go, so memory stays flat. threads: the
// names the snapshots give the readers (targets_of); a reader they do not name gets an empty comm.
class RequestsCsv : trace::EventVisitor {
 public:
  RequestsCsv(std::ostream& out, std::map<uint32_t, ExportThread> threads);
  void add(const platoon_event_header& h, const void* record, size_t size);
  // Writes what is still held; returns the rows written.
  uint64_t finish();
  // Requests that came more than the reorder horizon out of order: written late, out of order.
  uint64_t late() const { return reader_.stats().late; }

 private:
  void on_request(const platoon_event_header& h, const platoon_ev_request& r) override;

  std::ostream& out_;
  std::map<uint32_t, ExportThread> threads_;
  trace::EventReader reader_;
  uint64_t rows_ = 0;
};

}  // namespace platoon::outputs
