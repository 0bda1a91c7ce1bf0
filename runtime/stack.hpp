// A fiber stack: mmapped once with a PROT_NONE guard page below it, reused for many fibers.
#pragma once

#include <cstddef>

namespace platoon::rt {

class GuardedStack {
 public:
  explicit GuardedStack(std::size_t usable_bytes);  // throws std::bad_alloc when mmap fails
  ~GuardedStack();
  GuardedStack(const GuardedStack&) = delete;
  GuardedStack& operator=(const GuardedStack&) = delete;

  void* top() const { return static_cast<char*>(base_) + mapped_; }  // stacks grow down
  void* bottom() const { return static_cast<char*>(base_) + guard_; }
  std::size_t usable() const { return mapped_ - guard_; }

 private:
  void* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::size_t guard_ = 0;
};

}  // namespace platoon::rt
