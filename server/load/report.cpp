#include "server/load/report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "server/common/json.hpp"

namespace platoon::load {

namespace {

// ---- wrk's units.c: scaled numbers with unit suffixes ----
struct Units {
  double scale;
  const char* base;
  const char* units[6];
};
const Units kTimeUs{1000, "us", {"ms", "s", nullptr}};
const Units kTimeS{60, "s", {"m", "h", nullptr}};
const Units kBinary{1024, "", {"K", "M", "G", "T", "P", nullptr}};
const Units kMetric{1000, "", {"k", "M", "G", "T", "P", nullptr}};

std::string format_units(double n, const Units& m, int precision) {
  double amount = n;
  const char* unit = m.base;
  const double threshold = m.scale * 0.85;
  for (int i = 0; m.units[i + 1] && amount >= threshold; ++i) {
    amount /= m.scale;
    unit = m.units[i];
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", precision, amount, unit);
  return buf;
}
std::string format_time_us(double us) {
  if (us >= 1'000'000.0) return format_units(us / 1'000'000.0, kTimeS, 2);
  return format_units(us, kTimeUs, 2);
}
std::string format_binary(double n) { return format_units(n, kBinary, 2); }
std::string format_metric(double n) { return format_units(n, kMetric, 2); }
std::string format_duration_s(double s) {
  if (s == std::floor(s) || s >= 51) return format_units(s, kTimeS, 0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

// wrk's print_units: right-aligned in `width`, numbers without a unit get two spaces of padding.
void print_units(std::FILE* out, const std::string& s, int width) {
  int pad = 2;
  const size_t len = s.size();
  if (len >= 1 && std::isalpha(static_cast<unsigned char>(s[len - 1]))) --pad;
  if (len >= 2 && std::isalpha(static_cast<unsigned char>(s[len - 2]))) --pad;
  width -= pad;
  std::fprintf(out, "%*.*s%.*s", width, width, s.c_str(), pad, "  ");
}

void print_stats_line(std::FILE* out, const char* name, double mean, double stdev, double max, double within,
                      std::string (*fmt)(double)) {
  std::fprintf(out, "    %-10s", name);
  print_units(out, fmt(mean), 8);
  print_units(out, fmt(stdev), 10);
  print_units(out, fmt(max), 9);
  std::fprintf(out, "%8.2f%%\n", within);
}

void print_rate_stats(std::FILE* out, const std::vector<double>& samples) {
  double mean = 0, stdev = 0, max = 0, within = 0;
  if (!samples.empty()) {
    for (double s : samples) {
      mean += s;
      max = std::max(max, s);
    }
    mean /= double(samples.size());
    if (samples.size() > 1) {
      for (double s : samples) stdev += (s - mean) * (s - mean);
      stdev = std::sqrt(stdev / double(samples.size() - 1));
    }
    size_t inside = 0;
    for (double s : samples) inside += (s >= mean - stdev && s <= mean + stdev);
    within = 100.0 * double(inside) / double(samples.size());
  }
  print_stats_line(out, "Req/Sec", mean, stdev, max, within, format_metric);
}

constexpr double kNsPerUs = 1000.0;
constexpr double kNsPerMs = 1'000'000.0;

// wrk2's print_hdr_latency: the fixed percentiles, then hdr_percentiles_print(h, 5 ticks, ms, CLASSIC).
void print_distribution(std::FILE* out, const Histogram& h, const char* description) {
  static const double kPercentiles[] = {50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0};
  std::fprintf(out, "  Latency Distribution (HdrHistogram - %s)\n", description);
  for (double p : kPercentiles) {
    std::fprintf(out, "%7.3f%%", p);
    print_units(out, format_time_us(double(h.value_at_percentile(p)) / kNsPerUs), 10);
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "\n  Detailed Percentile spectrum:\n");
  std::fprintf(out, "%12s %12s %12s %12s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
  const int digits = h.significant_digits();
  for (const Histogram::Tick& t : h.percentile_spectrum(5)) {
    const double q = t.percentile / 100.0;
    std::fprintf(out, "%12.*f %12f %12lld %12.2f\n", digits, double(t.value) / kNsPerMs, q,
                 static_cast<long long>(t.cumulative), 1.0 / (1.0 - q));
  }
  std::fprintf(out, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h.mean() / kNsPerMs, h.stddev() / kNsPerMs);
  std::fprintf(out, "#[Max     = %12.3f, Total count    = %12lld]\n", double(h.max()) / kNsPerMs,
               static_cast<long long>(h.count()));
  std::fprintf(out, "#[Buckets = %12d, SubBuckets     = %12lld]\n", h.bucket_count(),
               static_cast<long long>(h.sub_bucket_count()));
  std::fprintf(out, "----------------------------------------------------------\n");
}

// ---- JSON ----
double us(int64_t ns) { return double(ns) / kNsPerUs; }

void json_percentiles(std::FILE* f, const Histogram& h) {
  std::fprintf(f, "{\"p50\": %.3f, \"p75\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"p9999\": %.3f, ",
               us(h.value_at_percentile(50)), us(h.value_at_percentile(75)), us(h.value_at_percentile(90)),
               us(h.value_at_percentile(99)), us(h.value_at_percentile(99.9)), us(h.value_at_percentile(99.99)));
  std::fprintf(f, "\"max\": %.3f, \"mean\": %.3f, \"stdev\": %.3f, \"count\": %lld}", us(h.max()),
               h.mean() / kNsPerUs, h.stddev() / kNsPerUs, static_cast<long long>(h.count()));
}

// [[percentile, value_us], ..]: the ticks of print_distribution's spectrum, percentile in
// percent (0-100), each value the highest equivalent of its bucket.
void json_spectrum(std::FILE* f, const Histogram& h) {
  std::fprintf(f, "[");
  const char* sep = "";
  for (const Histogram::Tick& t : h.percentile_spectrum(5)) {
    std::fprintf(f, "%s[%.6f, %.3f]", sep, t.percentile, us(t.value));
    sep = ", ";
  }
  std::fprintf(f, "]");
}

}  // namespace

void print_header(std::FILE* out, const Config& cfg) {
  std::fprintf(out, "Running %s test @ %s\n", format_duration_s(cfg.duration_s).c_str(), cfg.url.text.c_str());
  std::fprintf(out, "  %d threads and %d connections\n", cfg.threads, cfg.connections);
  if (cfg.fixed_rate())
    std::fprintf(out, "  Target rate: %.2f requests/sec (%.3f per connection)\n", cfg.rate, cfg.rate / cfg.connections);
  else
    std::fprintf(out, "  Closed loop (no --rate): each connection sends as soon as its response arrives\n");
  if (cfg.warmup_s > 0)
    std::fprintf(out, "  Warm-up: %s, then histograms and counters reset\n", format_duration_s(cfg.warmup_s).c_str());
  std::fflush(out);
}

void print_results(std::FILE* out, const Config& cfg, const ThreadStats& t, double duration_s) {
  const Histogram& h = t.corrected;
  std::fprintf(out, "  Thread Stats%6s%11s%8s%12s\n", "Avg", "Stdev", "Max", "+/- Stdev");
  print_stats_line(out, "Latency", h.mean() / kNsPerUs, h.stddev() / kNsPerUs, double(h.max()) / kNsPerUs,
                   h.within_stdev_pct(), format_time_us);
  print_rate_stats(out, t.rate_samples);
  if (cfg.latency) {
    print_distribution(out, h, "Recorded Latency");
    std::fprintf(out, "\n");
    print_distribution(out, t.uncorrected, "Uncorrected Latency (measured without taking delayed starts into account)");
  }
  std::fprintf(out, "  %llu requests in %s, %sB read\n", static_cast<unsigned long long>(t.requests),
               format_time_us(duration_s * 1e6).c_str(), format_binary(double(t.bytes)).c_str());
  const Errors& e = t.errors;
  if (e.socket_errors())
    std::fprintf(out, "  Socket errors: connect %llu, read %llu, write %llu, timeout %llu\n",
                 static_cast<unsigned long long>(e.connect), static_cast<unsigned long long>(e.read),
                 static_cast<unsigned long long>(e.write), static_cast<unsigned long long>(e.timeout));
  if (e.status) std::fprintf(out, "  Non-2xx or 3xx responses: %llu\n", static_cast<unsigned long long>(e.status));
  const double secs = duration_s > 0 ? duration_s : 1;
  const double achieved = double(t.requests + e.socket_errors()) / secs;
  if (cfg.fixed_rate() && duration_s > 0 && achieved < 0.98 * cfg.rate)
    std::fprintf(out,
                 "  Warning: %.0f requests/sec attempted, below the target %.0f: with one request in flight per "
                 "connection it takes connections >= rate x latency (send lag p99 %s)\n",
                 achieved, cfg.rate, format_time_us(double(t.send_lag.value_at_percentile(99)) / kNsPerUs).c_str());
  std::fprintf(out, "Requests/sec: %9.2f\n", double(t.requests) / secs);
  std::fprintf(out, "Transfer/sec: %10sB\n", format_binary(double(t.bytes) / secs).c_str());
  std::fflush(out);
}

bool write_json(const std::string& path, const Config& cfg, const ThreadStats& t, double duration_s,
                std::string& error) {
  // As root next to other things: never through a symlink at the last component, never into a
  // device, fifo or directory, never chmod'ing what exists; a new file is 0600.
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    error = "cannot write " + path + ": not a regular file (a symlink, device, fifo, socket or directory)";
    return false;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ::ftruncate(fd, 0) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return false;
  }
  std::FILE* f = ::fdopen(fd, "w");
  if (!f) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  const Errors& e = t.errors;
  const double rate = duration_s > 0 ? double(t.requests) / duration_s : 0;
  std::fprintf(f, "{\n  \"url\": %s,\n", json::quoted(cfg.url.text).c_str());
  std::fprintf(f, "  \"requests\": %llu,\n", static_cast<unsigned long long>(t.requests));
  std::fprintf(f, "  \"errors\": %llu,\n", static_cast<unsigned long long>(e.total()));
  std::fprintf(f, "  \"timeouts\": %llu,\n", static_cast<unsigned long long>(e.timeout));
  std::fprintf(f,
               "  \"errors_by_kind\": {\"connect\": %llu, \"read\": %llu, \"write\": %llu, \"status\": %llu, "
               "\"timeout\": %llu},\n",
               static_cast<unsigned long long>(e.connect), static_cast<unsigned long long>(e.read),
               static_cast<unsigned long long>(e.write), static_cast<unsigned long long>(e.status),
               static_cast<unsigned long long>(e.timeout));
  std::fprintf(f, "  \"duration_s\": %.6f,\n", duration_s);
  std::fprintf(f, "  \"warmup_s\": %.6f,\n", cfg.warmup_s);
  std::fprintf(f, "  \"rate\": %.3f,\n", rate);
  std::fprintf(f, "  \"target_rate\": %.3f,\n", cfg.rate);
  std::fprintf(f, "  \"open_loop\": %s,\n", cfg.fixed_rate() ? "true" : "false");
  std::fprintf(f, "  \"connections\": %d,\n  \"threads\": %d,\n", cfg.connections, cfg.threads);
  std::fprintf(f, "  \"bytes\": %llu,\n", static_cast<unsigned long long>(t.bytes));
  std::fprintf(f, "  \"mean_us\": %.3f,\n", t.corrected.mean() / kNsPerUs);
  std::fprintf(f, "  \"latency_us\": ");
  json_percentiles(f, t.corrected);
  std::fprintf(f, ",\n  \"uncorrected_latency_us\": ");
  json_percentiles(f, t.uncorrected);
  std::fprintf(f, ",\n  \"send_lag_us\": ");
  json_percentiles(f, t.send_lag);
  std::fprintf(f, ",\n  \"latency_spectrum_us\": ");
  json_spectrum(f, t.corrected);
  std::fprintf(f, ",\n  \"uncorrected_latency_spectrum_us\": ");
  json_spectrum(f, t.uncorrected);
  std::fprintf(f, "\n}\n");
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace platoon::load
