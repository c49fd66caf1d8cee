// Files written where the user says (the timeline, the autotune log, the step summary,
// hvdrun's reports) may sit in a folder that other users can write, such as /tmp.
// fopen(path, "w") follows whatever is at path: a symbolic link another user planted
// there makes the job overwrite the file it points to, with the job's rights (root's,
// often), and the kernel's guard against that (fs.protected_symlinks) is off in many
// containers. These functions never open a name someone else may have made: they
// create a new file beside it (mkstemp: O_CREAT|O_EXCL, which follows no link) and
// rename it over the name, which replaces a planted link or file instead of following
// it. The new file gets the mode fopen would have given it: 0666 less the umask.
//
// A device or a FIFO at path is written to as before (/dev/stdout, /dev/null, a pipe
// the user made for a reader) when this user or root made the name, link or not:
// nobody else can have planted it. Anything else is replaced.
//
// Both are thread-safe; neither changes the process's umask.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace hvd {

// Writes contents to a new file beside path and renames it to path once complete, so
// that a reader never sees a half-written file under that name. False with *error
// (naming path and what failed); nothing is left behind then.
bool write_file_atomically(const std::string& path, std::string_view contents,
                           std::string* error);

// For a file written while the job runs (the timeline, the autotune log), readable under
// its name from the start: a new empty file, already renamed to path, open for writing.
// The caller owns the stream (fclose). nullptr with *error.
FILE* create_file_in_place(const std::string& path, std::string* error);

}  // namespace hvd
