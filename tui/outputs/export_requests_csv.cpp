#include "tui/outputs/export_requests_csv.hpp"

#include <utility>

#include "tui/outputs/export_csv.hpp"  // csv_cell
#include "tui/outputs/request_record.hpp"

namespace platoon::outputs {

void write_requests_csv_header(std::ostream& out) {
  out << "end_ns,start_ns,side,pid,tid,comm,conn,local_port,remote";
  for (const RequestField& f : request_fields()) out << ',' << f.key;
  out << '\n';
}

RequestsCsv::RequestsCsv(std::ostream& out, std::map<uint32_t, ExportThread> threads)
    : out_(out), threads_(std::move(threads)) {}

void RequestsCsv::add(const platoon_event_header& h, const void* record, size_t size) {
  if (h.type == PLATOON_EV_REQUEST) reader_.add(h, record, size, *this);
}

uint64_t RequestsCsv::finish() {
  reader_.finish(*this);
  out_.flush();
  return rows_;
}

// Cells the record does not measure stay empty, as in --format csv: unknown never reads as 0.
void RequestsCsv::on_request(const platoon_event_header& h, const platoon_ev_request& r) {
  const auto thread = threads_.find(h.tid);
  out_ << h.ts_ns << ',' << request_start_ns(r) << ',' << request_side(r) << ',' << r.pid << ',' << h.tid << ','
       << (thread == threads_.end() ? "" : csv_cell(thread->second.comm)) << ',' << r.conn << ',' << r.local_port
       << ',' << csv_cell(request_remote(r));
  for (const RequestField& f : request_fields()) {
    out_ << ',';
    if (const auto v = f.value(r)) out_ << *v;
  }
  out_ << '\n';
  ++rows_;
}

}  // namespace platoon::outputs
