// upsample_nearest2d / avg_pool2d and their backward (NCHW): argument checks, contiguity and
// allocation, then the backend kernel (core/kernels/resample.h). Kernels get
// contiguous inputs and a freshly allocated contiguous output of the input's dtype and device.
#include "core/kernels/resample.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// `t` (argument `name` of `op`) is a 4-D [N, C, H, W] math-float tensor with H, W >= 1.
void check_image(const char* op, const char* name, const Tensor& t) {
  check_float_argument(op, name, t);
  MOH_CHECK(t.dim() == 4, op, ": expected ", name, " of 4 dims [N, C, H, W], got ", describe(t));
  MOH_CHECK(t.size(2) >= 1 && t.size(3) >= 1, op, ": expected ", name, " with H and W >= 1, got ", describe(t));
}

void check_at_least_one(const char* op, const char* what, int64_t value) {
  MOH_CHECK(value >= 1, op, ": ", what, " must be >= 1, got ", value);
}

// The [N, C, H * scale, W * scale] upsampled shape of x, rejecting sizes past int64.
Shape upsampled_shape(const char* op, const Shape& x, int64_t scale) {
  Shape out = x;
  int64_t numel = x[0] * x[1];
  for (size_t d : {size_t(2), size_t(3)})
    MOH_CHECK(!__builtin_mul_overflow(x[d], scale, &out[d]) && !__builtin_mul_overflow(numel, out[d], &numel), op,
              ": scale ", scale, " makes the output of ", x, " too large");
  return out;
}

// Checks kernel / stride against the input sizes and returns the pooled [N, C, Ho, Wo] shape.
Shape pooled_shape(const char* op, const Shape& x, int64_t kernel, int64_t stride) {
  check_at_least_one(op, "kernel", kernel);
  check_at_least_one(op, "stride", stride);
  MOH_CHECK(kernel <= x[2] && kernel <= x[3], op, ": kernel ", kernel, " is larger than the input's H x W of ", x);
  return {x[0], x[1], (x[2] - kernel) / stride + 1, (x[3] - kernel) / stride + 1};
}

}  // namespace

Tensor upsample_nearest2d(const Tensor& x, int64_t scale) {
  const char* op = "upsample_nearest2d";
  check_image(op, "input", x);
  check_at_least_one(op, "scale", scale);
  Tensor out = Tensor::empty(upsampled_shape(op, x.shape(), scale), x.dtype(), x.device());
  MOH_BACKEND(x.device(), upsample_nearest2d, x.contiguous(), scale, out);
  return out;
}

Tensor upsample_nearest2d_backward(const Tensor& grad_out, int64_t scale) {
  const char* op = "upsample_nearest2d_backward";
  check_image(op, "grad_out", grad_out);
  check_at_least_one(op, "scale", scale);
  MOH_CHECK(grad_out.size(2) % scale == 0 && grad_out.size(3) % scale == 0, op, ": grad_out ", describe(grad_out),
            " is not an upsampling by ", scale, " (H and W must be multiples of the scale)");
  const Shape in{grad_out.size(0), grad_out.size(1), grad_out.size(2) / scale, grad_out.size(3) / scale};
  Tensor grad_x = Tensor::empty(in, grad_out.dtype(), grad_out.device());
  MOH_BACKEND(grad_out.device(), upsample_nearest2d_backward, grad_out.contiguous(), scale, grad_x);
  return grad_x;
}

Tensor avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride) {
  const char* op = "avg_pool2d";
  check_image(op, "input", x);
  Tensor out = Tensor::empty(pooled_shape(op, x.shape(), kernel, stride), x.dtype(), x.device());
  MOH_BACKEND(x.device(), avg_pool2d, x.contiguous(), kernel, stride, out);
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, int64_t kernel, int64_t stride) {
  const char* op = "avg_pool2d_backward";
  check_image(op, "grad_out", grad_out);
  const bool nchw = input_shape.size() == 4 && input_shape[0] >= 0 && input_shape[1] >= 0 && input_shape[2] >= 1 &&
                    input_shape[3] >= 1;
  MOH_CHECK(nchw, op, ": expected input_shape [N, C, H, W] with H and W >= 1, got ", input_shape);
  const Shape pooled = pooled_shape(op, input_shape, kernel, stride);
  MOH_CHECK(grad_out.shape() == pooled, op, ": grad_out ", describe(grad_out), " does not match the ", pooled,
            " output of pooling ", input_shape, " with kernel ", kernel, " and stride ", stride);
  Tensor grad_x = Tensor::empty(input_shape, grad_out.dtype(), grad_out.device());
  MOH_BACKEND(grad_out.device(), avg_pool2d_backward, grad_out.contiguous(), kernel, stride, grad_x);
  return grad_x;
}

}  // namespace moh
