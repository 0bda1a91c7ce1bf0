// The key numbers --vs puts side by side: the requests the target served (rate, server time,
// socket wait), the worst carrier's wait, the carriers' migrations, and their batches (events
// per epoll return, queue depth at drain), each only when the source measures it.
#include "tui/analysis/doctor_checks.hpp"
#include "tui/analysis/requests.hpp"

namespace platoon::analysis::doctor {

namespace {

// From the raw events: the worst contended wait, and the carriers' epoll returns pooled.
void add_batch_numbers(const Context& c, KeyNumbers& k) {
  BatchStats all;
  for (const ThreadWindow* t : c.roles.carriers) {
    const ThreadBatches* tb = c.batches_of(t->tid);
    if (!tb) continue;
    const double contended = c.pct_of_wall(tb->contended_ns());
    if (!k.max_carrier_contended_wait_pct || contended > *k.max_carrier_contended_wait_pct)
      k.max_carrier_contended_wait_pct = contended;
    all.long_n += tb->epoll.long_n;
    all.long_sum += tb->epoll.long_sum;
    all.short_n += tb->epoll.short_n;
    all.short_sum += tb->epoll.short_sum;
  }
  if (all.long_n) k.batch_after_long_wait = all.long_mean();
  if (all.short_n) k.batch_after_short_wait = all.short_mean();
  if (all.long_n + all.short_n)
    k.long_wait_cycles_pct = 100.0 * static_cast<double>(all.long_n) / static_cast<double>(all.long_n + all.short_n);
}

// Every request the target served, its ports pooled.
void add_request_numbers(const Context& c, KeyNumbers& k) {
  RequestRow all;
  for (const RequestRow& r : requests_view(c.w).server) snapshot::merge_group(all.sum, r.sum);
  if (all.sum.count == 0) return;
  k.requests_per_s = c.per_s(static_cast<double>(all.sum.count));
  k.server_time_p50_us = us(all.sum.total.percentile_ns(50));
  k.server_time_p99_us = us(all.sum.total.percentile_ns(99));
  k.socket_wait_p99_us = us(all.sum.wait.percentile_ns(99));
  k.socket_wait_runnable_pct = all.wait_by_part_pct()[PLATOON_REQ_RUNNABLE];
}

}  // namespace

KeyNumbers key_numbers(const Context& c) {
  KeyNumbers k;
  if (c.w.has(snapshot::kFieldRequests)) add_request_numbers(c, k);
  k.carriers = c.roles.carriers.size();
  if (c.roles.carriers.empty()) return k;
  uint64_t cycles = 0, events = 0, drains_n = 0, depth = 0;
  double migr = 0;
  for (const ThreadWindow* t : c.roles.carriers) {
    if (c.w.has(snapshot::kFieldRunWait) && (!k.max_carrier_wait_pct || t->wait_pct > *k.max_carrier_wait_pct)) {
      k.max_carrier_wait_pct = t->wait_pct;
      k.max_wait_thread = c.name(*t);
    }
    migr += t->migrations_per_s;
    cycles += t->delta.io_cycles;
    events += t->delta.io_events;
    drains_n += t->delta.drains;
    depth += t->delta.drain_depth_sum;
  }
  if (c.w.has(snapshot::kFieldMigrations)) k.carrier_migrations_per_s = migr;
  if (c.in.batches) add_batch_numbers(c, k);
  if (c.w.has(snapshot::kFieldIo) && cycles) k.events_per_cycle = static_cast<double>(events) / static_cast<double>(cycles);
  if (c.w.has(snapshot::kFieldDrain) && drains_n) k.queue_depth_avg = static_cast<double>(depth) / static_cast<double>(drains_n);
  return k;
}

}  // namespace platoon::analysis::doctor
