// conv2d on CUDA through cuDNN's convolution API (core/kernels/conv.h).
// Invariants: one cuDNN handle per device (created on first use, bound to the device's compute
// stream, kept for the process); the bias gradient is our own reduction; descriptors are built per call (RAII); the algorithm for each
// problem (direction, dtype, shapes, parameters, math mode, determinism) is chosen once from
// cuDNN's heuristic ranking (the first that runs, fits kMaxWorkspaceBytes and, in deterministic
// mode, is deterministic) and cached. Workspaces come from the caching allocator, so they are
// ordered on the compute stream like every other tensor. float32 uses TF32 tensor cores only when
// moh::allow_tf32(); bfloat16/float16 accumulate in float32; float64 computes in float64.
#include "core/kernels/conv.h"

#include <cudnn.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>

#include "core/backend_flags.h"
#include "core/cuda/runtime.h"
#include "core/kernels/reduce.h"

namespace moh::cuda {
namespace {

[[noreturn]] void fail_cudnn(cudnnStatus_t rc, const char* call, const char* file, int line) {
  throw Error(str_cat(call, " failed at ", file, ":", line, ": ", cudnnGetErrorString(rc)));
}
#define MOH_CUDNN_CHECK(call)                                                                 \
  do {                                                                                        \
    const cudnnStatus_t moh_rc_ = (call);                                                     \
    if (moh_rc_ != CUDNN_STATUS_SUCCESS) fail_cudnn(moh_rc_, #call, __FILE__, __LINE__);      \
  } while (0)

constexpr int kMaxDevices = 64;
constexpr size_t kMaxWorkspaceBytes = size_t(1) << 30;

struct HandleSlot {
  std::once_flag once;
  cudnnHandle_t handle = nullptr;
};

cudnnHandle_t handle(int device) {
  static std::array<HandleSlot, kMaxDevices> all;
  MOH_CHECK(device >= 0 && device < kMaxDevices, "conv2d: no CUDA device ", device);
  HandleSlot& slot = all[size_t(device)];
  std::call_once(slot.once, [&] {
    DeviceGuard guard(device);
    MOH_CUDNN_CHECK(cudnnCreate(&slot.handle));
    MOH_CUDNN_CHECK(cudnnSetStream(slot.handle, compute_stream(device)));
  });
  return slot.handle;
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::Float16: return CUDNN_DATA_HALF;
    default: MOH_FAIL("conv2d: expected a float32, float64, bfloat16 or float16 tensor, got ", dtype_name(t));
  }
}

int as_int(int64_t v, const char* what) {
  MOH_CHECK(v >= 0 && v <= int64_t(INT32_MAX), "conv2d: cuDNN takes 32-bit sizes; ", what, " is ", v);
  return int(v);
}

struct TensorDesc {
  cudnnTensorDescriptor_t raw = nullptr;
  TensorDesc(cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w) {
    MOH_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
    MOH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, type, as_int(n, "N"), as_int(c, "C"),
                                               as_int(h, "H"), as_int(w, "W")));
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(raw); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct FilterDesc {
  cudnnFilterDescriptor_t raw = nullptr;
  FilterDesc(cudnnDataType_t type, const ConvGeometry& g) {
    MOH_CUDNN_CHECK(cudnnCreateFilterDescriptor(&raw));
    MOH_CUDNN_CHECK(cudnnSetFilter4dDescriptor(raw, type, CUDNN_TENSOR_NCHW, as_int(g.o, "O"), as_int(g.cg, "C"),
                                               as_int(g.kh, "KH"), as_int(g.kw, "KW")));
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(raw); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

cudnnMathType_t math_type(DType t) {
  if (t == DType::BFloat16 || t == DType::Float16) return CUDNN_TENSOR_OP_MATH;
  if (t == DType::Float32 && allow_tf32()) return CUDNN_DEFAULT_MATH;  // TF32 tensor cores allowed
  return CUDNN_FMA_MATH;  // float32 without TF32, float64
}

struct ConvDesc {
  cudnnConvolutionDescriptor_t raw = nullptr;
  ConvDesc(DType dtype, const Conv2dParams& p) {
    const cudnnDataType_t compute = dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    MOH_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&raw));
    MOH_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(raw, as_int(p.pad_h, "pad"), as_int(p.pad_w, "pad"),
                                                    as_int(p.stride_h, "stride"), as_int(p.stride_w, "stride"),
                                                    as_int(p.dilation_h, "dilation"), as_int(p.dilation_w, "dilation"),
                                                    CUDNN_CROSS_CORRELATION, compute));
    MOH_CUDNN_CHECK(cudnnSetConvolutionGroupCount(raw, as_int(p.groups, "groups")));
    MOH_CUDNN_CHECK(cudnnSetConvolutionMathType(raw, math_type(dtype)));
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(raw); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

// Everything one convolution's descriptors and algorithm depend on.
struct Problem {
  ConvGeometry g;
  DType dtype;
  int device;
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  Problem(const ConvGeometry& geometry, DType t, int dev)
      : g(geometry),
        dtype(t),
        device(dev),
        x(data_type(t), g.n, g.c, g.h, g.w),
        y(data_type(t), g.n, g.o, g.ho, g.wo),
        w(data_type(t), g),
        conv(t, g.p) {}
};

enum class Direction { Forward, BackwardData, BackwardFilter };
using AlgoKey = std::array<int64_t, 19>;

AlgoKey key_of(const Problem& pr, Direction d) {
  const ConvGeometry& g = pr.g;
  return {int64_t(d), int64_t(pr.dtype), pr.device, g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.p.stride_h, g.p.stride_w,
          g.p.pad_h, g.p.pad_w, g.p.dilation_h, g.p.dilation_w, g.p.groups, allow_tf32() ? 1 : 0,
          deterministic_algorithms() ? 1 : 0};
}

// The first usable entry of cuDNN's ranking: status success, workspace within the limit, and
// deterministic when deterministic_algorithms() asks for it.
template <class Perf>
int pick(const Perf* perf, int count, const char* direction) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kMaxWorkspaceBytes) continue;
    if (deterministic_algorithms() && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
    return int(perf[i].algo);
  }
  MOH_FAIL("conv2d: cuDNN offers no ", deterministic_algorithms() ? "deterministic " : "", direction,
           " algorithm for this problem");
}

int choose(const Problem& pr, Direction d) {
  static std::mutex mutex;
  static std::map<AlgoKey, int> cache;
  const AlgoKey key = key_of(pr, d);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  cudnnHandle_t h = handle(pr.device);
  int algo = 0, count = 0;
  if (d == Direction::Forward) {
    std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
    MOH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, pr.x.raw, pr.w.raw, pr.conv.raw, pr.y.raw,
                                                           int(perf.size()), &count, perf.data()));
    algo = pick(perf.data(), count, "forward");
  } else if (d == Direction::BackwardData) {
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
    MOH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pr.w.raw, pr.y.raw, pr.conv.raw, pr.x.raw,
                                                                int(perf.size()), &count, perf.data()));
    algo = pick(perf.data(), count, "backward-data");
  } else {
    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
    MOH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, pr.x.raw, pr.y.raw, pr.conv.raw, pr.w.raw,
                                                                  int(perf.size()), &count, perf.data()));
    algo = pick(perf.data(), count, "backward-filter");
  }
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, algo);
  return algo;
}

// A workspace of `bytes` from the caching allocator (empty when 0), valid for the stream-ordered call.
Tensor workspace(size_t bytes, int device) {
  return bytes == 0 ? Tensor() : Tensor::empty({int64_t(bytes)}, DType::UInt8, Device::cuda(device));
}
void* pointer(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// cuDNN's alpha/beta: double for float64 data, float otherwise.
struct Scalars {
  double d0 = 0, d1 = 1;
  float f0 = 0, f1 = 1;
  bool dbl;
  explicit Scalars(DType t) : dbl(t == DType::Float64) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : &f0; }
};

ConvGeometry geometry(const Tensor& x, const Tensor& weight, const Conv2dParams& params) {
  return conv_geometry(x.shape(), weight.shape(), params);
}

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                    const Tensor& out) {
  const ConvGeometry g = geometry(x, weight, params);
  if (g.n == 0) return;
  const int device = x.device().index;
  DeviceGuard guard(device);
  const Problem pr(g, x.dtype(), device);
  cudnnHandle_t h = handle(device);
  const auto algo = cudnnConvolutionFwdAlgo_t(choose(pr, Direction::Forward));
  size_t bytes = 0;
  MOH_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, pr.x.raw, pr.w.raw, pr.conv.raw, pr.y.raw, algo, &bytes));
  const Tensor ws = workspace(bytes, device);
  const Scalars s(x.dtype());
  MOH_CUDNN_CHECK(cudnnConvolutionForward(h, s.one(), pr.x.raw, x.raw_data(), pr.w.raw, weight.raw_data(), pr.conv.raw,
                                          algo, pointer(ws), bytes, s.zero(), pr.y.raw, out.raw_data()));
  if (bias.defined()) {
    const TensorDesc b(data_type(x.dtype()), 1, g.o, 1, 1);
    MOH_CUDNN_CHECK(cudnnAddTensor(h, s.one(), b.raw, bias.raw_data(), s.one(), pr.y.raw, out.raw_data()));
  }
}

void conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& params,
                     const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  const ConvGeometry g = geometry(x, weight, params);
  const int device = x.device().index;
  DeviceGuard guard(device);
  if (g.n == 0) {  // cuDNN rejects empty tensors; the batch sums are zero
    for (const Tensor* t : {&grad_weight, &grad_bias})
      if (t->defined()) MOH_CUDA_CHECK(cudaMemsetAsync(t->raw_data(), 0, t->nbytes(), compute_stream(device)));
    return;
  }
  const Problem pr(g, x.dtype(), device);
  cudnnHandle_t h = handle(device);
  const Scalars s(x.dtype());
  // The bias gradient is grad_out summed over batch and plane: our reduction (fixed order, every dtype;
  // cuDNN's cudnnConvolutionBackwardBias answers CUDNN_STATUS_NOT_SUPPORTED for some of them on cuDNN 9).
  if (grad_bias.defined()) reduce(ReduceOp::Sum, grad_bias.view({1, g.o, 1, 1}), grad_out, {true, false, true, true});
  if (grad_input.defined()) {
    const auto algo = cudnnConvolutionBwdDataAlgo_t(choose(pr, Direction::BackwardData));
    size_t bytes = 0;
    MOH_CUDNN_CHECK(
        cudnnGetConvolutionBackwardDataWorkspaceSize(h, pr.w.raw, pr.y.raw, pr.conv.raw, pr.x.raw, algo, &bytes));
    const Tensor ws = workspace(bytes, device);
    MOH_CUDNN_CHECK(cudnnConvolutionBackwardData(h, s.one(), pr.w.raw, weight.raw_data(), pr.y.raw, grad_out.raw_data(),
                                                 pr.conv.raw, algo, pointer(ws), bytes, s.zero(), pr.x.raw,
                                                 grad_input.raw_data()));
  }
  if (grad_weight.defined()) {
    const auto algo = cudnnConvolutionBwdFilterAlgo_t(choose(pr, Direction::BackwardFilter));
    size_t bytes = 0;
    MOH_CUDNN_CHECK(
        cudnnGetConvolutionBackwardFilterWorkspaceSize(h, pr.x.raw, pr.y.raw, pr.conv.raw, pr.w.raw, algo, &bytes));
    const Tensor ws = workspace(bytes, device);
    MOH_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, s.one(), pr.x.raw, x.raw_data(), pr.y.raw, grad_out.raw_data(),
                                                   pr.conv.raw, algo, pointer(ws), bytes, s.zero(), pr.w.raw,
                                                   grad_weight.raw_data()));
  }
}

}  // namespace moh::cuda
