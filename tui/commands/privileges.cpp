#include "tui/commands/privileges.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace platoon::cli {

bool limit_future_privileges(std::string& error) {
  // The highest capability this kernel knows: PR_CAPBSET_READ fails past it.
  for (int cap = 0; cap <= 63 && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      error = std::string("cannot drop capabilities from the bounding set: ") + std::strerror(errno);
      return false;
    }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    error = std::string("cannot set no_new_privs: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool find_user(const std::string& user, uid_t& uid, gid_t& gid, std::string& error) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
    error = "--user " + user + ": no such user";
    return false;
  }
  if (found->pw_uid == 0) {
    error = "--user " + user + " is root: give an unprivileged user (the default is nobody), or --user root to stay root";
    return false;
  }
  uid = found->pw_uid;
  gid = found->pw_gid;
  return true;
}

bool clear_capabilities(std::string& error) {
  // Explicitly, not by the uid change's side effect: a securebit (SECBIT_NO_SETUID_FIXUP) or
  // ambient capabilities from a service manager would keep them.
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) {
    error = std::string("cannot clear the capabilities: ") + std::strerror(errno);
    return false;
  }
  __user_cap_data_struct now[2] = {};
  if (syscall(SYS_capget, &header, now) != 0 ||
      (now[0].effective | now[0].permitted | now[0].inheritable | now[1].effective | now[1].permitted | now[1].inheritable)) {
    error = "capabilities left after clearing them";
    return false;
  }
  return true;
}

bool drop_privileges(const std::string& user, std::string& error) {
  uid_t uid = 0;
  gid_t gid = 0;
  if (!find_user(user, uid, gid, error)) return false;
  // Groups, then gid, then uid: once the uid changes, the rest can no longer be changed.
  if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
    error = "cannot become " + user + ": " + std::strerror(errno);
    return false;
  }
  if (!clear_capabilities(error)) return false;
  // Checked, not assumed: root must be gone for good.
  if (setresuid(0, 0, 0) == 0 || getuid() == 0 || geteuid() == 0) {
    error = "still root after becoming " + user;
    return false;
  }
  return true;
}

std::string privilege_line() {
  std::ifstream in("/proc/self/status");
  std::string line, uid = "?", caps = "?";
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) == 0) {
      const auto f = line.find_first_not_of(" \t", 4);
      uid = f == std::string::npos ? "?" : line.substr(f, line.find_first_of(" \t", f) - f);
    } else if (line.rfind("CapEff:", 0) == 0) {
      const auto f = line.find_first_not_of(" \t", 7);
      caps = f == std::string::npos ? "?" : line.substr(f);
    }
  }
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  std::string name;
  if (uid != "?" && getpwuid_r(static_cast<uid_t>(std::stoul(uid)), &pw, buf.data(), buf.size(), &found) == 0 && found)
    name = std::string(" (") + found->pw_name + ")";
  return "uid " + uid + name + ", effective capabilities " + (caps == "0000000000000000" ? "none" : caps);
}

}  // namespace platoon::cli
