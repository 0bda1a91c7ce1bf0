#include "bpf/collectors/thread_entries.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "bpf/collectors/map_batch.hpp"
#include "platoon.skel.h"

namespace platoon::collectors {

namespace {

std::vector<std::pair<__u32, platoon_thread_stats>> read_hash(int fd) {
  std::vector<std::pair<__u32, platoon_thread_stats>> entries;
  read_map(fd, &entries, 256);
  return entries;
}

void make_unused_hash(bpf_map* m) {
  bpf_map__set_type(m, BPF_MAP_TYPE_HASH);
  bpf_map__set_map_flags(m, 0);
  bpf_map__set_key_size(m, sizeof(__u32));
  bpf_map__set_max_entries(m, 1);
}

// The task walk's output, appended: whole entries back to back. On failure `error` says why.
void read_walk(bpf_link* link, std::vector<platoon_thread_stats>* out, std::string* error) {
  const int fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
  if (fd < 0) {
    if (error) *error = std::string("cannot run the thread walk: ") + std::strerror(link ? errno : ENOENT);
    return;
  }
  std::vector<char> bytes;
  char buf[1 << 16];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  const int err = n < 0 ? errno : 0;
  close(fd);
  if (err) {
    if (error) *error = std::string("thread walk: ") + std::strerror(err);
    return;
  }
  const size_t count = bytes.size() / sizeof(platoon_thread_stats);
  out->resize(out->size() + count);
  std::memcpy(out->data() + out->size() - count, bytes.data(), count * sizeof(platoon_thread_stats));
}

}  // namespace

void ThreadEntries::shape_maps(platoon_bpf* skel, bool task_storage, uint32_t threads_max) {
  if (task_storage) {
    bpf_map__set_max_entries(skel->maps.exited_stats, threads_max);
    bpf_map__set_max_entries(skel->maps.stats, 1);
  } else {
    make_unused_hash(skel->maps.thread_store);
    bpf_map__set_max_entries(skel->maps.exited_stats, 1);
    bpf_map__set_max_entries(skel->maps.stats, threads_max);
  }
}

std::vector<platoon_thread_stats> ThreadEntries::read(std::string* error) const {
  std::vector<platoon_thread_stats> values;
  if (!task_storage_) {
    for (const auto& e : read_hash(bpf_map__fd(skel_->maps.stats))) values.push_back(e.second);
    return values;
  }
  // Live entries first, exited copies after: a thread that exits in between is in both, and
  // its exited copy is the one kept.
  read_walk(skel_->links.dump_threads, &values, error);
  const auto exited = read_hash(bpf_map__fd(skel_->maps.exited_stats));
  std::unordered_map<__u32, size_t> at;
  for (size_t i = 0; i < values.size(); ++i) at[values[i].tid] = i;
  for (const auto& [tid, v] : exited) {
    auto it = at.find(tid);
    if (it != at.end()) values[it->second] = v;
    else values.push_back(v);
  }
  return values;
}

void ThreadEntries::forget(int fd, const std::vector<__u32>& tids) {
  int64_t gone = 0;
  for (__u32 tid : tids) gone += bpf_map_delete_elem(fd, &tid) == 0;
  if (task_storage_ && gone) __atomic_fetch_sub(&skel_->bss->tracked_threads, gone, __ATOMIC_RELAXED);
}

void ThreadEntries::forget_exited(const std::unordered_set<__u32>& tids) {
  forget(bpf_map__fd(task_storage_ ? skel_->maps.exited_stats : skel_->maps.stats),
         std::vector<__u32>(tids.begin(), tids.end()));
}

void ThreadEntries::forget_pid(__u32 pid) {
  const int fd = bpf_map__fd(task_storage_ ? skel_->maps.exited_stats : skel_->maps.stats);
  std::vector<__u32> tids;
  for (const auto& [tid, v] : read_hash(fd))
    if (v.pid == pid) tids.push_back(tid);
  forget(fd, tids);
}

}  // namespace platoon::collectors
