// The rank monitors' markers as files (rank_exit.h), for --output-filename, where the
// ranks' stderr goes to files that hvdrun does not read. The folder they go to is the
// job's own: hvdrun makes it with mkdtemp (a name nobody can guess, mode 0700) under
// the output folder, so that the monitors of other nodes reach it when that folder is
// on a shared file system (a node that shares none loses its markers, as before: its
// ranks are then not watched). Each marker file carries the job's random token, given
// to the monitors in the environment (argv is readable by every user, the environment
// only by the job's); a file without it is forged and ignored. hvdrun reads only
// regular files it owns, opened without following a link and without blocking (a
// FIFO planted there would otherwise stop it for as long as nobody writes to it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace hvdrun {

// 32 random hex characters (getrandom); empty if the kernel gives none.
std::string random_token();

// The variable that gives the job's token to the rank monitors; the monitor removes it
// from the environment of the rank it starts.
inline constexpr const char* kEventsTokenVariable = "HVDRUN_EVENTS_TOKEN";
// The folder's name under the output folder, before mkdtemp's six characters.
inline constexpr const char* kEventsFolderPrefix = ".hvdrun-events.";

// The monitor's side: writes token and line (a marker, newline included) to a new file
// in dir named name (each monitor's names are its own: host, pid, serial), whole under
// name + ".part" first so that hvdrun never reads half of it. O_CREAT|O_EXCL|O_NOFOLLOW,
// mode 0600. False when it cannot.
bool write_event_file(const std::string& dir, const std::string& token, const std::string& name,
                      std::string_view line);

// hvdrun's side: the job's folder, removed with what it holds when destroyed.
class EventFolder {
 public:
  // Makes <parent>/.hvdrun-events.XXXXXX and the job's token; parent must exist.
  static Result<EventFolder> create(const std::string& parent);
  EventFolder(EventFolder&& other) noexcept;
  EventFolder& operator=(EventFolder&&) = delete;
  EventFolder(const EventFolder&) = delete;
  ~EventFolder();

  const std::string& path() const { return path_; }
  const std::string& token() const { return token_; }

  // The marker lines of the files complete since the last call (newline removed),
  // each file read once and removed. Entries that are not the monitors' (not a regular
  // file of this user, or without the token) are removed unread or unused, each
  // described in *ignored when given.
  std::vector<std::string> take_markers(std::vector<std::string>* ignored = nullptr);

 private:
  EventFolder(std::string path, int fd, std::string token)
      : path_(std::move(path)), fd_(fd), token_(std::move(token)) {}
  std::string path_;
  int fd_ = -1;  // the folder as made: a name swapped later is not followed
  std::string token_;
};

}  // namespace hvdrun
