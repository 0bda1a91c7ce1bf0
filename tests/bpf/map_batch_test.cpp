// read_map (bpf/collectors/map_batch.hpp) against what was written into a real kernel hash map:
// every entry exactly once with its value, through batches of any size (a batch smaller than a
// bucket grows) and through the per-key walk.
#include <gtest/gtest.h>
#include <bpf/bpf.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "bpf/collectors/map_batch.hpp"
#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

struct Value {
  uint64_t a, b;
  char pad[48];
};

class MapBatchTest : public BpfTest {
 protected:
  int make_map(uint32_t entries, uint32_t fill) {
    const int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "batch_test", sizeof(uint32_t), sizeof(Value), entries, nullptr);
    EXPECT_GE(fd, 0);
    for (uint32_t k = 1; k <= fill; ++k) {
      Value v{};
      v.a = k * 3ull;
      v.b = ~uint64_t{k};
      EXPECT_EQ(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
    }
    return fd;
  }
  static void expect_exact(const std::vector<std::pair<uint32_t, Value>>& got, uint32_t fill) {
    std::map<uint32_t, int> seen;
    for (const auto& [k, v] : got) {
      ++seen[k];
      EXPECT_EQ(v.a, k * 3ull) << k;
      EXPECT_EQ(v.b, ~uint64_t{k}) << k;
    }
    EXPECT_EQ(got.size(), size_t{fill});
    EXPECT_EQ(seen.size(), size_t{fill});
    for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
  }
};

TEST_F(MapBatchTest, EveryEntryOnceInAnyBatchSize) {
  const uint32_t fill = 5000;
  const int fd = make_map(8192, fill);
  ASSERT_GE(fd, 0);
  for (uint32_t chunk : {1u, 7u, 1024u, 100000u}) {
    std::vector<std::pair<uint32_t, Value>> got;
    read_map(fd, &got, chunk);
    SCOPED_TRACE(chunk);
    expect_exact(got, fill);
  }
  std::vector<std::pair<uint32_t, Value>> walked;
  read_map_by_key(fd, &walked);
  expect_exact(walked, fill);
  close(fd);
}

TEST_F(MapBatchTest, EmptyAndFullMaps) {
  for (uint32_t fill : {0u, 64u}) {
    const int fd = make_map(64, fill);
    ASSERT_GE(fd, 0);
    std::vector<std::pair<uint32_t, Value>> got;
    read_map(fd, &got, 16);
    expect_exact(got, fill);
    close(fd);
  }
}

}  // namespace
}  // namespace platoon::tests::testing
