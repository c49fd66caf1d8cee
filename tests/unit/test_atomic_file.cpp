// base/atomic_file.h: files are made new beside their name and renamed over it, so a
// link at the name is replaced and its target left alone; a half-written file never
// shows under the name; the mode is 0666 less the umask; a FIFO this user made is
// written through; a failure leaves nothing behind.
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/atomic_file.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

std::string g_dir;

std::string slurp(const std::string& path) {
  std::string text;
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return "<missing>";
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

void put(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  assert_non_null(f);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

std::vector<std::string> entries() {
  std::vector<std::string> names;
  DIR* dir = ::opendir(g_dir.c_str());
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);  // temporary files too
  }
  ::closedir(dir);
  return names;
}

int make_dir(void**) {
  char pattern[] = "/tmp/atomic_file.XXXXXX";
  assert_non_null(::mkdtemp(pattern));
  g_dir = pattern;
  return 0;
}

int remove_dir(void**) {
  for (const std::string& name : entries()) ::unlink((g_dir + "/" + name).c_str());
  ::rmdir(g_dir.c_str());
  return 0;
}

void writes_whole_file_with_umask_mode(void**) {
  const mode_t old = ::umask(027);
  const std::string path = g_dir + "/summary.json";
  std::string error;
  assert_true(hvd::write_file_atomically(path, "{\"a\": 1}\n", &error));
  ::umask(old);
  assert_string_equal(slurp(path).c_str(), "{\"a\": 1}\n");
  struct stat st;
  assert_int_equal(::lstat(path.c_str(), &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0640);
  // Again over the file just written: replaced, and no temporary file left.
  assert_true(hvd::write_file_atomically(path, "second", &error));
  assert_string_equal(slurp(path).c_str(), "second");
  assert_int_equal(entries().size(), 1);
  ::unlink(path.c_str());
}

void replaces_a_link_and_leaves_its_target(void**) {
  const std::string target = g_dir + "/precious", path = g_dir + "/timeline.json";
  put(target, "keep me");
  ::chmod(target.c_str(), 0600);
  assert_int_equal(::symlink(target.c_str(), path.c_str()), 0);
  std::string error;
  assert_true(hvd::write_file_atomically(path, "new", &error));
  assert_string_equal(slurp(target).c_str(), "keep me");
  struct stat st;
  assert_int_equal(::lstat(path.c_str(), &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_string_equal(slurp(path).c_str(), "new");

  // The same for a file written while the job runs: in place, under its name, at once.
  ::unlink(path.c_str());
  assert_int_equal(::symlink(target.c_str(), path.c_str()), 0);
  FILE* f = hvd::create_file_in_place(path, &error);
  assert_non_null(f);
  assert_int_equal(::lstat(path.c_str(), &st), 0);
  assert_true(S_ISREG(st.st_mode));
  std::fputs("[\n", f);
  std::fflush(f);
  assert_string_equal(slurp(path).c_str(), "[\n");
  std::fclose(f);
  assert_string_equal(slurp(target).c_str(), "keep me");
  ::unlink(path.c_str());
  ::unlink(target.c_str());
}

void writes_through_own_fifo(void**) {
  const std::string fifo = g_dir + "/pipe", link = g_dir + "/to-pipe";
  assert_int_equal(::mkfifo(fifo.c_str(), 0600), 0);
  assert_int_equal(::symlink(fifo.c_str(), link.c_str()), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  assert_true(reader >= 0);
  std::string error;
  assert_true(hvd::write_file_atomically(link, "through", &error));
  char buf[16] = {};
  assert_int_equal(::read(reader, buf, sizeof buf - 1), 7);
  assert_string_equal(buf, "through");
  ::close(reader);
  struct stat st;
  assert_int_equal(::lstat(fifo.c_str(), &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  assert_int_equal(::lstat(link.c_str(), &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  ::unlink(link.c_str());
  ::unlink(fifo.c_str());
}

void failure_says_why_and_leaves_nothing(void**) {
  std::string error;
  assert_false(hvd::write_file_atomically(g_dir + "/no/such/folder/f.json", "x", &error));
  assert_non_null(std::strstr(error.c_str(), "no/such/folder/f.json"));
  assert_non_null(std::strstr(error.c_str(), "No such file or directory"));
  // A folder at the name: it stays, and the temporary file goes.
  const std::string folder = g_dir + "/a-folder";
  assert_int_equal(::mkdir(folder.c_str(), 0700), 0);
  error.clear();
  assert_null(hvd::create_file_in_place(folder, &error));
  assert_non_null(std::strstr(error.c_str(), "a-folder"));
  assert_int_equal(entries().size(), 1);
  ::rmdir(folder.c_str());
  error.clear();
  assert_false(hvd::write_file_atomically(g_dir + "/", "x", &error));
  assert_non_null(std::strstr(error.c_str(), "names a folder"));
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(writes_whole_file_with_umask_mode),
      cmocka_unit_test(replaces_a_link_and_leaves_its_target),
      cmocka_unit_test(writes_through_own_fifo),
      cmocka_unit_test(failure_says_why_and_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
