// Every entry of a BPF hash map, read with BPF_MAP_LOOKUP_BATCH: a few bpf() calls per
// snapshot instead of two per key (get_next_key + lookup), which is most of a snapshot's system
// time on a target with thousands of threads. Kernels without batch ops (before 5.6) answer
// EINVAL or ENOTSUPP: then the per-key walk.
//
// Neither way is an atomic copy of the map: an entry inserted or deleted during the read may
// or may not appear, as with any reader of a live map; each value is copied whole.
#pragma once

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace platoon::collectors {

template <class K, class V>
void read_map_by_key(int fd, std::vector<std::pair<K, V>>* out) {
  K key{}, next{};
  const K* prev = nullptr;
  V v{};
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    if (bpf_map_lookup_elem(fd, &next, &v) == 0) out->emplace_back(next, v);
    key = next;
    prev = &key;
  }
}

// All entries, appended to `out`. `chunk` entries are fetched per call (grown when one hash
// bucket holds more than that, which the kernel answers with ENOSPC).
template <class K, class V>
void read_map(int fd, std::vector<std::pair<K, V>>* out, uint32_t chunk = 1024) {
  std::vector<K> keys(chunk);
  std::vector<V> values(chunk);
  // The resume token: for hash maps a bucket index (4 bytes); room for any map type's.
  alignas(8) unsigned char in[sizeof(K) < 8 ? 8 : sizeof(K)] = {};
  alignas(8) unsigned char next[sizeof in] = {};
  bool first = true;
  const size_t start = out->size();
  for (;;) {
    uint32_t count = static_cast<uint32_t>(keys.size());
    const int rc = bpf_map_lookup_batch(fd, first ? nullptr : in, next, keys.data(), values.data(), &count, nullptr);
    const int err = rc < 0 ? errno : 0;
    if (rc < 0 && first && count == 0 && err != ENOENT && err != ENOSPC) {
      out->resize(start);  // no batch ops here (EINVAL, ENOTSUPP): the per-key walk
      read_map_by_key(fd, out);
      return;
    }
    for (uint32_t i = 0; i < count; ++i) out->emplace_back(keys[i], values[i]);
    if (rc == 0 || err == ENOSPC) {
      if (err == ENOSPC && count == 0) {  // one bucket holds more than a chunk
        keys.resize(keys.size() * 2);
        values.resize(values.size() * 2);
        continue;
      }
      std::memcpy(in, next, sizeof in);
      first = false;
      continue;
    }
    return;  // ENOENT: the end (or an error mid-way: what was read stays)
  }
}

}  // namespace platoon::collectors
