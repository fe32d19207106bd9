// Fuzz target: a YAML run config with a `base:` file, loaded as `moh train CONFIG.yaml` loads it
// (Config::peek_string for the task, then Config::load against that task's schema, trainers/config.h).
// The input is main.yaml, optionally followed by a line "#@base" and the text of base.yaml (which
// main.yaml names with `base: base.yaml`; either may name main.yaml or itself, a cycle).
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "trainers/config.h"
#include "trainers/trainer.h"  // training_schema

namespace {

constexpr std::string_view kBaseMark = "\n#@base\n";

void read(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t mark = input.find(kBaseMark);
  const std::string_view main = input.substr(0, mark);
  const std::string_view base = mark == std::string_view::npos ? "" : input.substr(mark + kBaseMark.size());
  moh::fuzz::scratch_file("base.yaml", reinterpret_cast<const uint8_t*>(base.data()), base.size());
  const std::string path =
      moh::fuzz::scratch_file("main.yaml", reinterpret_cast<const uint8_t*>(main.data()), main.size());
  const std::string task = moh::Config::peek_string(path, "task");
  moh::Config::load(path, moh::training_schema(task)).dump();
}

void seeds(const moh::fuzz::AddSeed& add) {
  auto text = [&](const std::string& name, const std::string& s) { add(name, moh::fuzz::Bytes(s.begin(), s.end())); };
  const std::string base =
      "task: vit\nrun:\n  name: base\n  seed: 0\ntrain:\n  epochs: 2\n  batch_size: 64\noptim:\n  name: adamw\n"
      "  lr: 0.0015\n  weight_decay: 0.05\nschedule:\n  name: cosine\n  warmup_steps: 300\ndata:\n"
      "  name: fashion_mnist\n  crop_padding: 0\n  hflip: 0\nmodel:\n  preset: tiny\n  pool: avg\nthreads: 1\n";
  text("vit_with_base.yaml", "base: base.yaml\nrun:\n  name: moh\nmodel:\n  attention: moh\n  shared_heads: [2]\n"
                             "  routed_topk: [4]\n#@base\n" + base);
  text("vit_alone.yaml", base);
  text("synthetic.yaml", "task: synthetic\nrun:\n  name: s\ntrain:\n  steps: 3\n");
  text("cycle.yaml", "base: base.yaml\ntask: vit\n#@base\nbase: main.yaml\n");
  text("anchors_and_flow.yaml", "task: vit\nx: &a {name: adamw, lr: 1e-3}\noptim: *a\ntrain: {steps: 1}\n"
                                "model: {depth: 2, heads: [1, 2]}\n");
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
