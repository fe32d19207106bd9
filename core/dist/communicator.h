// Communicator: the collectives data-parallel training needs, one interface over three backends:
// "local" (a single process, world size 1), "mpi" (CPU memory, OpenMPI) and "nccl" (CUDA memory).
// Every rank must issue the same collectives in the same order; each gets a per-communicator
// sequence number. Collectives are asynchronous (a Work handle), run in issue order, and each has a
// deadline (timeout_s): a collective that does not complete in time fails on every rank that waits
// in it with a DistError naming this rank, the collective (#seq, name, label) and, where knowable,
// the ranks that did not arrive. After a failure the communicator is broken: later calls fail at once.
// A Buffer made from a tensor (Buffer::of) keeps the tensor's storage alive for as long as the
// backend may still read or write it, so a caller that unwinds (an exception) while its Work is
// pending never leaves a collective over freed memory; a raw Buffer (no owner) must outlive its
// Work. A collective that failed while in flight (a timeout) keeps its buffers until the process
// ends: its peers may still write into them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace moh::dist {

// A collective that failed: timed out, a peer died or diverged, or the backend reported an error.
class DistError : public Error {
 public:
  using Error::Error;
};

enum class ReduceOp { Sum, Avg };
const char* reduce_op_name(ReduceOp op);

// `count` elements of `dtype` at `data` in the memory of `device`; `owner`, when set, is what keeps
// that memory alive (a tensor's storage).
struct Buffer {
  void* data = nullptr;
  int64_t count = 0;
  DType dtype = DType::Float32;
  Device device;
  std::shared_ptr<const void> owner = nullptr;

  // The whole of a contiguous tensor (throws naming `what` otherwise).
  static Buffer of(const Tensor& t, const char* what);
  size_t nbytes() const { return size_t(count) * dtype_size(dtype); }
};

// A collective in flight.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the collective completed; throws DistError when it failed or timed out.
  virtual void wait() = 0;
  // Non-blocking: whether it has finished (successfully or not; wait() tells which).
  virtual bool finished() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the processes of this node
  virtual std::string backend() const = 0;
  virtual Device device() const = 0;  // where its buffers live (cpu or cuda:N)

  // Seconds a collective may take before it fails (distributed.timeout_s).
  double timeout_s() const { return timeout_s_; }
  void set_timeout(double seconds);

  // `label` names what the collective carries in failure reports ("grad bucket 3").
  // In place over `buf`; Avg divides the sum by size() (exactly, by division).
  virtual WorkPtr all_reduce(Buffer buf, ReduceOp op, std::string label = "") = 0;
  // Root's `buf` to every rank.
  virtual WorkPtr broadcast(Buffer buf, int root, std::string label = "") = 0;
  // out.count == size() * in.count: rank r's `in` lands at block r of `out`.
  virtual WorkPtr all_gather(Buffer in, Buffer out, std::string label = "") = 0;
  // in.count == size() * out.count: out = reduction over ranks of block rank() of `in`.
  virtual WorkPtr reduce_scatter(Buffer in, Buffer out, ReduceOp op, std::string label = "") = 0;
  virtual WorkPtr barrier(std::string label = "") = 0;

  // Seconds collectives spent in flight (posted to completed), summed since start; with the time
  // callers spent blocked in wait() it shows how much communication overlapped computation.
  virtual double busy_seconds() const { return 0; }

 protected:
  // Checks shared by the backends: same device as the communicator, dtype supported, counts.
  void check_buffer(const char* collective, const Buffer& buf) const;
  void check_blocks(const char* collective, const Buffer& small, const Buffer& large) const;
  // Sum of any floating dtype, int32 or int64; Avg of floating dtypes only.
  static void check_reduction(const char* collective, DType dtype, ReduceOp op);

 private:
  double timeout_s_ = 600;
};

// Blocking tensor forms of the collectives (contiguous tensors on comm.device()).
void all_reduce(Communicator& comm, const Tensor& t, ReduceOp op, const std::string& label = "");
void broadcast(Communicator& comm, const Tensor& t, int root, const std::string& label = "");
// [size(), ...t.shape()]: every rank's `t` in rank order.
Tensor all_gather(Communicator& comm, const Tensor& t, const std::string& label = "");
// t is [size() * n, ...]: returns the reduction of block rank() ([n, ...]).
Tensor reduce_scatter(Communicator& comm, const Tensor& t, ReduceOp op, const std::string& label = "");

// The single-process communicator (world size 1): every collective is a local copy or nothing.
std::unique_ptr<Communicator> make_local_communicator(Device device = Device::cpu());

}  // namespace moh::dist
