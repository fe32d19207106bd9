// The CUDA runtime layer (core/cuda/runtime.h, core/cuda/caching_allocator.cpp) and tensors moving
// between devices. The first tests run on every machine and build: without the backend or a GPU a
// CUDA tensor cannot be made, and the error says which is missing. The rest need a GPU
// (MOH_REQUIRE_GPU) and the backend's headers (MOH_WITH_CUDA): allocator statistics and block reuse,
// out-of-memory errors, round trips of every dtype, chunked uploads, cross-device copy_ with broadcast
// and cast, copies between two GPUs, CUDA error messages and the device guard.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "tests/core/cuda/parity.h"
#include "tests/test_util.h"
#if defined(MOH_WITH_CUDA)
#include "core/cuda/runtime.h"
#endif

namespace moh {
namespace {

// Not skipped anywhere: on a machine or build without CUDA the allocation fails naming the reason,
// on a GPU machine it succeeds.
TEST(CudaRuntime, CudaTensorsNeedTheBackendAndADevice) {
  if (cuda_device_count() == 0) {
    const std::string reason = cuda_compiled() ? "this machine has 0 CUDA devices" : "this build has no CUDA backend";
    test::expect_error([] { Tensor::empty({2}, DType::Float32, Device::cuda(0)); },
                       {"cannot allocate on cuda:0", reason});
    test::expect_error([] { zeros({2}).to(Device::cuda(0)); }, {"cuda:0", reason});
  } else {
    Tensor t = zeros({2}).to(Device::cuda(0));
    EXPECT_EQ(t.device(), Device::cuda(0));
    EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), std::vector<float>({0, 0}));
  }
}

TEST(CudaRuntime, AllocatingOnAMissingDeviceNamesIt) {
  test::expect_error([] { Tensor::empty({2}, DType::Float32, Device::cuda(99)); }, {"cannot allocate on cuda:99"});
}

#if defined(MOH_WITH_CUDA)

constexpr int64_t kMiB = int64_t(1) << 20;
const DType kAllDTypes[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16,
                            DType::Int32,   DType::Int64,   DType::UInt8,    DType::Bool};

// Values in [0, 100) as `dtype` (non-negative, so the uint8 and bool casts are well defined).
Tensor values(const Shape& shape, uint64_t seed, DType dtype) {
  return mul(add(test::rand_t(shape, seed), 1.0), 50.0).to(dtype);
}

TEST(CudaRuntime, AllocatorStatsTrackCurrentPeakAndReserved) {
  MOH_REQUIRE_GPU();
  Allocator& a = cuda_allocator(0);
  a.empty_cache();
  a.reset_peak();
  const AllocatorStats s0 = a.stats();
  EXPECT_EQ(s0.reserved_bytes, s0.current_bytes) << "an emptied cache holds only blocks in use";
  EXPECT_EQ(s0.peak_bytes, s0.current_bytes);
  {
    Tensor t = Tensor::empty({kMiB}, DType::Float32, Device::cuda(0));  // 4 MiB: a whole size class
    const AllocatorStats s1 = a.stats();
    EXPECT_EQ(s1.current_bytes - s0.current_bytes, 4 * kMiB);
    EXPECT_EQ(s1.reserved_bytes - s0.reserved_bytes, 4 * kMiB);
    EXPECT_EQ(s1.peak_bytes, s1.current_bytes);
    EXPECT_EQ(s1.num_allocs - s0.num_allocs, 1);
    Tensor small = Tensor::empty({1000}, DType::UInt8, Device::cuda(0));  // rounds up to 1024 bytes
    EXPECT_EQ(a.stats().current_bytes - s1.current_bytes, 1024);
  }
  const AllocatorStats s2 = a.stats();
  EXPECT_EQ(s2.current_bytes, s0.current_bytes) << "freed blocks leave current_bytes";
  EXPECT_EQ(s2.reserved_bytes - s0.reserved_bytes, 4 * kMiB + 1024) << "freed blocks stay cached";
  EXPECT_EQ(s2.peak_bytes, s0.current_bytes + 4 * kMiB + 1024);
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_bytes, s2.current_bytes);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, a.stats().current_bytes);
}

TEST(CudaRuntime, AFreedBlockServesTheNextRequestOfItsSize) {
  MOH_REQUIRE_GPU();
  Allocator& a = cuda_allocator(0);
  a.empty_cache();
  for (const Shape& shape : {Shape{3, 1000, 1000}, Shape{77}}) {  // a large and a small size class
    const void* first = nullptr;
    int64_t reserved = 0;
    for (int i = 0; i < 10; ++i) {
      Tensor t = Tensor::empty(shape, DType::Float32, Device::cuda(0));
      if (i == 0) {
        first = t.raw_data();
        reserved = a.stats().reserved_bytes;
      }
      EXPECT_EQ(t.raw_data(), first) << "iteration " << i << " of " << shape_str(shape);
      EXPECT_EQ(a.stats().reserved_bytes, reserved) << "iteration " << i << " of " << shape_str(shape);
    }
  }
}

TEST(CudaRuntime, OutOfMemoryNamesTheRequestAndLeavesTheAllocatorUsable) {
  MOH_REQUIRE_GPU();
  const int64_t before = cuda_allocator(0).stats().current_bytes;
  const int64_t pib = int64_t(1) << 50;
  test::expect_error([&] { Tensor::empty({pib}, DType::UInt8, Device::cuda(0)); },
                     {"cuda:0", "out of memory", std::to_string(pib) + " bytes"});
  EXPECT_EQ(cuda_allocator(0).stats().current_bytes, before);
  Tensor t = full({1000}, 2.5, DType::Float32, Device::cuda(0));
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), std::vector<float>(1000, 2.5f));
}

TEST(CudaRuntime, EveryDTypeRoundTripsThroughTheDevice) {
  MOH_REQUIRE_GPU();
  for (DType dtype : kAllDTypes) {
    const std::string what(dtype_name(dtype));
    const Tensor host = values({3, 5, 7}, 1, dtype);
    const Tensor dev = host.to(Device::cuda(0));
    EXPECT_EQ(dev.device(), Device::cuda(0)) << what;
    EXPECT_EQ(dev.dtype(), dtype) << what;
    test::expect_same_bytes(dev.to(Device::cpu()), host, what + " contiguous");
    // Non-contiguous sources on either side: a permutation and a strided slice with an offset.
    test::expect_same_bytes(host.permute({2, 0, 1}).to(Device::cuda(0)).to(Device::cpu()), host.permute({2, 0, 1}),
                            what + " permuted cpu source");
    test::expect_same_bytes(host.slice(2, 1, 7, 2).to(Device::cuda(0)).to(Device::cpu()), host.slice(2, 1, 7, 2),
                            what + " sliced cpu source");
    test::expect_same_bytes(dev.permute({2, 0, 1}).to(Device::cpu()), host.permute({2, 0, 1}),
                            what + " permuted cuda source");
    test::expect_same_bytes(dev.slice(1, 1, 5, 3).to(Device::cpu()), host.slice(1, 1, 5, 3),
                            what + " sliced cuda source");
    // Empty tensors move too.
    EXPECT_EQ(Tensor::empty({0, 4}, dtype).to(Device::cuda(0)).to(Device::cpu()).shape(), Shape({0, 4})) << what;
  }
}

TEST(CudaRuntime, CopyAcrossDevicesBroadcastsAndCasts) {
  MOH_REQUIRE_GPU();
  // cpu float32 [1, 5] into cuda float64 [4, 5].
  const Tensor row = test::rand_t({1, 5}, 3);
  Tensor on_gpu = zeros({4, 5}, DType::Float64, Device::cuda(0));
  on_gpu.copy_(row);
  test::expect_equal(on_gpu, row.expand({4, 5}).to(DType::Float64), "cpu float32 -> cuda float64, broadcast");
  // cuda bfloat16 [5] into a non-contiguous cpu float32 [5, 3] view (the transpose of [3, 5]).
  const Tensor half = test::rand_t({5}, 4).to(DType::BFloat16);
  Tensor on_cpu = zeros({3, 5});
  Tensor view = on_cpu.t();
  view.copy_(half.to(Device::cuda(0)).unsqueeze(1));
  test::expect_equal(on_cpu, half.to(DType::Float32).expand({3, 5}), "cuda bfloat16 -> cpu float32, broadcast");
  // int64 on the device into a float32 tensor on the device: a cast without a move.
  Tensor ints = values({2, 3}, 5, DType::Int64).to(Device::cuda(0));
  Tensor floats = Tensor::empty({2, 3}, DType::Float32, Device::cuda(0));
  floats.copy_(ints);
  test::expect_equal(floats, values({2, 3}, 5, DType::Int64).to(DType::Float32), "cuda int64 -> cuda float32");
}

// Uploads go through a ring of 4 pinned 8 MiB slots: 40 MiB wrap around it within one copy, and a
// second upload right after reuses slots whose first copy must have finished.
TEST(CudaRuntime, LargeUploadsGoThroughTheStagingRingInChunks) {
  MOH_REQUIRE_GPU();
  const int64_t n = (int64_t(40) << 20) / 4 + 3;
  const Tensor first = test::rand_t({n}, 7), second = test::rand_t({n}, 8);
  const Tensor on_gpu_first = first.to(Device::cuda(0)), on_gpu_second = second.to(Device::cuda(0));
  test::expect_same_bytes(on_gpu_first.to(Device::cpu()), first, "first 40 MiB upload");
  test::expect_same_bytes(on_gpu_second.to(Device::cpu()), second, "second 40 MiB upload");
}

// The peer copy orders the destination's stream after the source's and back: the event of each wait
// belongs to the producing stream's device (a second GPU is needed; one-GPU hosts skip).
TEST(CudaRuntime, CopiesBetweenTwoGpus) {
  MOH_REQUIRE_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs, this host has one";
  const Tensor host = test::rand_t({37, 65}, 6);
  const Tensor on_first = mul(host.to(Device::cuda(0)), 2.0);  // queued on cuda:0's stream before the copy
  const Tensor on_second = on_first.to(Device::cuda(1));
  EXPECT_EQ(on_second.device(), Device::cuda(1));
  test::expect_equal(on_second.to(Device::cpu()), mul(host, 2.0), "cuda:0 -> cuda:1");
  test::expect_equal(add(on_second, 1.0).to(Device::cuda(0)).to(Device::cpu()), add(mul(host, 2.0), 1.0),
                     "cuda:1 -> cuda:0");
}

TEST(CudaRuntime, CudaErrorsNameTheCallTheLineAndTheError) {
  MOH_REQUIRE_GPU();
  int host = 0;
  // A copy to a null device pointer: cudaErrorInvalidValue. This program has its own copy of the
  // static runtime (CMakeLists.txt), with its own last error, cleared here.
  const cudaError_t rc = cudaMemcpy(nullptr, &host, sizeof host, cudaMemcpyHostToDevice);
  EXPECT_EQ(rc, cudaErrorInvalidValue) << cudaGetErrorName(rc);
  const int line = __LINE__ + 1;
  test::expect_error([&] { MOH_CUDA_CHECK(cudaMemcpy(nullptr, &host, sizeof host, cudaMemcpyHostToDevice)); },
                     {"CUDA error", cudaGetErrorName(rc), "cudaMemcpy(nullptr",
                      "runtime_test.cpp:" + std::to_string(line)});
  cudaGetLastError();
  // A failed call inside the library does not resurface at the next kernel launch's check.
  test::expect_error([] { cuda::DeviceGuard guard(99); }, {"CUDA error", "cudaErrorInvalidDevice", "cudaSetDevice"});
  EXPECT_EQ(full({3}, 1.0, DType::Float32, Device::cuda(0)).to(Device::cpu()).to_vector<float>(),
            std::vector<float>({1, 1, 1}));
}

TEST(CudaRuntime, DeviceGuardRestoresTheCurrentDevice) {
  MOH_REQUIRE_GPU();
  const int before = cuda::current_device();
  const int other = (before + 1) % cuda_device_count();  // `before` again on a one-GPU machine
  {
    cuda::DeviceGuard guard(other);
    EXPECT_EQ(cuda::current_device(), other);
    {
      cuda::DeviceGuard inner(before);
      EXPECT_EQ(cuda::current_device(), before);
    }
    EXPECT_EQ(cuda::current_device(), other);
  }
  EXPECT_EQ(cuda::current_device(), before);
  try {
    cuda::DeviceGuard guard(other);
    throw Error("leaving the scope by an exception");
  } catch (const Error&) {
  }
  EXPECT_EQ(cuda::current_device(), before);
  test::expect_error([] { cuda::DeviceGuard guard(99); }, {"cudaSetDevice"});
  EXPECT_EQ(cuda::current_device(), before);
  test::expect_error([] { cuda::compute_stream(99); }, {"cuda:99 does not exist"});
}

#endif  // MOH_WITH_CUDA

}  // namespace
}  // namespace moh
