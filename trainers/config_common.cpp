// common_schema(): the config keys every model family shares. Scripts and the trainer depend on these
// names; a family appends its own `model.*`/`data.*` keys with Schema::extend. docs/config.md is
// generated from this list (tests/trainers/test_config.cpp checks it is current).
#include "trainers/config_schema.h"

namespace moh::config {

Schema common_schema() {
  Schema s;
  s.add(Key::String("task", "model family to train, required by moh train (`moh train --help` lists this build's)")
            .optional()
            .match("[a-z0-9_]+", "a family name such as vit or synthetic"));
  s.add(Key::String("run.name", "run name; the run writes its logs and checkpoints to run.dir/run.name")
            .match("(?!\\.+$)[A-Za-z0-9_.-]+", "letters, digits, '_', '.', '-', not only dots"));
  s.add(Key::String("run.dir", "folder holding the run folders").def("runs").match(".+", "a non-empty folder path"));
  s.add(Key::Bool("run.overwrite",
                  "start anew in a run folder that holds another run, deleting its config.yaml, train.log, "
                  "metrics.jsonl and checkpoints (without it, such a start is refused)")
            .def(false));
  s.add(Key::Int("run.seed", "seed of parameter init, data order and dropout").def(0).min(0));

  s.add(Key::Int("train.steps", "optimizer steps to run").optional().min(1));
  s.add(Key::Int("train.epochs", "passes over the training set to run (instead of train.steps)")
            .optional()
            .min(1));
  s.require_one_of({"train.steps", "train.epochs"});
  s.add(Key::Int("train.batch_size",
                 "samples per optimizer step, summed over ranks and grad_accum micro-batches")
            .def(32)
            .min(1));
  s.add(Key::Int("train.grad_accum", "micro-batches accumulated per optimizer step").def(1).min(1));
  s.add(Key::Float("train.grad_clip", "clip the global gradient L2 norm to this (0 = off)").def(1.0).min(0));
  s.add(Key::String("train.resume",
                    "\"\" starts fresh, \"auto\" resumes the run folder's latest checkpoint if any, "
                    "else a checkpoint path")
            .def(""));
  s.add(Key::Enum("train.nonfinite", {"abort", "skip_step"},
                  "on a non-finite loss or gradient: abort (after checkpointing the last good state) or skip the "
                  "update")
            .def("abort"));
  s.add(Key::Int("train.max_skipped_steps",
                 "train.nonfinite: skip_step stops the run with an error (after checkpointing the last good state) "
                 "when this many updates in a row were skipped")
            .def(10)
            .min(1));
  s.add(Key::Int("train.log_every", "log training metrics every N optimizer steps").def(10).min(1));

  s.add(Key::Int("eval.every", "evaluate every N optimizer steps (0 = only after the last step)")
            .def(1000)
            .min(0));
  s.add(Key::Int("eval.batch_size",
                 "held-out samples (images, sequences) per evaluation batch on each rank; in data-parallel runs "
                 "each rank evaluates its shard of the held-out set and the metric sums are added over ranks")
            .def(500)
            .min(1));

  s.add(Key::Bool("eval.use_ema",
                  "evaluate with the EMA weights (ema.decay must be set): the evaluations during training, moh eval "
                  "and moh sample; training itself goes on with the trained weights")
            .def(false));

  s.add(
      Key::Int("checkpoint.every", "save a checkpoint every N optimizer steps (0 = only after the last step)")
          .def(1000)
          .min(0));
  s.add(Key::Int("checkpoint.keep_last", "keep the newest N periodic checkpoints (0 = keep all)")
            .def(3)
            .min(0));
  s.add(Key::String("checkpoint.best_metric",
                    "also keep the checkpoint with the best value of this eval metric (e.g. top1, loss)")
            .optional());
  s.add(Key::Enum("checkpoint.best_mode", {"max", "min"}, "whether a larger or a smaller best_metric is better")
            .def("max"));
  s.add(Key::Float("ema.decay", "keep an exponential moving average of the weights with this decay (e.g. 0.9999)")
            .optional()
            .range(0, 1));

  s.add(
      Key::Enum("optim.name", {"adamw", "sgd"}, "optimizer (trainers/adamw.h, trainers/sgd.h)").def("adamw"));
  s.add(Key::Float("optim.lr", "peak learning rate (reached at the end of warmup)").def(1e-3).min(0));
  s.add(Key::Float("optim.weight_decay", "weight decay: decoupled for adamw, L2 for sgd").def(0.01).min(0));
  s.add(Key::StringList("optim.no_decay",
                        "extra parameter names or dotted suffixes trained without weight decay (1-d parameters "
                        "such as biases and norms, and what the model declares, e.g. the ViT's pos_embed and "
                        "cls_token, already are)")
            .def(std::vector<std::string>{}));
  s.add(Key::Float("optim.beta1", "adamw first-moment decay").def(0.9).range(0, 1));
  s.add(Key::Float("optim.beta2", "adamw second-moment decay").def(0.999).range(0, 1));
  s.add(Key::Float("optim.eps", "adamw denominator epsilon").def(1e-8).min(0));
  s.add(Key::Float("optim.momentum", "sgd momentum (0 = plain SGD)").def(0.9).range(0, 1));
  s.add(Key::Bool("optim.nesterov", "sgd Nesterov momentum (needs optim.momentum > 0)").def(false));

  s.add(Key::Enum("schedule.name", {"constant", "cosine", "linear"},
                  "learning-rate decay after warmup: none, cosine or linear down to schedule.min_lr")
            .def("cosine"));
  s.add(Key::Int("schedule.warmup_steps", "linear warmup from 0 to optim.lr over N optimizer steps")
            .def(0)
            .min(0));
  s.add(Key::Float("schedule.min_lr", "learning rate at the end of cosine/linear decay").def(0).min(0));

  s.add(
      Key::Float("moh.balance_loss", "weight of the MoH load-balance loss (mean over MoH layers) in the loss")
          .def(0.01)
          .min(0));
  s.add(Key::Enum("moh.balance_scope", {"local", "global"},
                  "tokens the load-balance statistics pool over in data-parallel runs: each rank's own, or "
                  "every rank's (an all-reduce per MoH layer; equals one process with the global batch)")
            .def("local"));

  s.add(Key::Float("distributed.timeout_s",
                   "seconds a collective may wait for the other ranks before the run aborts naming the rank "
                   "that did not arrive")
            .def(600)
            .min(1e-3));
  s.add(Key::Float("distributed.bucket_mb",
                   "gradient bucket size in MiB: each bucket is all-reduced as soon as backward has produced it")
            .def(25)
            .min(1e-6));
  s.add(Key::Bool("distributed.shard_optimizer",
                  "ZeRO-1: each rank keeps and updates the optimizer state of 1/world of the parameters "
                  "(gradients reduce-scattered, parameters all-gathered); checkpoints stay whole")
            .def(false));

  s.add(Key::Enum("precision", {"fp32", "bf16", "fp16"},
                  "GEMM precision: fp32, or bf16/fp16 mixed precision (CUDA only): GEMM inputs rounded to 16 bits, "
                  "float32 master weights, activations and gradients; fp16 adds dynamic loss scaling")
            .def("fp32"));
  s.add(Key::Float("loss_scale.init", "fp16: initial loss scale").def(65536).min(1));
  s.add(Key::Float("loss_scale.growth_factor",
                   "fp16: the scale is multiplied by this after loss_scale.growth_interval finite steps in a row")
            .def(2.0)
            .min(1));
  s.add(Key::Float("loss_scale.backoff_factor",
                   "fp16: the scale is multiplied by this when a step's gradients overflow (the step is skipped)")
            .def(0.5)
            .range(0.01, 0.99));
  s.add(Key::Int("loss_scale.growth_interval", "fp16: finite steps in a row before the scale grows").def(2000).min(1));
  s.add(Key::String("device", "device to train on (cuda means cuda:0, or the local rank's GPU under a launcher)")
            .def("cpu")
            .match("cpu|cuda(:[0-9]+)?", "cpu, cuda or cuda:N"));
  s.add(Key::Bool("deterministic",
                  "bitwise reproducible CUDA runs: fixed GEMM algorithms without split-K workspaces (the CPU is "
                  "always deterministic)")
            .def(false));
  s.add(Key::Bool("tf32", "float32 GEMMs on CUDA may use TF32 tensor cores (10-bit mantissa inputs)").def(false));
  s.add(Key::Int("threads", "CPU threads for ops and BLAS (0 = OMP_NUM_THREADS or all cores)").def(0).min(0));
  return s;
}

}  // namespace moh::config
