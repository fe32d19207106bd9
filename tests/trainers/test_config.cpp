// Config system: schema building, YAML loading with base inheritance, overrides, typed getters, dump()
// round trips, every error class (each message names file, line, key, value and what is allowed), and
// docs/config.md being the current rendering of the common schema.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "tests/test_paths.h"
#include "tests/test_util.h"
#include "trainers/config.h"
#include "trainers/task.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using config::Key;
using config::Schema;

// The common schema plus a small model family section, as a family's Task would build it.
Schema family_schema() {
  Schema model;
  model.add(Key::Int("model.dim", "embedding width").def(64).min(8));
  model.add(Key::Int("model.depth", "transformer blocks").min(1));
  model.add(Key::Enum("model.kind", {"vit", "dit"}, "architecture").def("vit"));
  model.add(Key::IntList("model.moh.routed_topk", "routed heads per token, per layer")
                .def(std::vector<int64_t>{0, 2})
                .min(0));
  model.add(Key::FloatList("model.drop", "dropout per stage").def(std::vector<int64_t>{0, 0}).range(0, 1));
  model.add(Key::Bool("model.moh.sparse", "sparse MoH execution").def(true));
  model.add(Key::StringList("data.splits", "dataset splits").def(std::vector<std::string>{"train", "val"}));
  model.add(Key::Float("data.scale", "optional input scale").optional());
  return config::common_schema().extend(model);
}

class ConfigTest : public test::TempDirTest {
 protected:
  // Runs `fn`, which must throw ConfigError whose message holds every part.
  template <class F>
  void expect_error(F&& fn, std::initializer_list<std::string> parts) {
    test::expect_error<ConfigError>(fn, parts);
  }

  Config load(const std::string& name, const std::string& text,
              const std::vector<std::string>& overrides = {}) {
    return Config::load(write(name, text), family_schema(), overrides);
  }
};

const char* kMinimal = "run:\n  name: r1\ntrain:\n  steps: 100\nmodel:\n  depth: 2\n";

TEST_F(ConfigTest, CommonKeysHaveDefaults) {
  std::string path = write("min.yaml", "run:\n  name: r1\ntrain:\n  steps: 100\n");
  Config c = Config::load(path, config::common_schema());
  EXPECT_EQ(c.get_string("run.name"), "r1");
  EXPECT_EQ(c.get_string("run.dir"), "runs");
  EXPECT_EQ(c.get_int("run.seed"), 0);
  EXPECT_EQ(c.get_int("train.steps"), 100);
  EXPECT_FALSE(c.has("train.epochs"));
  EXPECT_EQ(c.get_int("train.batch_size"), 32);
  EXPECT_EQ(c.get_int("train.grad_accum"), 1);
  EXPECT_EQ(c.get_string("train.resume"), "");
  EXPECT_EQ(c.get_int("train.log_every"), 10);
  EXPECT_EQ(c.get_int("eval.every"), 1000);
  EXPECT_EQ(c.get_int("checkpoint.every"), 1000);
  EXPECT_EQ(c.get_int("checkpoint.keep_last"), 3);
  EXPECT_EQ(c.get_string("optim.name"), "adamw");
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 1e-3);
  EXPECT_DOUBLE_EQ(c.get_float("optim.weight_decay"), 0.01);
  EXPECT_TRUE(c.get_string_list("optim.no_decay").empty());
  EXPECT_FALSE(c.get_bool("optim.nesterov"));
  EXPECT_EQ(c.get_string("schedule.name"), "cosine");
  EXPECT_EQ(c.get_int("schedule.warmup_steps"), 0);
  EXPECT_EQ(c.get_string("precision"), "fp32");
  EXPECT_EQ(c.get_string("device"), "cpu");
  EXPECT_EQ(c.get_int("threads"), 0);
  EXPECT_DOUBLE_EQ(c.get_float("moh.balance_loss"), 0.01);
  EXPECT_EQ(c.origin("optim.lr"), "default");
  EXPECT_EQ(c.origin("train.steps"), path + ":4");
  EXPECT_EQ(c.origin("train.epochs"), "");
}

TEST_F(ConfigTest, SchemaRejectsBadKeys) {
  Schema s;
  s.add(Key::Int("a.b", "doc").def(1));
  EXPECT_THROW(s.add(Key::Int("a.b", "doc").def(1)), ConfigError);         // duplicate
  EXPECT_THROW(s.add(Key::Int("a", "doc").def(1)), ConfigError);           // a section
  EXPECT_THROW(s.add(Key::Int("a.b.c", "doc").def(1)), ConfigError);       // under a key
  EXPECT_THROW(s.add(Key::Int("A.x", "doc").def(1)), ConfigError);         // upper case
  EXPECT_THROW(s.add(Key::Int("x..y", "doc").def(1)), ConfigError);        // empty part
  EXPECT_THROW(s.add(Key::Int("base", "doc").def(1)), ConfigError);        // reserved
  EXPECT_THROW(s.add(Key::Int("x.y", "").def(1)), ConfigError);            // no doc
  EXPECT_THROW(s.add(Key::Int("x.y", "doc").def(0).min(1)), ConfigError);  // default out of range
  EXPECT_THROW(s.add(Key::Int("x.y", "doc").def("zero")), ConfigError);    // default of another type
  EXPECT_THROW(s.add(Key::Enum("x.y", {"p", "q"}, "doc").def("r")), ConfigError);
  EXPECT_THROW(s.add(Key::Enum("x.y", {}, "doc")), ConfigError);
  EXPECT_THROW(Key::String("x.y", "doc").min(0), ConfigError);
  EXPECT_THROW(Key::Int("x.y", "doc").range(2, 1), ConfigError);
  EXPECT_THROW(Key::Int("x.y", "doc").match("a", "a"), ConfigError);
  EXPECT_THROW(Key::String("x.y", "doc").match("(", "bad"), ConfigError);
  s.add(Key::Int("x.y", "doc").def(1));
  s.add(Key::Int("x.z", "doc").optional());
  s.add(Key::Int("x.w", "doc").optional());
  EXPECT_THROW(s.require_one_of({"x.y", "x.z"}), ConfigError);  // x.y has a default
  EXPECT_THROW(s.require_one_of({"x.z", "x.nope"}), ConfigError);
  EXPECT_THROW(s.require_one_of({"x.z"}), ConfigError);
  s.require_one_of({"x.z", "x.w"});
  EXPECT_THROW(s.require_one_of({"x.z", "x.w"}), ConfigError);
  EXPECT_THROW(Schema(s).extend(s), ConfigError);  // every key twice
  EXPECT_EQ(s.keys().size(), 4u);
  EXPECT_TRUE(s.is_section("x"));
  EXPECT_FALSE(s.is_section("x.y"));
}

TEST_F(ConfigTest, AllowedTextFormatAndSuggestions) {
  Schema s = family_schema();
  EXPECT_EQ(config::allowed_text(*s.find("train.steps")), "integer >= 1");
  EXPECT_EQ(config::allowed_text(*s.find("optim.beta2")), "float in [0, 1]");
  EXPECT_EQ(config::allowed_text(*s.find("optim.name")), "one of adamw, sgd");
  EXPECT_EQ(config::allowed_text(*s.find("device")), "cpu, cuda or cuda:N");
  EXPECT_EQ(config::allowed_text(*s.find("model.moh.routed_topk")), "list of integers, each >= 0");
  EXPECT_EQ(config::allowed_text(*s.find("model.moh.sparse")), "true or false");
  EXPECT_EQ(config::format_value(config::Value(1.0)), "1.0");
  EXPECT_EQ(config::format_value(config::Value(1e-8)), "1.0e-08");
  EXPECT_EQ(config::format_value(config::Value(2.5e20)), "2.5e+20");
  EXPECT_EQ(config::format_value(config::Value(0.1)), "0.1");
  EXPECT_EQ(config::format_value(config::Value(std::vector<int64_t>{0, 2, 2, 4})), "[0, 2, 2, 4]");
  EXPECT_EQ(config::format_value(config::Value(std::string("cuda:1"))), "cuda:1");
  EXPECT_EQ(config::format_value(config::Value(std::string(""))), "\"\"");
  EXPECT_EQ(config::format_value(config::Value(std::string("null"))), "\"null\"");
  EXPECT_EQ(config::format_value(config::Value(std::string("12"))), "\"12\"");
  EXPECT_EQ(config::format_value(config::Value(std::string("a \"b\""))), "\"a \\\"b\\\"\"");
  EXPECT_EQ(s.suggest("optim.lrr"), "optim.lr");
  EXPECT_EQ(s.suggest("trian.steps"), "train.steps");  // transposition
  EXPECT_EQ(s.suggest("optm"), "optim");               // a section
  EXPECT_EQ(s.suggest("train.lr"), "optim.lr");        // right name, wrong section
  EXPECT_EQ(s.suggest("schedule.warmup"), "schedule.warmup_steps");
  EXPECT_EQ(s.suggest("completely_different"), "");
}

TEST_F(ConfigTest, LoadsEveryTypeWithOrigins) {
  std::string path = write("all.yaml",
                           "run:\n"
                           "  name: r1\n"
                           "train: {steps: 7, batch_size: 4}\n"
                           "optim.lr: 3e-4\n"  // a dotted key in a file names the same key
                           "model:\n"
                           "  depth: 3\n"
                           "  moh:\n"
                           "    routed_topk: [0, 2, 2, 4]\n"
                           "    sparse: false\n"
                           "  drop: [0.1, 1]\n"
                           "data:\n"
                           "  splits: [a, 'b c']\n"
                           "device: cuda:1\n");
  Config c = Config::load(path, family_schema());
  EXPECT_EQ(c.get_int("train.steps"), 7);
  EXPECT_EQ(c.get_int("train.batch_size"), 4);
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 3e-4);
  EXPECT_EQ(c.get_int_list("model.moh.routed_topk"), (std::vector<int64_t>{0, 2, 2, 4}));
  EXPECT_FALSE(c.get_bool("model.moh.sparse"));
  EXPECT_EQ(c.get_float_list("model.drop"), (std::vector<double>{0.1, 1.0}));
  EXPECT_EQ(c.get_string_list("data.splits"), (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(c.get_string("device"), "cuda:1");
  EXPECT_EQ(c.get_string("model.kind"), "vit");
  EXPECT_FALSE(c.has("data.scale"));
  EXPECT_EQ(c.origin("optim.lr"), path + ":4");
  EXPECT_EQ(c.origin("model.moh.sparse"), path + ":9");
}

TEST_F(ConfigTest, BaseInheritanceTwoLevels) {
  write("common.yaml",
        "run:\n  name: common\n  seed: 5\ntrain:\n  steps: 10\n  batch_size: 8\n"
        "optim:\n  name: sgd\n  lr: 0.5\nmodel:\n  depth: 2\n  moh:\n    routed_topk: [1, 1, 1]\n");
  write(
      "family/mid.yaml",
      "base: ../common.yaml\nrun:\n  name: mid\noptim:\n  lr: 0.25\nmodel:\n  moh:\n    routed_topk: [2]\n");
  std::string child = write("family/sizes/child.yaml",
                            "base: ../mid.yaml\n"
                            "optim:\n  weight_decay: 0.5\n"
                            "train:\n  batch_size: null\n"  // back to the default
                            "model:\n  depth: 6\n");
  Config c = Config::load(child, family_schema());
  EXPECT_EQ(c.get_string("run.name"), "mid");  // mid over common
  EXPECT_EQ(c.get_int("run.seed"), 5);         // from common, through mid
  EXPECT_EQ(c.get_int("train.steps"), 10);
  EXPECT_EQ(c.get_int("train.batch_size"), 32);  // reset by null
  EXPECT_EQ(c.get_string("optim.name"), "sgd");  // maps merge key by key
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 0.25);
  EXPECT_DOUBLE_EQ(c.get_float("optim.weight_decay"), 0.5);
  EXPECT_EQ(c.get_int("model.depth"), 6);
  EXPECT_EQ(c.get_int_list("model.moh.routed_topk"), (std::vector<int64_t>{2}));  // lists replaced whole
  EXPECT_EQ(c.origin("run.seed"), (dir_ / "common.yaml").string() + ":3");
  EXPECT_EQ(c.origin("optim.lr"), (dir_ / "family/mid.yaml").string() + ":5");
  EXPECT_EQ(c.origin("train.batch_size"), "default");
}

TEST_F(ConfigTest, OneOfGroupSwitchesAcrossLayers) {
  write("base.yaml", "run: {name: r}\nmodel: {depth: 1}\ntrain:\n  steps: 100\n");
  Config c = load("epochs.yaml", "base: base.yaml\ntrain:\n  epochs: 3\n");
  EXPECT_EQ(c.get_int("train.epochs"), 3);
  EXPECT_FALSE(c.has("train.steps"));
  Config o = Config::load((dir_ / "epochs.yaml").string(), family_schema(), {"train.steps=9"});
  EXPECT_EQ(o.get_int("train.steps"), 9);
  EXPECT_FALSE(o.has("train.epochs"));
  std::string both =
      write("both.yaml", "run: {name: r}\nmodel: {depth: 1}\ntrain:\n  steps: 1\n  epochs: 2\n");
  expect_error([&] { Config::load(both, family_schema()); },
               {both, "'train.steps' (" + both + ":4)", "'train.epochs' (" + both + ":5)", "exactly one of"});
  std::string none = write("none.yaml", "run: {name: r}\nmodel: {depth: 1}\n");
  expect_error([&] { Config::load(none, family_schema()); },
               {none, "missing required key", "one of 'train.steps', 'train.epochs'"});
}

TEST_F(ConfigTest, OverridesScalarsListsAndNull) {
  Config c = load(
      "o.yaml", std::string(kMinimal) + "train:\n  resume: auto\n",
      {"optim.lr=3e-4", "model.moh.routed_topk=[0,2,2,4]", "precision=bf16", "optim.no_decay=[gamma, ls1]",
       "train.resume=", "run.name=r2", "model.drop=[0, 0.5]", "optim.nesterov=true", "data.scale=2"});
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 3e-4);
  EXPECT_EQ(c.get_int_list("model.moh.routed_topk"), (std::vector<int64_t>{0, 2, 2, 4}));
  EXPECT_EQ(c.get_string("precision"), "bf16");
  EXPECT_EQ(c.get_string_list("optim.no_decay"), (std::vector<std::string>{"gamma", "ls1"}));
  EXPECT_EQ(c.get_string("train.resume"), "");  // null resets to the default
  EXPECT_EQ(c.get_string("run.name"), "r2");
  EXPECT_EQ(c.get_float_list("model.drop"), (std::vector<double>{0.0, 0.5}));
  EXPECT_TRUE(c.get_bool("optim.nesterov"));
  EXPECT_DOUBLE_EQ(c.get_float("data.scale"), 2.0);
  EXPECT_EQ(c.origin("optim.lr"), "override 'optim.lr=3e-4'");
}

TEST_F(ConfigTest, DumpRoundTrip) {
  Config c = load("d.yaml", std::string(kMinimal) + "run:\n  dir: 'my runs/#1'\n",
                  {"optim.lr=3e-4", "optim.eps=1e-12", "model.drop=[0.1, 0.3]", "train.resume=\"null\"",
                   "data.splits=['', 'x: y', yes]", "optim.weight_decay=0.1", "device=cuda"});
  std::string text = c.dump();
  EXPECT_EQ(
      text.rfind("task: null\nrun:\n  name: r1\n  dir: \"my runs/#1\"\n  overwrite: false\n  seed: 0\n"
                 "train:\n  steps: 100\n  epochs: null\n",
                 0),
      0u)
      << text;
  Config back = Config::parse(text, family_schema(), "dump");
  for (const Key& k : c.schema().keys()) {
    ASSERT_EQ(back.has(k.path), c.has(k.path)) << k.path;
    if (c.has(k.path)) EXPECT_EQ(back.get(k.path), c.get(k.path)) << k.path;
  }
  EXPECT_EQ(back.dump(), text);
  EXPECT_EQ(back.get_string("train.resume"), "null");
  EXPECT_EQ(back.get_string_list("data.splits"), (std::vector<std::string>{"", "x: y", "yes"}));
  // Sections whose keys were added apart still dump as one map.
  Schema split;
  split.add(Key::Int("a.x", "doc").def(1))
      .add(Key::Int("b", "doc").def(2))
      .add(Key::Int("a.y", "doc").def(3));
  EXPECT_EQ(Config::parse("", split).dump(), "a:\n  x: 1\n  y: 3\nb: 2\n");
}

TEST_F(ConfigTest, GettersRejectMisuse) {
  Config c = load("g.yaml", kMinimal);
  expect_error([&] { c.get_int("optim.lr"); }, {"optim.lr", "float", "integer"});
  expect_error([&] { c.get_float("optim.lrr"); }, {"optim.lrr", "did you mean 'optim.lr'?"});
  expect_error([&] { c.get_int("train.epochs"); }, {"train.epochs", "not set"});
  expect_error([&] { c.has("nope.key"); }, {"nope.key"});
  EXPECT_THROW(c.get_bool("run.name"), ConfigError);
  EXPECT_THROW(c.get_int_list("model.drop"), ConfigError);
}

TEST_F(ConfigTest, ErrorUnknownKey) {
  std::string p = write("u.yaml", "run:\n  name: r\noptim:\n  lrr: 0.1\n");
  expect_error([&] { Config::load(p, family_schema()); },
               {p + ":4", "unknown key 'optim.lrr'", "0.1", "did you mean 'optim.lr'?"});
  std::string q = write("v.yaml", "optim:\n  zzzzzzzz: 1\n");
  expect_error([&] { Config::load(q, family_schema()); },
               {q + ":2", "'optim.zzzzzzzz'", "keys of 'optim' are", "optim.lr"});
  std::string r = write("w.yaml", "wholly_unrelated: 1\n");
  expect_error([&] { Config::load(r, family_schema()); },
               {r + ":1", "top-level keys and sections are", "run, train"});
  std::string s = write("x.yaml", "run:\n  name: r\nrun.name: s\n");
  expect_error([&] { Config::load(s, family_schema()); }, {s + ":3", "'run.name' is given twice", s + ":2"});
}

TEST_F(ConfigTest, ErrorWrongType) {
  std::string p = write("t.yaml", "run:\n  name: r\ntrain:\n  steps: abc\n");
  expect_error([&] { Config::load(p, family_schema()); },
               {p + ":4", "key 'train.steps' = abc", "not an integer", "allowed: integer >= 1"});
  std::string q = write("q.yaml", "train:\n  steps: \"100\"\n");  // quoted: a string
  expect_error([&] { Config::load(q, family_schema()); },
               {q + ":2", "train.steps", "\"100\"", "not an integer"});
  std::string f = write("f.yaml", "train:\n  steps: 1.5\n");
  expect_error([&] { Config::load(f, family_schema()); }, {f + ":2", "1.5", "not an integer"});
  std::string b = write("b.yaml", "optim:\n  nesterov: yes\n");
  expect_error([&] { Config::load(b, family_schema()); },
               {b + ":2", "optim.nesterov", "yes: not a bool", "true or false"});
  std::string l = write("l.yaml", "model:\n  moh:\n    routed_topk: 2\n");
  expect_error([&] { Config::load(l, family_schema()); },
               {l + ":3", "model.moh.routed_topk", "= 2: not an integer list", "list of integers"});
  std::string e = write("e.yaml", "model:\n  moh:\n    routed_topk: [1, x]\n");
  expect_error([&] { Config::load(e, family_schema()); },
               {e + ":3", "[1, x]", "element 1 (x) is not an integer"});
  std::string m = write("m.yaml", "run:\n  name: {a: 1}\n");
  expect_error([&] { Config::load(m, family_schema()); }, {m + ":2", "run.name", "{a: 1}", "not a string"});
  std::string s = write("s.yaml", "optim: 3\n");
  expect_error([&] { Config::load(s, family_schema()); }, {s + ":1", "'optim' is a section", "3"});
  std::string t = write("top.yaml", "- a\n- b\n");
  expect_error([&] { Config::load(t, family_schema()); }, {t + ":1", "map of keys"});
}

TEST_F(ConfigTest, ErrorOutOfRange) {
  std::string p = write("r.yaml", "train:\n  steps: -5\n");
  expect_error([&] { Config::load(p, family_schema()); },
               {p + ":2", "train.steps", "-5", "out of range", "integer >= 1"});
  std::string q = write("q.yaml", "\noptim:\n  beta2: 1.5\n");
  expect_error([&] { Config::load(q, family_schema()); },
               {q + ":3", "optim.beta2", "1.5", "float in [0, 1]"});
  std::string l = write("l.yaml", "model:\n  moh:\n    routed_topk: [0, -1]\n");
  expect_error([&] { Config::load(l, family_schema()); },
               {l + ":3", "[0, -1]", "element 1 is out of range", "list of integers, each >= 0"});
  std::string n = write("n.yaml", "optim:\n  lr: .nan\n");
  expect_error([&] { Config::load(n, family_schema()); },
               {n + ":2", "optim.lr", ".nan", "not a finite number"});
  std::string h = write("h.yaml", "optim:\n  lr: 1e999\n");
  expect_error([&] { Config::load(h, family_schema()); }, {h + ":2", "1e999", "not a finite number"});
}

TEST_F(ConfigTest, ErrorNotAllowedValue) {
  std::string p = write("e.yaml", "optim:\n  name: adamx\n");
  expect_error([&] { Config::load(p, family_schema()); },
               {p + ":2", "optim.name", "adamx", "one of adamw, sgd", "did you mean 'adamw'?"});
  std::string d = write("d.yaml", "device: gpu:0\n");
  expect_error([&] { Config::load(d, family_schema()); },
               {d + ":1", "device", "gpu:0", "cpu, cuda or cuda:N"});
  std::string n = write("n.yaml", "run:\n  name: has space\n");
  expect_error([&] { Config::load(n, family_schema()); },
               {n + ":2", "run.name", "has space", "letters, digits"});
}

TEST_F(ConfigTest, ErrorMissingRequired) {
  std::string p = write("m.yaml", "train:\n  steps: 3\n");
  expect_error(
      [&] { Config::load(p, family_schema()); },
      {p, "missing required key", "'run.name'", "'model.depth' (transformer blocks; allowed: integer >= 1)"});
  EXPECT_NO_THROW(Config::load(p, family_schema(), {"run.name=ok", "model.depth=1"}));
}

TEST_F(ConfigTest, ErrorBadOverride) {
  std::string p = write("o.yaml", kMinimal);
  Schema s = family_schema();
  expect_error([&] { Config::load(p, s, {"optim.lr"}); }, {"override 'optim.lr'", "dotted.key=value"});
  expect_error([&] { Config::load(p, s, {"=3"}); }, {"override '=3'", "dotted.key=value"});
  expect_error([&] { Config::load(p, s, {"optim lr=3"}); }, {"override 'optim lr=3'", "dotted.key=value"});
  expect_error([&] { Config::load(p, s, {"optim.lrr=1"}); },
               {"override 'optim.lrr=1'", "unknown key 'optim.lrr'", "did you mean 'optim.lr'?"});
  expect_error([&] { Config::load(p, s, {"optim=3"}); }, {"override 'optim=3'", "'optim' is a section"});
  expect_error([&] { Config::load(p, s, {"foo.bar=1"}); },
               {"unknown key 'foo.bar'", "top-level keys and sections are: task, run,"});
  expect_error([&] { Config::load(p, s, {"model.moh.routed_topk=[1,2"}); },
               {"override 'model.moh.routed_topk=[1,2'", "YAML syntax error", "model.moh.routed_topk"});
  expect_error([&] { Config::load(p, s, {"train.steps=abc"}); },
               {"override 'train.steps=abc'", "key 'train.steps' = abc", "integer >= 1"});
  expect_error([&] { Config::load(p, s, {"precision=fp8"}); },
               {"override 'precision=fp8'", "one of fp32, bf16, fp16"});
}

TEST_F(ConfigTest, ErrorBaseFiles) {
  std::string p = write("child.yaml", "\nbase: missing.yaml\n");
  expect_error([&] { Config::load(p, family_schema()); },
               {p + ":2", "base file '" + (dir_ / "missing.yaml").string() + "'", "does not exist"});
  std::string d = write("dir.yaml", "base: .\n");
  expect_error([&] { Config::load(d, family_schema()); }, {d + ":1", "is a directory"});
  std::string e = write("empty.yaml", "base: [a, b]\n");
  expect_error([&] { Config::load(e, family_schema()); },
               {e + ":1", "key 'base'", "[a, b]", "not a file path"});
  std::string twice = write("twice.yaml", "base: a.yaml\nbase: b.yaml\n");
  expect_error([&] { Config::load(twice, family_schema()); }, {twice + ":2", "'base' is given twice"});
  expect_error([&] { Config::load((dir_ / "nope.yaml").string(), family_schema()); },
               {"config file '" + (dir_ / "nope.yaml").string() + "'", "does not exist"});
}

TEST_F(ConfigTest, ErrorBaseCycle) {
  std::string a = write("a.yaml", "base: sub/b.yaml\n");
  write("sub/b.yaml", "run:\n  name: b\nbase: ../a.yaml\n");
  expect_error([&] { Config::load(a, family_schema()); },
               {(dir_ / "sub/b.yaml").string() + ":3", "base cycle",
                a + " -> " + (dir_ / "sub/b.yaml").string() + " -> "});
  std::string self = write("self.yaml", "base: self.yaml\n");
  expect_error([&] { Config::load(self, family_schema()); }, {self + ":1", "base cycle"});
}

TEST_F(ConfigTest, ErrorYamlSyntax) {
  std::string p = write("bad.yaml", "run:\n  name: r\ntrain:\n  steps: [1, 2\n  batch_size: 3\n");
  expect_error([&] { Config::load(p, family_schema()); }, {p + ":", "YAML syntax error"});
  std::string q = write("tab.yaml", "run:\n  name: r\n bad_indent: 1\n");
  expect_error([&] { Config::load(q, family_schema()); }, {q + ":3:", "YAML syntax error"});
  expect_error([&] { Config::parse("a: [", family_schema(), "text"); }, {"text:1:", "YAML syntax error"});
}

TEST_F(ConfigTest, EmptyFileAndEmptySectionUseDefaults) {
  Config c = load("e.yaml", std::string(kMinimal) + "optim:\n# nothing yet\n");
  EXPECT_DOUBLE_EQ(c.get_float("optim.lr"), 1e-3);
  Config d = Config::load(write("empty.yaml", ""), family_schema(),
                          {"run.name=x", "train.epochs=1", "model.depth=4"});
  EXPECT_EQ(d.get_int("train.epochs"), 1);
}

// docs/<name> must hold `expected` (MOH_UPDATE_DOCS=1 rewrites it first).
void expect_doc_current(const std::string& name, const std::string& expected) {
  const fs::path doc = fs::path(MOH_TEST_PATH(MOH_SOURCE_DIR)) / "docs" / name;
  if (const char* update = std::getenv("MOH_UPDATE_DOCS"); update && std::string(update) == "1")
    std::ofstream(doc) << expected;
  std::ifstream in(doc);
  std::stringstream actual;
  actual << in.rdbuf();
  EXPECT_EQ(actual.str(), expected) << doc.string()
                                    << " is stale: regenerate it with\n  MOH_UPDATE_DOCS=1 build/moh_tests "
                                       "--gtest_filter='ConfigDocs.*'";
}

TEST(ConfigDocs, CommonSchemaMarkdownIsCurrent) {
  expect_doc_current("config.md", config::schema_markdown(config::common_schema()));
}

// docs/config_<family>.md: the keys each task family adds (model.*, data.*, ...), one file per family.
TEST(ConfigDocs, FamilySchemaMarkdownIsCurrent) {
  for (const TaskFamily& family : task_families())
    expect_doc_current("config_" + family.name + ".md",
                       config::schema_markdown(family.schema(), "Run config keys of the `" + family.name + "` task",
                                               "schema_markdown(task_family(\"" + family.name + "\").schema())"));
}

TEST(ConfigDocs, MarkdownHasARowPerKey) {
  Schema s = family_schema();
  std::string md = config::schema_markdown(s);
  for (const Key& k : s.keys()) EXPECT_NE(md.find("| `" + k.path + "` |"), std::string::npos) << k.path;
  EXPECT_NE(md.find("| `model.depth` | integer | *required* | integer >= 1 | transformer blocks |"),
            std::string::npos);
  EXPECT_NE(md.find("| `optim.lr` | float | `0.001` | float >= 0 |"), std::string::npos);
  EXPECT_NE(md.find("| `device` | string | `cpu` | cpu, cuda or cuda:N |"), std::string::npos);
  EXPECT_NE(md.find("unset; exactly one of `train.steps`, `train.epochs`"), std::string::npos);
  EXPECT_NE(md.find("## `model`"), std::string::npos);
  EXPECT_NE(md.find("## top level"), std::string::npos);
}

}  // namespace
}  // namespace moh
