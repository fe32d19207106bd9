// Precision and device of a training run: the config keys `device`, `precision`, `loss_scale.*`,
// `deterministic` and `tf32`.
//  - training_device(cfg): the device `device` names, checked against the build (CUDA compiled in)
//    and the machine (that GPU present). `cuda` under a launcher means the local rank's GPU
//    (local_rank % GPUs, the one core/dist binds); `cuda:N` is taken literally.
//  - MixedPrecision, the policy `precision` selects. Master weights, optimizer state, activations
//    outside GEMMs and gradient accumulation are float32 in every mode:
//      fp32  float32 GEMMs (TF32 when `tf32` is on);
//      bf16  float32 GEMMs on CUDA round their inputs to bfloat16 and accumulate in float32
//            (gemm_autocast, core/backend_flags.h); bfloat16 has float32's range, so no scaling;
//      fp16  the same with float16 GEMM inputs, plus a DynamicLossScaler: the loss is multiplied by
//            the scale before backward so small gradients do not flush to zero in float16, the
//            gradients are divided by it before clipping, and a step whose gradients overflowed is
//            skipped (not an error) while the scale backs off.
//    bf16 and fp16 need a CUDA device.
//  - NumericsScope: the process-wide switches of core/backend_flags.h for the length of a run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/device.h"
#include "core/dtype.h"
#include "trainers/config.h"

namespace moh {

// Throws ConfigError naming the `device` key when the build has no CUDA backend or the machine
// lacks the GPU.
Device training_device(const Config& cfg);

struct LossScalerOptions {
  double init_scale = 65536.0;    // 2^16
  double growth_factor = 2.0;     // applied after growth_interval finite steps in a row
  double backoff_factor = 0.5;    // applied on every overflow
  int64_t growth_interval = 2000;
};

// Dynamic loss scaling as torch.cuda.amp.GradScaler. State: the scale and the count of finite
// steps since it last changed; both go into checkpoints (state_dict) so a resumed run continues
// with the same scale.
class DynamicLossScaler {
 public:
  // Below this (fp16's smallest subnormal) every scaled gradient that reaches an fp16 GEMM is zero:
  // the trainer stops when overflows in a row bring the scale under it.
  static constexpr double kMinScale = 0x1p-24;

  // Throws unless init_scale > 0, growth_factor >= 1, 0 < backoff_factor < 1, growth_interval >= 1.
  explicit DynamicLossScaler(const LossScalerOptions& options = {});

  double scale() const { return scale_; }
  int64_t good_steps() const { return good_steps_; }
  const LossScalerOptions& options() const { return options_; }

  // loss * scale(), recorded on the tape (backward then yields scaled gradients).
  ag::Variable scaled(const ag::Variable& loss) const;
  // Divides the gradient of every leaf in `params` that has one by scale(), in place on its device
  // (ops; a gradient that is a broadcast view is replaced), and returns whether every element of
  // every gradient is finite: each gradient contributes sum(g - g) (0, or nan when it holds inf or
  // nan) and all of them come back to the host in one read. A tied weight must appear once.
  bool unscale_and_check(const std::vector<ag::Variable>& params) const;
  // After a step's check: an overflow multiplies the scale by backoff_factor and restarts the count;
  // growth_interval finite steps in a row multiply it by growth_factor.
  void update(bool found_nonfinite);

  // {"loss_scale", "loss_scale_good_steps"}: stored with the checkpoint's scheduler state.
  std::map<std::string, double> state_dict() const;
  // Reads those two entries (other entries are ignored); throws naming a missing or invalid one.
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
};

enum class Precision { Fp32, Bf16, Fp16 };

class MixedPrecision {
 public:
  explicit MixedPrecision(Precision precision, const LossScalerOptions& scaler = {});
  // From `precision` and `loss_scale.*`; throws ConfigError naming `precision` when it is bf16 or
  // fp16 and `device` is not a CUDA device.
  static MixedPrecision from_config(const Config& cfg, Device device);

  Precision precision() const { return precision_; }
  std::string name() const;  // "fp32", "bf16", "fp16" (the config spelling)
  // The type GEMM inputs are rounded to (Float32: none), for set_gemm_autocast.
  DType gemm_dtype() const;
  // The loss scaler (fp16), or nullptr.
  DynamicLossScaler* scaler() { return scaler_ ? &*scaler_ : nullptr; }
  const DynamicLossScaler* scaler() const { return scaler_ ? &*scaler_ : nullptr; }
  // The loss backward should start from: scaled under fp16, `loss` itself otherwise.
  ag::Variable backward_loss(const ag::Variable& loss) const;

 private:
  Precision precision_;
  std::optional<DynamicLossScaler> scaler_;
};

// Sets deterministic algorithms (`deterministic`), TF32 (`tf32`) and the GEMM autocast of
// `precision` process-wide, and restores the previous values when destroyed.
class NumericsScope {
 public:
  NumericsScope(const Config& cfg, const MixedPrecision& precision);
  ~NumericsScope();
  NumericsScope(const NumericsScope&) = delete;
  NumericsScope& operator=(const NumericsScope&) = delete;

 private:
  bool deterministic_, tf32_;
  DType gemm_;
};

}  // namespace moh
