#include "bpf/collectors/runtime_detect.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

namespace platoon::collectors {

namespace {

// Caps on what one detection reads: a target is never trusted to be small or well formed.
constexpr size_t kMaxMapsBytes = 32u << 20;     // a JVM with a huge heap maps thousands of areas
constexpr size_t kMaxSections = 1u << 16;
constexpr uint64_t kMaxNoteBytes = 16u << 20;   // one note section or segment
constexpr uint64_t kMaxNamesBytes = 16u << 20;  // the section-name table
constexpr size_t kMaxObjects = 512;             // shared objects looked at per process

constexpr uint32_t kNtStapsdt = 3;       // NT_STAPSDT, owner "stapsdt"
constexpr uint32_t kNtGoBuildId = 4;     // ELF_NOTE_GOBUILDID_TAG, owner "Go"
constexpr std::string_view kProvider = "platoon";

struct ElfDeleter {
  void operator()(Elf* e) const { elf_end(e); }
};
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { if (fd >= 0) close(fd); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::string proc_path(pid_t pid, const char* file) { return "/proc/" + std::to_string(pid) + "/" + file; }

// The whole of a /proc file, up to CAP bytes (a proc file's size is 0, so read until EOF).
std::string read_capped(const std::string& path, size_t cap) {
  std::string out;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) return out;
  char buf[16384];
  while (out.size() < cap) {
    const ssize_t n = ::read(fd.fd, buf, std::min(sizeof buf, cap - out.size()));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// One line of /proc/PID/maps: "start-end perms offset maj:min inode   path".
struct MapsLine {
  uint64_t start = 0, end = 0, offset = 0, dev = 0, ino = 0;
  std::string_view path;
};
bool parse_maps_line(std::string_view line, MapsLine* m) {
  const std::string text(line);  // sscanf needs the terminator
  unsigned long long start = 0, end = 0, off = 0, ino = 0;
  unsigned maj = 0, min = 0;
  char perms[8] = {};
  int used = 0;
  if (std::sscanf(text.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &ino,
                  &used) < 7)
    return false;
  *m = {start, end, off, makedev(maj, min), ino, {}};
  std::string_view path = used > 0 ? line.substr(static_cast<size_t>(used)) : std::string_view{};
  // A file unlinked since it was mapped (a JVM upgraded in place) is still that file.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() >= kDeleted.size() && path.substr(path.size() - kDeleted.size()) == kDeleted)
    path.remove_suffix(kDeleted.size());
  m->path = path;
  return true;
}

template <typename F>
void for_each_maps_line(std::string_view maps, F&& f) {
  while (!maps.empty()) {
    const size_t nl = maps.find('\n');
    const std::string_view line = maps.substr(0, nl);
    maps.remove_prefix(nl == std::string_view::npos ? maps.size() : nl + 1);
    MapsLine m;
    if (parse_maps_line(line, &m) && !f(m)) return;
  }
}

// The notes of one note section or segment: stapsdt probes of our provider, Go's build id.
void scan_notes(Elf_Data* data, bool elf64, ElfTraits* t) {
  if (!data || !data->d_buf) return;
  const auto* base = static_cast<const unsigned char*>(data->d_buf);
  size_t offset = 0;
  GElf_Nhdr nh;
  size_t name_off = 0, desc_off = 0;
  while (offset < data->d_size) {
    const size_t next = gelf_getnote(data, offset, &nh, &name_off, &desc_off);
    if (next == 0 || next <= offset) break;
    offset = next;
    const std::string_view owner(reinterpret_cast<const char*>(base + name_off),
                                 nh.n_namesz ? nh.n_namesz - 1 : 0);  // namesz counts the NUL
    if (nh.n_type == kNtGoBuildId && owner == "Go") t->go = true;
    if (nh.n_type == kNtStapsdt && owner == "stapsdt" &&
        stapsdt_provider({base + desc_off, nh.n_descsz}, elf64) == kProvider)
      t->platoon_probes = true;
    if (t->platoon_probes && t->go) return;
  }
}

// Only when a binary has no section headers (sstrip): the loaded notes, where Go's build id
// lives; stapsdt notes are never loaded, so such a binary has none to find.
void scan_note_segments(Elf* elf, bool elf64, ElfTraits* t) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return;
  for (size_t i = 0; i < phnum && i < kMaxSections; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_NOTE || ph.p_filesz > kMaxNoteBytes) continue;
    scan_notes(elf_getdata_rawchunk(elf, static_cast<int64_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR), elf64, t);
  }
}

// Opens a regular file only: a mapped device (/dev/zero, a GPU) must not be opened or read.
int open_regular(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    return -1;
  }
  return fd;
}

ElfTraits traits_of(const std::string& path) {
  Fd fd(open_regular(path));
  return fd.fd < 0 ? ElfTraits{} : elf_traits(fd.fd);
}

// A platoon-runtime linked as a shared object: its notes are in that object, not the executable.
bool shared_object_has_probes(pid_t pid, std::string_view maps) {
  struct stat exe{};
  const bool have_exe = ::stat(proc_path(pid, "exe").c_str(), &exe) == 0;
  size_t looked = 0;
  for (const MappedObject& o : mapped_objects(maps)) {
    if (have_exe && o.dev == exe.st_dev && o.ino == exe.st_ino) continue;  // already read
    if (++looked > kMaxObjects) return false;
    // map_files names the mapped file itself in the target's mount namespace; it needs
    // CAP_SYS_ADMIN, so the path under the target's root is the fallback.
    char name[96];
    std::snprintf(name, sizeof name, "/proc/%d/map_files/%llx-%llx", static_cast<int>(pid),
                  static_cast<unsigned long long>(o.start), static_cast<unsigned long long>(o.end));
    Fd fd(open_regular(name));
    if (fd.fd < 0 && !o.path.empty() && o.path.front() == '/') fd.fd = open_regular(proc_path(pid, "root") + o.path);
    if (fd.fd >= 0 && elf_traits(fd.fd).platoon_probes) return true;
  }
  return false;
}

}  // namespace

bool maps_map_libjvm(std::string_view maps) {
  bool found = false;
  for_each_maps_line(maps, [&](const MapsLine& m) {
    const size_t slash = m.path.rfind('/');
    found = m.ino != 0 && m.path.substr(slash == std::string_view::npos ? 0 : slash + 1) == "libjvm.so";
    return !found;
  });
  return found;
}

std::vector<MappedObject> mapped_objects(std::string_view maps) {
  std::vector<MappedObject> out;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for_each_maps_line(maps, [&](const MapsLine& m) {
    // Offset 0 is the mapping of the ELF header; inode 0 is anonymous memory or [vdso] and kin.
    if (m.offset == 0 && m.ino != 0 && seen.insert({m.dev, m.ino}).second)
      out.push_back({m.start, m.end, m.dev, m.ino, std::string(m.path)});
    return true;
  });
  return out;
}

std::string_view stapsdt_provider(std::span<const unsigned char> desc, bool elf64) {
  const size_t addrs = 3 * (elf64 ? 8 : 4);  // the probe's pc, the .stapsdt.base address, the semaphore
  if (desc.size() <= addrs) return {};
  const auto* s = reinterpret_cast<const char*>(desc.data() + addrs);
  const size_t room = desc.size() - addrs;
  const size_t len = strnlen(s, room);
  if (len == room) return {};  // not terminated inside the descriptor
  return {s, len};
}

ElfTraits elf_traits(int fd) {
  ElfTraits t;
  if (elf_version(EV_CURRENT) == EV_NONE) return t;
  // ELF_C_READ, not an mmap: libelf then preads only the headers and the sections asked for,
  // and a file truncated under us is a failed read, not a SIGBUS.
  std::unique_ptr<Elf, ElfDeleter> elf(elf_begin(fd, ELF_C_READ, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return t;
  const int cls = gelf_getclass(elf.get());
  if (cls == ELFCLASSNONE) return t;
  t.elf = true;
  const bool elf64 = cls == ELFCLASS64;
  size_t shnum = 0, shstrndx = 0;
  if (elf_getshdrnum(elf.get(), &shnum) != 0 || shnum == 0) {
    scan_note_segments(elf.get(), elf64, &t);
    return t;
  }
  // Section names only when their table is of a sane size (for .go.buildinfo).
  bool names = elf_getshdrstrndx(elf.get(), &shstrndx) == 0;
  if (names) {
    GElf_Shdr sh;
    Elf_Scn* strs = elf_getscn(elf.get(), shstrndx);
    names = strs && gelf_getshdr(strs, &sh) && sh.sh_size <= kMaxNamesBytes;
  }
  Elf_Scn* scn = nullptr;
  for (size_t i = 0; i < kMaxSections && (scn = elf_nextscn(elf.get(), scn)) != nullptr; ++i) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (names && !t.go) {
      const char* name = elf_strptr(elf.get(), shstrndx, sh.sh_name);
      if (name && std::strcmp(name, ".go.buildinfo") == 0) t.go = true;
    }
    if (sh.sh_type == SHT_NOTE && sh.sh_size <= kMaxNoteBytes) scan_notes(elf_getdata(scn, nullptr), elf64, &t);
    if (t.platoon_probes && t.go) break;
  }
  return t;
}

snapshot::RuntimeKind detect_runtime(pid_t pid) noexcept {
  using snapshot::RuntimeKind;
  if (pid <= 0) return snapshot::RuntimeKind::other;
  try {
    const std::string maps = read_capped(proc_path(pid, "maps"), kMaxMapsBytes);
    if (maps_map_libjvm(maps)) return snapshot::RuntimeKind::jvm;
    const ElfTraits exe = traits_of(proc_path(pid, "exe"));
    if (exe.platoon_probes) return snapshot::RuntimeKind::platoon;
    // Before the Go rule, though dearer: platoon's probes are the more specific answer, and a
    // (static) Go binary maps almost no shared objects, so the look costs it little.
    if (shared_object_has_probes(pid, maps)) return snapshot::RuntimeKind::platoon;
    if (exe.go) return snapshot::RuntimeKind::go;
  } catch (...) {
    // Out of memory while reading a target: not worth failing the caller over.
  }
  return snapshot::RuntimeKind::other;
}

}  // namespace platoon::collectors
