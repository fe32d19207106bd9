// DiT sampling with classifier-free guidance (see guided_sampling.h).
#include "models/dit/guided_sampling.h"

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {

Tensor sample_dit(const DiT& model, const GaussianDiffusion& diffusion, const Tensor& labels,
                  const GuidanceOptions& guidance, const SampleLoopOptions& loop, Generator& gen,
                  const SampleProgressFn& progress) {
  const DitOptions& o = model.options();
  MOH_CHECK(labels.defined() && labels.dim() == 1 && labels.dtype() == DType::Int64 && labels.size(0) >= 1,
            "sample_dit: expected int64 labels [N], got ", labels.defined() ? describe(labels) : "undefined");
  const std::vector<int64_t> values = labels.to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); ++i)
    MOH_CHECK(values[i] >= 0 && values[i] < o.num_classes, "sample_dit: label ", values[i], " of sample ", i,
              " is outside [0, ", o.num_classes, ")");
  const bool guided = guidance.scale != 1.0;
  MOH_CHECK(!guided || o.class_dropout_prob > 0, "sample_dit: guidance scale ", guidance.scale,
            " needs the null class, which a model trained without class dropout does not have (use scale 1)");
  ag::NoGradGuard no_grad;
  const int64_t n = labels.size(0);
  const Device device = model.x_embedder->parameters().front().data().device();
  Tensor x_T = normal({n, o.in_channels, o.input_size, o.input_size}, 0.0, 1.0, gen, o.dtype, device);
  Tensor y = labels.to(device);
  if (guided) {
    x_T = cat({x_T, x_T}, 0);
    y = cat({y, full({n}, double(o.num_classes), DType::Int64, device)}, 0);
  }
  const DenoiseFn denoise = [&](const Tensor& x, const Tensor& t) {
    const ag::Variable v(x);
    return guided ? model.forward_with_cfg(v, t, y, guidance.scale, guidance.channels).data()
                  : model.forward(v, t, y).out.data();
  };
  const Tensor x_0 = sample_loop(diffusion, denoise, x_T, gen, loop, progress);
  return guided ? x_0.narrow(0, 0, n).contiguous() : x_0;
}

}  // namespace moh
