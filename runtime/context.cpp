// Every Boost.Context operation of the runtime: creating, resuming, switching out of and
// unwinding a fiber. The carrier stores the fiber's suspended context itself when its resume()
// returns, so no resume_with hook is needed to publish it after the switch. Kept in one file because under ThreadSanitizer it is built without
// instrumentation (see the Makefile): TSan's shadow call stack follows function entries and
// exits, and a call that enters on one stack and returns on another would corrupt it. Here the
// TSan fiber switch happens with no instrumented frame open across the jump.
#include <boost/context/stack_context.hpp>
#include <boost/context/preallocated.hpp>

#include "runtime/fiber.hpp"

namespace platoon::rt {

namespace {
// The record owns its stack; Boost.Context must neither allocate nor free it.
struct BorrowedStack {
  boost::context::stack_context allocate() { return {}; }
  void deallocate(boost::context::stack_context&) noexcept {}
};
}  // namespace

Fiber::Fiber(std::size_t stack_bytes) : stack_(stack_bytes) {
  stack_id.bottom = stack_.bottom();
  stack_id.size = stack_.usable();
}

Fiber::~Fiber() {
  unwind();
  san::tsan_destroy(stack_id.tsan_fiber);
}

void Fiber::make_context() {
  boost::context::stack_context sctx;
  sctx.sp = stack_.top();
  sctx.size = stack_.usable();
  // Creating the context jumps onto the new stack and back, so under TSan it happens in the
  // fiber's own (fresh) TSan fiber. A finished fiber's TSan fiber is not reused: frames that
  // never returned stay on its shadow stack.
  san::tsan_destroy(stack_id.tsan_fiber);
  stack_id.tsan_fiber = san::tsan_create();
  void* creator = san::tsan_current();
  san::tsan_switch(stack_id.tsan_fiber);
  ctx = boost::context::fiber(
      std::allocator_arg, boost::context::preallocated(sctx.sp, sctx.size, sctx), BorrowedStack{},
      [this](boost::context::fiber&& s) {
        san::finish_switch(nullptr);
        sched = std::move(s);
        run_task();
        san::start_switch(nullptr, *resumer);  // this stack is done for good
        return std::move(sched);
      });
  san::tsan_switch(creator);
}

void Fiber::resume(const san::StackId& self, void** self_fake_stack) {
  resumer = &self;
  san::start_switch(self_fake_stack, stack_id);
  // Returns once the fiber switched out: with its suspended context (empty when it finished),
  // stored here, on the carrier's stack, before the carrier publishes the fiber anywhere.
  ctx = std::move(ctx).resume();
  san::finish_switch(*self_fake_stack);
}

void Fiber::switch_out(SwitchAction a) {
  action = a;
  san::start_switch(&asan_fake_stack, *resumer);
  sched = std::move(sched).resume();  // returns with the context of whichever carrier resumes us
  san::finish_switch(asan_fake_stack);
}

void Fiber::unwind() {
  if (!ctx) return;
  void* me = san::tsan_current();
  san::tsan_switch(stack_id.tsan_fiber);
  // ASan must know that the unwinding runs on the fiber's stack: every landing pad there asks
  // it to unpoison "the current stack", and taking it for this thread's own it reports a
  // stack-buffer-overflow. The fiber's side is Boost's code, so both jumps are announced here:
  // the one there before it, and, after it, the one back, whose bounds finishing the first
  // gives.
  void* fake = nullptr;
  san::asan_start_switch(&fake, stack_id);
  ctx = {};  // resumes the fiber with forced_unwind; its destructors run, then it returns here
  san::StackId here;
  san::finish_switch(fake, &here);  // ASan now has us on the fiber's stack...
  san::asan_start_switch(&fake, here);
  san::finish_switch(fake);         // ...and back on this one
  san::tsan_switch(me);
}

}  // namespace platoon::rt
