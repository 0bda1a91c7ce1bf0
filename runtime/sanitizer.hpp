// Fiber-switch annotations for AddressSanitizer and ThreadSanitizer. Without them ASan
// mistakes a switched stack for stack-buffer overflows and TSan mixes up the fibers' histories.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define PLATOON_ASAN 1
#include <sanitizer/asan_interface.h>
#endif
// context.cpp is built without TSan instrumentation (so __SANITIZE_THREAD__ is unset there)
// but must still announce its switches: the Makefile defines PLATOON_TSAN_ANNOTATE for it.
#if defined(__SANITIZE_THREAD__) || defined(PLATOON_TSAN_ANNOTATE)
#define PLATOON_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif

namespace platoon::rt::san {

// The identity of one execution stack (a fiber's, or a carrier thread's own).
struct StackId {
  const void* bottom = nullptr;  // lowest address
  std::size_t size = 0;
  void* tsan_fiber = nullptr;
};

// Before jumping from the current stack to `to`. `save` keeps ASan's fake stack of the current
// one; pass nullptr when the current stack is finishing for good.
inline void start_switch(void** save, const StackId& to) {
#ifdef PLATOON_ASAN
  __sanitizer_start_switch_fiber(save, to.bottom, to.size);
#else
  (void)save;
#endif
#ifdef PLATOON_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#else
  (void)to;
#endif
}

// ASan's half of start_switch alone, for a jump whose TSan side is announced apart (unwind).
inline void asan_start_switch(void** save, const StackId& to) {
#ifdef PLATOON_ASAN
  __sanitizer_start_switch_fiber(save, to.bottom, to.size);
#else
  (void)save;
  (void)to;
#endif
}

// Right after arriving on a stack; `from`, if given, learns the stack ASan took us to leave.
inline void finish_switch(void* save, StackId* from = nullptr) {
#ifdef PLATOON_ASAN
  __sanitizer_finish_switch_fiber(save, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
#else
  (void)save;
  (void)from;
#endif
}

inline void* tsan_create() {
#ifdef PLATOON_TSAN
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}
inline void tsan_destroy(void* f) {
#ifdef PLATOON_TSAN
  if (f) __tsan_destroy_fiber(f);
#else
  (void)f;
#endif
}
inline void tsan_switch(void* f) {
#ifdef PLATOON_TSAN
  __tsan_switch_to_fiber(f, 0);
#else
  (void)f;
#endif
}
inline void* tsan_current() {
#ifdef PLATOON_TSAN
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

}  // namespace platoon::rt::san
