#include "bpf/collectors/runtime_stats_reader.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/stats_table.hpp"

namespace platoon::collectors {

namespace {

constexpr const char* kSymbol = "platoon_runtime_stats";
constexpr uint32_t kMaxSlots = 4096;  // a table claiming more is not ours
constexpr int kTries = 4;             // reads of a slot the carrier is writing at that moment

struct ElfDeleter {
  void operator()(Elf* e) const { elf_end(e); }
};
struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) close(fd); }
};

// A file mapped by the process, as /proc/PID/maps names it.
struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string path;
};

std::vector<Mapping> file_mappings(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    unsigned maj = 0, min = 0;
    unsigned long long start = 0, end = 0, off = 0, ino = 0;
    char perms[8] = {};
    int used = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &ino,
                    &used) < 7 || ino == 0)
      continue;
    m.start = start;
    m.end = end;
    m.offset = off;
    m.dev = makedev(maj, min);
    m.ino = static_cast<ino_t>(ino);
    m.path = line.substr(static_cast<size_t>(used));
    out.push_back(std::move(m));
  }
  return out;
}

// The symbol's link-time address in an ELF file, and the file's link-time address of file
// offset 0 (to compute the load bias from the mapping at offset 0).
struct Found {
  uint64_t value = 0;
  uint64_t base_vaddr = 0;
  bool pie = false;
};

std::optional<Found> find_symbol(int fd) {
  std::unique_ptr<Elf, ElfDeleter> elf(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return std::nullopt;
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf.get(), &eh)) return std::nullopt;
  std::optional<Found> found;
  Elf_Scn* scn = nullptr;
  while (!found && (scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    const size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; data && i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT) continue;
      const char* name = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
      if (name && std::strcmp(name, kSymbol) == 0) {
        found = Found{sym.st_value, 0, eh.e_type == ET_DYN};
        break;
      }
    }
  }
  if (!found) return std::nullopt;
  size_t phnum = 0;
  elf_getphdrnum(elf.get(), &phnum);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0) {
      found->base_vaddr = ph.p_vaddr;
      break;
    }
  }
  return found;
}

bool read_remote(pid_t pid, uint64_t addr, void* out, size_t len) {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

RuntimeCounts minus(const RuntimeCounts& a, const RuntimeCounts& b) {
  RuntimeCounts d;
#define PLATOON_MINUS_COUNTER(name) d.name = a.name - b.name;
#define PLATOON_MINUS_HIST(name, slots) \
  for (size_t i = 0; i < d.name.size(); ++i) d.name[i] = a.name[i] - b.name[i];
  PLATOON_DRAIN_COUNTERS(PLATOON_MINUS_COUNTER, PLATOON_MINUS_HIST)
#undef PLATOON_MINUS_COUNTER
#undef PLATOON_MINUS_HIST
  return d;
}

// Every counter only grows while one thread holds the slot; a drop means a new owner (same
// tid number reused), whose counts started from zero.
bool covers(const RuntimeCounts& a, const RuntimeCounts& b) {
#define PLATOON_COVERS_COUNTER(name) \
  if (a.name < b.name) return false;
#define PLATOON_COVERS_HIST(name, slots) \
  for (size_t i = 0; i < a.name.size(); ++i)     \
    if (a.name[i] < b.name[i]) return false;
  PLATOON_DRAIN_COUNTERS(PLATOON_COVERS_COUNTER, PLATOON_COVERS_HIST)
#undef PLATOON_COVERS_COUNTER
#undef PLATOON_COVERS_HIST
  return true;
}

// Copies every counter between two structs that name them as the list does: the slot,
// RuntimeCounts and ThreadSample.
template <typename From, typename To>
void copy_counts(const From& from, To& to) {
#define PLATOON_COPY_COUNTER(name) to.name = from.name;
#define PLATOON_COPY_HIST(name, slots)                                              \
  static_assert(sizeof from.name == sizeof to.name, #name ": histograms differ"); \
  std::copy(std::begin(from.name), std::end(from.name), std::begin(to.name));
  PLATOON_DRAIN_COUNTERS(PLATOON_COPY_COUNTER, PLATOON_COPY_HIST)
#undef PLATOON_COPY_COUNTER
#undef PLATOON_COPY_HIST
}

// Every counter of the list is booked by a drain or a steal (PLATOON_ON_DRAIN, PLATOON_ON_STEAL
// in runtime/drain_counters.h): one listed but booked by neither would read zero forever.
constexpr bool every_counter_booked() {
  RuntimeCounts c;
#define PLATOON_BOOK_ADD(name, n) c.name += n;
#define PLATOON_BOOK_ADD_SLOT(name, i) ++c.name[i];
  PLATOON_ON_DRAIN(PLATOON_BOOK_ADD, PLATOON_BOOK_ADD_SLOT, 1, 1, 1)
  PLATOON_ON_STEAL(PLATOON_BOOK_ADD, 1)
#undef PLATOON_BOOK_ADD
#undef PLATOON_BOOK_ADD_SLOT
  bool all = true;
#define PLATOON_BOOKED_COUNTER(name) all = all && c.name > 0;
#define PLATOON_BOOKED_HIST(name, slots) all = all && c.name[1] > 0;
  PLATOON_DRAIN_COUNTERS(PLATOON_BOOKED_COUNTER, PLATOON_BOOKED_HIST)
#undef PLATOON_BOOKED_COUNTER
#undef PLATOON_BOOKED_HIST
  return all;
}
static_assert(every_counter_booked(), "a counter of PLATOON_DRAIN_COUNTERS that no event books");

}  // namespace

std::optional<uint64_t> find_runtime_stats(pid_t pid, std::string* why) {
  if (elf_version(EV_CURRENT) == EV_NONE) return *why = "libelf is unusable", std::nullopt;
  struct stat exe{};
  const bool have_exe = stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &exe) == 0;
  std::vector<Mapping> maps = file_mappings(pid);
  if (maps.empty()) return *why = "cannot read /proc/" + std::to_string(pid) + "/maps", std::nullopt;
  // The executable first (where a static libplatoon-runtime.a lands), then each other object
  // once, by the mapping of its file offset 0.
  std::stable_partition(maps.begin(), maps.end(),
                        [&](const Mapping& m) { return have_exe && m.dev == exe.st_dev && m.ino == exe.st_ino; });
  std::set<std::pair<dev_t, ino_t>> tried;
  for (const Mapping& m : maps) {
    if (m.offset != 0 || !tried.insert({m.dev, m.ino}).second) continue;
    // map_files names the mapped file itself, in whatever mount namespace the target lives.
    char name[96];
    std::snprintf(name, sizeof name, "/proc/%d/map_files/%llx-%llx", static_cast<int>(pid),
                  static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end));
    Fd fd{::open(name, O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) continue;
    const std::optional<Found> f = find_symbol(fd.fd);
    if (!f) continue;
    const uint64_t bias = f->pie ? m.start - f->base_vaddr : 0;
    if (why) *why = m.path;
    return f->value + bias;
  }
  if (why) *why = "no symbol " + std::string(kSymbol);
  return std::nullopt;
}

std::unique_ptr<RuntimeStatsReader> RuntimeStatsReader::open(pid_t pid, std::string* why) {
  std::string where;
  const std::optional<uint64_t> addr = find_runtime_stats(pid, &where);
  if (!addr) return *why = where, nullptr;
  std::unique_ptr<RuntimeStatsReader> r(new RuntimeStatsReader(pid, *addr));
  r->where_ = where;
  r->mem_fd_ = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  uint64_t slots_addr = 0;
  uint32_t used = 0;
  if (!r->read_header(&slots_addr, &used, why)) return nullptr;
  const std::vector<std::optional<Slot>> slots = r->read_slots(slots_addr, used);
  r->last_.resize(slots.size());
  for (uint32_t i = 0; i < slots.size(); ++i)
    if (slots[i]) {
      r->last_[i] = *slots[i];
      r->baseline_[{i, slots[i]->tid}] = slots[i]->counts;
    }
  return r;
}

RuntimeStatsReader::~RuntimeStatsReader() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

// process_vm_readv, or the held /proc/PID/mem when the call is no longer allowed.
bool RuntimeStatsReader::read_mem(uint64_t addr, void* out, size_t len) const {
  if (read_remote(pid_, addr, out, len)) return true;
  if (errno != EPERM || mem_fd_ < 0) return false;
  return pread(mem_fd_, out, len, static_cast<off_t>(addr)) == static_cast<ssize_t>(len);
}

// One slot through the held /proc/PID/mem: seq, the slot, seq again, in that order.
std::optional<RuntimeStatsReader::Slot> RuntimeStatsReader::read_slot_mem(uint64_t at) const {
  platoon_runtime_stats_slot s{};
  uint32_t before = 0, after = 0;
  const auto off = static_cast<off_t>(at);
  if (pread(mem_fd_, &before, sizeof before, off) != sizeof before || pread(mem_fd_, &s, sizeof s, off) != sizeof s ||
      pread(mem_fd_, &after, sizeof after, off) != sizeof after || before != after || (before & 1) || s.seq != before)
    return std::nullopt;
  Slot r;
  r.tid = s.tid;
  copy_counts(s, r.counts);
  return r;
}

bool RuntimeStatsReader::read_header(uint64_t* slots_addr, uint32_t* used, std::string* why) {
  platoon_runtime_stats_header h{};
  if (!read_mem(addr_, &h, sizeof h))
    return *why = "cannot read the runtime stats table: " + std::string(std::strerror(errno)), false;
  if (h.magic != PLATOON_RUNTIME_STATS_MAGIC || h.version != PLATOON_RUNTIME_STATS_VERSION ||
      h.slot_bytes != sizeof(platoon_runtime_stats_slot) || h.depth_slots != PLATOON_DRAIN_DEPTH_SLOTS ||
      h.max_slots == 0 || h.max_slots > kMaxSlots) {
    std::ostringstream s;
    s << "runtime stats table of another layout (version " << h.version << ", " << h.slot_bytes << "-byte slots)";
    return *why = s.str(), false;
  }
  max_slots_ = h.max_slots;
  overflow_ = h.overflow;
  *slots_addr = reinterpret_cast<uint64_t>(h.slots);
  *used = std::min(h.slots_used, h.max_slots);
  return true;
}

// Each slot as seq, the slot, seq again, in one process_vm_readv per batch (the kernel copies
// the iovecs in order): equal and even seqs give a cut between two updates. A slot caught
// mid-update is read again, up to kTries times.
std::vector<std::optional<RuntimeStatsReader::Slot>> RuntimeStatsReader::read_slots(uint64_t slots_addr,
                                                                                    uint32_t used) const {
  std::vector<std::optional<Slot>> out(used);
  constexpr uint32_t kBatch = 256;  // 3 iovecs per slot, under IOV_MAX (1024)
  constexpr size_t kSize = sizeof(platoon_runtime_stats_slot);
  std::vector<uint32_t> todo(used);
  for (uint32_t i = 0; i < used; ++i) todo[i] = i;
  std::vector<platoon_runtime_stats_slot> buf(kBatch);
  std::vector<uint32_t> seq_after(kBatch);
  for (int attempt = 0; attempt < kTries && !todo.empty(); ++attempt) {
    std::vector<uint32_t> again;
    for (size_t b = 0; b < todo.size(); b += kBatch) {
      const size_t n = std::min<size_t>(kBatch, todo.size() - b);
      std::vector<iovec> local, remote;
      for (size_t k = 0; k < n; ++k) {
        const uint64_t at = slots_addr + uint64_t{todo[b + k]} * kSize;
        local.push_back({&buf[k].seq, sizeof(uint32_t)});
        remote.push_back({reinterpret_cast<void*>(at), sizeof(uint32_t)});
        local.push_back({&buf[k], kSize});
        remote.push_back({reinterpret_cast<void*>(at), kSize});
        local.push_back({&seq_after[k], sizeof(uint32_t)});
        remote.push_back({reinterpret_cast<void*>(at), sizeof(uint32_t)});
      }
      // The slot copy overwrites buf[k].seq: keep the first read's value aside.
      std::vector<uint32_t> seq_before(n);
      for (size_t k = 0; k < n; ++k) local[3 * k].iov_base = &seq_before[k];
      const ssize_t want = static_cast<ssize_t>(n * (kSize + 2 * sizeof(uint32_t)));
      if (process_vm_readv(pid_, local.data(), local.size(), remote.data(), remote.size(), 0) != want) {
        if (errno != EPERM || mem_fd_ < 0) return out;
        for (size_t k = 0; k < n; ++k) {  // not allowed any more: the held descriptor, a slot at a time
          const std::optional<Slot> r = read_slot_mem(slots_addr + uint64_t{todo[b + k]} * kSize);
          if (!r) again.push_back(todo[b + k]);
          else if (r->tid > 0) out[todo[b + k]] = r;
        }
        continue;
      }
      for (size_t k = 0; k < n; ++k) {
        const platoon_runtime_stats_slot& s = buf[k];
        if (seq_before[k] != seq_after[k] || (seq_before[k] & 1) || s.seq != seq_before[k]) {
          again.push_back(todo[b + k]);
          continue;
        }
        if (s.tid <= 0) continue;  // never claimed, or being claimed
        Slot r;
        r.tid = s.tid;
        copy_counts(s, r.counts);
        out[todo[b + k]] = r;
      }
    }
    todo = std::move(again);
  }
  return out;
}

const std::map<pid_t, RuntimeCounts>& RuntimeStatsReader::read() {
  uint64_t slots_addr = 0;
  uint32_t used = 0;
  std::string why;
  if (!read_header(&slots_addr, &used, &why)) return current_;  // gone: the last counts stand
  const std::vector<std::optional<Slot>> slots = read_slots(slots_addr, used);
  if (last_.size() < slots.size()) last_.resize(slots.size());
  std::map<pid_t, RuntimeCounts> now;
  for (uint32_t i = 0; i < last_.size(); ++i) {
    if (i < slots.size() && slots[i]) last_[i] = *slots[i];
    const Slot& s = last_[i];
    if (s.tid <= 0) continue;
    auto base = baseline_.find({i, s.tid});
    if (base != baseline_.end() && !covers(s.counts, base->second)) base = (baseline_.erase(base), baseline_.end());
    now[s.tid] = base == baseline_.end() ? s.counts : minus(s.counts, base->second);
  }
  current_ = std::move(now);
  return current_;
}

void RuntimeStatsReader::fill(std::vector<snapshot::ThreadSample>& threads) {
  const std::map<pid_t, RuntimeCounts>& counts = read();
  for (snapshot::ThreadSample& t : threads) {
    if (t.pid != static_cast<uint32_t>(pid_)) continue;
    auto it = counts.find(static_cast<pid_t>(t.tid));
    if (it == counts.end()) continue;
    copy_counts(it->second, t);
  }
}

}  // namespace platoon::collectors
