// The NCCL backend (CUDA memory): one communicator per job and GPU, its unique id made by rank 0
// and broadcast through the CPU world. Collectives run on the device's communication stream,
// ordered after the work already queued on its compute stream (both from core/cuda/runtime.h; an
// event the comm stream waits on); wait() polls the completion event against the deadline and, on a
// timeout or an asynchronous NCCL error, aborts the communicator and throws a DistError naming this
// rank and the collective. Compute issued after wait() returns, or after the work is dropped
// unwaited, is ordered after the collective.
#include <cuda_runtime.h>
#include <nccl.h>

#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "core/cuda/runtime.h"
#include "core/dist/backends.h"

namespace moh::dist::detail {
namespace {

using Clock = std::chrono::steady_clock;

void cuda_check(cudaError_t rc, const char* what) {
  MOH_CHECK(rc == cudaSuccess, "NCCL backend: ", what, ": ", cudaGetErrorString(rc));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float16: return ncclFloat16;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    case DType::UInt8:
    case DType::Bool: return ncclUint8;
  }
  MOH_FAIL("NCCL: unknown dtype");
}

// The communicator's state shared with its in-flight Work (which may outlive a failure).
struct Shared {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0, rank = 0, size = 1;
  double timeout_s = 600;
  std::string where;
  std::mutex mutex;
  std::string broken;  // set once a collective failed; the communicator is aborted then
};

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<Shared> shared, std::string what, cudaEvent_t done)
      : shared_(std::move(shared)), what_(std::move(what)), done_(done), posted_(Clock::now()) {}
  // A collective dropped without wait() still orders later compute after it: its buffers go back to
  // the stream-ordered allocator, which hands them to the compute stream.
  ~NcclWork() override {
    if (!completed_ && error_.empty()) cudaStreamWaitEvent(cuda::compute_stream(shared_->device), done_, 0);
    cudaEventDestroy(done_);
  }

  bool finished() override { return completed_ || !error_.empty() || cudaEventQuery(done_) != cudaErrorNotReady; }

  void wait() override {
    if (!completed_ && error_.empty()) poll();
    if (!error_.empty()) throw DistError(error_);
  }

 private:
  void poll() {
    Shared& s = *shared_;
    const auto deadline = posted_ + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(s.timeout_s));
    for (;;) {
      const cudaError_t rc = cudaEventQuery(done_);
      if (rc == cudaSuccess) {
        cuda_check(cudaStreamWaitEvent(cuda::compute_stream(shared_->device), done_, 0),
                   "ordering compute after a collective");
        completed_ = true;
        return;
      }
      if (rc != cudaErrorNotReady) return fail(str_cat("CUDA error ", cudaGetErrorString(rc)));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(s.comm, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        return fail(str_cat("NCCL error ", ncclGetErrorString(async)));
      if (Clock::now() > deadline)
        return fail(str_cat("did not complete within ", s.timeout_s,
                            " s (distributed.timeout_s): a peer died, hangs or issued different collectives; "
                            "the other ranks' reports name where they wait"));
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void fail(const std::string& why) {
    Shared& s = *shared_;
    std::lock_guard<std::mutex> lock(s.mutex);
    error_ = str_cat(s.where, ": collective ", what_, " ", why);
    if (s.broken.empty()) {
      s.broken = error_;
      ncclCommAbort(s.comm);
      s.comm = nullptr;
    }
  }

  std::shared_ptr<Shared> shared_;
  std::string what_;
  cudaEvent_t done_;
  Clock::time_point posted_;
  bool completed_ = false;
  std::string error_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& cpu_world, int device, double timeout_s)
      : shared_(std::make_shared<Shared>()), local_rank_(cpu_world.local_rank()) {
    Shared& s = *shared_;
    set_timeout(timeout_s);
    s.timeout_s = timeout_s;
    s.device = device;
    s.rank = cpu_world.rank();
    s.size = cpu_world.size();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    s.where = str_cat("rank ", s.rank, " of ", s.size, " (", host, ", pid ", getpid(), ", cuda:", device, ")");
    cuda_check(cudaSetDevice(device), "selecting the GPU");
    ncclUniqueId id{};
    if (s.rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    cpu_world.broadcast({&id, int64_t(sizeof id), DType::UInt8, Device::cpu()}, 0, "nccl unique id")->wait();
    nccl_check(ncclCommInitRank(&s.comm, s.size, id, s.rank), "ncclCommInitRank");
    s.stream = cuda::comm_stream(device);  // the device's communication stream (core/cuda/runtime.h)
    cuda_check(cudaMalloc(&barrier_word_, sizeof(int32_t)), "allocating the barrier word");
  }

  ~NcclCommunicator() override {
    Shared& s = *shared_;
    if (s.comm) {
      cudaStreamSynchronize(s.stream);
      ncclCommDestroy(s.comm);
    }
    cudaFree(barrier_word_);
  }

  int rank() const override { return shared_->rank; }
  int size() const override { return shared_->size; }
  int local_rank() const override { return local_rank_; }
  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::cuda(shared_->device); }

  WorkPtr all_reduce(Buffer buf, ReduceOp op, std::string label) override {
    check_buffer("all_reduce", buf);
    check_reduction("all_reduce", buf.dtype, op);
    return post("all_reduce", label, buf, [&](ncclComm_t c, cudaStream_t st) {
      return ncclAllReduce(buf.data, buf.data, size_t(buf.count), nccl_type(buf.dtype), nccl_op(op), c, st);
    });
  }
  WorkPtr broadcast(Buffer buf, int root, std::string label) override {
    check_buffer("broadcast", buf);
    MOH_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a world of size ", size());
    return post("broadcast", label, buf, [&](ncclComm_t c, cudaStream_t st) {
      return ncclBroadcast(buf.data, buf.data, size_t(buf.count), nccl_type(buf.dtype), root, c, st);
    });
  }
  WorkPtr all_gather(Buffer in, Buffer out, std::string label) override {
    check_blocks("all_gather", in, out);
    return post("all_gather", label, in, [&](ncclComm_t c, cudaStream_t st) {
      return ncclAllGather(in.data, out.data, size_t(in.count), nccl_type(in.dtype), c, st);
    });
  }
  WorkPtr reduce_scatter(Buffer in, Buffer out, ReduceOp op, std::string label) override {
    check_blocks("reduce_scatter", out, in);
    check_reduction("reduce_scatter", in.dtype, op);
    return post("reduce_scatter", label, in, [&](ncclComm_t c, cudaStream_t st) {
      return ncclReduceScatter(in.data, out.data, size_t(out.count), nccl_type(in.dtype), nccl_op(op), c, st);
    });
  }
  WorkPtr barrier(std::string label) override {
    Buffer word{barrier_word_, 1, DType::Int32, device()};
    return post("barrier", label, word, [&](ncclComm_t c, cudaStream_t st) {
      return ncclAllReduce(barrier_word_, barrier_word_, 1, ncclInt32, ncclSum, c, st);
    });
  }

 private:
  static ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclAvg; }

  void nccl_check(ncclResult_t rc, const char* what) const {
    MOH_CHECK(rc == ncclSuccess, shared_->where, ": ", what, ": ", ncclGetErrorString(rc));
  }

  template <class Launch>
  WorkPtr post(const char* name, const std::string& label, const Buffer& buf, Launch launch) {
    Shared& s = *shared_;
    const std::string what = str_cat("#", seq_++, " ", name, label.empty() ? "" : " '" + label + "'", " (",
                                     buf.count, " ", dtype_name(buf.dtype), ")");
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!s.broken.empty())
        throw DistError(str_cat(s.where, ": collective ", what, " not run: an earlier collective failed: ", s.broken));
    }
    s.timeout_s = timeout_s();
    cuda::DeviceGuard guard(s.device);
    cudaEvent_t ready = nullptr, done = nullptr;
    cuda_check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "creating an event");
    cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "creating an event");
    cuda_check(cudaEventRecord(ready, cuda::compute_stream(s.device)), "recording the compute stream");
    cuda_check(cudaStreamWaitEvent(s.stream, ready, 0), "ordering the collective after compute");
    cudaEventDestroy(ready);
    nccl_check(launch(s.comm, s.stream), name);
    cuda_check(cudaEventRecord(done, s.stream), "recording the collective");
    return std::make_shared<NcclWork>(shared_, what, done);
  }

  std::shared_ptr<Shared> shared_;
  int local_rank_ = 0;
  int64_t seq_ = 0;
  void* barrier_word_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& cpu_world, int device, double timeout_s) {
  return std::make_unique<NcclCommunicator>(cpu_world, device, timeout_s);
}

int bind_local_gpu(const LaunchEnv& env) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return -1;
  }
  const int device = env.local_rank % count;
  return cudaSetDevice(device) == cudaSuccess ? device : -1;
}

}  // namespace moh::dist::detail
