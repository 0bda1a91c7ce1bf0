// Every file platoon writes goes through here, because platoon runs as root next to things
// that must not be touched: an output path is created as a fresh 0600 file (recordings and
// exports carry thread names and command lines), an existing target is replaced only when it
// is a regular file (never a device, fifo, socket or directory, never through a symlink at the
// last component), and nothing is ever chmod'ed.
//
// The file is made under a temporary name beside the target (mkstemp: O_EXCL, 0600) and
// renamed into place by publish(): an export publishes when complete, so a failure leaves the
// old file as it was; a recording publishes right after its header, so a crash later still
// leaves everything written so far under the name the user gave.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace platoon::outputs {

// An fd that closes itself.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  int reset();  // close; returns close(2)'s result (0 when there was nothing to close)

 private:
  int fd_ = -1;
};

class OutputFile {
 public:
  enum class Existing {
    replace,  // an earlier regular file is replaced (callers say so: replaced())
    keep,     // an existing target is an error with exists() true (top's `r` picks another name)
  };
  // The checks on `path` and the temporary file; nullopt with a one-line error ("PATH: why").
  static std::optional<OutputFile> create(const std::string& path, Existing existing,
                                          std::string* error, bool* exists = nullptr);
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // unpublished: the temporary file is removed

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  // Renames the temporary file to the target (checked again: still absent or regular).
  bool publish(std::string* error);
  bool published() const { return published_; }
  bool replaced() const { return replaced_; }  // publish() replaced an earlier file
  // Closes the fd, reporting a failed close (NFS, quotas) as an error.
  bool close(std::string* error);
  // The fd, for a writer that goes on appending after publish() (a recording).
  UniqueFd take_fd() { return std::move(fd_); }

 private:
  OutputFile(std::string path, std::string tmp, UniqueFd fd, Existing existing);
  std::string path_, tmp_;
  UniqueFd fd_;
  Existing existing_;
  bool published_ = false, replaced_ = false;
};

// "platoon-top-20261203-231500.trace", then "-2", "-3".. before the extension until a name is
// free: for files named by platoon itself, which must never replace one another.
std::optional<OutputFile> create_unique(const std::string& stem, const std::string& extension,
                                        std::string* error);

// The whole of `content` to `path` (Existing::replace), published only once all of it is
// written; false with a one-line error. *replaced: an earlier file was replaced.
bool write_whole_file(const std::string& path, std::string_view content, std::string* error, bool* replaced = nullptr);

}  // namespace platoon::outputs
