// Which runtime a live target process is (a JVM, a platoon-runtime program, a Go binary, or
// anything else), so that platoon doctor can word its remedies in the target's own knobs.
// Rules, cheapest first: a mapped libjvm.so (one read of /proc/PID/maps); the executable's ELF
// notes and sections, read through /proc/PID/exe (the right file even when it was deleted or
// lives in another mount namespace): a stapsdt note of provider "platoon", or Go's build info;
// then the mapped shared objects, for a platoon-runtime linked as a shared library.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/snapshot/runtime_kind.hpp"

namespace platoon::collectors {

// Never throws; a process that is gone or unreadable is `other`.
snapshot::RuntimeKind detect_runtime(pid_t pid) noexcept;

// ---- the pieces, pure where they can be (unit-tested on text and bytes) ----

// A file mapped at its offset 0, as a line of /proc/PID/maps names it.
struct MappedObject {
  uint64_t start = 0, end = 0;
  uint64_t dev = 0, ino = 0;  // dev as makedev(major, minor): comparable with stat's st_dev
  std::string path;           // without a trailing " (deleted)"
};

// Whether the maps text has a line whose file is named libjvm.so (any directory, deleted or not).
bool maps_map_libjvm(std::string_view maps);
// Each file mapped at offset 0 once (by device and inode), in address order.
std::vector<MappedObject> mapped_objects(std::string_view maps);

// The provider of a stapsdt note's descriptor (three addresses of the ELF class's width, then
// provider, name and arguments as C strings); empty when the descriptor is malformed.
std::string_view stapsdt_provider(std::span<const unsigned char> desc, bool elf64);

// What one ELF file tells about its runtime.
struct ElfTraits {
  bool elf = false;            // it parsed as ELF at all
  bool platoon_probes = false; // a .note.stapsdt note with provider "platoon"
  bool go = false;             // a .go.buildinfo section or a Go build-id note
};
// Reads only the headers and the note sections of FD (capped); never throws.
ElfTraits elf_traits(int fd);

}  // namespace platoon::collectors
