// Replays inputs through a libFuzzer target without libFuzzer, so that any compiler
// runs the seed corpora and the inputs that once crashed (fuzz/regressions/<target>)
// in the ordinary suite. Arguments: files or directories of inputs. A target aborts
// on a broken invariant, which fails the test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

static int replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", file.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

int main(int argc, char** argv) {
  int inputs = 0, errors = 0;
  for (int i = 1; i < argc; ++i) {
    fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) {
          errors += replay(e.path());
          ++inputs;
        }
    } else if (fs::exists(p)) {
      errors += replay(p);
      ++inputs;
    }
  }
  std::printf("%d inputs replayed\n", inputs);
  return errors ? 1 : 0;
}
