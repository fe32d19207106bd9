// The `moh` command line: argument parsing, train / eval / config, the dispatch to the other commands'
// files and the exit-status contract.
#include "tools/cli.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dist/world.h"
#include "core/io/checked_write.h"
#include "trainers/config.h"
#include "trainers/run_folder.h"
#include "trainers/stop_signals.h"
#include "trainers/task.h"
#include "trainers/trainer.h"
#include "tools/exit_status.h"
#include "tools/generate_cli.h"
#include "tools/latent_cli.h"
#include "tools/fid_cli.h"
#include "tools/sample_cli.h"
#include "trainers/stored_run.h"
#include "tools/text_cli.h"

namespace moh {
namespace {

using cli::kOk;
using cli::UsageError;

const char* kUsage =
    "usage: moh COMMAND [ARGS]\n"
    "  moh train CONFIG.yaml [key=value ...]      train a model (overrides use the config's dotted keys)\n"
    "  moh eval RUN_DIR|CHECKPOINT [key=value ...] evaluate a checkpoint; prints one JSON object last\n"
    "  moh config CONFIG.yaml [key=value ...]     print the fully resolved config with defaults\n"
    "  moh generate RUN_DIR --prompt TEXT ...      continue a text with an llm run's model (streamed)\n"
    "  moh encode RUN_DIR --out LATENTS.h5 ...     images to latents with an autoencoder run\n"
    "  moh decode RUN_DIR --latents FILE --out ... latents back to images (PNG grid or files)\n"
    "  moh sample RUN_DIR --out DIR ...            class-conditional images of a dit run (samples.npz, grid)\n"
    "  moh fid SAMPLES.npz --features VIT_RUN ...  Frechet distance of samples, with floor and ceiling\n"
    "  moh tokenize --tokenizer FILE --out DIR ... encode text documents into llm.c token shards\n"
    "  moh tokenizer encode|decode|info|train ...  text <-> token ids on stdin/stdout; train SentencePiece\n"
    "  moh COMMAND --help                         help for one command\n";

void print_help(const std::string& command) {
  if (command == "train") {
    std::cout << "usage: moh train CONFIG.yaml [key=value ...]\n"
                 "Trains the task named by the config key `task` into run.dir/run.name (config.yaml,\n"
                 "train.log, metrics.jsonl, checkpoints/). train.resume=auto continues the latest good\n"
                 "checkpoint; Ctrl-C saves a checkpoint and exits. A run folder holds one run: a fresh start\n"
                 "where another run is refuses to mix them (run.overwrite=true deletes the old one), and a\n"
                 "second process on the same folder is refused. Tasks in this build:\n";
    for (const TaskFamily& f : task_families()) std::cout << "  " << f.name << ": " << f.doc << "\n";
  } else if (command == "eval") {
    std::cout << "usage: moh eval RUN_DIR|CHECKPOINT [key=value ...]\n"
                 "Evaluates the newest valid checkpoint of RUN_DIR (or the given .h5 file) on the task's\n"
                 "held-out split, prints the metrics as one JSON object on the last line and writes them to\n"
                 "eval.json beside the checkpoint. Overrides apply to the config stored in the checkpoint;\n"
                 "with eval.use_ema (the config's or eval.use_ema=true) the EMA weights are evaluated.\n"
                 "Under mpirun each process evaluates a shard of the split; rank 0 prints and writes.\n";
  } else if (command == "config") {
    std::cout << "usage: moh config CONFIG.yaml [key=value ...]\n"
                 "Prints the config after base files, overrides and defaults are applied, as YAML.\n"
                 "Every key is documented in docs/config.md.\n";
  } else {
    std::cout << kUsage;
  }
}

struct Invocation {
  std::string command, target;
  std::vector<std::string> overrides;
  bool help = false;
};

Invocation parse_args(int argc, char** argv) {
  Invocation inv;
  if (argc < 2) throw UsageError(std::string("missing command\n") + kUsage);
  inv.command = argv[1];
  if (inv.command == "--help" || inv.command == "-h" || inv.command == "help") {
    inv.help = true;
    inv.command.clear();
    return inv;
  }
  if (inv.command != "train" && inv.command != "eval" && inv.command != "config")
    throw UsageError(str_cat("unknown command '", inv.command, "'\n", kUsage));
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      inv.help = true;
    } else if (inv.target.empty() && arg.find('=') == std::string::npos) {
      inv.target = arg;
    } else if (arg.find('=') != std::string::npos) {
      inv.overrides.push_back(arg);
    } else {
      throw UsageError(str_cat("unexpected argument '", arg, "' (overrides look like key=value)"));
    }
  }
  if (!inv.help && inv.target.empty())
    throw UsageError(str_cat("moh ", inv.command, ": missing ", inv.command == "eval" ? "RUN_DIR or CHECKPOINT" : "CONFIG.yaml",
                             " (see moh ", inv.command, " --help)"));
  return inv;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string family = Config::peek_string(path, "task", overrides);
  return Config::load(path, training_schema(family), overrides);
}

int train(const Invocation& inv) {
  StopSignals signals;  // from the start: a SIGTERM while the task loads its data stops the run, not the process
  Config cfg = load_config(inv.target, inv.overrides);
  std::unique_ptr<Task> task = task_family(cfg.get_string("task")).create(cfg);
  Trainer trainer(cfg, *task);
  TrainResult result = trainer.run();
  nlohmann::json summary{{"run_dir", result.run_dir}, {"step", result.step}, {"checkpoint", result.checkpoint},
                         {"interrupted", result.interrupted}};
  for (auto& [name, value] : result.eval) summary["eval/" + name] = value;
  if (dist::launch_env().rank == 0) std::cout << summary.dump() << std::endl;  // one summary per job
  return kOk;
}

int eval(const Invocation& inv) {
  const StoredRun run = open_stored_run(inv.target, inv.overrides, "moh eval");
  std::unique_ptr<Task> task = task_family(run.task).create(run.config);
  task->model().load_state_dict(weights_to_evaluate(run));
  const std::string out_dir = std::filesystem::path(run.checkpoint).parent_path().string();
  task->set_output_dir(out_dir);
  nlohmann::json result{{"checkpoint", run.checkpoint}, {"step", run.data.step}, {"task", run.task},
                        {"weights", run.config.get_bool("eval.use_ema") ? "ema" : "trained"}};
  for (auto& [name, value] : task->evaluate()) result[name] = value;  // under mpirun: each rank a shard
  if (dist::launch_env().rank != 0) return kOk;  // rank 0 alone writes
  const std::string out_path = (std::filesystem::path(out_dir) / "eval.json").string();
  write_file_atomically(out_path, result.dump(2) + "\n");
  std::cout << result.dump() << std::endl;
  return kOk;
}

}  // namespace

int run_cli(int argc, char** argv) {
  // A console pipe closed early (`moh train ... | head`) must not kill a run: writes to it fail with
  // EPIPE instead, and the run goes on logging to its files. Likewise a file-size limit (ulimit -f)
  // makes writes fail with EFBIG, reported like a full disk, instead of killing the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  // mpirun forwards SIGUSR1, the stop request, to every rank, but the ranks agree on stopping at each step,
  // so a rank may have stopped (its run's handlers gone) before its own copy arrives: outside a run the
  // signal is ignored instead of killing a rank that is saving or exiting cleanly.
  std::signal(SIGUSR1, SIG_IGN);
  if (argc >= 2 && is_text_command(argv[1])) return run_text_command(argc, argv);  // tools/text_cli.cpp
  if (argc >= 2 && std::string(argv[1]) == "generate") return run_generate_command(argc, argv);
  if (argc >= 2 && is_latent_command(argv[1])) return run_latent_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "sample") return run_sample_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "fid") return run_fid_command(argc, argv);
  return cli::exit_status_of("moh", [&] {
    Invocation inv = parse_args(argc, argv);
    if (inv.help) {
      print_help(inv.command);
      return kOk;
    }
    if (inv.command == "config") {
      std::cout << load_config(inv.target, inv.overrides).dump();
      return kOk;
    }
    return inv.command == "train" ? train(inv) : eval(inv);
  });
}

}  // namespace moh
