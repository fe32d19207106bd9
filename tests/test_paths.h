// Paths that CMake compiles into the test programs (MOH_SOURCE_DIR, MOH_FIXTURE_DIR, MOH_CLI_PATH,
// MOH_MAKE_IMAGE_FOLDER_PATH, MOH_MPIRUN), each overridable at run time by the environment variable
// of the same name. A bundle's run.sh (scripts/bundle.sh) points them at the bundle's own copies, so
// the suites run on a machine that has neither the source nor the build tree. A variable set to the
// empty string counts as set (MOH_MPIRUN= means "no mpirun").
#pragma once

#include <cstdlib>
#include <string>

namespace moh::test {

inline std::string path_setting(const char* variable, const char* compiled) {
  const char* value = std::getenv(variable);
  return value ? value : compiled;
}

}  // namespace moh::test

// MOH_TEST_PATH(MOH_CLI_PATH): $MOH_CLI_PATH when set, else the compiled-in MOH_CLI_PATH.
#define MOH_TEST_PATH(name) ::moh::test::path_setting(#name, name)
