// The fixture of the task tests that train on the real Fashion-MNIST files: skipped when the Debian
// dataset is not installed, and a config loader writing `task` and the run block (run folder
// <tmp>/runs/<name>, seed 1) above the test's own keys.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/fashion_mnist.h"
#include "tests/test_util.h"
#include "trainers/config.h"
#include "trainers/trainer.h"

namespace moh::test {

inline bool fashion_mnist_installed() {
  const std::string root = default_fashion_mnist_root();
  return std::filesystem::exists(root + "/train-labels-idx1-ubyte.gz") ||
         std::filesystem::exists(root + "/train-labels-idx1-ubyte");
}

inline constexpr const char* kNoFashionMnist =
    "Fashion-MNIST is not installed (scripts/setup.sh installs dataset-fashion-mnist)";

class FashionMnistRunTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (!fashion_mnist_installed()) GTEST_SKIP() << kNoFashionMnist;
  }
  // The config of task `family` with the YAML `keys` (everything but task and run), run folder `name`.
  Config task_config(const std::string& family, const std::string& name, const std::string& keys,
                     const std::vector<std::string>& overrides) const {
    const std::string file = write(name + ".yaml", "task: " + family + "\nrun: {name: " + name + ", dir: " +
                                                       path("runs") + ", seed: 1}\n" + keys);
    return Config::load(file, training_schema(family), overrides);
  }
};

}  // namespace moh::test
