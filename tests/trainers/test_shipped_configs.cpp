// Every config under configs/ loads and validates against its family's schema, and each MoH config
// activates the share of heads its name and comment promise (active query rows over all of them).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "tests/test_paths.h"
#include "trainers/attention_config.h"
#include "trainers/config.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

fs::path configs_dir() { return fs::path(MOH_TEST_PATH(MOH_SOURCE_DIR)) / "configs"; }

Config load(const fs::path& file) {
  const std::string family = Config::peek_string(file.string(), "task", {});
  return Config::load(file.string(), training_schema(family), {});
}

// The share the model computes (AttentionSpec::active_share: active query rows over all, per-block head counts
// included); the depth is the longest per-block list's (one-value lists broadcast, so any depth gives the same).
double active_share(const Config& cfg) {
  int64_t depth = 1;
  for (const char* key : {"model.shared_heads", "model.routed_topk", "model.block_heads"})
    depth = std::max(depth, int64_t(cfg.get_int_list(key).size()));
  const int64_t heads = cfg.has("model.heads") ? cfg.get_int("model.heads") : 6;  // deit_small: 6 heads
  return attention_spec_from_config(cfg, depth, heads).active_share(depth, heads);
}

TEST(ShippedConfigs, EveryConfigValidates) {
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(configs_dir())) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load(entry.path()));
    ++count;
  }
  EXPECT_GE(count, 9);
}

TEST(ShippedConfigs, MohConfigsUseTheAdvertisedShareOfHeads) {
  const std::map<std::string, double> expected{{"vit/fmnist_moh.yaml", 0.75},
                                               {"vit/fmnist_moh50.yaml", 0.5},
                                               {"vit/fmnist_moh90.yaml", 43.0 / 48.0},
                                               {"vit/imagenet_deit_small_moh75.yaml", 0.75},
                                               {"dit/fmnist_moh75.yaml", 0.75},
                                               {"dit/fmnist_moh90.yaml", 44.0 / 48.0},
                                               {"dit/imagenet_xl_moh90.yaml", 403.0 / 448.0},
                                               {"dit/imagenet_xl_moh75.yaml", 0.75}};
  for (const auto& [file, share] : expected) {
    const Config cfg = load(configs_dir() / file);
    EXPECT_EQ(cfg.get_string("model.attention"), "moh") << file;
    EXPECT_NEAR(active_share(cfg), share, 1e-12) << file;
  }
  EXPECT_EQ(load(configs_dir() / "vit/fmnist_mha.yaml").get_string("model.attention"), "mha");
  EXPECT_EQ(load(configs_dir() / "dit/fmnist_mha.yaml").get_string("model.attention"), "mha");
  EXPECT_EQ(load(configs_dir() / "dit/imagenet_xl_mha.yaml").get_string("model.attention"), "mha");
}

}  // namespace
}  // namespace moh
