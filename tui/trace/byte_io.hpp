// The format's primitives (docs/trace-format.md): fixed little-endian integers, LEB128 varints
// and length-prefixed strings, written into a growing buffer and read from a bounded span. The
// chunk codecs (snapshot_codec.cpp) and the files' framing (trace_writer.cpp, trace_reader.cpp)
// both use them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "tui/trace/trace_format.hpp"

namespace platoon::trace {

// Appends the format's primitives: fixed little-endian integers, LEB128 varints (most counters
// are small, histograms mostly zero: one byte each), length-prefixed strings.
class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back(uint8_t(v >> (8 * i)));
  }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(uint8_t(v));
  }
  void str(const std::string& s) {
    // Longer strings are cut rather than making the whole chunk unreadable.
    size_t n = s.size() < kMaxStringBytes ? s.size() : kMaxStringBytes;
    varint(n);
    buf_.insert(buf_.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void bytes(const void* p, size_t n) {
    auto b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  // Histograms: slot count without the trailing zero slots, then the slots.
  template <size_t N>
  void hist(const std::array<uint64_t, N>& h) {
    size_t n = N;
    while (n > 0 && h[n - 1] == 0) --n;
    varint(n);
    for (size_t i = 0; i < n; ++i) varint(h[i]);
  }
  void list(const std::vector<uint64_t>& v) {
    size_t n = v.size() < kMaxCpusInTrace ? v.size() : kMaxCpusInTrace;
    varint(n);
    for (size_t i = 0; i < n; ++i) varint(v[i]);
  }
  std::vector<uint8_t>& buf() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

// Reads the format's primitives from a bounded span. A failed read sets a sticky flag and
// returns zeros, so decoders read straight through and check ok() once; nothing ever reads past
// the end, and every count is checked against the bytes left before it is used.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> b) : b_(b) {}
  bool ok() const { return ok_; }
  size_t remaining() const { return b_.size() - pos_; }
  void fail() { ok_ = false; pos_ = b_.size(); }

  uint8_t u8() {
    if (remaining() < 1) return fail(), 0;
    return b_[pos_++];
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (remaining() < 1) return fail(), 0;
      uint8_t byte = b_[pos_++];
      // The tenth byte may only carry the top bit of a 64-bit value.
      if (shift == 63 && byte > 1) return fail(), 0;
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    return fail(), 0;  // more than 10 bytes
  }
  uint32_t varint32() {
    uint64_t v = varint();
    if (v > std::numeric_limits<uint32_t>::max()) return fail(), 0;
    return static_cast<uint32_t>(v);
  }
  // A count of items that each take at least one byte: bounded by what is left and by `max`.
  size_t count(size_t max) {
    uint64_t n = varint();
    if (n > max || n > remaining()) return fail(), 0;
    return static_cast<size_t>(n);
  }
  std::string str() {
    size_t n = count(kMaxStringBytes);
    if (n == 0) return {};
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  template <size_t N>
  void hist(std::array<uint64_t, N>& h) {
    size_t n = count(N);
    for (size_t i = 0; i < n && ok_; ++i) h[i] = varint();
  }
  // A list of at most `max` varints (the format's limit) of which the first `keep` are kept;
  // the rest are read and dropped. Returns how many were dropped.
  size_t list(std::vector<uint64_t>& v, size_t max, size_t keep) {
    size_t n = count(max);
    v.resize(std::min(n, keep));
    for (size_t i = 0; i < n && ok_; ++i) {
      uint64_t x = varint();
      if (i < v.size()) v[i] = x;
    }
    return n - v.size();
  }
  std::span<const uint8_t> rest() {
    auto r = b_.subspan(pos_);
    pos_ = b_.size();
    return r;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace platoon::trace
