#include "tui/model/export_targets.hpp"

#include <rapidjson/encodings.h>
#include <rapidjson/stringbuffer.h>

#include <utility>

namespace platoon::model {

std::string utf8_safe(const std::string& s) {
  // rapidjson's Validate takes a whole sequence's bytes before judging them: a lead byte at the
  // end (the kernel cuts a comm at 15 bytes, in the middle of a character if it must) would
  // read up to 3 bytes past the string. Padding with NULs (never continuation bytes) stops it.
  std::string padded = s;
  padded.append(4, '\0');
  rapidjson::StringStream in(padded.c_str());
  rapidjson::StringBuffer sink;
  bool ok = true;
  while (ok && in.Tell() < s.size()) ok = rapidjson::UTF8<>::Validate(in, sink);
  if (ok) return s;
  std::string out = s;
  for (char& c : out)
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  return out;
}

void add_targets(std::map<uint32_t, ExportThread>& targets, const Snapshot& s) {
  for (const auto& t : s.threads) targets[t.tid] = ExportThread{t.pid, utf8_safe(t.comm), {}};
}

void label_targets(std::map<uint32_t, ExportThread>& targets) {
  std::map<std::pair<uint32_t, std::string>, int> seen;
  for (const auto& [tid, t] : targets) ++seen[{t.pid, t.comm}];
  for (auto& [tid, t] : targets)
    t.label = seen[{t.pid, t.comm}] > 1 ? t.comm + " " + std::to_string(tid) : t.comm;
}

std::map<uint32_t, ExportThread> targets_of(std::span<const Snapshot> snapshots) {
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

}  // namespace platoon::model
