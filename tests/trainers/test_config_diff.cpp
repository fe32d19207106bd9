// config_differences(): the keys two resolved configs disagree on, with both values, in schema
// order; ignored keys; keys only one schema has ("absent") and unset optional keys ("unset").
// And resume_fixed_key(), the rule of which keys a resume may not change.
#include <gtest/gtest.h>

#include "trainers/config_diff.h"
#include "trainers/resume_check.h"

namespace moh {
namespace {

using config::Key;
using config::Schema;

Schema schema_with(std::initializer_list<Key> extra) {
  Schema s = config::common_schema();
  Schema family;
  for (const Key& k : extra) family.add(k);
  return s.extend(family);
}

const char* kBase = "task: demo\nrun: {name: a}\ntrain: {steps: 5}\n";

TEST(ConfigDiff, NamesEachDifferingKeyWithBothValuesInSchemaOrder) {
  const Schema s = schema_with({Key::Int("model.width", "width").def(8)});
  const Config a = Config::parse(kBase, s, "a", {"optim.lr=0.01", "threads=1"});
  const Config b = Config::parse(kBase, s, "b", {"optim.lr=0.02", "train.steps=7", "threads=2", "model.width=16"});
  const std::vector<ConfigDifference> d = config_differences(a, b, {"threads"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].key, "train.steps");
  EXPECT_EQ(d[0].a, "5");
  EXPECT_EQ(d[0].b, "7");
  EXPECT_EQ(d[1].key, "optim.lr");
  EXPECT_EQ(d[2].key, "model.width");
  EXPECT_EQ(describe_differences(d), "train.steps 5 -> 7, optim.lr 0.01 -> 0.02, model.width 8 -> 16");
  EXPECT_TRUE(config_differences(a, a).empty());
  EXPECT_EQ(config_differences(a, b).size(), 4u);  // threads counts unless ignored
}

TEST(ConfigDiff, KeysOfOneSchemaOnlyAndUnsetKeys) {
  const Config a = Config::parse(kBase, schema_with({Key::Int("model.width", "width").def(8)}), "a");
  const Config b = Config::parse(kBase, schema_with({Key::Float("model.scale", "scale").optional()}), "b",
                                 {"ema.decay=0.9"});
  const std::string text = describe_differences(config_differences(a, b));
  EXPECT_EQ(text, "ema.decay unset -> 0.9, model.width 8 -> absent, model.scale absent -> unset");
}

TEST(ResumeRule, ModelTaskAndOptimizerAreFixedTheRestMayChange) {
  for (const char* key : {"task", "model.hidden", "model.dim", "model.drop_path", "optim.name"})
    EXPECT_TRUE(resume_fixed_key(key)) << key;
  for (const char* key : {"model.moh_execution", "model.moh_projections", "optim.lr", "train.steps", "eval.every",
                          "data.root", "run.seed"})
    EXPECT_FALSE(resume_fixed_key(key)) << key;
}

}  // namespace
}  // namespace moh
