#include "bpf/collectors/tcp_listeners.hpp"

#include "bpf/collectors/system.hpp"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <memory>
#include <string>
#include <vector>

namespace platoon::collectors {

namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

// The whitespace-separated fields of one line.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

std::set<uint64_t> socket_inodes(pid_t pid) {
  std::set<uint64_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, DirCloser> d(opendir(dir.c_str()));
  if (!d) return out;
  char target[64];
  while (dirent* e = readdir(d.get())) {
    const std::string path = dir + "/" + e->d_name;
    const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    const std::string_view link(target, static_cast<size_t>(n));
    constexpr std::string_view kPrefix = "socket:[";
    if (!link.starts_with(kPrefix) || !link.ends_with("]")) continue;
    uint64_t inode = 0;
    const std::string_view digits = link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), inode).ec == std::errc{}) out.insert(inode);
  }
  return out;
}

// Rows: "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...",
// the local address as HEX_IP:HEX_PORT.
std::set<uint16_t> listening_ports(std::string_view text, const std::set<uint64_t>* inodes) {
  std::set<uint16_t> out;
  constexpr std::string_view kListen = "0A";
  size_t pos = text.find('\n');  // the header
  while (pos != std::string_view::npos && pos + 1 < text.size()) {
    const size_t end = text.find('\n', pos + 1);
    const std::string_view line = text.substr(pos + 1, end == std::string_view::npos ? std::string_view::npos : end - pos - 1);
    pos = end;
    const auto f = fields_of(line);
    if (f.size() < 10 || f[3] != kListen) continue;
    const size_t colon = f[1].rfind(':');
    uint64_t inode = 0;
    unsigned port = 0;
    if (colon == std::string_view::npos ||
        std::from_chars(f[1].data() + colon + 1, f[1].data() + f[1].size(), port, 16).ec != std::errc{} ||
        std::from_chars(f[9].data(), f[9].data() + f[9].size(), inode).ec != std::errc{} || port > 0xffff)
      continue;
    if (!inodes || inodes->count(inode)) out.insert(static_cast<uint16_t>(port));
  }
  return out;
}

std::set<uint16_t> ports_listened_on(pid_t pid) {
  const std::set<uint64_t> inodes = socket_inodes(pid);
  std::set<uint16_t> out;
  if (inodes.empty()) return out;
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  for (const char* table : {"tcp", "tcp6"}) out.merge(listening_ports(read_whole_file(net + table), &inodes));
  return out;
}

std::set<uint16_t> all_listening_ports() {
  std::set<uint16_t> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) out.merge(listening_ports(read_whole_file(table), nullptr));
  return out;
}

}  // namespace platoon::collectors
