// The training loop (see trainer.h).
#include "trainers/trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "autograd/autograd.h"
#include "core/ops.h"
#include "layers/moh_attention.h"
#include "core/io/checked_write.h"
#include "trainers/adamw.h"
#include "trainers/checkpoint.h"
#include "trainers/data_parallel.h"
#include "trainers/ema.h"
#include "trainers/grad_clip.h"
#include "trainers/precision.h"
#include "trainers/resume_check.h"
#include "trainers/run_folder.h"
#include "trainers/schedule.h"
#include "trainers/sgd.h"
#include "trainers/stop_signals.h"

namespace moh {
namespace {

// total += value / accum in float64 on value's device (the same operations as on the host, so the
// same bits): micro-batch losses are read back once per step, after every backward is queued.
void accumulate(Tensor& total, const Tensor& value, int64_t accum) {
  const Tensor share = div(value.to(DType::Float64), double(accum));
  total = total.defined() ? add(total, share) : share;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::unique_ptr<Optimizer> make_optimizer(const Config& cfg, const Module& model) {
  const NamedParameters params = model.named_parameters();
  std::vector<std::string> no_decay = model.no_weight_decay_names();  // what the model declares, then the config's
  for (const std::string& name : cfg.get_string_list("optim.no_decay")) no_decay.push_back(name);
  if (cfg.get_string("optim.name") == "sgd")
    return std::make_unique<Sgd>(params, SgdOptions{cfg.get_float("optim.lr"), cfg.get_float("optim.momentum"), 0.0,
                                                    cfg.get_bool("optim.nesterov"), cfg.get_float("optim.weight_decay"),
                                                    no_decay});
  return std::make_unique<AdamW>(params, AdamWOptions{cfg.get_float("optim.lr"), cfg.get_float("optim.beta1"),
                                                      cfg.get_float("optim.beta2"), cfg.get_float("optim.eps"),
                                                      cfg.get_float("optim.weight_decay"), no_decay});
}

// The task must have built its model on the run's device (and it feeds its batches there).
void check_model_device(const Module& model, Device device) {
  for (const auto& [name, p] : model.named_parameters())
    MOH_CHECK(p.device() == device, "the task left parameter '", name, "' on ", p.device(), " but the run trains on ",
              device);
}

// Checkpoints hold CPU copies (a no-op for CPU tensors).
std::map<std::string, Tensor> on_cpu(const std::map<std::string, Tensor>& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out.emplace(name, t.to(Device::cpu()));
  return out;
}

// The key that sets the run's length: train.steps or train.epochs (exactly one is set).
const char* run_length_key(const Config& cfg) { return cfg.has("train.steps") ? "train.steps" : "train.epochs"; }

// The run's optimizer steps: train.steps, or train.epochs passes of ceil(samples / batch) steps.
int64_t planned_steps(const Config& cfg, int64_t samples_per_epoch) {
  const int64_t batch = cfg.get_int("train.batch_size");
  MOH_CHECK(samples_per_epoch > 0, "the task has no training samples");
  if (batch > samples_per_epoch)
    throw ConfigError(str_cat(cfg.origin("train.batch_size"), ": train.batch_size ", batch, " exceeds the ",
                              samples_per_epoch, " training samples of an epoch (a step would repeat samples)"));
  if (cfg.has("train.steps")) return cfg.get_int("train.steps");
  const int64_t per_epoch = samples_per_epoch / batch + (samples_per_epoch % batch != 0);
  const int64_t epochs = cfg.get_int("train.epochs");
  if (epochs > std::numeric_limits<int64_t>::max() / per_epoch)
    throw ConfigError(str_cat(cfg.origin("train.epochs"), ": train.epochs ", epochs, " x ", per_epoch,
                              " steps per epoch overflows the step counter"));
  return epochs * per_epoch;
}

// The learning-rate schedule, with its cross-key checks named by key.
ScheduleOptions schedule_from_config(const Config& cfg, int64_t total_steps) {
  const ScheduleOptions o{parse_schedule_kind(cfg.get_string("schedule.name")), cfg.get_float("optim.lr"),
                          cfg.get_float("schedule.min_lr"), cfg.get_int("schedule.warmup_steps"), total_steps};
  if (o.min_lr > o.base_lr)
    throw ConfigError(str_cat(cfg.origin("schedule.min_lr"), ": schedule.min_lr ", o.min_lr,
                              " exceeds optim.lr ", o.base_lr, " (", cfg.origin("optim.lr"),
                              "): the schedule decays from optim.lr down to schedule.min_lr"));
  if (o.warmup_steps > total_steps)
    throw ConfigError(str_cat(cfg.origin("schedule.warmup_steps"), ": schedule.warmup_steps ", o.warmup_steps,
                              " exceeds the run's ", total_steps, " steps (", run_length_key(cfg), ", ",
                              cfg.origin(run_length_key(cfg)), ")"));
  validate_schedule(o);
  return o;
}

}  // namespace

struct Trainer::Impl {
  const Config& cfg;
  Task& task;
  Device device;
  MixedPrecision precision;
  NumericsScope numerics;
  std::string run_dir;
  std::unique_ptr<RunFolder> folder;  // rank 0: the claimed run folder (lock held for the run)
  std::unique_ptr<RunLog> log;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<Ema> ema;
  std::unique_ptr<CheckpointManager> checkpoints;
  std::unique_ptr<DataParallel> dp;  // world size 1: every call is a no-op
  ScheduleOptions schedule;
  int64_t step = 0, total_steps = 0, batch = 0, accum = 0, micro = 0;
  double beta = 0, clip = 0;
  bool abort_on_nonfinite = true;
  bool eval_with_ema = false;
  int64_t max_skipped_steps = 0, skipped_in_row = 0;  // train.nonfinite: skip_step
  std::map<std::string, double> last_eval;
  std::string last_checkpoint;

  Impl(const Config& c, Task& t)
      : cfg(c), task(t), device(training_device(cfg)), precision(MixedPrecision::from_config(cfg, device)),
        numerics(cfg, precision) {
    check_model_device(task.model(), device);
    if (cfg.get_int("threads") > 0) set_num_threads(int(cfg.get_int("threads")));
    run_dir = RunFolder::path_of(cfg);
    batch = cfg.get_int("train.batch_size");
    accum = cfg.get_int("train.grad_accum");
    if (batch % accum != 0)
      throw ConfigError(str_cat(cfg.origin("train.grad_accum"), ": train.grad_accum ", accum,
                                " must divide train.batch_size ", batch));
    dp = std::make_unique<DataParallel>(task.model(), cfg);
    total_steps = planned_steps(cfg, task.samples_per_epoch());
    dp->check_same_job(cfg, total_steps);
    micro = per_rank_micro_batch(cfg, dp->world_size());
    beta = cfg.get_float("moh.balance_loss");
    clip = cfg.get_float("train.grad_clip");
    abort_on_nonfinite = cfg.get_string("train.nonfinite") == "abort";
    max_skipped_steps = cfg.get_int("train.max_skipped_steps");
    schedule = schedule_from_config(cfg, total_steps);
    optimizer = make_optimizer(cfg, task.model());
    dp->shard(*optimizer);
    if (cfg.has("ema.decay")) ema = std::make_unique<Ema>(task.model(), cfg.get_float("ema.decay"));
    eval_with_ema = cfg.get_bool("eval.use_ema");
    if (eval_with_ema && !ema)
      throw ConfigError(str_cat(cfg.origin("eval.use_ema"), ": eval.use_ema needs ema.decay (no EMA is kept)"));
    if (dp->is_main()) folder = std::make_unique<RunFolder>(cfg);  // before anything is written there
    log = std::make_unique<RunLog>(run_dir, dp->is_main());
    task.set_output_dir(run_dir);
    // Rank 0's data warnings go to train.log (and the console); other ranks keep printing theirs to stderr.
    if (dp->is_main()) task.warnings().connect([log = log.get()](const std::string& message) { log->warn(message); });
    checkpoints = std::make_unique<CheckpointManager>(
        run_dir + "/checkpoints", cfg.get_int("checkpoint.keep_last"),
        cfg.has("checkpoint.best_metric") ? "eval/" + cfg.get_string("checkpoint.best_metric") : "",
        cfg.get_string("checkpoint.best_mode"));
  }

  ~Impl() { task.warnings().connect(nullptr); }

  CheckpointData snapshot(std::map<std::string, Tensor> optimizer_state) const {
    CheckpointData d;
    d.step = step;
    d.epoch = task.data_state().count("epoch") ? task.data_state().at("epoch") : 0;
    d.config_text = cfg.dump();
    d.model = on_cpu(task.model().state_dict());
    if (ema) d.ema = on_cpu(ema->state_dict());
    d.optimizer = on_cpu(optimizer_state);
    d.scheduler = {{"step", double(step)}, {"lr", optimizer->lr()}};
    if (const DynamicLossScaler* scaler = precision.scaler()) d.scheduler.merge(scaler->state_dict());
    for (auto& [name, gen] : task.generators()) d.rng[name] = {gen->seed(), gen->offset()};
    d.data = task.data_state();
    for (auto& [name, value] : last_eval) d.metrics["eval/" + name] = value;
    return d;
  }

  void save() {
    std::map<std::string, Tensor> optimizer_state = dp->optimizer_state(*optimizer);  // every rank: collective
    if (!dp->is_main()) {  // rank 0 alone writes
      last_checkpoint = checkpoints->path_for(step);
      return;
    }
    last_checkpoint = checkpoints->save(step, snapshot(std::move(optimizer_state)));
    for (const std::string& w : checkpoints->take_warnings()) log->warn(w);
    log->info(str_cat("checkpoint ", last_checkpoint));
  }

  void restore(const std::string& path, const CheckpointData& d) {
    check_resume_config(cfg, d.config_text, path, *log);
    task.model().load_state_dict(d.model);
    optimizer->load_state_dict(d.optimizer);
    if (ema) {
      MOH_CHECK(!d.ema.empty(), "checkpoint '", path, "' holds no EMA weights but ema.decay is set");
      ema->load_state_dict(d.ema);
    }
    if (DynamicLossScaler* scaler = precision.scaler()) {
      if (d.scheduler.count("loss_scale"))
        scaler->load_state_dict(d.scheduler);
      else
        log->warn(str_cat("checkpoint '", path, "' holds no loss scale (not an fp16 run): starting from ",
                          "loss_scale.init ", scaler->scale()));
    }
    task.load_data_state(d.data);
    for (auto& [name, gen] : task.generators()) {
      auto it = d.rng.find(name);
      MOH_CHECK(it != d.rng.end(), "checkpoint '", path, "' has no state for generator '", name, "'");
      gen->set_state(it->second.first, it->second.second);
    }
    step = d.step;
    last_checkpoint = path;  // the state the run is in until it saves again
    log->info(str_cat("resumed from ", path, " at step ", step));
  }

  void evaluate() {
    {
      std::optional<EmaWeightsGuard> ema_weights;
      if (eval_with_ema) ema_weights.emplace(*ema, task.model());
      last_eval = task.evaluate();
    }
    nlohmann::json record{{"step", step}};
    std::string line = str_cat("eval step ", step);
    for (auto& [name, value] : last_eval) {
      record["eval/" + name] = value;
      line += str_cat(" ", name, " ", value);
    }
    log->metrics(record);
    log->info(line);
  }

  TrainResult run() {
    StopSignals signals;
    const auto resume = checkpoints->resolve_resume(cfg.get_string("train.resume"));
    for (const std::string& w : checkpoints->take_warnings()) log->warn(w);
    if (resume) restore(resume->path, resume->data);  // checks the stored config before loading anything
    if (step > total_steps) {
      const char* key = run_length_key(cfg);
      throw ConfigError(str_cat(cfg.origin(key), ": ", key, " gives ", total_steps, " steps, but the checkpoint '",
                                resume->path, "' is at step ", step, ": a resumed run can only go on"));
    }
    // Written once the inputs are known good: a failed start leaves the previous config.yaml alone.
    if (dp->is_main()) write_file_atomically(run_dir + "/config.yaml", cfg.dump());
    dp->broadcast_state(step);
    log->info(str_cat("training ", total_steps, " steps of ", batch, " samples (", accum, " x ", micro, ") in ",
                      run_dir, "; model has ", task.model().num_parameters(), " parameters; ", device, ", ",
                      precision.name()));
    if (dp->sharded())
      log->info(str_cat("optimizer state sharded over ", dp->world_size(), " ranks (ZeRO-1): ",
                        double(optimizer->state_bytes()) / (1 << 20), " MiB on rank 0"));

    TrainResult result;
    const int64_t log_every = cfg.get_int("train.log_every"), eval_every = cfg.get_int("eval.every");
    const int64_t ckpt_every = cfg.get_int("checkpoint.every");
    double loss_sum = 0, lb_sum = 0, norm_sum = 0;
    int64_t logged_steps = 0, samples = 0, tokens = 0;
    auto window_start = std::chrono::steady_clock::now();
    const auto run_start = window_start;
    const int64_t first_step = step;
    Allocator& memory = allocator_for(device);
    memory.reset_peak();
    std::vector<ag::Variable> trained;  // each trained parameter once (the loss scaler unscales them)
    for (const Optimizer::Param& p : optimizer->params()) trained.push_back(p.var);
    DynamicLossScaler* scaler = precision.scaler();

    while (step < total_steps) {
      const auto step_start = std::chrono::steady_clock::now();
      optimizer->set_lr(lr_at(schedule, step));
      Tensor loss_total, lb_total;
      for (int64_t m = 0; m < accum; ++m) {
        MicroBatchLoss out = task.train_micro_batch(micro);
        ag::Variable loss = out.loss;
        if (const ag::Variable lb = mean_balance_loss(out.balance_losses); lb.defined()) {
          accumulate(lb_total, lb.data(), accum);
          loss = ag::add(loss, ag::mul(lb, beta));
        }
        accumulate(loss_total, out.loss.data(), accum);
        dp->begin_micro_batch(m + 1 == accum);
        ag::backward(precision.backward_loss(ag::div(loss, double(accum))));
        samples += out.samples;
        tokens += out.tokens;
      }
      dp->finish_gradients();
      double step_loss = loss_total.item<double>(), step_lb = lb_total.defined() ? lb_total.item<double>() : 0.0;
      const bool overflow = scaler && !scaler->unscale_and_check(trained);
      // Every rank decides on the global loss, on a stop any rank was asked for and on an overflow
      // any rank found (sharded, each rank checks its own part of the gradients).
      std::vector<double> global{step_loss, step_lb, stop_requested() ? 1.0 : 0.0, overflow ? 1.0 : 0.0};
      dp->sum(global);
      step_loss = global[0] / dp->world_size();
      step_lb = global[1] / dp->world_size();
      const bool stop = global[2] > 0;
      // An overflow is a non-finite gradient under a finite loss: the scale was too large. A non-finite
      // loss is the model's at any scale: train.nonfinite decides, and the scale stays.
      if (global[3] > 0 && std::isfinite(step_loss)) {
        optimizer->zero_grad();
        scaler->update(true);
        log->info(str_cat("step ", step, ": loss scale overflow, scale -> ", scaler->scale(), " (update skipped)"));
        MOH_CHECK(scaler->scale() >= DynamicLossScaler::kMinScale, "step ", step, ": the loss scale fell to ",
                  scaler->scale(), " after overflows in a row: the gradients are not finite at any scale, so the "
                  "model produces inf/NaN (or values fp16 cannot hold); the last checkpoint is ",
                  last_checkpoint.empty() ? std::string("none yet") : last_checkpoint);
      } else {
        const NamedParameters params = task.model().named_parameters();
        const GradNorm gn = dp->clip_gradients(params, clip);
        if (!gn.finite() || !std::isfinite(step_loss)) {
          const std::string what = !std::isfinite(step_loss)
                                       ? str_cat("the loss is ", step_loss)
                                       : str_cat("the gradient of '", gn.nonfinite, "' is not finite");
          optimizer->zero_grad();
          if (abort_on_nonfinite) {
            save();  // the weights are still those of the last good step
            MOH_FAIL("step ", step, ": ", what, "; saved the last good state to ", last_checkpoint,
                     " (train.nonfinite: abort)");
          }
          log->warn(str_cat("step ", step, ": ", what, "; skipping the update (train.nonfinite: skip_step)"));
          if (++skipped_in_row >= max_skipped_steps) {
            save();  // skipped updates left the weights of the last good step
            MOH_FAIL("step ", step, ": ", skipped_in_row, " updates in a row were skipped (train.max_skipped_steps = ",
                     max_skipped_steps, "), the last because ", what,
                     ": the run diverged (a smaller optim.lr?); saved the last good state to ", last_checkpoint);
          }
        } else {
          skipped_in_row = 0;
          optimizer->step();
          dp->finish_step();
          optimizer->zero_grad();
          if (ema) ema->update(task.model());
          loss_sum += step_loss;
          lb_sum += step_lb;
          norm_sum += gn.norm;
          ++logged_steps;
          if (scaler) scaler->update(false);  // only applied steps count towards growth
        }
      }
      ++step;
      const double step_ms = seconds_since(step_start) * 1e3;
      const double rate = double(step - first_step) / std::max(1e-9, seconds_since(run_start));
      log->progress(step, total_steps, rate, str_cat("loss ", step_loss));

      if (logged_steps > 0 && (step % log_every == 0 || step == total_steps)) {
        std::vector<double> counts{double(samples), double(tokens)};
        dp->sum(counts);  // throughput over all ranks
        samples = int64_t(counts[0]);
        tokens = int64_t(counts[1]);
        const double window = std::max(1e-9, seconds_since(window_start));
        nlohmann::json record{{"step", step},
                              {"epoch", task.data_state().count("epoch") ? task.data_state().at("epoch") : 0},
                              {"loss", loss_sum / double(logged_steps)},
                              {"lb_loss", lb_sum / double(logged_steps)},
                              {"lr", optimizer->lr()},
                              {"grad_norm", norm_sum / double(logged_steps)},
                              {"samples_per_s", double(samples) / window},
                              {"step_ms", step_ms},
                              {"mem_peak_mb", double(memory.stats().peak_bytes) / (1 << 20)}};
        if (tokens > 0) record["tokens_per_s"] = double(tokens) / window;
        for (const auto& [name, value] : task.train_log_fields()) record[name] = value;
        if (tokens > 0 && record.contains("flops_per_token"))
          record["model_tflops"] = record["flops_per_token"].get<double>() * double(tokens) / window / 1e12;
        if (scaler) record["loss_scale"] = scaler->scale();
        log->metrics(record);
        log->info(str_cat("step ", step, "/", total_steps, " loss ", record["loss"].get<double>(), " lr ",
                          optimizer->lr(), " grad_norm ", record["grad_norm"].get<double>(), " ",
                          tokens > 0 ? str_cat(int64_t(double(tokens) / window), " tokens/s")
                                     : str_cat(int64_t(double(samples) / window), " samples/s"),
                          " ETA ",
                          format_duration(double(total_steps - step) / rate)));
        loss_sum = lb_sum = norm_sum = 0;
        logged_steps = samples = tokens = 0;
        window_start = std::chrono::steady_clock::now();
        memory.reset_peak();
      }
      const bool last = step == total_steps;
      if ((eval_every > 0 && step % eval_every == 0) || last) evaluate();
      if ((ckpt_every > 0 && step % ckpt_every == 0) || last) save();
      if (stop && !last) {
        log->info(str_cat("stop requested at step ", step, ": saving a checkpoint"));
        save();
        result.interrupted = true;
        break;
      }
    }
    if (dp->world_size() > 1) {
      const DataParallelStats st = dp->stats();
      log->info(str_cat("data-parallel over ", dp->world_size(), " ranks: collectives in flight ", st.comm_s,
                        " s, the step waited ", st.wait_s, " s for gradients (", int(100 * st.hidden_fraction()),
                        "% hidden) in ", st.steps, " steps of ", st.buckets / std::max<int64_t>(1, st.steps),
                        " buckets"));
    }
    result.step = step;
    result.eval = last_eval;
    result.checkpoint = last_checkpoint;
    result.run_dir = run_dir;
    return result;
  }
};

Trainer::Trainer(const Config& config, Task& task) : impl_(std::make_unique<Impl>(config, task)) {}
Trainer::~Trainer() = default;
TrainResult Trainer::run() {
  try {
    return impl_->run();
  } catch (const std::exception& e) {
    impl_->log->error_to_file(e.what());  // why the run stopped, beside its other log lines
    throw;
  }
}
void Trainer::request_stop() { moh::request_stop(); }

config::Schema training_schema(const std::string& family) {
  config::Schema schema = config::common_schema();
  schema.extend(task_family(family).schema());
  return schema;
}

}  // namespace moh
