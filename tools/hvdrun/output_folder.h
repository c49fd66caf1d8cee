// --output-filename DIR: the folder where the launcher writes each rank's output.
// Hydra (MPICH, Intel MPI) opens fixed names there (rank.R.stdout, rank.R.stderr)
// following whatever is at them: a link another user planted in a folder they can
// write turns a rank's output into an overwrite of the file it points to, with the
// job's rights. hvdrun cannot change how the launcher opens its files; it warns when
// others can write DIR, and puts files of its own at Hydra's names before the job
// starts, replacing what another user left there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "result.h"

namespace hvdrun {

// A warning when users other than this one (and root) can write dir or own it: what
// they plant there, the job writes through. nullopt when only this user can.
std::optional<std::string> shared_folder_warning(const std::string& dir);

// Makes each of Hydra's per-rank output files for ranks 0..num_proc-1 a regular file
// of this user: a file of this user already there is kept (Hydra truncates it), anything
// else there is removed first. Fails, saying which name, when that cannot be done.
Status claim_hydra_output_files(const std::string& dir, int64_t num_proc);

}  // namespace hvdrun
