// Optimizer: the base of AdamW and SGD. It owns the trained parameters by PyTorch-style name (the
// order of Module::named_parameters(), frozen parameters left out, tied weights kept once), splits
// them into a decay and a no-decay group (decay_exempt), keeps each one's state tensors (allocated
// up front, on the parameter's device, float64 for float64 parameters and float32 otherwise) and
// its own step count (a parameter without a gradient is skipped, as in PyTorch), and exports the
// whole state by name: "<param>/<state>" (e.g. "blocks.0.attn.qkv.weight/exp_avg"),
// "<param>/step" and the optimizer's "step", ready for /optimizer/<param>/... in a checkpoint.
// Gradient accumulation: backward adds into .grad until zero_grad(); step() divides by nothing, so
// the trainer scales each micro-batch loss by 1 / accumulation_steps.
// Sharding (ZeRO-1, set up by DataParallel): after shard(), the optimizer updates, and keeps state
// for, one element range of each flattened parameter only; its state tensors are then flat [count].
// Devices: each update has two implementations in one place, a fused host loop for CPU tensors and
// a device-agnostic path built from the public ops (core/ops.h) for every other device; UpdatePath
// selects them (tests force the op path on CPU tensors and compare it with the loop).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "core/tensor.h"

namespace moh {

using NamedParameters = std::vector<std::pair<std::string, ag::Variable>>;

// Which implementation a trainer-side update (optimizer step, gradient norm) runs: Auto takes the
// fused host loop for CPU tensors and the op path (what CUDA tensors run) otherwise; Ops takes the
// op path for CPU tensors too.
enum class UpdatePath { Auto, Ops };
// Whether `t` is updated by the host loop under `path`.
inline bool runs_host_loop(UpdatePath path, const Tensor& t) { return path == UpdatePath::Auto && t.device().is_cpu(); }

// Whether `param` (named `name`) is trained without weight decay: tensors of at most one dim
// (biases, norm weights, scales), or one matching an entry of `exempt`: the full name, or a dotted
// suffix of it ("gamma" matches "blocks.0.ls1.gamma"). Names never decide by themselves: the trainer
// passes what the model declares (Module::no_weight_decay_names(), e.g. a ViT's pos_embed) plus
// optim.no_decay, so an LLM's token embedding decays unless a config says otherwise.
bool decay_exempt(const std::string& name, const ag::Variable& param, const std::vector<std::string>& exempt = {});

class Optimizer {
 public:
  struct Param {
    std::string name;
    ag::Variable var;
    bool decay = true;          // false: in the no-decay group
    int64_t steps = 0;          // updates this parameter has received
    std::vector<Tensor> state;  // one tensor per state_names() entry, shaped like the parameter
                                // (flat [count] once sharded)
    int64_t offset = 0;         // the elements [offset, offset + count) of the flattened parameter
    int64_t count = 0;          // are updated here (all of them unless sharded; count 0 = none)
  };

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual std::string type_name() const = 0;  // "AdamW", "SGD"

  // Updates every parameter that has a gradient with the current lr, then counts one step.
  void step();
  // Drops every gradient (they become undefined, so the next backward starts from zero).
  void zero_grad();

  // The implementation step() runs (UpdatePath::Auto unless a test forces the op path).
  void set_update_path(UpdatePath path) { path_ = path; }
  UpdatePath update_path() const { return path_; }

  double lr() const { return lr_; }
  void set_lr(double lr);  // finite and >= 0
  int64_t step_count() const { return step_count_; }
  const std::vector<Param>& params() const { return params_; }
  const std::vector<std::string>& state_names() const { return state_names_; }

  // ZeRO-1: from now on only elements [offset, offset + count) of each flattened parameter (one
  // range per params() entry, in order) are updated, with state for just those (reset to zero;
  // load a state_dict() after sharding). Every parameter still counts its steps.
  void shard(const std::vector<std::pair<int64_t, int64_t>>& ranges);
  bool sharded() const { return sharded_; }
  // Bytes of state tensors this optimizer holds (on this rank, when sharded).
  int64_t state_bytes() const;

  // The state by name: "<param>/<state>", "<param>/step" (int64 0-d) and "step" (int64 0-d, the
  // step() count). State tensors alias the optimizer's memory: clone them to keep a snapshot. When
  // sharded, "<param>/<state>" holds this rank's range only (DataParallel gathers the whole).
  std::map<std::string, Tensor> state_dict() const;
  // Copies a full state_dict() in (dtype converted; sharded: the owned range of each tensor). Every
  // entry must be present with the parameter's shape and no other entry may appear; a missing,
  // unexpected or misshapen entry throws naming it.
  void load_state_dict(const std::map<std::string, Tensor>& state);

 protected:
  // `what` names the optimizer in errors. Throws on an undefined, duplicate-named or non-contiguous
  // parameter or a non-float dtype.
  Optimizer(const char* what, const NamedParameters& params, double lr, const std::vector<std::string>& no_decay,
            std::vector<std::string> state_names);
  // Updates `value`, the owned elements of p (flat, contiguous, aliasing the parameter), given
  // their gradient `grad` (same shape, dtype and device) and p.state; p.steps already counts this
  // update (1 on the first). runs_host_loop(update_path(), value) picks the implementation.
  virtual void update(Param& p, const Tensor& value, const Tensor& grad) = 0;
  // A state tensor as a flat [numel] view, to combine with `value` in the op path.
  static Tensor flat(const Tensor& state) { return state.view({state.numel()}); }

 private:
  const char* what_;
  std::vector<Param> params_;
  std::vector<std::string> state_names_;
  double lr_ = 0;
  int64_t step_count_ = 0;
  bool sharded_ = false;
  UpdatePath path_ = UpdatePath::Auto;
};

}  // namespace moh
