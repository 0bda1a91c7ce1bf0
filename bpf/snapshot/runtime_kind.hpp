// What kind of program a target is, so that advice can use its own knobs: platoon-runtime (its
// USDT probes), a JVM (libjvm mapped), a Go binary (its build info), or anything else. Found by
// bpf/collectors/runtime_detect.hpp on a live process; a recording keeps the name in its META.
#pragma once

#include <cstdint>
#include <string_view>

namespace platoon::snapshot {

enum class RuntimeKind : uint8_t { other = 0, platoon = 1, jvm = 2, go = 3 };

constexpr const char* to_string(RuntimeKind k) {
  switch (k) {
    case RuntimeKind::platoon: return "platoon-runtime";
    case RuntimeKind::jvm: return "jvm";
    case RuntimeKind::go: return "go";
    case RuntimeKind::other: break;
  }
  return "other";
}

// The inverse of to_string; anything else (an empty or unknown name) is `other`.
constexpr RuntimeKind runtime_kind_from(std::string_view name) {
  for (RuntimeKind k : {RuntimeKind::platoon, RuntimeKind::jvm, RuntimeKind::go})
    if (name == to_string(k)) return k;
  return RuntimeKind::other;
}

}  // namespace platoon::snapshot
