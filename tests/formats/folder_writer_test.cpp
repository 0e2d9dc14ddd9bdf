// write_folder_atomically: a set of files appears whole in its folder, the folder's other files
// stay, an earlier run's superseded files go, and where no exchange can be made (a symbolic link,
// subfolders) each file is still written whole. The scratch table empties and removes a folder
// a signal handler finds in it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/scratch_files.hpp"
#include "formats/writers.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan::formats {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FolderWriter, ANewFolderAppearsWithEveryFile) {
  test::TempFolder temp;
  const std::string out = temp.file("a/b/out");
  const auto written = write_folder_atomically(out, {{"x.yaml", "x: 1\n"}, {"y.yaml", "y: 2\n"}});
  EXPECT_EQ(written, (std::vector<std::string>{out + "/x.yaml", out + "/y.yaml"}));
  EXPECT_EQ(read(out + "/x.yaml"), "x: 1\n");
  EXPECT_EQ(read(out + "/y.yaml"), "y: 2\n");
  EXPECT_EQ(names_in(temp.file("a/b")), (std::vector<std::string>{"out"}));  // no scratch left
}

TEST(FolderWriter, AnExistingFolderIsExchangedKeepingItsOtherFiles) {
  test::TempFolder temp;
  const fs::path out = temp.file("out");
  fs::create_directory(out);
  std::ofstream(out / "x.yaml") << "old\n";
  std::ofstream(out / "notes.txt") << "mine\n";
  std::ofstream(out / "03-stale.yaml") << "an earlier rank\n";
  fs::create_symlink("notes.txt", out / "link");
  ::chmod(out.c_str(), 0750);
  struct stat before {};
  ASSERT_EQ(::stat(out.c_str(), &before), 0);

  write_folder_atomically(out.string() + "/", {{"x.yaml", "new\n"}},
                          [](const std::string& name) { return name.rfind("03-", 0) == 0; });
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"link", "notes.txt", "x.yaml"}));
  EXPECT_EQ(read(out / "x.yaml"), "new\n");
  EXPECT_EQ(read(out / "notes.txt"), "mine\n");
  EXPECT_EQ(fs::read_symlink(out / "link"), "notes.txt");
  struct stat after {};
  ASSERT_EQ(::stat(out.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino) << "the folder was written in place, not exchanged";
  EXPECT_EQ(after.st_mode & 07777, 0750u);
  EXPECT_EQ(names_in(temp.path()), (std::vector<std::string>{"out"}));
}

TEST(FolderWriter, WithoutAnExchangeEachFileIsStillWrittenWhole) {
  test::TempFolder temp;
  // A folder with a subfolder, and a symbolic link to a folder: written into, file by file.
  const fs::path with_sub = temp.file("with-sub");
  fs::create_directories(with_sub / "sub");
  std::ofstream(with_sub / "01-old.yaml") << "old\n";
  write_folder_atomically(with_sub.string(), {{"x.yaml", "x\n"}},
                          [](const std::string& name) { return name == "01-old.yaml"; });
  EXPECT_EQ(names_in(with_sub), (std::vector<std::string>{"sub", "x.yaml"}));

  const fs::path real = temp.file("real");
  fs::create_directory(real);
  fs::create_directory_symlink(real, temp.file("linked"));
  write_folder_atomically(temp.file("linked"), {{"x.yaml", "x\n"}});
  EXPECT_TRUE(fs::is_symlink(temp.file("linked")));
  EXPECT_EQ(read(real / "x.yaml"), "x\n");
}

TEST(FolderWriter, BadNamesAndAFileInTheWayAreErrors) {
  test::TempFolder temp;
  EXPECT_THROW(write_folder_atomically(temp.file("o"), {{"../x", "x"}}), std::invalid_argument);
  EXPECT_THROW(write_folder_atomically(temp.file("o"), {{"", "x"}}), std::invalid_argument);
  std::ofstream(temp.file("file")) << "a file\n";
  try {
    write_folder_atomically(temp.file("file"), {{"x.yaml", "x"}});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), temp.file("file") + ": not a folder");
  }
  EXPECT_EQ(read(temp.file("file")), "a file\n");
}

TEST(ScratchFiles, AFolderIsEmptiedAndRemoved) {
  test::TempFolder temp;
  const fs::path folder = temp.file(".out.tmp1");
  fs::create_directory(folder);
  std::ofstream(folder / "a") << "a";
  std::ofstream(folder / "b") << "b";
  const fs::path file = temp.file("loose");
  std::ofstream(file) << "c";
  {
    const ScratchFile scratch_folder(folder.string(), true);
    const ScratchFile scratch_file(file.string());
    remove_scratch_files();
  }
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_FALSE(fs::exists(file));
}

// A child that keeps writing a scratch file (a twin worker filling in its trace as a signal
// arrives) is killed and reaped before the file is removed, so the file stays gone. The child
// writes the file every millisecond and, after 20 s, a marker and exits: a remove that waited for
// it instead of killing it would find the marker.
TEST(ScratchFiles, AProcessIsEndedBeforeItsFilesAreRemoved) {
  test::TempFolder temp;
  const std::string late = temp.file("trace.json.partial");
  const std::string natural = temp.file("exited-by-itself");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int ms = 0;; ++ms) {
      const int fd = ::open(late.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) ::close(fd);
      if (ms > 20000) {
        const int marker = ::open(natural.c_str(), O_WRONLY | O_CREAT, 0644);
        if (marker >= 0) ::close(marker);
        ::_exit(0);
      }
      ::usleep(1000);
    }
  }
  while (!fs::exists(late)) ::usleep(1000);  // the child is writing
  {
    const ScratchFile scratch_file(late);
    const ScratchProcess scratch_process(child);
    remove_scratch_files();
  }
  // Killed and reaped by remove_scratch_files (no child left to wait for), so it can write
  // nothing from now on.
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_FALSE(fs::exists(late));
  EXPECT_FALSE(fs::exists(natural));
}

}  // namespace
}  // namespace hetplan::formats
