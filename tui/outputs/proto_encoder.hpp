// The protobuf wire format, encode side only, for the Perfetto export: varints, 64-bit fixed
// (doubles, fixed64) and length-delimited fields (strings, nested messages), appended to a byte
// string.
//
// Hand-written on purpose: Debian's libprotobuf would add protoc-generated code for a dozen
// messages of Perfetto's schema to the build, and writing those needs only these few rules
// (https://protobuf.dev/programming-guides/encoding/). A nested message is encoded into its own
// ProtoMessage and appended with its length, so no length is ever back-patched.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace platoon::outputs {

class ProtoMessage {
 public:
  // Wire type 0. Negative int32/int64 values are sign-extended to 64 bits (10 bytes), as
  // protobuf requires for the (non-zigzag) int32/int64 field types.
  void add_varint(uint32_t field, uint64_t value) {
    tag(field, 0);
    varint(value);
  }
  void add_int(uint32_t field, int64_t value) { add_varint(field, static_cast<uint64_t>(value)); }
  void add_bool(uint32_t field, bool value) { add_varint(field, value ? 1 : 0); }
  // Wire type 1: a double or a fixed64, little-endian (the only byte order platoon builds for).
  void add_double(uint32_t field, double value) { add_fixed(field, value); }
  void add_fixed64(uint32_t field, uint64_t value) { add_fixed(field, value); }
  // Wire type 2.
  void add_bytes(uint32_t field, std::string_view value) {
    tag(field, 2);
    varint(value.size());
    bytes_.append(value);
  }
  void add_message(uint32_t field, const ProtoMessage& m) { add_bytes(field, m.bytes_); }
  // Appends another message's fields to this one: encoded fields laid end to end are a message,
  // so fields can be gathered in one buffer and put behind others later.
  void append_fields(const ProtoMessage& m) { bytes_ += m.bytes_; }

  const std::string& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  void clear() { bytes_.clear(); }

 private:
  template <class T>
  void add_fixed(uint32_t field, T value) {
    static_assert(sizeof(T) == 8);
    tag(field, 1);
    char raw[8];
    std::memcpy(raw, &value, sizeof raw);
    bytes_.append(raw, sizeof raw);
  }
  void tag(uint32_t field, uint32_t wire_type) { varint((static_cast<uint64_t>(field) << 3) | wire_type); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
  }
  std::string bytes_;
};

}  // namespace platoon::outputs
