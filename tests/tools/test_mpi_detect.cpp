// Recognising the MPI implementation from `mpiexec --version`, with the banners
// of each implementation and with fake launchers that print them.
#include <string>

#include "mpi_detect.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

const char* g_fake_dir = nullptr;  // from argv: the directory of the fake launchers

int flavor_of(const char* text) {
  auto f = flavor_from_version_text(text);
  return f ? static_cast<int>(*f) : -1;
}

void banners(void**) {
  assert_int_equal(flavor_of("HYDRA build details:\n    Version: 4.0.2\n"),
                   static_cast<int>(MpiFlavor::Mpich));
  assert_int_equal(flavor_of("MPICH Version: 3.3a2\n"), static_cast<int>(MpiFlavor::Mpich));
  assert_int_equal(flavor_of("mpirun (Open MPI) 4.1.4\n"), static_cast<int>(MpiFlavor::OpenMpi));
  assert_int_equal(flavor_of("mpiexec (OpenRTE) 2.1.1\n"), static_cast<int>(MpiFlavor::OpenMpi));
  // Intel MPI's launcher is Hydra-based; its banner must not read as MPICH.
  assert_int_equal(flavor_of("Intel(R) MPI Library for Linux* OS, Version 2021.9\n"
                             "HYDRA build details:\n"),
                   static_cast<int>(MpiFlavor::IntelMpi));
  assert_int_equal(flavor_of("FooMPI 1.0"), -1);
  assert_int_equal(flavor_of(""), -1);
  assert_string_equal(flavor_name(MpiFlavor::OpenMpi), "Open MPI");
}

void launcher_choice(void**) {
  assert_string_equal(choose_launcher("/opt/x/mpirun").c_str(), "/opt/x/mpirun");
  // An empty HVDRUN_MPIEXEC is the same as none.
  std::string chosen = choose_launcher("");
  assert_true(chosen == "mpiexec" || chosen == "mpirun");
  assert_string_equal(choose_launcher(nullptr).c_str(), chosen.c_str());
  // HVDRUN_MPIEXEC wins over the library's MPI.
  assert_string_equal(choose_launcher("/opt/x/mpirun", MpiFlavor::OpenMpi).c_str(),
                      "/opt/x/mpirun");
}

// A launcher of another MPI than libhvd's would start every rank as a job of its own.
void launcher_of_another_mpi(void**) {
  assert_false(launcher_mismatch(MpiFlavor::Mpich, MpiFlavor::Mpich, "mpiexec").has_value());
  assert_false(launcher_mismatch(MpiFlavor::Mpich, std::nullopt, "mpiexec").has_value());
  auto why = launcher_mismatch(MpiFlavor::Mpich, MpiFlavor::OpenMpi, "mpiexec");
  assert_true(why.has_value());
  assert_contains(*why, "mpiexec belongs to MPICH but libhvd was built against Open MPI");
  assert_contains(*why, "HVDRUN_MPIEXEC=mpiexec.openmpi");
}

std::string fake(const char* name) { return std::string(g_fake_dir) + "/" + name; }

void fake_launchers(void**) {
  assert_int_equal(static_cast<int>(detect_flavor(fake("fake_mpich")).value()),
                   static_cast<int>(MpiFlavor::Mpich));
  assert_int_equal(static_cast<int>(detect_flavor(fake("fake_openmpi")).value()),
                   static_cast<int>(MpiFlavor::OpenMpi));
  assert_int_equal(static_cast<int>(detect_flavor(fake("fake_intel")).value()),
                   static_cast<int>(MpiFlavor::IntelMpi));
  assert_contains(detect_flavor(fake("fake_unknown")).error(),
                  "does not name MPICH, Open MPI or Intel MPI (it says: FooMPI launcher 1.0)");
  assert_contains(detect_flavor(fake("fake_broken")).error(),
                  "failed with status 3: fake launcher: cannot tell its version");
  assert_contains(detect_flavor("/no/such/mpiexec").error(),
                  "cannot run '/no/such/mpiexec': No such file or directory");
  auto probe = run_version_probe(fake("fake_openmpi"), 30000);
  assert_true(probe.ok());
  assert_int_equal(probe->exit_status, 0);
  assert_contains(probe->text, "(Open MPI) 4.1.4");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FAKE_LAUNCHER_DIR\n", argv[0]);
    return 2;
  }
  g_fake_dir = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(banners),
      cmocka_unit_test(launcher_choice),
      cmocka_unit_test(launcher_of_another_mpi),
      cmocka_unit_test(fake_launchers),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
