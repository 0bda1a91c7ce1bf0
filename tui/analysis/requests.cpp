#include "tui/analysis/requests.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace platoon::analysis {

uint64_t RequestRow::wait_ns() const {
  uint64_t total = sum.unattributed_ns;
  for (uint64_t ns : sum.state_ns) total += ns;
  return total;
}

std::array<double, kWaitParts.size()> RequestRow::wait_by_part_pct() const {
  std::array<double, kWaitParts.size()> pct{};
  const uint64_t total = wait_ns();
  if (total == 0) return pct;
  for (size_t i = 0; i < sum.state_ns.size(); ++i) pct[i] = 100.0 * double(sum.state_ns[i]) / double(total);
  pct[kWaitParts.size() - 1] = 100.0 * double(sum.unattributed_ns) / double(total);
  return pct;
}

std::string RequestRow::endpoint() const {
  const bool v6 = remote.find(':') != std::string::npos;
  return (v6 ? "[" + remote + "]" : remote) + ":" + std::to_string(port);
}

double us(uint64_t ns) { return double(ns) / 1000.0; }

namespace {

// Merges the groups that share a row key, in key order.
template <typename Key>
std::vector<RequestRow> rows_by(const Window& w, bool (*take)(const snapshot::RequestGroup&),
                                Key (*key)(const snapshot::RequestGroup&), void (*label)(RequestRow&, const snapshot::RequestGroup&)) {
  std::map<Key, RequestRow> rows;
  for (const snapshot::RequestGroup& g : w.requests) {
    if (!take(g)) continue;
    auto [it, fresh] = rows.try_emplace(key(g));
    if (fresh) {
      it->second.side = g.key.side;
      it->second.pid = g.key.pid;
      label(it->second, g);
    }
    snapshot::merge_group(it->second.sum, g);
  }
  std::vector<RequestRow> out;
  for (auto& [k, row] : rows) {
    row.rate = w.wall_s > 0 ? double(row.sum.count) / w.wall_s : 0;
    out.push_back(std::move(row));
  }
  return out;
}

bool is_server(const snapshot::RequestGroup& g) { return g.key.side == snapshot::RequestSide::server; }
bool is_client(const snapshot::RequestGroup& g) { return g.key.side == snapshot::RequestSide::client; }
bool any(const snapshot::RequestGroup&) { return true; }

}  // namespace

RequestsView requests_view(const Window& w) {
  RequestsView v;
  v.lost = w.losses.lost_requests;
  using PortKey = std::tuple<uint32_t, uint16_t>;
  using RemoteKey = std::tuple<uint32_t, std::string, uint16_t>;
  v.server = rows_by<PortKey>(
      w, is_server, [](const snapshot::RequestGroup& g) { return PortKey{g.key.pid, g.key.port}; },
      [](RequestRow& r, const snapshot::RequestGroup& g) { r.port = g.key.port; });
  v.client = rows_by<RemoteKey>(
      w, is_client, [](const snapshot::RequestGroup& g) { return RemoteKey{g.key.pid, g.key.remote, g.key.port}; },
      [](RequestRow& r, const snapshot::RequestGroup& g) {
        r.port = g.key.port;
        r.remote = g.key.remote;
      });
  v.threads = rows_by<uint32_t>(
      w, any, [](const snapshot::RequestGroup& g) { return g.key.tid; },
      [](RequestRow& r, const snapshot::RequestGroup& g) { r.tid = g.key.tid; });
  for (RequestRow& r : v.threads) {
    auto t = std::find_if(w.threads.begin(), w.threads.end(), [&](const ThreadWindow& x) { return x.tid == r.tid; });
    if (t != w.threads.end()) r.comm = t->comm;
  }
  return v;
}

RequestRow thread_requests(const Window& w, uint32_t tid) {
  RequestRow r;
  r.tid = tid;
  for (const snapshot::RequestGroup& g : w.requests)
    if (g.key.tid == tid) snapshot::merge_group(r.sum, g);
  r.rate = w.wall_s > 0 ? double(r.sum.count) / w.wall_s : 0;
  return r;
}

RequestRow server_requests(const Window& w) {
  RequestRow r;
  for (const snapshot::RequestGroup& g : w.requests)
    if (is_server(g)) snapshot::merge_group(r.sum, g);
  r.rate = w.wall_s > 0 ? double(r.sum.count) / w.wall_s : 0;
  return r;
}

}  // namespace platoon::analysis
