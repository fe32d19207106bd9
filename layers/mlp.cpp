// Mlp and SwiGLU: children registered in checkpoint order (timm fc1, drop1, fc2, drop2; LLaMA w1,
// w2, w3); the input is checked here so errors name the block, not its first Linear.
#include "layers/mlp.h"

#include "autograd/elementwise_fns.h"

namespace moh {
namespace {

// Checks the sizes and resolves 0 (= in_features) for hidden/out, for MlpOptions and SwiGLUOptions.
template <class Options>
Options resolved(const char* layer, Options o) {
  MOH_CHECK(o.in_features > 0 && o.hidden_features >= 0 && o.out_features >= 0, layer,
            ": expected in_features > 0 and hidden/out_features >= 0, got ", o.in_features, ", ",
            o.hidden_features, ", ", o.out_features);
  if (o.hidden_features == 0) o.hidden_features = o.in_features;
  if (o.out_features == 0) o.out_features = o.in_features;
  return o;
}

template <class Options>
std::shared_ptr<Linear> projection(const Options& o, int64_t in, int64_t out, Generator& gen) {
  return std::make_shared<Linear>(LinearOptions{in, out, o.bias, o.init, o.init_std, o.dtype}, gen);
}

}  // namespace

const char* activation_name(Activation act) {
  switch (act) {
    case Activation::Gelu: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Silu: return "silu";
    case Activation::Relu: return "relu";
  }
  MOH_FAIL("activation_name: unknown Activation ", int(act));
}

ag::Variable activate(const ag::Variable& x, Activation act) {
  switch (act) {
    case Activation::Gelu: return ag::gelu(x, GeluApprox::None);
    case Activation::GeluTanh: return ag::gelu(x, GeluApprox::Tanh);
    case Activation::Silu: return ag::silu(x);
    case Activation::Relu: return ag::relu(x);
  }
  MOH_FAIL("activate: unknown Activation ", int(act));
}

Mlp::Mlp(const MlpOptions& options, Generator& gen, std::shared_ptr<Generator> dropout_gen)
    : options_(resolved("Mlp", options)) {
  const MlpOptions& o = options_;
  fc1 = register_module("fc1", projection(o, o.in_features, o.hidden_features, gen));
  drop1 = register_module("drop1", std::make_shared<Dropout>(o.drop, dropout_gen));
  fc2 = register_module("fc2", projection(o, o.hidden_features, o.out_features, gen));
  drop2 = register_module("drop2", std::make_shared<Dropout>(o.drop, dropout_gen));
}

std::string Mlp::extra_repr() const {
  return str_cat("in=", options_.in_features, ", hidden=", options_.hidden_features,
                 ", out=", options_.out_features, ", ", activation_name(options_.act),
                 options_.drop > 0 ? str_cat(", drop=", options_.drop) : "");
}

ag::Variable Mlp::forward(const ag::Variable& x) const {
  check_features(*this, x, options_.in_features, options_.dtype);
  ag::Variable h = drop1->forward(activate(fc1->forward(x), options_.act));
  return drop2->forward(fc2->forward(h));
}

SwiGLU::SwiGLU(const SwiGLUOptions& options, Generator& gen) : options_(resolved("SwiGLU", options)) {
  const SwiGLUOptions& o = options_;
  w1 = register_module("w1", projection(o, o.in_features, o.hidden_features, gen));
  w2 = register_module("w2", projection(o, o.hidden_features, o.out_features, gen));
  w3 = register_module("w3", projection(o, o.in_features, o.hidden_features, gen));
}

std::string SwiGLU::extra_repr() const {
  return str_cat("in=", options_.in_features, ", hidden=", options_.hidden_features,
                 ", out=", options_.out_features);
}

ag::Variable SwiGLU::forward(const ag::Variable& x) const {
  check_features(*this, x, options_.in_features, options_.dtype);
  return w2->forward(ag::mul(ag::silu(w1->forward(x)), w3->forward(x)));
}

}  // namespace moh
