// The communicator interface's shared checks, the blocking tensor forms and the single-process
// ("local") backend (see communicator.h).
#include "core/dist/communicator.h"

#include <cstring>

#include "core/shape.h"

namespace moh::dist {

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : "avg"; }

Buffer Buffer::of(const Tensor& t, const char* what) {
  MOH_CHECK(t.defined(), what, ": undefined tensor");
  MOH_CHECK(t.is_contiguous(), what, ": needs a contiguous tensor, got ", describe(t));
  return {t.raw_data(), t.numel(), t.dtype(), t.device(), t.storage()};
}

void Communicator::set_timeout(double seconds) {
  MOH_CHECK(seconds > 0, "distributed timeout must be positive, got ", seconds, " s");
  timeout_s_ = seconds;
}

void Communicator::check_buffer(const char* collective, const Buffer& buf) const {
  MOH_CHECK(buf.device == device(), collective, ": the ", backend(), " communicator works on ", device(),
            " memory, got a buffer on ", buf.device);
  MOH_CHECK(buf.count >= 0 && (buf.data != nullptr || buf.count == 0), collective, ": invalid buffer of ",
            buf.count, " elements");
  MOH_CHECK(buf.count <= int64_t(INT32_MAX), collective, ": ", buf.count,
            " elements exceed one collective's limit of 2^31-1 (split the buffer)");
}

void Communicator::check_blocks(const char* collective, const Buffer& small, const Buffer& large) const {
  check_buffer(collective, small);
  check_buffer(collective, large);
  MOH_CHECK(small.dtype == large.dtype, collective, ": dtypes differ (", dtype_name(small.dtype), " and ",
            dtype_name(large.dtype), ")");
  MOH_CHECK(large.count == small.count * size(), collective, ": the large buffer must hold size() = ", size(),
            " blocks of ", small.count, " elements, got ", large.count);
}

void Communicator::check_reduction(const char* collective, DType dtype, ReduceOp op) {
  const bool ok = is_floating(dtype) || ((dtype == DType::Int32 || dtype == DType::Int64) && op == ReduceOp::Sum);
  MOH_CHECK(ok, collective, ": ", reduce_op_name(op), " of ", dtype_name(dtype),
            " is not supported (floating dtypes, or sum of int32/int64)");
}

void all_reduce(Communicator& comm, const Tensor& t, ReduceOp op, const std::string& label) {
  comm.all_reduce(Buffer::of(t, "all_reduce"), op, label)->wait();
}

void broadcast(Communicator& comm, const Tensor& t, int root, const std::string& label) {
  comm.broadcast(Buffer::of(t, "broadcast"), root, label)->wait();
}

Tensor all_gather(Communicator& comm, const Tensor& t, const std::string& label) {
  Shape shape{comm.size()};
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  comm.all_gather(Buffer::of(t, "all_gather"), Buffer::of(out, "all_gather"), label)->wait();
  return out;
}

Tensor reduce_scatter(Communicator& comm, const Tensor& t, ReduceOp op, const std::string& label) {
  MOH_CHECK(t.dim() >= 1 && t.size(0) % comm.size() == 0, "reduce_scatter: the first dimension of ", describe(t),
            " must be a multiple of the world size ", comm.size());
  Shape shape = t.shape();
  shape[0] /= comm.size();
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  comm.reduce_scatter(Buffer::of(t, "reduce_scatter"), Buffer::of(out, "reduce_scatter"), op, label)->wait();
  return out;
}

namespace {

class DoneWork final : public Work {
 public:
  void wait() override {}
  bool finished() override { return true; }
};

class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(Device device) : device_(device) {
    MOH_CHECK(device.is_cpu(), "the local communicator handles CPU memory; use NCCL for ", device);
  }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string backend() const override { return "local"; }
  Device device() const override { return device_; }

  WorkPtr all_reduce(Buffer buf, ReduceOp op, std::string) override {
    check_buffer("all_reduce", buf);
    check_reduction("all_reduce", buf.dtype, op);
    return done();
  }
  WorkPtr broadcast(Buffer buf, int root, std::string) override {
    check_buffer("broadcast", buf);
    MOH_CHECK(root == 0, "broadcast: root ", root, " is not a rank of a world of size 1");
    return done();
  }
  WorkPtr all_gather(Buffer in, Buffer out, std::string) override {
    check_blocks("all_gather", in, out);
    copy(in, out);
    return done();
  }
  WorkPtr reduce_scatter(Buffer in, Buffer out, ReduceOp op, std::string) override {
    check_blocks("reduce_scatter", out, in);
    check_reduction("reduce_scatter", in.dtype, op);
    copy(in, out);
    return done();
  }
  WorkPtr barrier(std::string) override { return done(); }

 private:
  static WorkPtr done() { return std::make_shared<DoneWork>(); }
  static void copy(const Buffer& from, const Buffer& to) {
    if (from.data != to.data && from.count > 0) std::memmove(to.data, from.data, from.nbytes());
  }
  Device device_;
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator(Device device) {
  return std::make_unique<LocalCommunicator>(device);
}

}  // namespace moh::dist
