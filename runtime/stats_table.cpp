#include "runtime/stats_table.hpp"

#include <cstddef>

namespace {
// Zero-filled (.bss): untouched pages cost nothing.
platoon_runtime_stats_slot g_slots[PLATOON_RUNTIME_STATS_MAX_SLOTS];
}  // namespace

static_assert(sizeof(platoon_runtime_stats_slot) % 64 == 0, "slots are whole cache lines");
static_assert(offsetof(platoon_runtime_stats_slot, seq) == 0, "the reader reads seq at offset 0");
static_assert(sizeof(void*) == sizeof(uint64_t), "the reader reads `slots` as a 64-bit address");

// The slot layout of PLATOON_RUNTIME_STATS_VERSION 1, as a reader in another process (another
// build of platoon) knows it: a change to the counter list that moves these is a new version.
static_assert(offsetof(platoon_runtime_stats_slot, drains) == 16);
static_assert(offsetof(platoon_runtime_stats_slot, drain_depth_sum) == 24);
static_assert(offsetof(platoon_runtime_stats_slot, drain_fibers_run) == 32);
static_assert(offsetof(platoon_runtime_stats_slot, drain_ns) == 40);
static_assert(offsetof(platoon_runtime_stats_slot, steals) == 48);
static_assert(offsetof(platoon_runtime_stats_slot, stolen_fibers) == 56);
static_assert(offsetof(platoon_runtime_stats_slot, drain_depth_hist) == 64);
static_assert(PLATOON_DRAIN_DEPTH_SLOTS == 65 && sizeof(platoon_runtime_stats_slot) == 640);

// C linkage from the declaration. Constant-initialised (.data): the magic is readable before any carrier starts. `used` and
// default visibility keep the symbol in the image (and in .dynsym of a shared runtime) for a
// tracer's symbol lookup even though nothing here names it.
__attribute__((used, visibility("default"))) platoon_runtime_stats_header platoon_runtime_stats = {
    PLATOON_RUNTIME_STATS_MAGIC,
    PLATOON_RUNTIME_STATS_VERSION,
    sizeof(platoon_runtime_stats_slot),
    PLATOON_RUNTIME_STATS_MAX_SLOTS,
    PLATOON_DRAIN_DEPTH_SLOTS,
    0,
    0,
    0,
    g_slots,
};

namespace platoon::rt {

namespace {

// Takes a slot: never-used ones first (slots_used grows), so a released slot, whose counts a
// reader may not have read yet, is reused only once every slot was taken once.
platoon_runtime_stats_slot* take_slot() {
  std::atomic_ref<uint32_t> used(platoon_runtime_stats.slots_used);
  uint32_t n = used.load(std::memory_order_relaxed);
  while (n < PLATOON_RUNTIME_STATS_MAX_SLOTS) {
    if (used.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
      std::atomic_ref<uint32_t>(g_slots[n].in_use).store(1, std::memory_order_relaxed);
      return &g_slots[n];
    }
  }
  for (auto& s : g_slots) {
    uint32_t free = 0;
    if (std::atomic_ref<uint32_t>(s.in_use).compare_exchange_strong(free, 1, std::memory_order_relaxed)) return &s;
  }
  return nullptr;
}

}  // namespace

StatsSlot StatsSlot::claim(pid_t tid) {
  platoon_runtime_stats_slot* s = take_slot();
  if (!s) {
    std::atomic_ref<uint64_t>(platoon_runtime_stats.overflow).fetch_add(1, std::memory_order_relaxed);
    return StatsSlot();
  }
  StatsSlot slot(s);
  // A new thread starts from zero, inside the seqlock, so a reader never pairs the new tid
  // with the previous owner's counts.
  slot.begin();
  std::atomic_ref<int32_t>(s->tid).store(tid, std::memory_order_relaxed);
#define PLATOON_ZERO_COUNTER(name) std::atomic_ref<uint64_t>(s->name).store(0, std::memory_order_relaxed);
#define PLATOON_ZERO_HIST(name, slots) \
  for (uint64_t& h : s->name) std::atomic_ref<uint64_t>(h).store(0, std::memory_order_relaxed);
  PLATOON_DRAIN_COUNTERS(PLATOON_ZERO_COUNTER, PLATOON_ZERO_HIST)
#undef PLATOON_ZERO_COUNTER
#undef PLATOON_ZERO_HIST
  slot.end();
  return slot;
}

StatsSlot& StatsSlot::operator=(StatsSlot&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = nullptr;
  }
  return *this;
}

int StatsSlot::index() const { return slot_ ? static_cast<int>(slot_ - g_slots) : -1; }

// The counts stay (tid too): a reader that has not read the last ones yet still finds them.
void StatsSlot::release() {
  if (!slot_) return;
  std::atomic_ref<uint32_t>(slot_->in_use).store(0, std::memory_order_release);
  slot_ = nullptr;
}

}  // namespace platoon::rt
