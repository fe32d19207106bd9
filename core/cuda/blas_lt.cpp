// cuBLASLt GEMM (core/cuda/blas_lt.h): per-device handle and workspace, descriptors built per call
// (RAII), and the heuristic's algorithm cached per problem key.
#include "core/cuda/blas_lt.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "core/backend_flags.h"
#include "core/cuda/runtime.h"

namespace moh::cuda {
namespace {

constexpr int kMaxDevices = 64;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
// Problems whose algorithm is remembered; the cache starts over past this (grouped projections
// see a new row count per group and step, so the set of shapes is open-ended).
constexpr size_t kMaxCachedAlgos = 4096;

struct LtContext {
  std::once_flag once;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

LtContext& context(int device) {
  static std::array<LtContext, kMaxDevices> all;
  MOH_CHECK(device >= 0 && device < kMaxDevices, "gemm_lt: no CUDA device ", device);
  LtContext& c = all[size_t(device)];
  std::call_once(c.once, [&] {
    DeviceGuard guard(device);
    MOH_CUBLAS_CHECK(cublasLtCreate(&c.handle));
    MOH_CUDA_CHECK(cudaMalloc(&c.workspace, kWorkspaceBytes));
  });
  return c;
}

struct LtDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* p) const { cublasLtMatmulDescDestroy(p); }
  void operator()(cublasLtMatrixLayoutOpaque_t* p) const { cublasLtMatrixLayoutDestroy(p); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
template <class T>
using LtPtr = std::unique_ptr<T, LtDeleter>;

cudaDataType data_type(DType t) {
  switch (t) {
    case DType::Float32: return CUDA_R_32F;
    case DType::Float64: return CUDA_R_64F;
    case DType::BFloat16: return CUDA_R_16BF;
    case DType::Float16: return CUDA_R_16F;
    default: MOH_FAIL("gemm_lt: expected a float32, float64, bfloat16 or float16 GEMM, got ", dtype_name(t));
  }
}

cublasComputeType_t compute_type(DType t) {
  if (t == DType::Float64) return CUBLAS_COMPUTE_64F;
  return t == DType::Float32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// The largest power of two (at most 256) dividing the address and every step the kernel takes
// from it, in bytes: what the algorithm may assume about the operand's alignment.
uint32_t alignment_of(const void* p, int64_t ld, int64_t batch_stride, size_t element_size) {
  const uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(p)) | uint64_t(ld) * element_size |
                        uint64_t(batch_stride) * element_size | 256u;
  return uint32_t(bits & (~bits + 1));
}

// A column-major cuBLASLt layout: the row-major [cols, rows] matrix with row stride ld, read as
// column-major [rows, cols].
LtPtr<cublasLtMatrixLayoutOpaque_t> layout(cudaDataType type, int64_t rows, int64_t cols, int64_t ld,
                                           int64_t batch, int64_t batch_stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  MOH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, uint64_t(rows), uint64_t(cols), ld));
  LtPtr<cublasLtMatrixLayoutOpaque_t> l(raw);
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    MOH_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    MOH_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                      sizeof(batch_stride)));
  }
  return l;
}

template <class V>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, V value) {
  MOH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}
template <class V>
void set_attribute(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, V value) {
  MOH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// Everything the chosen algorithm depends on.
using AlgoKey = std::array<int64_t, 22>;

struct AlgoCache {
  std::mutex mutex;
  std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
};

// The heuristic's best algorithm for the problem (layouts and alignments in cuBLASLt's A, B, D
// order), or nothing when it has none. Deterministic: no workspace, no split-K reduction.
std::optional<cublasLtMatmulAlgo_t> heuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              const std::array<cublasLtMatrixLayout_t, 3>& layouts,
                                              const std::array<uint32_t, 3>& alignments, size_t workspace,
                                              bool deterministic) {
  cublasLtMatmulPreference_t raw = nullptr;
  MOH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw));
  const LtPtr<cublasLtMatmulPreferenceOpaque_t> pref(raw);
  set_attribute(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(workspace));
  if (deterministic)
    set_attribute(raw, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, uint32_t(CUBLASLT_REDUCTION_SCHEME_NONE));
  set_attribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignments[0]);
  set_attribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignments[1]);
  set_attribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignments[2]);
  set_attribute(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignments[2]);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t rc = cublasLtMatmulAlgoGetHeuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[2],
                                                           raw, 1, &result, &found);
  if (rc == CUBLAS_STATUS_NOT_SUPPORTED || (rc == CUBLAS_STATUS_SUCCESS && found == 0)) return std::nullopt;
  MOH_CUBLAS_CHECK(rc);
  return result.algo;
}

// D = beta * D for k = 0 (beta 0 or 1): zeros the [m, n] blocks of D when beta is 0.
void scale_empty_product(const GemmDesc& g, cudaStream_t stream) {
  MOH_CHECK(!g.bias && !g.gelu && (g.beta == 0.0 || g.beta == 1.0),
            "gemm_lt: an empty inner dimension (k = 0) supports beta 0 or 1 without epilogues, got beta ", g.beta);
  if (g.beta == 1.0) return;
  const size_t es = dtype_size(g.dtype);
  const bool stacked = g.batch == 1 || g.d_batch_stride == g.m * g.ldd;
  for (int64_t i = 0; i < (stacked ? 1 : g.batch); ++i)
    MOH_CUDA_CHECK(cudaMemset2DAsync(static_cast<char*>(g.d) + size_t(i * g.d_batch_stride) * es, size_t(g.ldd) * es,
                                     0, size_t(g.n) * es, size_t(stacked ? g.m * g.batch : g.m), stream));
}

}  // namespace

void gemm_lt(const GemmDesc& g) {
  const cudaDataType type = data_type(g.dtype);
  const DType in_dtype = g.inputs.value_or(g.dtype);
  const cudaDataType in_type = data_type(in_dtype);
  MOH_CHECK(!g.inputs || (g.dtype == DType::Float32 && (*g.inputs == DType::BFloat16 || *g.inputs == DType::Float16) && !g.bias && !g.gelu),
            "gemm_lt: mixed inputs must be bfloat16/float16 into a float32 result without epilogues");
  MOH_CHECK(g.m >= 0 && g.n >= 0 && g.k >= 0 && g.batch >= 0 && g.batch <= INT32_MAX, "gemm_lt: invalid problem [",
            g.m, ", ", g.k, "] @ [", g.k, ", ", g.n, "] x ", g.batch);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const int64_t a_rows = g.a.transposed ? g.k : g.m, a_cols = g.a.transposed ? g.m : g.k;  // as stored
  const int64_t b_rows = g.b.transposed ? g.n : g.k, b_cols = g.b.transposed ? g.k : g.n;
  MOH_CHECK(g.ldd >= g.n, "gemm_lt: leading dimension ", g.ldd, " is too small for D [", g.m, ", ", g.n, "]");
  DeviceGuard guard(g.device);
  cudaStream_t stream = compute_stream(g.device);
  if (g.k == 0) return scale_empty_product(g, stream);  // A and B are not read
  MOH_CHECK(g.a.ld >= a_cols && g.b.ld >= b_cols, "gemm_lt: leading dimensions ", g.a.ld, " and ", g.b.ld,
            " are too small for A [", a_rows, ", ", a_cols, "] and B [", b_rows, ", ", b_cols, "]");

  LtContext& ctx = context(g.device);
  const cublasComputeType_t compute = g.inputs ? CUBLAS_COMPUTE_32F : compute_type(g.dtype);
  const cudaDataType scale_type = g.dtype == DType::Float64 ? CUDA_R_64F : CUDA_R_32F;
  const bool deterministic = deterministic_algorithms();
  const size_t workspace = deterministic ? 0 : kWorkspaceBytes;
  const int64_t batched = g.batch > 1 ? 1 : 0;
  const int64_t sa = g.a.batch_stride * batched, sb = g.b.batch_stride * batched, sd = g.d_batch_stride * batched;
  const size_t es = dtype_size(g.dtype), in_es = dtype_size(in_dtype);
  const uint32_t align_a = alignment_of(g.a.data, g.a.ld, sa, in_es),
                 align_b = alignment_of(g.b.data, g.b.ld, sb, in_es), align_d = alignment_of(g.d, g.ldd, sd, es);
  const cublasLtEpilogue_t epilogue = g.gelu ? (g.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                             : (g.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);

  // cuBLASLt is column-major: the row-major D [m, n] is its D^T [n, m] = op(B)^T [n, k] @ op(A)^T [k, m],
  // where the stored row-major B and A read column-major are already B^T and A^T.
  cublasLtMatmulDesc_t raw_desc = nullptr;
  MOH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw_desc, compute, scale_type));
  const LtPtr<cublasLtMatmulDescOpaque_t> desc(raw_desc);
  set_attribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(g.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_attribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(g.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_attribute(raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(epilogue));
  if (g.bias) set_attribute(raw_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);  // the heuristic reads its alignment
  const auto lt_a = layout(in_type, b_cols, b_rows, g.b.ld, g.batch, sb);
  const auto lt_b = layout(in_type, a_cols, a_rows, g.a.ld, g.batch, sa);
  const auto lt_d = layout(type, g.n, g.m, g.ldd, g.batch, sd);

  const AlgoKey key{g.device, int64_t(g.dtype) * 16 + int64_t(in_dtype), int64_t(compute), g.m, g.n, g.k, g.batch, g.a.transposed,
                    g.b.transposed, g.a.ld, g.b.ld, g.ldd, sa, sb, sd, align_a, align_b, align_d,
                    g.bias ? alignment_of(g.bias, 0, 0, es) : 0, int64_t(epilogue), g.beta != 0.0, deterministic};
  static AlgoCache cache;
  cublasLtMatmulAlgo_t algo;
  {
    std::lock_guard lock(cache.mutex);
    auto it = cache.algos.find(key);
    if (it == cache.algos.end()) {
      const std::optional<cublasLtMatmulAlgo_t> found =
          heuristic(ctx.handle, raw_desc, {lt_a.get(), lt_b.get(), lt_d.get()}, {align_b, align_a, align_d},
                    workspace, deterministic);
      MOH_CHECK(found, "gemm_lt: cuBLASLt has no algorithm for ", dtype_name(g.dtype), " [", g.m, ", ", g.k, "] @ [",
                g.k, ", ", g.n, "] x ", g.batch, " (transposed ", g.a.transposed, "/", g.b.transposed, ", epilogue ",
                int(epilogue), ")");
      if (cache.algos.size() >= kMaxCachedAlgos) cache.algos.clear();
      it = cache.algos.emplace(key, *found).first;
    }
    algo = it->second;
  }

  const float alpha_f = float(g.alpha), beta_f = float(g.beta);
  const bool f64 = g.dtype == DType::Float64;
  const void* alpha = f64 ? static_cast<const void*>(&g.alpha) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&g.beta) : &beta_f;
  MOH_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, raw_desc, alpha, g.b.data, lt_a.get(), g.a.data, lt_b.get(), beta, g.d,
                                  lt_d.get(), g.d, lt_d.get(), &algo, workspace ? ctx.workspace : nullptr, workspace,
                                  stream));
}

}  // namespace moh::cuda
