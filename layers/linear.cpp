// Linear layer and the fused `linear` tape node (forward: one GEMM accumulating onto the bias; backward
// grad_x = g @ W, grad_W = g^T @ x, grad_b = column sums of g, each computed only when needed).
#include "layers/linear.h"

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/init.h"

namespace moh {

void init_weight(const ag::Variable& weight, WeightInit init, double std, Generator& gen) {
  switch (init) {
    case WeightInit::XavierUniform: init::xavier_uniform(weight, gen); return;
    case WeightInit::TruncNormal: init::trunc_normal(weight, gen, std); return;
    case WeightInit::Normal: init::normal(weight, gen, std); return;
  }
  MOH_FAIL("init_weight: unknown WeightInit ", int(init));
}

std::string layer_label(const Module& layer) { return layer.type_name() + "(" + layer.extra_repr() + ")"; }

void check_features(const Module& layer, const ag::Variable& x, int64_t features, DType dtype) {
  MOH_CHECK(x.defined(), layer_label(layer), ": the input is undefined");
  MOH_CHECK(x.dim() >= 1 && x.size(-1) == features, layer_label(layer), ": expected an input [..., ",
            features, "], got ", x.describe());
  MOH_CHECK(x.dtype() == dtype, layer_label(layer), ": input ", x.describe(), " does not match the layer's ",
            dtype_name(dtype), " parameters");
}

ag::Variable linear(const ag::Variable& x, const ag::Variable& weight, const ag::Variable& bias) {
  MOH_CHECK(x.defined() && weight.defined() && weight.dim() == 2,
            "linear: expected x [..., in] and weight [out, in], got x ", x.describe(), " and weight ",
            weight.describe());
  const int64_t out = weight.size(0), in = weight.size(1);
  MOH_CHECK(x.dim() >= 1 && x.size(-1) == in && x.dtype() == weight.dtype(), "linear: x ", x.describe(),
            " does not match weight ", weight.describe(), " (expected [..., ", in, "] of the same dtype)");
  MOH_CHECK(!bias.defined() || (bias.shape() == Shape{out} && bias.dtype() == weight.dtype()),
            "linear: bias ", bias.describe(), " does not match weight ", weight.describe());
  const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  Tensor x_rows = x.data().reshape({rows, in});
  const Tensor w_t = weight.data().t();
  Tensor y = bias.defined() ? addmm(bias.data(), x_rows, w_t) : matmul(x_rows, w_t);
  Shape out_shape = x.shape();
  out_shape.back() = out;
  return ag::record("linear", y.view(out_shape), {x, weight, bias},
                    [rows, x_shape = x.shape(), x_rows = ag::saved_for(weight, x_rows),
                     w = ag::saved_for(x, weight.data())](const Tensor& g, const ag::Needs& needs) {
                      Tensor g_rows = g.reshape({rows, g.size(-1)});
                      return std::vector<Tensor>{needs[0] ? matmul(g_rows, w).view(x_shape) : Tensor(),
                                                 needs[1] ? matmul(g_rows.t(), x_rows) : Tensor(),
                                                 needs[2] ? sum(g_rows, {0}) : Tensor()};
                    });
}

Linear::Linear(const LinearOptions& options, Generator& gen) : options_(options) {
  MOH_CHECK(options.in_features > 0 && options.out_features > 0,
            "Linear: in_features and out_features must be positive, got ", options.in_features, " and ",
            options.out_features);
  weight_ = register_parameter("weight", zeros({options.out_features, options.in_features}, options.dtype));
  init_weight(weight_, options.init, options.init_std, gen);
  if (options.bias) bias_ = register_parameter("bias", zeros({options.out_features}, options.dtype));
}

std::string Linear::extra_repr() const {
  return str_cat("in=", options_.in_features, ", out=", options_.out_features,
                 options_.bias ? ", bias" : ", no bias");
}

ag::Variable Linear::forward(const ag::Variable& x) const {
  check_features(*this, x, options_.in_features, options_.dtype);
  return linear(x, weight_, bias_);
}

}  // namespace moh
