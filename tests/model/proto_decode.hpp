// A minimal protobuf wire-format decoder for the tests of the Perfetto export, written from the
// encoding rules (https://protobuf.dev/programming-guides/encoding/), not from the encoder:
// varints, fixed64 and length-delimited fields, a message being its fields laid end to end.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace platoon::tests {

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;      // varint or fixed64
  std::string bytes;       // length-delimited
};

inline std::vector<Field> parse(const std::string& buf) {
  std::vector<Field> out;
  size_t p = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0; p < buf.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(buf[p++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    ADD_FAILURE() << "truncated varint";
    return v;
  };
  while (p < buf.size()) {
    Field f;
    const uint64_t tag = varint();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint32_t>(tag & 7);
    if (f.wire == 0) {
      f.value = varint();
    } else if (f.wire == 1) {
      std::memcpy(&f.value, buf.data() + p, 8);
      p += 8;
    } else if (f.wire == 2) {
      const uint64_t n = varint();
      f.bytes = buf.substr(p, n);
      p += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      break;
    }
    out.push_back(std::move(f));
  }
  return out;
}
inline std::vector<Field> all(const std::vector<Field>& fs, uint32_t number) {
  std::vector<Field> out;
  for (const auto& f : fs)
    if (f.number == number) out.push_back(f);
  return out;
}
inline const Field* one(const std::vector<Field>& fs, uint32_t number) {
  for (const auto& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}

}  // namespace platoon::tests
