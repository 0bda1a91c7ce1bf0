// Giving up root once a long-running command (the exporter) holds what it needs: its BPF
// programs loaded and attached, its maps' and stats' descriptors open, its socket bound.
#pragma once

#include <sys/types.h>

#include <string>

namespace platoon::cli {

// Before any thread starts: no capability may come back through an exec (the bounding set
// emptied, no_new_privs), for every thread made later too. False with a one-line error.
bool limit_future_privileges(std::string& error);

// The user's uid and primary gid; false with a one-line error when there is none, or it is root.
bool find_user(const std::string& user, uid_t& uid, gid_t& gid, std::string& error);

// Every capability of this thread gone (ambient, inheritable, permitted, effective), checked
// with capget. For a process that is not root but was given capabilities (systemd's
// AmbientCapabilities=).
bool clear_capabilities(std::string& error);

// Becomes `user` for good: its uid and primary gid (real, effective, saved), no supplementary
// groups, and with them every capability gone from every thread (glibc applies the id change
// to all threads). False with a one-line error; the caller must not go on as root then.
bool drop_privileges(const std::string& user, std::string& error);

// "uid 65534 (nobody), capabilities: none" from /proc/self/status, for the start-up line.
std::string privilege_line();

}  // namespace platoon::cli
