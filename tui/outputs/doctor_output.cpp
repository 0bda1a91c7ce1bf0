// platoon doctor's output: the diagnosis as text, as ARCHITECTURE.md's JSON, and --vs.
#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>

#include "tui/outputs/doctor_output.hpp"

namespace platoon::outputs::doctor {

using namespace analysis::doctor;  // the diagnosis these write

// ---- text ----

namespace {

using Out = std::back_insert_iterator<std::string>;

// The request key numbers, in the order every output shows them: text label, JSON key, member,
// decimals. All are set together, when the run served requests (kFieldRequests).
struct RequestNumber {
  const char* label;
  const char* key;
  std::optional<double> KeyNumbers::*value;
  int decimals;
};
constexpr RequestNumber kRequestNumbers[] = {
    {"requests/s", "requests_per_s", &KeyNumbers::requests_per_s, 1},
    {"server time p50 us", "server_time_p50_us", &KeyNumbers::server_time_p50_us, 1},
    {"server time p99 us", "server_time_p99_us", &KeyNumbers::server_time_p99_us, 1},
    {"socket wait p99 us", "socket_wait_p99_us", &KeyNumbers::socket_wait_p99_us, 1},
    {"  runnable share %", "socket_wait_runnable_pct", &KeyNumbers::socket_wait_runnable_pct, 1},
};
bool served(const KeyNumbers& k) { return k.requests_per_s.has_value(); }

std::string number(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

std::string inline_value(const Value& v);
std::string inline_object(const Object& o) {
  std::vector<std::string> parts;
  for (const auto& [k, x] : o) parts.push_back(k + " " + inline_value(x));
  return fmt::format("{}", fmt::join(parts, ", "));
}
std::string inline_value(const Value& v) {
  if (v.null()) return "-";
  if (auto n = v.number()) return number(*n);
  if (auto s = v.string()) return *s;
  if (auto o = v.object()) return "{" + inline_object(*o) + "}";
  std::vector<std::string> parts;
  for (const auto& x : *v.array()) parts.push_back(inline_value(x));
  return "[" + fmt::format("{}", fmt::join(parts, "; ")) + "]";
}

// Evidence: scalars on one line each; a list of rows one row a line below its key.
void text_object(Out o, const Object& obj, const char* indent) {
  for (const auto& [k, v] : obj) {
    const Array* a = v.array();
    if (a && !a->empty() && (*a)[0].object()) {
      fmt::format_to(o, "{}{}:\n", indent, k);
      for (const auto& row : *a) fmt::format_to(o, "{}  - {}\n", indent, row.object() ? inline_object(*row.object()) : inline_value(row));
    } else {
      fmt::format_to(o, "{}{}: {}\n", indent, k, inline_value(v));
    }
  }
}

std::string upper(Severity s) {
  std::string u = to_string(s);
  for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

void text_findings(Out o, const Diagnosis& d) {
  if (d.findings.empty()) {
    if (d.carriers.empty())
      fmt::format_to(o, "no findings (but no carrier or event-loop thread was found: see below)\n");
    else
      fmt::format_to(o, "no findings: the carriers neither waited for a CPU nor migrated beyond the thresholds, "
                        "and the data is complete\n");
  } else {
    fmt::format_to(o, "{} finding{} ({} critical, {} warn, {} info)\n", d.findings.size(), d.findings.size() == 1 ? "" : "s",
                   d.count(Severity::critical), d.count(Severity::warn), d.count(Severity::info));
  }
  for (const auto& f : d.findings) {
    fmt::format_to(o, "\n[{}] {}: {}\n", upper(f.severity), f.id, f.title);
    if (!f.threads.empty()) fmt::format_to(o, "  threads: {}\n", fmt::join(f.threads, ", "));
    fmt::format_to(o, "  evidence:\n");
    text_object(o, f.evidence, "    ");
    fmt::format_to(o, "  threshold: {}\n", inline_object(f.threshold));
    fmt::format_to(o, "  remedy: {}\n", f.remedy);
  }
  if (!d.not_evaluated.empty()) {
    fmt::format_to(o, "\n");
    for (const auto& n : d.not_evaluated) fmt::format_to(o, "not evaluated: {}: {}\n", n.id, n.reason);
  }
}

void text_header(Out o, const Diagnosis& d) {
  fmt::format_to(o, "platoon doctor  {}\n", d.label);
  fmt::format_to(o, "source: {}, {:.2f} s; carriers: {}\n", d.source, d.duration_s,
                 d.carriers.empty() ? std::string("none found") : fmt::format("{}", fmt::join(d.carriers, ", ")));
  fmt::format_to(o, "runtime: {} (remedies use its knobs)\n", to_string(d.runtime));
  // Why each carrier waited, in one line each: the split doctor's machine findings rest on.
  for (const auto& c : d.carrier_wait) {
    if (!c.split) continue;
    // "-": a part the source did not measure (no IRQ time accounting), not a 0 that looks measured.
    std::string parts;
    for (const analysis::WaitCause& x : analysis::kWaitCauses)
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", x.label,
                           measured(x, c.fields) ? fmt::format("{:.2f}", (*c.split).*x.pct) : "-");
    fmt::format_to(o, "  {} wait {:.2f}%: {}\n", c.thread, c.wait_pct, parts);
  }
  const KeyNumbers& k = d.key;
  if (served(k))
    fmt::format_to(o, "requests served: {:.1f}/s, server time p50 {:.1f} us, p99 {:.1f} us; socket wait p99 {:.1f} us, "
                      "{:.1f}% of it runnable\n", *k.requests_per_s, *k.server_time_p50_us, *k.server_time_p99_us,
                   *k.socket_wait_p99_us, *k.socket_wait_runnable_pct);
}

}  // namespace

std::string text(const Diagnosis& d) {
  std::string s;
  text_header(std::back_inserter(s), d);
  text_findings(std::back_inserter(s), d);
  return s;
}

// ---- JSON ----

namespace {

template <class W>
void json_value(W& j, const Value& v) {
  if (v.null()) {
    j.Null();
  } else if (auto n = v.number()) {
    if (!std::isfinite(*n)) j.Null();
    else if (std::fabs(*n - std::round(*n)) < 1e-9 && std::fabs(*n) < 9e15) j.Int64(static_cast<int64_t>(std::llround(*n)));
    else j.Double(*n);
  } else if (auto s = v.string()) {
    j.String(s->c_str(), static_cast<rapidjson::SizeType>(s->size()));
  } else if (auto a = v.array()) {
    j.StartArray();
    for (const auto& x : *a) json_value(j, x);
    j.EndArray();
  } else {
    j.StartObject();
    for (const auto& [k, x] : *v.object()) {
      j.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
      json_value(j, x);
    }
    j.EndObject();
  }
}

Value opt(std::optional<double> v, int decimals) {
  return v ? Value(round_to(*v, decimals)) : Value();
}

Object key_object(const KeyNumbers& k) {
  Object o;
  for (const RequestNumber& n : kRequestNumbers)
    if (k.*n.value) o.emplace_back(n.key, round_to(*(k.*n.value), n.decimals));
  o.emplace_back("carriers", k.carriers);
  if (k.max_carrier_wait_pct) {
    o.emplace_back("max_carrier_wait_pct", round_to(*k.max_carrier_wait_pct, 2));
    o.emplace_back("max_wait_thread", k.max_wait_thread);
  }
  if (k.max_carrier_contended_wait_pct)
    o.emplace_back("max_carrier_contended_wait_pct", round_to(*k.max_carrier_contended_wait_pct, 2));
  if (k.carrier_migrations_per_s) o.emplace_back("carrier_migrations_per_s", round_to(*k.carrier_migrations_per_s, 1));
  if (k.batch_after_long_wait) o.emplace_back("events_per_cycle_after_long_wait", round_to(*k.batch_after_long_wait, 3));
  if (k.batch_after_short_wait) o.emplace_back("events_per_cycle_after_short_wait", round_to(*k.batch_after_short_wait, 3));
  if (k.long_wait_cycles_pct) o.emplace_back("long_wait_cycles_pct", round_to(*k.long_wait_cycles_pct, 3));
  if (k.events_per_cycle) o.emplace_back("events_per_cycle", round_to(*k.events_per_cycle, 3));
  if (k.queue_depth_avg) o.emplace_back("queue_depth_avg", round_to(*k.queue_depth_avg, 3));
  return o;
}

Object finding_object(const Finding& f) {
  Array threads;
  for (const auto& t : f.threads) threads.emplace_back(t);
  return {{"id", f.id},          {"severity", to_string(f.severity)}, {"title", f.title}, {"threads", std::move(threads)},
          {"evidence", f.evidence}, {"threshold", f.threshold},         {"remedy", f.remedy}};
}

Value split_value(const CarrierWait& c) {
  if (!c.split) return Value();
  // A part the source did not measure is null, not a 0 that looks measured.
  Object parts;
  for (const analysis::WaitCause& x : analysis::kWaitCauses)
    parts.emplace_back(std::string(part_key(x)), measured(x, c.fields) ? Value(round_to((*c.split).*x.pct, 2)) : Value());
  return parts;
}

Object diagnosis_object(const Diagnosis& d) {
  Array findings, not_evaluated, carriers, carrier_wait;
  for (const auto& f : d.findings) findings.emplace_back(finding_object(f));
  for (const auto& n : d.not_evaluated) not_evaluated.emplace_back(Object{{"id", n.id}, {"reason", n.reason}});
  for (const auto& c : d.carriers) carriers.emplace_back(c);
  for (const auto& c : d.carrier_wait)
    carrier_wait.emplace_back(Object{{"thread", c.thread}, {"tid", c.tid}, {"wait_pct", round_to(c.wait_pct, 2)},
                                     {"split", split_value(c)}});
  return {{"schema_version", kJsonSchemaVersion},
          {"source", d.source},
          {"file", d.label},
          {"runtime", to_string(d.runtime)},
          {"duration_s", round_to(d.duration_s, 3)},
          {"carriers", std::move(carriers)},
          {"carrier_wait", std::move(carrier_wait)},
          {"findings", std::move(findings)},
          {"not_evaluated", std::move(not_evaluated)},
          {"key_numbers", key_object(d.key)}};
}

std::string write_json(const Value& v, bool pretty) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> j(buf);
    j.SetIndent(' ', 2);
    json_value(j, v);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> j(buf);
    json_value(j, v);
  }
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace

std::string json(const Diagnosis& d, bool pretty) { return write_json(Value(diagnosis_object(d)), pretty); }

// ---- --vs ----

namespace {

std::string counts(const Diagnosis& d) {
  if (d.findings.empty()) return "0 findings";
  std::vector<std::string> parts;
  for (Severity s : {Severity::critical, Severity::warn, Severity::info})
    if (d.count(s)) parts.push_back(fmt::format("{} {}", d.count(s), to_string(s)));
  return fmt::format("{} finding{} ({})", d.findings.size(), d.findings.size() == 1 ? "" : "s", fmt::join(parts, ", "));
}

std::string opt_text(std::optional<double> v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : std::string("-");
}

// Lower is better for every key number compared here; "notably" means beyond the noise of a
// shared 2-vCPU machine (1 point of %wait, 10 migrations/s; for latencies, the larger of
// kServerTimeP99NoiseUs and kServerTimeP99NoisePct of the higher one).
void better_on(std::vector<std::string>& reasons, const char* what, std::optional<double> a, std::optional<double> b,
               double noise, int decimals, int healthier) {
  if (!a || !b || std::fabs(*a - *b) < noise) return;
  const bool b_lower = *b < *a;
  if ((healthier == 1) != b_lower) return;  // only the numbers that speak for the healthier run
  reasons.push_back(fmt::format("{} {} vs {}", what, opt_text(healthier == 1 ? b : a, decimals),
                                opt_text(healthier == 1 ? a : b, decimals)));
}

double latency_noise(std::optional<double> a, std::optional<double> b) {
  return a && b ? std::max(kServerTimeP99NoiseUs, kServerTimeP99NoisePct / 100.0 * std::max(*a, *b)) : 0;
}

// 1: b is lower beyond the noise, 0: a is, -1: neither (or either lacks it).
int lower(std::optional<double> x, std::optional<double> y, double noise) {
  return x && y && std::fabs(*x - *y) >= noise ? (*y < *x ? 1 : 0) : -1;
}

// With request data on both sides the server time p99 decides: it is what the clients feel.
void by_server_time(Comparison& c, const Diagnosis& a, const Diagnosis& b) {
  const std::optional<double> pa = a.key.server_time_p99_us, pb = b.key.server_time_p99_us;
  c.healthier = lower(pa, pb, latency_noise(pa, pb));
  if (c.healthier < 0) return;
  const Diagnosis& h = c.healthier ? b : a;
  const Diagnosis& o = c.healthier ? a : b;
  c.reasons.push_back(fmt::format("server time p99 {:.1f} vs {:.1f} us", *h.key.server_time_p99_us, *o.key.server_time_p99_us));
  c.reasons.push_back(h.score() == o.score() ? fmt::format("both have {}", counts(h))
                      : fmt::format("{}{} vs {}", h.score() > o.score() ? "though it has " : "", counts(h), counts(o)));
}

// Without it (or within its noise): the findings' weight, then the carriers' numbers, %wait
// first (it stalls a carrier's whole queue).
void by_findings(Comparison& c, const Diagnosis& a, const Diagnosis& b) {
  const int sa = a.score(), sb = b.score();
  if (sa != sb) {
    c.healthier = sb < sa ? 1 : 0;
    const Diagnosis& h = c.healthier ? b : a;
    const Diagnosis& o = c.healthier ? a : b;
    c.reasons.push_back(fmt::format("{} vs {}", counts(h), counts(o)));
    return;
  }
  c.healthier = lower(a.key.max_carrier_contended_wait_pct, b.key.max_carrier_contended_wait_pct, 1.0);
  if (c.healthier < 0) c.healthier = lower(a.key.max_carrier_wait_pct, b.key.max_carrier_wait_pct, 1.0);
  if (c.healthier < 0) c.healthier = lower(a.key.carrier_migrations_per_s, b.key.carrier_migrations_per_s, 10.0);
  c.reasons.push_back(c.healthier < 0 ? fmt::format("both have {} and their key numbers are within noise", counts(a))
                                      : fmt::format("both have {}", counts(a)));
}

}  // namespace

Comparison compare(const Diagnosis& a, const Diagnosis& b) {
  Comparison c;
  by_server_time(c, a, b);
  if (c.healthier < 0) by_findings(c, a, b);
  if (c.healthier < 0) return c;
  const Diagnosis& h = c.healthier ? b : a;
  const Diagnosis& o = c.healthier ? a : b;
  // Which findings only the other run has.
  std::vector<std::string> only;
  for (const auto& f : o.findings)
    if (std::none_of(h.findings.begin(), h.findings.end(), [&](const Finding& g) { return g.id == f.id; }))
      only.push_back(fmt::format("{} ({})", f.id, to_string(f.severity)));
  if (!only.empty()) c.reasons.push_back(fmt::format("only the other run has {}", fmt::join(only, ", ")));
  better_on(c.reasons, "server time p50 us", a.key.server_time_p50_us, b.key.server_time_p50_us,
            latency_noise(a.key.server_time_p50_us, b.key.server_time_p50_us), 1, c.healthier);
  better_on(c.reasons, "socket wait p99 us", a.key.socket_wait_p99_us, b.key.socket_wait_p99_us,
            latency_noise(a.key.socket_wait_p99_us, b.key.socket_wait_p99_us), 1, c.healthier);
  better_on(c.reasons, "max carrier contended %wait", a.key.max_carrier_contended_wait_pct,
            b.key.max_carrier_contended_wait_pct, 1.0, 1, c.healthier);
  better_on(c.reasons, "max carrier %wait", a.key.max_carrier_wait_pct, b.key.max_carrier_wait_pct, 1.0, 1, c.healthier);
  better_on(c.reasons, "carrier migrations/s", a.key.carrier_migrations_per_s, b.key.carrier_migrations_per_s, 10.0, 0,
            c.healthier);
  return c;
}

namespace {

// The carriers' optional key numbers, one row each: label, member, decimals.
struct Row {
  const char* label;
  std::optional<double> KeyNumbers::*value;
  int decimals;
};
constexpr Row kRows[] = {
    {"  contended (behind a task)", &KeyNumbers::max_carrier_contended_wait_pct, 1},
    {"carrier migrations/s", &KeyNumbers::carrier_migrations_per_s, 1},
    {"events per epoll cycle", &KeyNumbers::events_per_cycle, 2},
    {"  after a wait >= 100 us", &KeyNumbers::batch_after_long_wait, 2},
    {"  after a shorter wait", &KeyNumbers::batch_after_short_wait, 2},
    {"  % cycles after >= 100 us", &KeyNumbers::long_wait_cycles_pct, 2},
    {"queue depth at drain", &KeyNumbers::queue_depth_avg, 2},
};

void side_row(Out o, const char* label, std::optional<double> a, std::optional<double> b, int decimals) {
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", label, opt_text(a, decimals), opt_text(b, decimals));
}

void request_rows(Out o, const KeyNumbers& a, const KeyNumbers& b) {
  for (const RequestNumber& n : kRequestNumbers) side_row(o, n.label, a.*n.value, b.*n.value, n.decimals);
}

}  // namespace

std::string compare_text(const Diagnosis& a, const Diagnosis& b) {
  std::string s;
  Out o = std::back_inserter(s);
  const Comparison c = compare(a, b);
  // Request latency first when both runs have it (it decides); below the rest when one has it.
  const bool both = served(a.key) && served(b.key), one = served(a.key) != served(b.key);
  fmt::format_to(o, "platoon doctor  A: {}  vs  B: {}\n\n", a.label, b.label);
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "", "A", "B");
  if (both) request_rows(o, a.key, b.key);
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "findings", counts(a), counts(b));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "carriers", a.key.carriers, b.key.carriers);
  auto wait = [](const KeyNumbers& k) {
    return k.max_carrier_wait_pct ? fmt::format("{:.1f} ({})", *k.max_carrier_wait_pct, k.max_wait_thread) : "-";
  };
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "max carrier %wait", wait(a.key), wait(b.key));
  for (const Row& r : kRows) side_row(o, r.label, a.key.*r.value, b.key.*r.value, r.decimals);
  if (one) request_rows(o, a.key, b.key);
  if (c.healthier < 0) fmt::format_to(o, "\nhealthier: neither: {}\n", fmt::join(c.reasons, "; "));
  else
    fmt::format_to(o, "\nhealthier: {} ({}): {}\n", c.healthier ? "B" : "A", c.healthier ? b.label : a.label,
                   fmt::join(c.reasons, "; "));
  fmt::format_to(o, "\n== A: {}\n", a.label);
  text_findings(o, a);
  fmt::format_to(o, "\n== B: {}\n", b.label);
  text_findings(o, b);
  return s;
}

std::string compare_json(const Diagnosis& a, const Diagnosis& b, bool pretty) {
  const Comparison c = compare(a, b);
  Array reasons;
  for (const auto& r : c.reasons) reasons.emplace_back(r);
  auto pair = [](std::optional<double> x, std::optional<double> y, int dec) { return Array{opt(x, dec), opt(y, dec)}; };
  // The request numbers lead when either run has them (null for one that has not).
  Object side;
  if (served(a.key) || served(b.key))
    for (const RequestNumber& n : kRequestNumbers) side.emplace_back(n.key, pair(a.key.*n.value, b.key.*n.value, n.decimals));
  Object rest{{"findings", Array{a.findings.size(), b.findings.size()}},
              {"score", Array{a.score(), b.score()}},
              {"max_carrier_wait_pct", pair(a.key.max_carrier_wait_pct, b.key.max_carrier_wait_pct, 2)},
              {"max_carrier_contended_wait_pct", pair(a.key.max_carrier_contended_wait_pct, b.key.max_carrier_contended_wait_pct, 2)},
              {"carrier_migrations_per_s", pair(a.key.carrier_migrations_per_s, b.key.carrier_migrations_per_s, 1)},
              {"events_per_cycle", pair(a.key.events_per_cycle, b.key.events_per_cycle, 3)},
              {"events_per_cycle_after_long_wait", pair(a.key.batch_after_long_wait, b.key.batch_after_long_wait, 3)},
              {"events_per_cycle_after_short_wait", pair(a.key.batch_after_short_wait, b.key.batch_after_short_wait, 3)},
              {"long_wait_cycles_pct", pair(a.key.long_wait_cycles_pct, b.key.long_wait_cycles_pct, 3)},
              {"queue_depth_avg", pair(a.key.queue_depth_avg, b.key.queue_depth_avg, 3)}};
  for (auto& kv : rest) side.push_back(std::move(kv));
  Object top{{"healthier", c.healthier < 0 ? "neither" : c.healthier ? "b" : "a"},
             {"healthier_file", c.healthier < 0 ? "" : c.healthier ? b.label : a.label},
             {"why", std::move(reasons)},
             {"side_by_side", std::move(side)},
             {"a", diagnosis_object(a)},
             {"b", diagnosis_object(b)}};
  return write_json(Value(std::move(top)), pretty);
}

}  // namespace platoon::outputs::doctor
