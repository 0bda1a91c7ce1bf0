#include "tui/outputs/export_targets.hpp"

#include <utility>

namespace platoon::outputs {

namespace {

// Length of the well-formed UTF-8 sequence at p (Unicode 15, table 3-7), 0 if there is none.
// Written here rather than with rapidjson's Validate, which reads a whole sequence's worth of
// bytes before judging it, past the end of a string that stops inside a character.
size_t sequence_length(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return len;
}

}  // namespace

std::string utf8_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const size_t len = sequence_length(p + i, s.size() - i);
    if (len == 0) {
      out += '?';  // one per byte that starts no character
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out;
}

void add_targets(std::map<uint32_t, ExportThread>& targets, const snapshot::Snapshot& s) {
  for (const auto& t : s.threads) targets[t.tid] = ExportThread{t.pid, utf8_safe(t.comm), {}};
}

void label_targets(std::map<uint32_t, ExportThread>& targets) {
  std::map<std::pair<uint32_t, std::string>, int> seen;
  for (const auto& [tid, t] : targets) ++seen[{t.pid, t.comm}];
  for (auto& [tid, t] : targets)
    t.label = seen[{t.pid, t.comm}] > 1 ? t.comm + " " + std::to_string(tid) : t.comm;
}

std::map<uint32_t, ExportThread> targets_of(std::span<const snapshot::Snapshot> snapshots) {
  std::map<uint32_t, ExportThread> threads;
  for (const auto& s : snapshots) add_targets(threads, s);
  label_targets(threads);
  return threads;
}

std::map<uint32_t, std::string> process_names(const std::map<uint32_t, ExportThread>& targets) {
  std::map<uint32_t, std::string> names;
  for (const auto& [tid, t] : targets)
    if (tid == t.pid || !names.count(t.pid)) names[t.pid] = t.comm;
  return names;
}

}  // namespace platoon::outputs
