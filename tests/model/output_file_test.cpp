// Output paths as root: what platoon writes may only ever be a new 0600
// regular file; device nodes, fifos, sockets, directories and symlinks at the last component
// are refused with one line and left exactly as they were.
#include "tui/outputs/output_file.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <dirent.h>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/model/temp_dir.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using ::testing::HasSubstr;

class OutputFileTest : public test::TempDirTest {
 protected:
  std::set<std::string> entries() const {
    std::set<std::string> out;
    DIR* d = ::opendir(dir_.c_str());
    while (dirent* e = d ? ::readdir(d) : nullptr)
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
    if (d) ::closedir(d);
    return out;
  }
  static std::string contents(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static struct stat lstat_of(const std::string& p) {
    struct stat st{};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
  }
};

// The /dev/null that lost its 0666 to fchmod: a private node of the same device, so the test
// never touches the real one. Nothing about it may change, through either writer.
TEST_F(OutputFileTest, RefusesADeviceNodeAndLeavesItsModeAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const std::string node = path("null");
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(::chmod(node.c_str(), 0666), 0);
  std::string error;
  EXPECT_FALSE(OutputFile::create(node, OutputFile::Existing::replace, &error));
  EXPECT_EQ(error, node + " is a character device: refusing to write there (give a regular file's path)");
  EXPECT_FALSE(TraceWriter::create(node, TraceMeta{}, &error));
  EXPECT_THAT(error, HasSubstr("is a character device"));
  const struct stat st = lstat_of(node);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_EQ(entries(), std::set<std::string>{"null"});  // no temporary left behind
}

TEST_F(OutputFileTest, RefusesFifoSocketAndDirectoryWithoutBlocking) {
  const std::string fifo = path("fifo"), sock = path("sock"), sub = path("sub");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string error;
  // A fifo with no reader would block an open(O_WRONLY) for ever: the check comes first.
  EXPECT_FALSE(OutputFile::create(fifo, OutputFile::Existing::replace, &error));
  EXPECT_THAT(error, HasSubstr("is a fifo"));
  EXPECT_FALSE(OutputFile::create(sock, OutputFile::Existing::replace, &error));
  EXPECT_THAT(error, HasSubstr("is a socket"));
  EXPECT_FALSE(OutputFile::create(sub, OutputFile::Existing::replace, &error));
  EXPECT_THAT(error, HasSubstr("is a directory"));
  EXPECT_FALSE(OutputFile::create(sub + "/", OutputFile::Existing::replace, &error));
  EXPECT_TRUE(S_ISFIFO(lstat_of(fifo).st_mode));
  EXPECT_TRUE(S_ISSOCK(lstat_of(sock).st_mode));
  EXPECT_TRUE(S_ISDIR(lstat_of(sub).st_mode));
  EXPECT_EQ(entries(), (std::set<std::string>{"fifo", "sock", "sub"}));
  ::close(s);
}

// A symlink at the last component is never followed (its target would be truncated or
// replaced); one in the folder part is the user's own path and is fine.
TEST_F(OutputFileTest, NeverFollowsASymlinkAtTheLastComponent) {
  const std::string victim = path("victim"), link = path("link.trace");
  { std::ofstream(victim) << "precious"; }
  ASSERT_EQ(::chmod(victim.c_str(), 0644), 0);
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  std::string error;
  EXPECT_FALSE(TraceWriter::create(link, TraceMeta{}, &error));
  EXPECT_THAT(error, HasSubstr("is a symbolic link"));
  EXPECT_EQ(contents(victim), "precious");
  EXPECT_EQ(lstat_of(victim).st_mode & 07777, 0644u);
  EXPECT_TRUE(S_ISLNK(lstat_of(link).st_mode));

  ASSERT_EQ(::mkdir(path("real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(path("real").c_str(), path("dirlink").c_str()), 0);
  auto w = TraceWriter::create(path("dirlink/t.trace"), TraceMeta{}, &error);
  ASSERT_TRUE(w) << error;
  EXPECT_TRUE(S_ISREG(lstat_of(path("real/t.trace")).st_mode));
}

// A new file is 0600 whatever the umask; an earlier regular file is replaced by a new inode
// (so its old mode, owner and other links are not touched, nothing is chmod'ed) and says so.
TEST_F(OutputFileTest, NewFilesAre0600AndReplacingIsANewInode) {
  const std::string file = path("t.trace"), hard = path("hardlink");
  { std::ofstream(file) << "old"; }
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  ASSERT_EQ(::link(file.c_str(), hard.c_str()), 0);
  const mode_t old_mask = ::umask(0);
  std::string error;
  auto w = TraceWriter::create(file, TraceMeta{}, &error);
  ::umask(old_mask);
  ASSERT_TRUE(w) << error;
  EXPECT_TRUE(w->replaced_earlier_file());
  EXPECT_EQ(lstat_of(file).st_mode & 07777, 0600u);
  EXPECT_NE(lstat_of(file).st_ino, lstat_of(hard).st_ino);
  EXPECT_EQ(contents(hard), "old");
  EXPECT_EQ(lstat_of(hard).st_mode & 07777, 0644u);
  auto fresh = TraceWriter::create(path("fresh.trace"), TraceMeta{}, &error);
  ASSERT_TRUE(fresh) << error;
  EXPECT_FALSE(fresh->replaced_earlier_file());
  EXPECT_EQ(lstat_of(path("fresh.trace")).st_mode & 07777, 0600u);
}

// An export that fails halfway leaves neither a partial file nor a temporary one, and an
// earlier file of that name as it was.
TEST_F(OutputFileTest, UnpublishedFileLeavesNothingBehind) {
  const std::string file = path("out.json");
  { std::ofstream(file) << "earlier"; }
  {
    std::string error;
    auto f = OutputFile::create(file, OutputFile::Existing::replace, &error);
    ASSERT_TRUE(f) << error;
    ASSERT_EQ(::write(f->fd(), "half", 4), 4);
    EXPECT_EQ(entries().size(), 2u);  // the target and the hidden temporary
  }
  EXPECT_EQ(entries(), std::set<std::string>{"out.json"});
  EXPECT_EQ(contents(file), "earlier");
}

// Names platoon picks itself (top's `r`) never replace one another, however fast they come.
TEST_F(OutputFileTest, UniqueNamesNeverReplaceAnEarlierFile) {
  std::string error;
  std::set<std::string> names;
  for (int i = 0; i < 3; ++i) {
    auto f = create_unique(path("platoon-top-x"), ".trace", &error);
    ASSERT_TRUE(f) << error;
    ASSERT_EQ(::write(f->fd(), "x", 1), 1);
    ASSERT_TRUE(f->publish(&error)) << error;
    EXPECT_FALSE(f->replaced());
    names.insert(f->path());
  }
  EXPECT_EQ(names, (std::set<std::string>{path("platoon-top-x.trace"), path("platoon-top-x-2.trace"),
                                          path("platoon-top-x-3.trace")}));
  // keep: an existing name is an error that says it exists, and the file is untouched.
  bool exists = false;
  EXPECT_FALSE(OutputFile::create(path("platoon-top-x.trace"), OutputFile::Existing::keep, &error, &exists));
  EXPECT_TRUE(exists);
  EXPECT_EQ(contents(path("platoon-top-x.trace")), "x");
}

}  // namespace
}  // namespace platoon::tests
