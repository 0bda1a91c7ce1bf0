#include "runtime/stack.hpp"

#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace platoon::rt {

GuardedStack::GuardedStack(std::size_t usable_bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  guard_ = page;
  mapped_ = guard_ + (usable_bytes + page - 1) / page * page;
  // MAP_NORESERVE: 10,000 parked fibers reserve address space, not memory.
  base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (base_ == MAP_FAILED) throw std::bad_alloc();
  if (mprotect(base_, guard_, PROT_NONE) != 0) {
    munmap(base_, mapped_);
    throw std::bad_alloc();
  }
}

GuardedStack::~GuardedStack() { munmap(base_, mapped_); }

}  // namespace platoon::rt
