// The NCCL backend on CUDA memory (one rank per GPU): the same collectives as the CPU tests, the
// buffers made with cudaMalloc and checked on the host. Compiled in CUDA builds with NCCL; skipped
// where there is no GPU, or fewer GPUs than ranks (NCCL needs a GPU per rank).
#include <gtest/gtest.h>

#if MOH_WITH_NCCL
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "core/dist/world.h"
#include "core/half.h"

namespace moh::dist {
namespace {

// A device copy of `host` that frees itself.
template <class T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : n_(host.size()) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVector() { cudaFree(ptr_); }
  std::vector<T> host() const {
    std::vector<T> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  Buffer buffer(DType dtype, Device device) const { return {ptr_, int64_t(n_), dtype, device}; }

 private:
  size_t bytes() const { return n_ * sizeof(T); }
  void* ptr_ = nullptr;
  size_t n_;
};

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() < world().size()) GTEST_SKIP() << "needs one GPU per rank";
    device = Device::cuda(world().local_rank() % cuda_device_count());
    comm = &communicator_for(device);
    rank = comm->rank();
    size = comm->size();
  }
  Device device;
  Communicator* comm = nullptr;
  int rank = 0, size = 1;
};

std::vector<float> values(int r, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(r + 1) * 0.5f + float(i % 31);
  return v;
}

TEST_F(Nccl, AllReduceBroadcastGatherScatterBarrier) {
  EXPECT_EQ(comm->backend(), "nccl");
  const size_t n = 4099;
  std::vector<float> sum(n, 0.0f);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i) sum[i] += values(r, n)[i];

  DeviceVector<float> s(values(rank, n));
  comm->all_reduce(s.buffer(DType::Float32, device), ReduceOp::Sum, "sum")->wait();
  EXPECT_EQ(s.host(), sum);
  DeviceVector<float> a(values(rank, n));
  comm->all_reduce(a.buffer(DType::Float32, device), ReduceOp::Avg, "avg")->wait();
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(a.host()[i], sum[i] / float(size), 1e-6f * std::abs(sum[i])) << i;

  std::vector<BFloat16> hb(n);
  for (size_t i = 0; i < n; ++i) hb[i] = BFloat16(values(rank, n)[i]);
  DeviceVector<BFloat16> b(hb);
  comm->all_reduce(b.buffer(DType::BFloat16, device), ReduceOp::Sum, "bf16")->wait();
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(float(b.host()[i]), sum[i], 0.01f * std::abs(sum[i])) << i;

  DeviceVector<float> c(values(rank, n));
  comm->broadcast(c.buffer(DType::Float32, device), size - 1, "bcast")->wait();
  EXPECT_EQ(c.host(), values(size - 1, n));

  DeviceVector<float> in(values(rank, 7)), out(std::vector<float>(size_t(7 * size), -1.0f));
  comm->all_gather(in.buffer(DType::Float32, device), out.buffer(DType::Float32, device), "gather")->wait();
  const std::vector<float> gathered = out.host();  // one copy: begin and end of the same vector
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(std::vector<float>(gathered.begin() + 7 * r, gathered.begin() + 7 * (r + 1)), values(r, 7));

  DeviceVector<float> big(values(rank, size_t(5 * size))), part(std::vector<float>(5, 0.0f));
  comm->reduce_scatter(big.buffer(DType::Float32, device), part.buffer(DType::Float32, device), ReduceOp::Sum,
                       "scatter")
      ->wait();
  std::vector<float> want(5, 0.0f);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < 5; ++i) want[i] += values(r, size_t(5 * size))[size_t(rank * 5) + i];
  EXPECT_EQ(part.host(), want);
  comm->barrier("end")->wait();
}

TEST_F(Nccl, RejectsHostMemory) {
  std::vector<float> host(4);
  const Buffer cpu{host.data(), 4, DType::Float32, Device::cpu()};
  EXPECT_THROW(comm->all_reduce(cpu, ReduceOp::Sum), Error);
}

}  // namespace
}  // namespace moh::dist
#endif
