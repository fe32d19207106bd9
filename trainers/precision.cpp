// Run device, mixed-precision policy, loss scaling and numerics switches (see precision.h).
#include "trainers/precision.h"

#include <cmath>

#include "autograd/autograd.h"
#include "core/backend_flags.h"
#include "core/dist/world.h"
#include "core/ops.h"

namespace moh {

Device training_device(const Config& cfg) {
  const std::string& text = cfg.get_string("device");
  const Device named = Device::parse(text);  // the schema's pattern admits only valid names
  if (named.is_cpu()) return named;
  const std::string where = str_cat(cfg.origin("device"), ": device '", text, "'");
  if (!cuda_compiled())
    throw ConfigError(str_cat(where, " needs a CUDA build, but this moh was built without the CUDA backend "
                                     "(configure with -DMOH_CUDA=ON), or use device: cpu"));
  const int count = cuda_device_count();
  if (count == 0)
    throw ConfigError(str_cat(where, " needs a CUDA device, but this machine has none (no GPU or no driver); "
                                     "use device: cpu"));
  const int index = text == "cuda" && dist::is_distributed() ? dist::launch_env().local_rank % count : named.index;
  if (index >= count)
    throw ConfigError(str_cat(where, " is not on this machine: it has ", count, " CUDA device",
                              count == 1 ? " (cuda:0)" : str_cat("s (cuda:0 to cuda:", count - 1, ")")));
  return Device::cuda(index);
}

// ---- DynamicLossScaler ----

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& options)
    : options_(options), scale_(options.init_scale) {
  MOH_CHECK(std::isfinite(options.init_scale) && options.init_scale > 0,
            "DynamicLossScaler: init_scale must be finite and > 0, got ", options.init_scale);
  MOH_CHECK(std::isfinite(options.growth_factor) && options.growth_factor >= 1,
            "DynamicLossScaler: growth_factor must be finite and >= 1, got ", options.growth_factor);
  MOH_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1,
            "DynamicLossScaler: backoff_factor must be in (0, 1), got ", options.backoff_factor);
  MOH_CHECK(options.growth_interval >= 1, "DynamicLossScaler: growth_interval must be >= 1, got ",
            options.growth_interval);
}

ag::Variable DynamicLossScaler::scaled(const ag::Variable& loss) const { return ag::mul(loss, scale_); }

bool DynamicLossScaler::unscale_and_check(const std::vector<ag::Variable>& params) const {
  const double inverse = 1.0 / scale_;
  std::vector<Tensor> flags;
  for (const ag::Variable& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.is_contiguous()) {
      mul_(g, inverse);
    } else {
      g = mul(g, inverse);
      ag::Variable(p).set_grad(g);
    }
    flags.push_back(sum(sub(g, g)).to(DType::Float64));
  }
  if (flags.empty()) return true;
  return sum(stack(flags, 0)).item<double>() == 0;
}

void DynamicLossScaler::update(bool found_nonfinite) {
  if (found_nonfinite) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
  } else if (++good_steps_ >= options_.growth_interval) {  // >=: a resume may lower the interval
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
}

std::map<std::string, double> DynamicLossScaler::state_dict() const {
  return {{"loss_scale", scale_}, {"loss_scale_good_steps", double(good_steps_)}};
}

void DynamicLossScaler::load_state_dict(const std::map<std::string, double>& state) {
  auto entry = [&](const char* key) {
    auto it = state.find(key);
    MOH_CHECK(it != state.end(), "DynamicLossScaler::load_state_dict: missing entry '", key,
              "' (a checkpoint of a run without loss scaling)");
    return it->second;
  };
  const double scale = entry("loss_scale"), good = entry("loss_scale_good_steps");
  const char* what = "DynamicLossScaler::load_state_dict";
  MOH_CHECK(std::isfinite(scale) && scale > 0, what, ": loss_scale must be finite and > 0, got ", scale);
  MOH_CHECK(good >= 0 && good == std::floor(good), what, ": loss_scale_good_steps must be a non-negative integer, got ",
            good);
  scale_ = scale;
  good_steps_ = int64_t(good);
}

// ---- MixedPrecision ----

MixedPrecision::MixedPrecision(Precision precision, const LossScalerOptions& scaler) : precision_(precision) {
  if (precision == Precision::Fp16) scaler_.emplace(scaler);
}

MixedPrecision MixedPrecision::from_config(const Config& cfg, Device device) {
  const std::string& name = cfg.get_string("precision");
  const Precision precision = name == "bf16" ? Precision::Bf16 : name == "fp16" ? Precision::Fp16 : Precision::Fp32;
  if (precision != Precision::Fp32 && !device.is_cuda())
    throw ConfigError(str_cat(cfg.origin("precision"), ": precision '", name, "' needs device: cuda (its GEMMs run in ",
                              name, " on CUDA), but this run has device: ", cfg.get_string("device"),
                              "; on the CPU use precision: fp32"));
  return MixedPrecision(precision, {cfg.get_float("loss_scale.init"), cfg.get_float("loss_scale.growth_factor"),
                                    cfg.get_float("loss_scale.backoff_factor"),
                                    cfg.get_int("loss_scale.growth_interval")});
}

std::string MixedPrecision::name() const {
  return precision_ == Precision::Bf16 ? "bf16" : precision_ == Precision::Fp16 ? "fp16" : "fp32";
}

DType MixedPrecision::gemm_dtype() const {
  return precision_ == Precision::Bf16 ? DType::BFloat16 : precision_ == Precision::Fp16 ? DType::Float16
                                                                                          : DType::Float32;
}

ag::Variable MixedPrecision::backward_loss(const ag::Variable& loss) const {
  return scaler_ ? scaler_->scaled(loss) : loss;
}

// ---- NumericsScope ----

NumericsScope::NumericsScope(const Config& cfg, const MixedPrecision& precision)
    : deterministic_(deterministic_algorithms()), tf32_(allow_tf32()), gemm_(gemm_autocast()) {
  set_deterministic_algorithms(cfg.get_bool("deterministic"));
  set_allow_tf32(cfg.get_bool("tf32"));
  set_gemm_autocast(precision.gemm_dtype());
}

NumericsScope::~NumericsScope() {
  set_deterministic_algorithms(deterministic_);
  set_allow_tf32(tf32_);
  set_gemm_autocast(gemm_);
}

}  // namespace moh
