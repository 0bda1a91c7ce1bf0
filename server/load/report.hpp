// The results: wrk2-compatible text on stdout, and the JSON file of the platoon contract.
#pragma once

#include <cstdio>
#include <string>

#include "server/load/config.hpp"
#include "server/load/stats.hpp"

namespace platoon::load {

// "Running 10s test @ URL" and "  T threads and C connections", printed before the run.
void print_header(std::FILE* out, const Config& cfg);
// Thread stats table, the latency distributions (with cfg.latency: corrected, then uncorrected,
// each with its detailed percentile spectrum), totals, errors, Requests/sec, Transfer/sec.
void print_results(std::FILE* out, const Config& cfg, const ThreadStats& total, double duration_s);
// The JSON summary (latencies in microseconds). False, with `error`, when the file cannot be written.
bool write_json(const std::string& path, const Config& cfg, const ThreadStats& total, double duration_s,
                std::string& error);

}  // namespace platoon::load
