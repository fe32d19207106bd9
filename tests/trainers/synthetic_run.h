// A small synthetic-task run for the engine tests: its config (40 steps of 32 samples, a checkpoint
// every 10 steps, run folder <dir>/runs/smoke) and readers of what the run folder holds.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainers/config.h"
#include "trainers/task.h"
#include "trainers/trainer.h"

namespace moh::test {

inline Config synthetic_config(const std::filesystem::path& dir, const std::vector<std::string>& overrides) {
  const std::filesystem::path file = dir / "synthetic.yaml";
  std::ofstream(file) << "task: synthetic\n"
                         "run: {name: smoke, dir: " << (dir / "runs").string() << ", seed: 3}\n"
                         "train: {steps: 40, batch_size: 32, log_every: 1, grad_clip: 1.0}\n"
                         "eval: {every: 0}\n"
                         "checkpoint: {every: 10, keep_last: 0}\n"
                         "optim: {name: adamw, lr: 0.01, weight_decay: 0.01}\n"
                         "schedule: {name: cosine, warmup_steps: 5}\n"
                         "data: {train_size: 256, eval_size: 256}\n";
  return Config::load(file.string(), training_schema("synthetic"), overrides);
}

inline std::unique_ptr<Task> make_synthetic_task(const Config& cfg) { return task_family("synthetic").create(cfg); }

// metrics.jsonl of a run folder, one JSON object per line (a malformed line fails the parse).
inline std::vector<nlohmann::json> read_metrics(const std::filesystem::path& run_dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The training loss of every logged step, in file order.
inline std::vector<double> train_losses(const std::filesystem::path& run_dir) {
  std::vector<double> out;
  for (const auto& r : read_metrics(run_dir))
    if (r.contains("loss")) out.push_back(r["loss"].get<double>());
  return out;
}

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace moh::test
