#include "tui/outputs/output_file.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

namespace platoon::outputs {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

int UniqueFd::reset() {
  if (fd_ < 0) return 0;
  const int r = ::close(fd_);
  fd_ = -1;
  return r;
}

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// Whether `path` may become the output: absent, or a regular file (and then `exists`).
bool check_target(const std::string& path, bool& exists, std::string* error) {
  struct stat st{};
  exists = false;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    if (error)
      *error = path + " is " + kind_of(st.st_mode) + ": refusing to write there (give a regular file's path)";
    return false;
  }
  exists = true;
  return true;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string tmp, UniqueFd fd, Existing existing)
    : path_(std::move(path)), tmp_(std::move(tmp)), fd_(std::move(fd)), existing_(existing) {}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(std::move(o.fd_)), existing_(o.existing_),
      published_(o.published_), replaced_(o.replaced_) {
  o.tmp_.clear();
}

OutputFile::~OutputFile() {
  if (!published_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

std::optional<OutputFile> OutputFile::create(const std::string& path, Existing existing, std::string* error,
                                             bool* exists_out) {
  if (exists_out) *exists_out = false;
  if (path.empty() || path.back() == '/') {
    if (error) *error = "'" + path + "' is not a file name";
    return std::nullopt;
  }
  bool exists = false;
  if (!check_target(path, exists, error)) return std::nullopt;
  if (exists && existing == Existing::keep) {
    if (exists_out) *exists_out = true;
    if (error) *error = path + " exists";
    return std::nullopt;
  }
  // Hidden and unmistakable, in the target's folder so that rename(2) is atomic.
  std::string tmp = dir_of(path) + "/." + base_of(path) + ".platoon-XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  UniqueFd fd(::mkostemp(name.data(), O_CLOEXEC));  // O_EXCL, mode 0600
  if (!fd) {
    if (error) *error = "cannot write " + path + ": " + std::strerror(errno) + " (creating a file in " + dir_of(path) + ")";
    return std::nullopt;
  }
  return OutputFile(path, std::string(name.data()), std::move(fd), existing);
}

bool OutputFile::publish(std::string* error) {
  if (published_) return true;
  bool exists = false;
  if (!check_target(path_, exists, error)) return false;
  int r;
  if (existing_ == Existing::keep) {
    r = ::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
  } else {
    r = ::rename(tmp_.c_str(), path_.c_str());
  }
  if (r != 0) {
    if (error) *error = path_ + ": " + std::strerror(errno);
    return false;
  }
  published_ = true;
  replaced_ = exists;
  return true;
}

bool OutputFile::close(std::string* error) {
  if (fd_.reset() != 0) {
    if (error) *error = path_ + ": close: " + std::strerror(errno);
    return false;
  }
  return true;
}

std::optional<OutputFile> create_unique(const std::string& stem, const std::string& extension,
                                        std::string* error) {
  for (int n = 1; n <= 1000; ++n) {
    const std::string path = stem + (n == 1 ? "" : "-" + std::to_string(n)) + extension;
    bool exists = false;
    auto f = OutputFile::create(path, OutputFile::Existing::keep, error, &exists);
    if (f || !exists) return f;
  }
  if (error) *error = stem + extension + ": 1000 files of that name exist";
  return std::nullopt;
}

bool write_whole_file(const std::string& path, std::string_view content, std::string* error, bool* replaced) {
  auto file = OutputFile::create(path, OutputFile::Existing::replace, error);
  if (!file) return false;
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(file->fd(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "writing " + path + " failed: " + std::strerror(n < 0 ? errno : EIO);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (!file->close(error) || !file->publish(error)) return false;
  if (replaced) *replaced = file->replaced();
  return true;
}

}  // namespace platoon::outputs
