// The rank monitors' marker files (event_files.h): the folder is hvdrun's own (mode
// 0700, a name drawn by mkdtemp); a marker with the job's token is read once and
// removed; a file without it, a link and a FIFO are removed unread, named when asked,
// and reading never blocks on the FIFO; the folder goes with what it holds.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "event_files.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

std::string g_parent;

int make_parent(void**) {
  char pattern[] = "/tmp/event_files.XXXXXX";
  if (!::mkdtemp(pattern)) return -1;
  g_parent = pattern;
  return 0;
}

int remove_parent(void**) {
  ::rmdir(g_parent.c_str());
  return 0;
}

void put(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  assert_non_null(f);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void folder_is_private_and_removed(void**) {
  std::string path;
  {
    auto events = EventFolder::create(g_parent);
    assert_true(events.ok());
    path = events->path();
    assert_true(path.rfind(g_parent + "/" + kEventsFolderPrefix, 0) == 0);
    assert_int_equal(events->token().size(), 32);
    struct stat st;
    assert_int_equal(::lstat(path.c_str(), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    auto other = EventFolder::create(g_parent);
    assert_true(other.ok());
    assert_true(other->path() != path);
    assert_true(other->token() != events->token());
    put(path + "/left.part", "half");
  }
  assert_false(exists(path));
  auto missing = EventFolder::create(g_parent + "/none");
  assert_false(missing.ok());
  assert_contains(missing.error(), "cannot make a folder in " + g_parent + "/none");
}

void token_marker_read_once(void**) {
  auto events = EventFolder::create(g_parent);
  assert_true(events.ok());
  assert_true(write_event_file(events->path(), events->token(), "node1.12.0",
                               "\x1ehvdrun:rank-exit rank=1 status=3\n"));
  // Written under .part first and renamed: nothing half-written stays.
  assert_false(exists(events->path() + "/node1.12.0.part"));
  // A name already there is never opened again (O_EXCL): the write fails.
  assert_int_equal(::symlink("/etc/passwd", (events->path() + "/node1.12.1.part").c_str()), 0);
  assert_false(write_event_file(events->path(), events->token(), "node1.12.1", "x\n"));
  std::vector<std::string> ignored;
  auto markers = events.value().take_markers(&ignored);
  assert_words(markers, "\x1ehvdrun:rank-exit rank=1 status=3");
  assert_true(ignored.empty());
  assert_true(events.value().take_markers(&ignored).empty());
  ::unlink((events->path() + "/node1.12.1.part").c_str());
}

void forged_entries_ignored_without_blocking(void**) {
  auto events = EventFolder::create(g_parent);
  assert_true(events.ok());
  const std::string dir = events->path();
  put(dir + "/forged", "\x1ehvdrun:rank-exit rank=1 status=3\n");
  put(dir + "/wrong-token", "0123456789abcdef0123456789abcdef\n\x1ehvdrun:rank-exit rank=1 status=3\n");
  assert_int_equal(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  put(g_parent + "/target", "\x1ehvdrun:rank-exit rank=0 status=9\n");
  assert_int_equal(::symlink((g_parent + "/target").c_str(), (dir + "/link").c_str()), 0);
  assert_true(write_event_file(dir, events->token(), "real", "\x1ehvdrun:rank-mpi rank=0\n"));
  std::vector<std::string> ignored;
  auto markers = events.value().take_markers(&ignored);
  assert_words(markers, "\x1ehvdrun:rank-mpi rank=0");
  assert_int_equal(ignored.size(), 4);
  std::string all;
  for (const auto& note : ignored) all += note + "\n";
  assert_contains(all, dir + "/forged: without the job's token");
  assert_contains(all, dir + "/wrong-token: without the job's token");
  assert_contains(all, dir + "/fifo: a FIFO");
  assert_contains(all, dir + "/link: a symbolic link");
  assert_false(exists(dir + "/fifo"));
  assert_true(exists(g_parent + "/target"));
  ::unlink((g_parent + "/target").c_str());
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(folder_is_private_and_removed),
      cmocka_unit_test(token_marker_read_once),
      cmocka_unit_test(forged_entries_ignored_without_blocking),
  };
  return cmocka_run_group_tests(tests, make_parent, remove_parent);
}
