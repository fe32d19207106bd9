// The source tree keeps its layering (tests/layering/include_rules.h): one test per top-level folder
// lists that folder's includes and fails naming file:line and the include for each that points up the
// layers or across siblings; the checker itself is tested on hand-made includes and a scratch tree.
// Built as its own program (moh_layering_tests): it reads the source tree, not the library, so it
// needs neither libmoh_core nor a bundle (which carries no source code).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/layering/include_rules.h"
#include "tests/test_paths.h"

namespace moh::layering {
namespace {

namespace fs = std::filesystem;

fs::path source_root() { return fs::path(MOH_TEST_PATH(MOH_SOURCE_DIR)); }

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

class SourceFolder : public ::testing::TestWithParam<std::string> {};

TEST_P(SourceFolder, IncludesPointDownTheLayers) {
  const auto includes = scan_includes(source_root(), GetParam());
  ASSERT_FALSE(includes.empty()) << "no #include found under " << (source_root() / GetParam()).string();
  const auto violations = layering_violations(includes);
  EXPECT_TRUE(violations.empty()) << violations.size() << " include(s) break the layering:\n" << joined(violations);
}

INSTANTIATE_TEST_SUITE_P(IncludeLayering, SourceFolder, ::testing::ValuesIn(source_folders()),
                         [](const auto& info) { return info.param; });

TEST(IncludeRules, AllowsOwnFolderAndLowerLayers) {
  const std::vector<IncludeLine> ok = {
      {"core/ops/norm.cpp", 3, "core/kernels/norm.h"},     {"autograd/norm_fns.cpp", 4, "core/ops.h"},
      {"models/vit/vit.h", 5, "layers/module.h"},          {"data/idx.cpp", 6, "core/error.h"},
      {"trainers/vit_task.cpp", 7, "models/vit/vit.h"},    {"trainers/vit_task.cpp", 8, "data/mixup.h"},
      {"tools/cli.cpp", 9, "trainers/trainer.h"},          {"bench/conv/main.cpp", 10, "tools/cli.h"},
      {"fuzz/png.cpp", 11, "tests/data/image_test_util.h"}, {"core/cuda/reduce.cu", 12, "core/kernels/reduce.h"},
      {"core/math/activations.h", 13, "core/macros.h"},     {"core/kernels/reduce.h", 14, "core/math/reduce_ops.h"},
      {"core/cpu/conv.cpp", 15, "core/cpu/conv_onednn.h"},
  };
  EXPECT_EQ(joined(layering_violations(ok)), "");
}

TEST(IncludeRules, NamesFileLineAndIncludeThatPointsUp) {
  const auto violations = layering_violations({{"core/tensor.cpp", 7, "autograd/variable.h"}});
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_NE(violations[0].find("core/tensor.cpp:7: includes \"autograd/variable.h\""), std::string::npos)
      << violations[0];
  EXPECT_NE(violations[0].find("points up the layers"), std::string::npos) << violations[0];
}

TEST(IncludeRules, FlagsEveryUpwardOrSiblingEdge) {
  const std::vector<IncludeLine> bad = {
      {"layers/linear.cpp", 1, "trainers/trainer.h"}, {"models/vit/vit.cpp", 2, "data/mixup.h"},
      {"data/idx.cpp", 3, "models/vit/vit.h"},        {"trainers/trainer.cpp", 4, "tools/cli.h"},
      {"tools/cli.cpp", 5, "tests/test_util.h"},      {"bench/counters.h", 6, "fuzz/fuzz_util.h"},
      {"autograd/tape.cpp", 7, "layers/module.h"},
  };
  const auto violations = layering_violations(bad);
  ASSERT_EQ(violations.size(), bad.size()) << joined(violations);
  EXPECT_NE(violations[1].find("siblings"), std::string::npos) << violations[1];
}

TEST(IncludeRules, KeepsTheBackendsApart) {
  const std::vector<IncludeLine> bad = {
      {"core/cpu/copy.cpp", 1, "core/cuda/runtime.h"},     {"core/cuda/norm.cu", 2, "core/cpu/blas.h"},
      {"core/math/activations.h", 3, "core/ops/checks.h"}, {"core/math/reduce_ops.h", 4, "core/kernels/reduce.h"},
      {"core/kernels/conv.h", 5, "core/cuda/runtime.h"},   {"core/kernels/norm.h", 6, "core/ops/checks.h"},
  };
  const auto violations = layering_violations(bad);
  ASSERT_EQ(violations.size(), bad.size()) << joined(violations);
  EXPECT_NE(violations[1].find("core/cuda/norm.cu:2: includes \"core/cpu/blas.h\""), std::string::npos)
      << violations[1];
}

TEST(IncludeRules, FlagsIncludesNotRootedAtASourceFolder) {
  const auto violations = layering_violations({{"layers/linear.cpp", 2, "linear.h"}});
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_NE(violations[0].find("not rooted at a source folder"), std::string::npos) << violations[0];
}

TEST(IncludeRules, ScanFindsOurIncludesWithLineNumbers) {
  const fs::path root = fs::temp_directory_path() / ("moh_layering_scan_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "layers" / "sub");
  std::ofstream(root / "layers" / "sub" / "a.cpp") << "// a file\n"
                                                     "#include <vector>\n"
                                                     "  #  include \"trainers/trainer.h\"\n"
                                                     "// #include \"tools/cli.h\"\n"
                                                     "#include <core/tensor.h>\n";
  std::ofstream(root / "layers" / "notes.txt") << "#include \"tools/cli.h\"\n";
  const auto includes = scan_includes(root, "layers");
  fs::remove_all(root);
  ASSERT_EQ(includes.size(), 2u);
  EXPECT_EQ(includes[0].file, "layers/sub/a.cpp");
  EXPECT_EQ(includes[0].line, 3);
  EXPECT_EQ(includes[0].target, "trainers/trainer.h");
  EXPECT_EQ(includes[1].line, 5);
  EXPECT_EQ(includes[1].target, "core/tensor.h");
}

TEST(IncludeRules, ScanOfAMissingFolderIsAnError) {
  EXPECT_THROW(scan_includes(fs::temp_directory_path() / "moh_layering_no_such_root", "core"), std::exception);
}

}  // namespace
}  // namespace moh::layering
