// main() of moh_dist_tests: GoogleTest on every rank (only rank 0 prints, unless a test fails),
// or one failure scenario with --scenario=NAME (tests/dist/scenarios.h).
#include <gtest/gtest.h>

#include <string>

#include "core/dist/world.h"
#include "tests/dist/scenarios.h"

int main(int argc, char** argv) {
  const std::string flag = "--scenario=";
  if (argc == 2 && std::string(argv[1]).starts_with(flag))
    return moh::dist::test::run_scenario(std::string(argv[1]).substr(flag.size()));
  ::testing::InitGoogleTest(&argc, argv);
  if (moh::dist::world().rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
