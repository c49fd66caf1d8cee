#include "output_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "command_builder.h"

namespace hvdrun {
namespace {

std::string for_rank(const std::string& pattern, int64_t rank) {
  std::string path = pattern;
  const size_t at = path.find("%r");
  if (at != std::string::npos) path.replace(at, 2, std::to_string(rank));
  return path;
}

std::string kind_of(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISREG(st.st_mode)) return "a file";
  return "a special file";
}

Status claim(const std::string& path) {
  // Twice at most: a name planted again between the removal and the creation is
  // another user at work, and the job does not start.
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
      if (S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) return success();
      const std::string what = kind_of(st) + " of uid " + std::to_string(st.st_uid);
      if (::unlink(path.c_str()) != 0)
        return Status::failure(path + " is " + what + ", which hvdrun cannot remove (" +
                               std::strerror(errno) +
                               "); the launcher would write through it. Use a folder only you can write");
    }
    // open() applies the umask, as the launcher's own creation would.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return success();
    }
    if (errno != EEXIST)
      return Status::failure("cannot create " + path + " (" + std::strerror(errno) + ")");
  }
  return Status::failure(path + " is planted again as soon as it is removed; use a folder only you can write");
}

}  // namespace

std::optional<std::string> shared_folder_warning(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  // A sticky bit keeps others from removing this user's files, not from planting
  // links at names the launcher has yet to create: it does not make the folder safe.
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return dir + " can be written by other users (mode " + mode +
           "): files they plant there at the names of the ranks' output make the job write "
           "elsewhere. Use a folder only you can write";
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return dir + " belongs to another user (uid " + std::to_string(st.st_uid) +
           "), who can plant files there at the names of the ranks' output. Use a folder of your own";
  return std::nullopt;
}

Status claim_hydra_output_files(const std::string& dir, int64_t num_proc) {
  for (int64_t rank = 0; rank < num_proc; ++rank)
    for (const std::string& pattern : {hydra_stdout_pattern(dir), hydra_stderr_pattern(dir)})
      if (Status s = claim(for_rank(pattern, rank)); !s) return s;
  return success();
}

}  // namespace hvdrun
