// moh_bench_cuda: the CUDA backend against ceilings measured on the same device in the same run.
//   GEMM          TFLOP/s of the public moh::matmul on CUDA tensors, float32, TF32 (float32 with
//                 set_allow_tf32(true)) and bfloat16, at transformer shapes. The peak of a dtype is the
//                 best TFLOP/s raw cuBLAS (cublasGemmStridedBatchedEx, default algorithm) reaches on the
//                 same shapes or on an 8192^3 product; each row also shows raw cuBLAS on its own shape.
//   memory-bound  softmax, layer_norm, group_norm and cross_entropy forward and backward, float32 and bfloat16, as
//                 GB/s of the bytes each must move (inputs read + outputs written once, counted as
//                 bench/bench_memory_bound.cpp does), against device-to-device cudaMemcpy bandwidth
//                 (bytes read + written).
//   conv2d        moh::conv2d (forward) and moh::conv2d_backward (input gradient alone, weight gradient
//                 alone), i.e. cuDNN through the op API, on the autoencoder's convolutions
//                 (bench/autoencoder_layers.h, the layers moh_bench_conv times on the CPU) at batch
//                 kConvBatch, float32 (TF32 off) and bfloat16: TFLOP/s of 2 * the forward's
//                 multiply-adds (each gradient does as many) and % of the GEMM peak of the dtype.
// Timing: CUDA events on moh::cuda::compute_stream (where every op runs), after warm-up calls. A sample
// times a batch of back-to-back calls (about 2 ms, so host launch cost overlaps device work as in a
// training step) and the result is the median sample. Every tensor holds random values (a product of
// zeros runs faster); those of the GEMM and memory-bound rows are 64 MiB or more (past an H200's 60 MB
// L2), while the conv rows keep the autoencoder's sizes (its small layers stay in L2, as in training).
// Prints three tables and a `summary:` line (scripts/gpu_check.sh shows it); with --json one JSON object
// as the last line. A row whose op throws is reported and makes the exit status 1.
// Usage: moh_bench_cuda [--reps N (20)] [--device N (0)] [--json]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/autoencoder_layers.h"
#include "core/backend_flags.h"
#include "core/cuda/runtime.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

struct Args {
  int reps = 20, device = 0;
  bool json = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> int {
      MOH_CHECK(i + 1 < argc, "moh_bench_cuda: ", arg, " needs a value");
      return std::stoi(argv[++i]);
    };
    if (arg == "--reps") {
      a.reps = value();
      MOH_CHECK(a.reps >= 1, "moh_bench_cuda: --reps must be at least 1");
    } else if (arg == "--device") {
      a.device = value();
    } else if (arg == "--json") {
      a.json = true;
    } else {
      MOH_FAIL("moh_bench_cuda: unknown argument '", arg, "' (usage: moh_bench_cuda [--reps N] [--device N] [--json])");
    }
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Device milliseconds per call of fn: the median of `reps` samples, each a batch of calls between two
// events on the compute stream, the batch sized from one timed call to last about 2 ms (1 to 50 calls).
double median_ms(int device, int reps, const std::function<void()>& fn) {
  struct Events {  // destroyed on the way out of an op that throws
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } ev;
  MOH_CUDA_CHECK(cudaEventCreate(&ev.start));
  MOH_CUDA_CHECK(cudaEventCreate(&ev.stop));
  cudaStream_t stream = cuda::compute_stream(device);
  auto timed = [&](int calls) {
    MOH_CUDA_CHECK(cudaEventRecord(ev.start, stream));
    for (int i = 0; i < calls; ++i) fn();
    MOH_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    MOH_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    MOH_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    return double(ms) / calls;
  };
  for (int i = 0; i < 3; ++i) fn();  // module load, cuBLAS heuristics, first allocations
  const int batch = std::clamp(int(2.0 / std::max(timed(1), 1e-3)), 1, 50);
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) samples.push_back(timed(batch));
  return median(samples);
}

// ---------------------------------------------------------------- GEMM

struct GemmShape {
  std::string name;
  int64_t batch, m, k, n;
  bool b_transposed;  // b is the transpose of a contiguous [batch, n, k] tensor (q @ k^T)
  bool peak_only;     // timed through raw cuBLAS only, for the peak
};

const std::vector<GemmShape> kGemmShapes = {
    {"mlp up [8192,768]x[768,3072]", 1, 8192, 768, 3072, false, false},
    {"mlp down [8192,3072]x[3072,768]", 1, 8192, 3072, 768, false, false},
    {"square 4096^3", 1, 4096, 4096, 4096, false, false},
    {"attn q@k^T [96,1024,64]x[96,64,1024]", 96, 1024, 64, 1024, true, false},
    {"attn p@v [96,1024,1024]x[96,1024,64]", 96, 1024, 1024, 64, false, false},
    {"square 8192^3 (cuBLAS only)", 1, 8192, 8192, 8192, false, true},
};

struct GemmMode {
  const char* name;  // fp32, tf32, bf16
  DType dtype;
  bool tf32;
  cudaDataType_t cuda_type;
  cublasComputeType_t compute;
};

const GemmMode kGemmModes[] = {
    {"fp32", DType::Float32, false, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {"tf32", DType::Float32, true, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
    {"bf16", DType::BFloat16, false, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
};

struct GemmOperands {
  Tensor a, b, out;  // a [batch, m, k], b [batch, k, n] (maybe a transposed view), out [batch, m, n]
};

GemmOperands gemm_operands(const GemmShape& s, DType dtype, Device device, Generator& gen) {
  GemmOperands g;
  g.a = normal({s.batch, s.m, s.k}, 0, 1, gen, dtype, device);
  g.b = s.b_transposed ? normal({s.batch, s.n, s.k}, 0, 1, gen, dtype, device).transpose(-2, -1)
                       : normal({s.batch, s.k, s.n}, 0, 1, gen, dtype, device);
  g.out = Tensor::empty({s.batch, s.m, s.n}, dtype, device);
  if (s.batch == 1) {  // plain 2-D products, as a Linear layer issues them
    g.a = g.a.select(0, 0);
    g.b = g.b.select(0, 0);
  }
  return g;
}

// Raw cuBLAS on the same row-major operands: C^T = B^T A^T in cuBLAS's column-major terms.
void cublas_gemm(cublasHandle_t handle, const GemmShape& s, const GemmMode& mode, const GemmOperands& g) {
  const float alpha = 1, beta = 0;
  const cublasOperation_t op_b = s.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ldb = s.b_transposed ? s.k : s.n;
  MOH_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, op_b, CUBLAS_OP_N, int(s.n), int(s.m), int(s.k), &alpha, g.b.raw_data(), mode.cuda_type, int(ldb),
      s.n * s.k, g.a.raw_data(), mode.cuda_type, int(s.k), s.m * s.k, &beta, g.out.raw_data(), mode.cuda_type,
      int(s.n), s.m * s.n, int(s.batch), mode.compute, CUBLAS_GEMM_DEFAULT));
}

struct GemmRow {
  std::string shape, dtype, error;
  double ms = 0, tflops = 0, cublas_tflops = 0, pct_peak = 0;
  bool peak_only = false;
};

std::vector<GemmRow> run_gemms(int device, int reps, std::map<std::string, double>& peak) {
  cublasHandle_t handle = nullptr;
  MOH_CUBLAS_CHECK(cublasCreate(&handle));
  MOH_CUBLAS_CHECK(cublasSetStream(handle, cuda::compute_stream(device)));
  std::vector<GemmRow> rows;
  Generator gen(1);
  for (const GemmMode& mode : kGemmModes) {
    set_allow_tf32(mode.tf32);
    for (const GemmShape& s : kGemmShapes) {
      GemmRow row;
      row.shape = s.name;
      row.dtype = mode.name;
      row.peak_only = s.peak_only;
      const double tflop = 2.0 * double(s.batch * s.m * s.n) * double(s.k) / 1e12;
      try {
        const GemmOperands g = gemm_operands(s, mode.dtype, Device::cuda(device), gen);
        row.cublas_tflops = tflop / (median_ms(device, reps, [&] { cublas_gemm(handle, s, mode, g); }) * 1e-3);
        peak[mode.name] = std::max(peak[mode.name], row.cublas_tflops);
        if (!s.peak_only) {
          row.ms = median_ms(device, reps, [&] { matmul(g.a, g.b); });
          row.tflops = tflop / (row.ms * 1e-3);
        }
      } catch (const Error& e) {
        row.error = e.what();
      }
      rows.push_back(row);
    }
  }
  set_allow_tf32(false);
  MOH_CUBLAS_CHECK(cublasDestroy(handle));
  for (GemmRow& r : rows)
    if (r.error.empty() && peak[r.dtype] > 0) r.pct_peak = 100 * r.tflops / peak[r.dtype];
  return rows;
}

// ---------------------------------------------------------------- memory-bound ops

struct MemoryRow {
  std::string op, shape, dtype, error;
  double ms = 0, gbs = 0, pct_copy = 0;
};

// GB/s of (read + written) bytes of a device-to-device copy of 1 GiB.
double copy_bandwidth_gbs(int device, int reps) {
  const int64_t bytes = int64_t(1) << 30;
  Tensor src = Tensor::empty({bytes}, DType::UInt8, Device::cuda(device));
  Tensor dst = Tensor::empty({bytes}, DType::UInt8, Device::cuda(device));
  cudaStream_t stream = cuda::compute_stream(device);
  const double ms = median_ms(device, reps, [&] {
    MOH_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), size_t(bytes), cudaMemcpyDeviceToDevice, stream));
  });
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

std::vector<MemoryRow> run_memory_bound(int device, int reps, double copy_gbs) {
  const Device dev = Device::cuda(device);
  std::vector<MemoryRow> rows;
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const double es = double(dtype_size(dtype));
    Generator gen(2);
    // Each case: name, shape, bytes moved per call (in elements of the shape), and the call.
    auto run = [&](const std::string& op, const Shape& shape, double bytes_per_element,
                   const std::function<std::function<void()>()>& setup) {
      MemoryRow row;
      row.op = op;
      row.shape = shape_str(shape);
      row.dtype = dtype_name(dtype);
      try {
        const std::function<void()> call = setup();
        row.ms = median_ms(device, reps, call);
        row.gbs = bytes_per_element * es * double(shape_numel(shape)) / (row.ms * 1e-3) / 1e9;
        row.pct_copy = 100 * row.gbs / copy_gbs;
      } catch (const Error& e) {
        row.error = e.what();
      }
      rows.push_back(row);
    };
    const Shape scores{65536, 1024};  // attention rows: 64 sequences x 1024 queries, 1024 keys
    run("softmax", scores, 2, [&] {  // read x, write y
      Tensor x = normal(scores, 0, 1, gen, dtype, dev);
      return [x] { softmax(x, -1); };
    });
    run("softmax backward", scores, 3, [&] {  // read grad and y, write grad_x
      Tensor y = softmax(normal(scores, 0, 1, gen, dtype, dev), -1), g = normal(scores, 0, 1, gen, dtype, dev);
      return [y, g] { softmax_backward(g, y, -1); };
    });
    const Shape tokens{65536, 768};  // 64k tokens of a 768-wide model
    run("layer_norm", tokens, 2, [&] {  // read x, write y (weight, bias and row statistics are small)
      Tensor x = normal(tokens, 0, 1, gen, dtype, dev), w = ones({768}, dtype, dev), b = zeros({768}, dtype, dev);
      return [x, w, b] { layer_norm(x, w, b, 1e-5); };
    });
    run("layer_norm backward", tokens, 3, [&] {  // read x and grad, write grad_x
      Tensor x = normal(tokens, 0, 1, gen, dtype, dev), w = ones({768}, dtype, dev), b = zeros({768}, dtype, dev);
      Tensor g = normal(tokens, 0, 1, gen, dtype, dev);
      NormForward saved = layer_norm(x, w, b, 1e-5);
      return [x, w, g, saved] { layer_norm_backward(g, x, saved, w, true); };
    });
    const Shape images{128, 128, 32, 32};  // the autoencoder's activations: 128 images, 128 channels at 32 x 32
    run("group_norm", images, 2, [&] {  // read x, write y (weight, bias and group statistics are small)
      Tensor x = normal(images, 0, 1, gen, dtype, dev), w = ones({128}, dtype, dev), b = zeros({128}, dtype, dev);
      return [x, w, b] { group_norm(x, 32, w, b, 1e-6); };
    });
    run("group_norm backward", images, 3, [&] {  // read x and grad, write grad_x
      Tensor x = normal(images, 0, 1, gen, dtype, dev), w = ones({128}, dtype, dev), b = zeros({128}, dtype, dev);
      Tensor g = normal(images, 0, 1, gen, dtype, dev);
      NormForward saved = group_norm(x, 32, w, b, 1e-6);
      return [x, w, g, saved] { group_norm_backward(g, x, 32, saved, w, true); };
    });
    const Shape logits{8192, 32000};  // 8k tokens over a 32k vocabulary
    run("cross_entropy", logits, 1, [&] {  // logits read once
      Tensor x = normal(logits, 0, 1, gen, dtype, dev), target = full({8192}, 3, DType::Int64, dev);
      return [x, target] { cross_entropy(x, target, 0.1); };
    });
    run("cross_entropy backward", logits, 2, [&] {  // read logits, write grad
      Tensor x = normal(logits, 0, 1, gen, dtype, dev), target = full({8192}, 3, DType::Int64, dev);
      Tensor lse = cross_entropy(x, target, 0.1).lse, one = scalar_tensor(1.0, dtype, dev);
      return [x, target, lse, one] { cross_entropy_backward(one, x, target, lse, 0.1); };
    });
  }
  return rows;
}

// ---------------------------------------------------------------- convolutions

// The CPU benchmark's 32 images leave the small layers launch-bound on a GPU; 128 is the group_norm
// rows' batch.
constexpr int64_t kConvBatch = 128;

struct ConvDtype {
  const char* name;  // as the GEMM modes name it, so the peak of the dtype is peak[name]
  DType dtype;
};

const ConvDtype kConvDtypes[] = {{"fp32", DType::Float32}, {"bf16", DType::BFloat16}};

struct ConvDirection {
  const char* name;
  bool forward;       // conv2d; otherwise conv2d_backward asked for `grads`
  Conv2dGrads grads;
};

const ConvDirection kConvDirections[] = {
    {"forward", true, {}},
    {"backward data", false, {.input = true, .weight = false, .bias = false}},
    {"backward weight", false, {.input = false, .weight = true, .bias = false}},
};

struct ConvRow {
  std::string layer, direction, dtype, error;
  double ms = 0, tflops = 0, pct_peak = 0;
};

std::vector<ConvRow> run_convs(int device, int reps, const std::map<std::string, double>& peak) {
  const Device dev = Device::cuda(device);
  std::vector<ConvRow> rows;
  Generator gen(3);
  for (const ConvDtype& t : kConvDtypes) {
    for (const bench::AutoencoderLayer& s : bench::kAutoencoderLayers) {
      if (!s.is_conv()) continue;
      const Conv2dParams p = s.conv_params();
      const double tflop = s.conv_flop(kConvBatch) / 1e12;
      for (const ConvDirection& d : kConvDirections) {
        ConvRow row;
        row.layer = s.name;
        row.direction = d.name;
        row.dtype = t.name;
        try {
          const Tensor x = normal({kConvBatch, s.c, s.h, s.w}, 0, 1, gen, t.dtype, dev);
          const Tensor w = normal({s.o, s.c, s.k, s.k}, 0, 1, gen, t.dtype, dev);
          const Tensor b = normal({s.o}, 0, 1, gen, t.dtype, dev);
          const Tensor g = normal(conv2d(x, w, b, p).shape(), 0, 1, gen, t.dtype, dev);
          row.ms = median_ms(device, reps, [&] {
            if (d.forward)
              conv2d(x, w, b, p);
            else
              conv2d_backward(g, x, w, p, d.grads);
          });
          row.tflops = tflop / (row.ms * 1e-3);
          const auto it = peak.find(t.name);
          if (it != peak.end() && it->second > 0) row.pct_peak = 100 * row.tflops / it->second;
        } catch (const Error& e) {
          row.error = e.what();
        }
        rows.push_back(row);
      }
    }
  }
  return rows;
}

// The median of each dtype's % of peak, in the order of `dtypes` (kGemmModes or kConvDtypes), as
// " fp32 71% bf16 80%" for the summary line, also stored in summary[key][name]; dtypes without rows
// are left out.
template <class Dtypes>
std::string median_pct_of_peak(const std::map<std::string, std::vector<double>>& pct, const Dtypes& dtypes,
                               const char* key, nlohmann::json& summary) {
  std::string out;
  for (const auto& dtype : dtypes) {
    const auto it = pct.find(dtype.name);
    if (it == pct.end() || it->second.empty()) continue;
    const double m = median(it->second);
    summary[key][dtype.name] = m;
    out += str_cat(" ", dtype.name, " ", int(m + 0.5), "%");
  }
  return out;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  using namespace moh;
  try {
    const Args args = parse(argc, argv);
    const int count = cuda_device_count();
    MOH_CHECK(args.device >= 0 && args.device < count, "moh_bench_cuda: cuda:", args.device,
              " does not exist (this machine has ", count, " CUDA devices", cuda_compiled() ? "" : ": CPU-only build",
              ")");
    cuda::DeviceGuard guard(args.device);
    cudaDeviceProp prop{};
    MOH_CUDA_CHECK(cudaGetDeviceProperties(&prop, args.device));
    std::printf("moh_bench_cuda: %s (cuda:%d, sm_%d%d, %d SMs, %.1f GiB), %d samples per row\n", prop.name,
                args.device, prop.major, prop.minor, prop.multiProcessorCount,
                double(prop.totalGlobalMem) / double(1 << 30), args.reps);

    const double copy_gbs = copy_bandwidth_gbs(args.device, args.reps);
    std::map<std::string, double> peak;
    const std::vector<GemmRow> gemms = run_gemms(args.device, args.reps, peak);
    const std::vector<MemoryRow> mems = run_memory_bound(args.device, args.reps, copy_gbs);
    const std::vector<ConvRow> convs = run_convs(args.device, args.reps, peak);
    std::printf("measured ceilings: device copy %.0f GB/s (1 GiB cudaMemcpy, read + write); cuBLAS peak fp32 %.1f, "
                "tf32 %.1f, bf16 %.1f TFLOP/s\n",
                copy_gbs, peak["fp32"], peak["tf32"], peak["bf16"]);

    int failures = 0;
    std::map<std::string, std::vector<double>> gemm_pct;  // dtype -> % of peak of each shape
    std::printf("\nGEMM: moh::matmul on CUDA tensors; %% of peak = TFLOP/s / best raw cuBLAS TFLOP/s of the dtype\n");
    std::printf("%-40s %-5s %10s %9s %14s %10s\n", "shape", "dtype", "median ms", "TFLOP/s", "cuBLAS TFLOP/s",
                "% of peak");
    for (const GemmRow& r : gemms) {
      if (!r.error.empty()) {
        ++failures;
        std::printf("%-40s %-5s FAILED: %s\n", r.shape.c_str(), r.dtype.c_str(), r.error.c_str());
      } else if (r.peak_only) {
        std::printf("%-40s %-5s %10s %9s %14.1f %10s\n", r.shape.c_str(), r.dtype.c_str(), "-", "-", r.cublas_tflops,
                    "-");
      } else {
        gemm_pct[r.dtype].push_back(r.pct_peak);
        std::printf("%-40s %-5s %10.3f %9.1f %14.1f %9.1f%%\n", r.shape.c_str(), r.dtype.c_str(), r.ms, r.tflops,
                    r.cublas_tflops, r.pct_peak);
      }
    }
    std::vector<double> mem_pct;
    const MemoryRow* lowest = nullptr;
    std::printf("\nmemory-bound: GB/s of bytes read + written once; %% of copy = GB/s / device copy bandwidth\n");
    std::printf("%-24s %-14s %-9s %10s %9s %10s\n", "op", "shape", "dtype", "median ms", "GB/s", "% of copy");
    for (const MemoryRow& r : mems) {
      if (!r.error.empty()) {
        ++failures;
        std::printf("%-24s %-14s %-9s FAILED: %s\n", r.op.c_str(), r.shape.c_str(), r.dtype.c_str(), r.error.c_str());
        continue;
      }
      mem_pct.push_back(r.pct_copy);
      if (!lowest || r.pct_copy < lowest->pct_copy) lowest = &r;
      std::printf("%-24s %-14s %-9s %10.3f %9.0f %9.1f%%\n", r.op.c_str(), r.shape.c_str(), r.dtype.c_str(), r.ms,
                  r.gbs, r.pct_copy);
    }
    std::map<std::string, std::vector<double>> conv_pct;  // dtype -> % of peak of each row
    std::printf("\nconv2d: moh::conv2d / conv2d_backward on CUDA tensors (cuDNN), the autoencoder's layers at batch "
                "%lld; TFLOP/s of 2 * the forward's multiply-adds; %% of peak as for GEMM\n",
                (long long)kConvBatch);
    std::printf("%-28s %-15s %-5s %10s %9s %10s\n", "layer", "direction", "dtype", "median ms", "TFLOP/s",
                "% of peak");
    for (const ConvRow& r : convs) {
      if (!r.error.empty()) {
        ++failures;
        std::printf("%-28s %-15s %-5s FAILED: %s\n", r.layer.c_str(), r.direction.c_str(), r.dtype.c_str(),
                    r.error.c_str());
        continue;
      }
      conv_pct[r.dtype].push_back(r.pct_peak);
      std::printf("%-28s %-15s %-5s %10.3f %9.2f %9.1f%%\n", r.layer.c_str(), r.direction.c_str(), r.dtype.c_str(),
                  r.ms, r.tflops, r.pct_peak);
    }

    nlohmann::json summary;
    std::string line = "summary: GEMM median % of cuBLAS peak" +
                       median_pct_of_peak(gemm_pct, kGemmModes, "gemm_median_pct_peak", summary);
    if (lowest) {
      const double m = median(mem_pct);
      summary["memory_median_pct_copy"] = m;
      summary["memory_lowest"] = {{"op", lowest->op}, {"dtype", lowest->dtype}, {"pct_copy", lowest->pct_copy}};
      line += str_cat("; memory-bound median ", int(m + 0.5), "% of copy (lowest ", lowest->op, " ", lowest->dtype, " ",
                      int(lowest->pct_copy + 0.5), "%)");
    }
    line += "; conv2d median % of cuBLAS peak" +
            median_pct_of_peak(conv_pct, kConvDtypes, "conv_median_pct_peak", summary);
    if (failures) line += str_cat("; ", failures, " rows FAILED");
    std::printf("\n%s\n", line.c_str());

    if (args.json) {
      nlohmann::json js;
      js["device"] = prop.name;
      js["copy_gbs"] = copy_gbs;
      js["peak_tflops"] = peak;
      js["gemm"] = nlohmann::json::array();
      for (const GemmRow& r : gemms)
        js["gemm"].push_back({{"shape", r.shape}, {"dtype", r.dtype}, {"ms", r.ms}, {"tflops", r.tflops},
                              {"cublas_tflops", r.cublas_tflops}, {"pct_peak", r.pct_peak}, {"error", r.error}});
      js["memory_bound"] = nlohmann::json::array();
      for (const MemoryRow& r : mems)
        js["memory_bound"].push_back({{"op", r.op}, {"shape", r.shape}, {"dtype", r.dtype}, {"ms", r.ms},
                                      {"gbs", r.gbs}, {"pct_copy", r.pct_copy}, {"error", r.error}});
      js["conv_batch"] = kConvBatch;
      js["conv"] = nlohmann::json::array();
      for (const ConvRow& r : convs)
        js["conv"].push_back({{"layer", r.layer}, {"direction", r.direction}, {"dtype", r.dtype}, {"ms", r.ms},
                              {"tflops", r.tflops}, {"pct_peak", r.pct_peak}, {"error", r.error}});
      js["summary"] = summary;
      js["failures"] = failures;
      std::printf("%s\n", js.dump().c_str());
    }
    return failures ? 1 : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
