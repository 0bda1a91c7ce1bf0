// What the collector needs from the system outside libbpf: tracefs for the syscall
// tracepoints, and small /proc readers (process names, thread names, executables).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace platoon::collectors {

// Mounts tracefs at /sys/kernel/tracing when its events are not visible there (nor under
// debugfs). Returns the events directory that exists afterwards, or "" (with *error set).
std::string ensure_tracefs(std::string* error);

bool process_exists(pid_t pid);
// First line of a small /proc file without the newline; "" when unreadable.
std::string read_first_line(const std::string& path);
// The whole of a /proc or /sys file; "" when unreadable.
std::string read_whole_file(const std::string& path);
std::string thread_comm(pid_t pid, pid_t tid);   // /proc/PID/task/TID/comm
// Whether /proc/PID/task/TID/stat's state is R (running or runnable). True when unreadable: a
// thread that is gone or hidden gets the benefit of the doubt.
bool thread_running(pid_t pid, pid_t tid);
std::string exe_path(pid_t pid);
// The CPUs a kernel cpu list names ("0-3,8,10-11"); empty on anything malformed.
std::vector<int> parse_cpu_list(const std::string& text);
// /sys/devices/system/cpu/online; CPU 0 alone when unreadable.
std::vector<int> read_online_cpus();                 // readlink /proc/PID/exe, "" if unknown
// Processes (tgids) whose /proc/PID/comm equals `comm` (already truncated to 15 chars).
std::vector<pid_t> pids_with_comm(const std::string& comm);
// Every live process descended from one of `roots` (children, their children, ...), from the
// parent pid in /proc/PID/stat (/proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN).
std::vector<pid_t> descendants_of(const std::vector<pid_t>& roots);

}  // namespace platoon::collectors
