// Strided, converting copy on CUDA, the twin of core/cpu/copy.cpp: the cast of each element is
// convert<To>(from) (core/math/convert.h, shared with the CPU, so both give the same bits). A copy
// between two contiguous tensors of one dtype is a device-to-device cudaMemcpyAsync; everything
// else runs map_elements. Both tensors are on one device (Tensor::copy_ moves src there first).
#include "core/kernels/copy.h"

#include <type_traits>

#include "core/cuda/elementwise_launch.cuh"
#include "core/math/convert.h"

namespace moh::cuda {
namespace {

// A same-dtype copy moves the bits (a float16 NaN keeps its payload, as in the CPU's memcpy).
template <class To, class From>
struct Convert {
  __device__ __forceinline__ To operator()(From v) const {
    if constexpr (std::is_same_v<To, From>) return v;
    else return convert<To>(v);
  }
};

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  MOH_CHECK(dst.shape() == src.shape(), "copy: shapes differ ", dst.shape(), " vs ", src.shape());
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    DeviceGuard guard(dst.device().index);
    MOH_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice,
                                   stream_for(dst)));
    return;
  }
  dispatch_all(dst.dtype(), "copy", [&]<class To>() {
    dispatch_all(src.dtype(), "copy", [&]<class From>() { map_elements<To, From>(dst, {&src}, Convert<To, From>{}); });
  });
}

}  // namespace moh::cuda
