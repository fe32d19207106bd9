// LayerNorm / RMSNorm / GroupNorm modules: option checks, parameter registration, input checks naming the layer.
#include "layers/norm.h"

#include "autograd/norm_fns.h"
#include "core/factory.h"
#include "layers/linear.h"

namespace moh {

LayerNorm::LayerNorm(const LayerNormOptions& options) : options_(options) {
  MOH_CHECK(options.dim > 0 && options.eps >= 0,
            "LayerNorm: dim must be positive and eps >= 0, got dim=", options.dim, ", eps=", options.eps);
  if (options.affine) {
    weight_ = register_parameter("weight", ones({options.dim}, options.dtype));
    bias_ = register_parameter("bias", zeros({options.dim}, options.dtype));
  }
}

std::string LayerNorm::extra_repr() const {
  return str_cat(options_.dim, ", eps=", options_.eps, options_.affine ? "" : ", no affine");
}

ag::Variable LayerNorm::forward(const ag::Variable& x) const {
  check_features(*this, x, options_.dim, options_.dtype);
  return ag::layer_norm(x, weight_, bias_, options_.eps);
}

RMSNorm::RMSNorm(const RMSNormOptions& options) : options_(options) {
  MOH_CHECK(options.dim > 0 && options.eps >= 0,
            "RMSNorm: dim must be positive and eps >= 0, got dim=", options.dim, ", eps=", options.eps);
  weight_ = register_parameter("weight", ones({options.dim}, options.dtype));
}

std::string RMSNorm::extra_repr() const { return str_cat(options_.dim, ", eps=", options_.eps); }

ag::Variable RMSNorm::forward(const ag::Variable& x) const {
  check_features(*this, x, options_.dim, options_.dtype);
  return ag::rms_norm(x, weight_, options_.eps);
}

GroupNorm::GroupNorm(const GroupNormOptions& options) : options_(options) {
  MOH_CHECK(options.groups > 0 && options.channels > 0 && options.channels % options.groups == 0 && options.eps >= 0,
            "GroupNorm: groups must be positive and divide channels, and eps >= 0, got groups=", options.groups,
            ", channels=", options.channels, ", eps=", options.eps);
  if (options.affine) {
    weight_ = register_parameter("weight", ones({options.channels}, options.dtype));
    bias_ = register_parameter("bias", zeros({options.channels}, options.dtype));
  }
}

std::string GroupNorm::extra_repr() const {
  return str_cat(options_.groups, ", ", options_.channels, ", eps=", options_.eps,
                 options_.affine ? "" : ", no affine");
}

ag::Variable GroupNorm::forward(const ag::Variable& x) const {
  MOH_CHECK(x.defined(), layer_label(*this), ": the input is undefined");
  MOH_CHECK(x.dim() >= 2 && x.size(1) == options_.channels, layer_label(*this), ": expected an input [N, ",
            options_.channels, ", ...], got ", x.describe());
  MOH_CHECK(x.dtype() == options_.dtype, layer_label(*this), ": input ", x.describe(),
            " does not match the layer's ", dtype_name(options_.dtype), " parameters");
  return ag::group_norm(x, options_.groups, weight_, bias_, options_.eps);
}

}  // namespace moh
