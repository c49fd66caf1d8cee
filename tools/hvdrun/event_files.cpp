#include "event_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvdrun {
namespace {

bool ends_with(std::string_view text, std::string_view end) {
  return text.size() >= end.size() && text.substr(text.size() - end.size()) == end;
}

// Reads a whole small file; false when it is not a regular file of this user (a link
// is not followed, a FIFO or device not waited on).
bool read_own_file(int dir_fd, const char* name, std::string* text, std::string* why) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP ? "a symbolic link" : std::string("cannot open it: ") + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok && !S_ISREG(st.st_mode)) {
    *why = S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file";
    ok = false;
  } else if (ok && st.st_uid != ::geteuid()) {
    *why = "owned by uid " + std::to_string(st.st_uid);
    ok = false;
  }
  char buf[4096];
  ssize_t n = 0;
  while (ok && (n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text->size() > 65536) {
      *why = "unreadable or too long";
      ok = false;
      break;
    }
    text->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ok;
}

}  // namespace

std::string random_token() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

bool write_event_file(const std::string& dir, const std::string& token, const std::string& name,
                      std::string_view line) {
  const std::string final_path = dir + "/" + name;
  const std::string partial = final_path + ".part";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string text = token + "\n" + std::string(line);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (written && ::rename(partial.c_str(), final_path.c_str()) == 0) return true;
  ::unlink(partial.c_str());
  return false;
}

Result<EventFolder> EventFolder::create(const std::string& parent) {
  using R = Result<EventFolder>;
  const std::string token = random_token();
  if (token.empty()) return R::failure(std::string("cannot draw a random token: ") + std::strerror(errno));
  std::string path = parent + "/" + kEventsFolderPrefix + "XXXXXX";
  if (!::mkdtemp(path.data()))
    return R::failure("cannot make a folder in " + parent + " (" + std::strerror(errno) + ")");
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    // Another user renamed it and put something of theirs in its place.
    if (fd >= 0) ::close(fd);
    return R::failure(parent + ": the folder hvdrun made there (" + path +
                      ") was replaced at once; another user can write " + parent);
  }
  return EventFolder(std::move(path), fd, token);
}

EventFolder::EventFolder(EventFolder&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), token_(std::move(other.token_)) {
  other.fd_ = -1;
}

EventFolder::~EventFolder() {
  if (fd_ < 0) return;
  // Through the folder's descriptor: whatever its name leads to now is not touched.
  if (DIR* dir = ::fdopendir(::dup(fd_))) {
    while (dirent* entry = ::readdir(dir))
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
        ::unlinkat(fd_, entry->d_name, 0);
    ::closedir(dir);
  }
  struct stat by_fd, by_name;
  if (::fstat(fd_, &by_fd) == 0 && ::lstat(path_.c_str(), &by_name) == 0 &&
      by_fd.st_dev == by_name.st_dev && by_fd.st_ino == by_name.st_ino)
    ::rmdir(path_.c_str());
  ::close(fd_);
}

std::vector<std::string> EventFolder::take_markers(std::vector<std::string>* ignored) {
  std::vector<std::string> markers;
  const int listing = ::dup(fd_);
  DIR* dir = listing >= 0 ? ::fdopendir(listing) : nullptr;
  if (!dir) {
    if (listing >= 0) ::close(listing);
    return markers;
  }
  ::rewinddir(dir);  // the duplicate shares the offset of earlier listings
  const std::string expected = token_ + "\n";
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || ends_with(name, ".part")) continue;
    std::string text, why;
    if (read_own_file(fd_, name.c_str(), &text, &why) && text.compare(0, expected.size(), expected) != 0)
      why = "without the job's token";
    ::unlinkat(fd_, name.c_str(), 0);
    if (!why.empty()) {
      if (ignored) ignored->push_back("ignored " + path_ + "/" + name + ": " + why);
      continue;
    }
    std::string_view line(text);
    line.remove_prefix(expected.size());
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    markers.emplace_back(line);
  }
  ::closedir(dir);
  return markers;
}

}  // namespace hvdrun
