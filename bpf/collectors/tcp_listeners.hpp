// The TCP ports a process listens on, read from /proc when the collector attaches: listen()
// calls made before then are not seen by the socket programs, which learn later ones themselves
// (bpf/requests.bpf.h), and a connection accepted on such a port is a server-side one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string_view>

namespace platoon::collectors {

// Socket inodes in /proc/<pid>/fd ("socket:[N]"); empty when the process is gone.
std::set<uint64_t> socket_inodes(pid_t pid);

// Local ports of the rows of /proc/.../net/tcp or tcp6 text in state LISTEN (0A) whose inode
// is in `inodes`, or of every listening row when `inodes` is null.
std::set<uint16_t> listening_ports(std::string_view proc_net_tcp, const std::set<uint64_t>* inodes);

// The ports `pid` listens on (its network namespace's tables, its own sockets only).
std::set<uint16_t> ports_listened_on(pid_t pid);

// Every port listened on in this process's network namespace.
std::set<uint16_t> all_listening_ports();

}  // namespace platoon::collectors
