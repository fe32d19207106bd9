// DataParallel: what the Trainer does differently when several processes train one model. Every
// rank holds a full replica: parameters and buffers are broadcast from rank 0 at start and after a
// resume; gradients are grouped into buckets of distributed.bucket_mb in reverse registration order
// (the order backward produces them) and each bucket is all-reduced (averaged) as soon as the leaf
// hooks say its last gradient is final, overlapping the rest of backward; with gradient
// accumulation only the last micro-batch communicates. Buckets launch strictly in bucket order on
// every rank, so the ranks always issue the same collectives in the same order. Metrics and the
// stop flag are summed over ranks so every rank takes the same decisions; rank 0 alone writes.
// Every parameter ends a step with a defined gradient (zero where no rank's backward reached it),
// so the replicas' optimizers stay identical. With world size 1 every method is a no-op and
// nothing is registered on the model.
// ZeRO-1 (distributed.shard_optimizer): each bucket is padded to a multiple of the world size and
// split into equal chunks, rank r owning chunk r. Buckets are reduce-scattered instead of
// all-reduced, so a rank's gradients hold the average on its chunk and zero elsewhere; the
// optimizer updates (and keeps state for) that chunk only; finish_step() all-gathers the updated
// parameters. Gradient norms and optimizer checkpoints are then reduced/gathered over ranks, so the
// run, its logs and its checkpoints equal an unsharded one's.
// moh.balance_scope: global hands the model's MoH layers (set_balance_reducer) an average of their
// head loads over ranks for the DataParallel's lifetime; other models keep local statistics.
// Communicators: tensors of the model (gradient buckets, parameters, buffers, MoH head loads) go
// through the communicator of the model's device (NCCL for CUDA parameters), host values (metrics,
// flags, steps, norms) through a CPU communicator over the same ranks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dist/communicator.h"
#include "layers/module.h"
#include "trainers/config.h"
#include "trainers/grad_clip.h"
#include "trainers/optimizer.h"

namespace moh {

struct DataParallelOptions {
  double bucket_mb = 25;
  bool global_balance = false;  // moh.balance_scope: global
  bool shard_optimizer = false; // distributed.shard_optimizer (ZeRO-1)
};

struct DataParallelStats {
  double comm_s = 0;  // seconds collectives were in flight (gradient buckets, metrics)
  double wait_s = 0;  // seconds finish_gradients() blocked waiting for them (the part not hidden)
  int64_t steps = 0, buckets = 0;
  double hidden_fraction() const { return comm_s > 0 ? std::max(0.0, 1.0 - wait_s / comm_s) : 0; }
};

class DataParallel {
 public:
  // `comm` carries the model's tensors (its device must be theirs); `host`, a CPU communicator over
  // the same ranks, carries host values (nullptr: `comm` itself, which must then be a CPU one).
  DataParallel(Module& model, dist::Communicator& comm, DataParallelOptions options,
               dist::Communicator* host = nullptr);
  // From the config (distributed.*, moh.balance_scope) over dist::world(), whose timeout it sets, and
  // for CUDA parameters with world size > 1 over dist::communicator_for(their device) (NCCL).
  DataParallel(Module& model, const Config& cfg);
  // When destroyed by an exception, marks the job failed (peers are aborted, not left waiting),
  // unless the exception is one every rank threw together (check_same_job).
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const;
  int world_size() const;
  bool is_main() const { return rank() == 0; }

  // Before any other collective: every rank runs the same config (but kPerRankKeys) for the same
  // `total_steps`, else every rank throws the same ConfigError (trainers/same_job.h) and the job
  // ends without an abort, each rank exiting with the config-error status.
  void check_same_job(const Config& cfg, int64_t total_steps);
  // Rank 0's parameters and buffers to every rank, after checking that every rank is at `step`
  // (a resume that found different checkpoints fails here, naming the ranks).
  void broadcast_state(int64_t step);
  // Before a micro-batch's backward: `last` when its gradients complete the step (communicate).
  void begin_micro_batch(bool last);
  // After the last backward: launches what backward did not, waits, and leaves every rank with
  // the same averaged gradients.
  void finish_gradients();
  // Element-wise sum over ranks, in place (metrics, flags).
  void sum(std::vector<double>& values);

  // ZeRO-1: restricts `optimizer` (built over this model) to this rank's chunks. Call before
  // loading its state; a no-op unless shard_optimizer is set and the world size exceeds 1.
  void shard(Optimizer& optimizer);
  bool sharded() const;
  // After finish_gradients(): the global gradient norm, and clipping to max_norm when > 0 (the rule
  // of grad_clip.h). Sharded, each rank's share of the norm is summed over ranks.
  GradNorm clip_gradients(const NamedParameters& params, double max_norm);
  // After the optimizer's step: sharded, every rank receives the parameters the others updated.
  void finish_step();
  // The optimizer's whole state_dict() on every rank (sharded: gathered over ranks, collectively).
  std::map<std::string, Tensor> optimizer_state(const Optimizer& optimizer);

  DataParallelStats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  int uncaught_at_start_ = 0;
};

// train.batch_size / (train.grad_accum * world_size): the micro-batch each rank draws; throws
// ConfigError unless it divides exactly.
int64_t per_rank_micro_batch(const Config& cfg, int world_size);

}  // namespace moh
