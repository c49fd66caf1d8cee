#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hvd {
namespace {

// umask() reads the mask only by setting it: another thread creating a file meanwhile
// would get the wrong mode. Linux shows it in /proc/self/status (since 4.7).
mode_t current_umask() {
  mode_t mask = 022;
  FILE* status = std::fopen("/proc/self/status", "re");
  if (!status) return mask;
  char line[256];
  while (std::fgets(line, sizeof line, status)) {
    if (std::strncmp(line, "Umask:", 6) == 0) {
      mask = static_cast<mode_t>(std::strtoul(line + 6, nullptr, 8)) & 0777;
      break;
    }
  }
  std::fclose(status);
  return mask;
}

std::string failure(const std::string& what, const std::string& path, int err) {
  return what + " '" + path + "': " + std::strerror(err);
}

// Opens what is at path when it is a device or a FIFO whose name this user or root
// made; -1 otherwise (the caller then replaces it). No O_TRUNC: if the name changed
// since lstat, whatever it now leads to is closed untouched unless it is still a
// device or a FIFO.
int open_trusted_special(const std::string& path) {
  struct stat name_stat, target;
  if (::lstat(path.c_str(), &name_stat) != 0) return -1;
  if (name_stat.st_uid != ::geteuid() && name_stat.st_uid != 0) return -1;
  if (S_ISREG(name_stat.st_mode) || S_ISDIR(name_stat.st_mode)) return -1;
  if (::stat(path.c_str(), &target) != 0 || !(S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode)))
    return -1;
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat opened;
  if (::fstat(fd, &opened) != 0 || !(S_ISCHR(opened.st_mode) || S_ISFIFO(opened.st_mode))) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A new file in path's folder, named after it and hidden (".name.XXXXXX"), with the
// mode fopen would have given. -1 with *error.
int create_beside(const std::string& path, std::string* temp, std::string* error) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    *error = "'" + path + "' names a folder, not a file";
    return -1;
  }
  // Short enough for NAME_MAX (255) whatever the name's length.
  *temp = folder + "." + name.substr(0, 200) + ".XXXXXX";
  const int fd = ::mkostemp(temp->data(), O_CLOEXEC);
  if (fd < 0) {
    *error = failure("cannot create a file in the folder of", path, errno);
    return -1;
  }
  if (::fchmod(fd, 0666 & ~current_umask()) != 0) {
    *error = failure("cannot set the mode of a new file for", path, errno);
    ::close(fd);
    ::unlink(temp->c_str());
    return -1;
  }
  return fd;
}

bool place(const std::string& temp, const std::string& path, std::string* error) {
  if (::rename(temp.c_str(), path.c_str()) == 0) return true;
  *error = failure("cannot put the new file in place of", path, errno);
  ::unlink(temp.c_str());
  return false;
}

}  // namespace

bool write_file_atomically(const std::string& path, std::string_view contents,
                           std::string* error) {
  std::string ignored;
  if (!error) error = &ignored;
  if (const int fd = open_trusted_special(path); fd >= 0) {
    FILE* f = ::fdopen(fd, "w");
    if (!f) {
      ::close(fd);
      *error = failure("cannot write", path, errno);
      return false;
    }
    bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
    const int err = errno;
    if (std::fclose(f) != 0) ok = false;
    if (!ok) *error = failure("cannot write", path, err);
    return ok;
  }
  std::string temp;
  const int fd = create_beside(path, &temp, error);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = failure("cannot write", path, n < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(temp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = failure("cannot write", path, errno);
    ::unlink(temp.c_str());
    return false;
  }
  return place(temp, path, error);
}

FILE* create_file_in_place(const std::string& path, std::string* error) {
  std::string ignored;
  if (!error) error = &ignored;
  int fd = open_trusted_special(path);
  if (fd < 0) {
    std::string temp;
    fd = create_beside(path, &temp, error);
    if (fd < 0) return nullptr;
    if (!place(temp, path, error)) {
      ::close(fd);
      return nullptr;
    }
  }
  FILE* f = ::fdopen(fd, "w");
  if (!f) {
    *error = failure("cannot write", path, errno);
    ::close(fd);
  }
  return f;
}

}  // namespace hvd
