// The MPI backend (CPU memory). One progress thread owns every MPI call after MPI_Init: callers
// enqueue collectives, the thread posts each as a non-blocking MPI call in issue order and polls
// it against the deadline, so communication progresses while the caller computes (backward) and
// nothing waits forever. On a timeout the thread tells every peer, on a separate communicator,
// which collective it waits in, collects the same from the peers for a short grace period and
// reports who did not arrive. bf16/fp16 reduce through user ops that accumulate in float.
// Memory: each queued or running collective holds its buffers' owners (communicator.h), so a
// caller may drop its tensors and Work at any time; a collective that failed in flight is kept
// (with its buffers) until the process ends, because MPI cannot cancel a collective request and a
// peer may still write into them. After a failure, or once the process marked the job failed,
// queued collectives are not posted and a running one is abandoned, so the abort comes at once.
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "core/dist/backends.h"
#include "core/half.h"

namespace moh::dist::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kDiagTag = 7001;

std::atomic<bool> g_failed{false};
// Threads blocked in MpiWork::wait(): while one is, its core has nothing else to run, so the
// progress thread polls without pausing (MPI moves a large message one fragment per test).
std::atomic<int> g_blocked_waiters{0};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

template <class Half>
void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const Half* a = static_cast<const Half*>(in);
  Half* b = static_cast<Half*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Half(float(a[i]) + float(b[i]));
}

class MpiWork final : public Work {
 public:
  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++g_blocked_waiters;
    cv_.wait(lock, [&] { return done_; });
    --g_blocked_waiters;
    if (!error_.empty()) throw DistError(error_);
  }
  bool finished() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  void complete(std::string error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::move(error);
      done_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string error_;
};

// What a rank that timed out tells its peers.
struct DiagMessage {
  int64_t seq = -1;
  char what[96] = {};
};

struct Op {
  int64_t seq = 0;
  std::string what;  // "all_reduce 'grad bucket 3' (1024 float32)"
  std::function<void(MPI_Request*)> post;
  std::function<void()> after;  // runs on success (Avg's division)
  std::shared_ptr<MpiWork> work;
};

std::string describe_buffer(const Buffer& b) { return str_cat(b.count, " ", dtype_name(b.dtype)); }

// In-place division of `buf` by n (Avg), rounding once per element.
void divide(const Buffer& buf, int n) {
  auto run = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (int64_t i = 0; i < buf.count; ++i) p[i] = T(float(p[i]) / float(n));
  };
  switch (buf.dtype) {
    case DType::Float32: {
      float* p = static_cast<float*>(buf.data);
      for (int64_t i = 0; i < buf.count; ++i) p[i] /= float(n);
      return;
    }
    case DType::Float64: {
      double* p = static_cast<double*>(buf.data);
      for (int64_t i = 0; i < buf.count; ++i) p[i] /= double(n);
      return;
    }
    case DType::BFloat16: return run(static_cast<BFloat16*>(buf.data));
    case DType::Float16: return run(static_cast<Float16*>(buf.data));
    default: MOH_FAIL("avg reduction of ", dtype_name(buf.dtype), " is not supported (use sum)");
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const LaunchEnv& env, double timeout_s) : env_(env) {
    set_timeout(timeout_s);
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    MOH_CHECK(provided >= MPI_THREAD_SERIALIZED, "MPI provides thread level ", provided,
              ", the MPI backend needs MPI_THREAD_SERIALIZED (its progress thread makes the calls)");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &diag_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(diag_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MOH_CHECK(rank_ == env.rank && size_ == env.world_size, "MPI world (rank ", rank_, " of ", size_,
              ") disagrees with the launcher environment (rank ", env.rank, " of ", env.world_size, ")");
    MPI_Type_contiguous(2, MPI_BYTE, &half_type_);
    MPI_Type_commit(&half_type_);
    MPI_Op_create(&half_sum<BFloat16>, 1, &bf16_sum_);
    MPI_Op_create(&half_sum<Float16>, 1, &fp16_sum_);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    where_ = str_cat("rank ", rank_, " of ", size_, " (", host, ", pid ", getpid(), ")");
    thread_ = std::thread([this] { progress_loop(); });
  }

  ~MpiCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (g_failed.load() || !broken_.empty()) {
      std::cerr << "moh: " << where_ << ": aborting the distributed job after a failure" << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Op_free(&bf16_sum_);
    MPI_Op_free(&fp16_sum_);
    MPI_Type_free(&half_type_);
    MPI_Comm_free(&diag_);
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return env_.local_rank; }
  std::string backend() const override { return "mpi"; }
  Device device() const override { return Device::cpu(); }
  double busy_seconds() const override { return busy_s_.load(); }

  WorkPtr all_reduce(Buffer buf, ReduceOp op, std::string label) override {
    check_buffer("all_reduce", buf);
    const auto [type, mpi_op] = reduction("all_reduce", buf.dtype, op);
    return enqueue(
        "all_reduce", label, describe_buffer(buf),
        // The bindings are copied by name: clang before 16 cannot capture structured bindings.
        [=, this, type = type, mpi_op = mpi_op](MPI_Request* r) {
          return MPI_Iallreduce(MPI_IN_PLACE, buf.data, int(buf.count), type, mpi_op, comm_, r);
        },
        op == ReduceOp::Avg ? std::function<void()>([=, this] { divide(buf, size_); }) : nullptr);
  }

  WorkPtr broadcast(Buffer buf, int root, std::string label) override {
    check_buffer("broadcast", buf);
    MOH_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a world of size ", size_);
    const MPI_Datatype type = datatype(buf.dtype);
    return enqueue(
        "broadcast", label, str_cat(describe_buffer(buf), " from rank ", root),
        [=, this](MPI_Request* r) { return MPI_Ibcast(buf.data, int(buf.count), type, root, comm_, r); }, nullptr);
  }

  WorkPtr all_gather(Buffer in, Buffer out, std::string label) override {
    check_blocks("all_gather", in, out);
    const MPI_Datatype type = datatype(in.dtype);
    return enqueue(
        "all_gather", label, describe_buffer(in),
        [=, this](MPI_Request* r) {
          return MPI_Iallgather(in.data, int(in.count), type, out.data, int(in.count), type, comm_, r);
        },
        nullptr);
  }

  WorkPtr reduce_scatter(Buffer in, Buffer out, ReduceOp op, std::string label) override {
    check_blocks("reduce_scatter", out, in);
    const auto [type, mpi_op] = reduction("reduce_scatter", in.dtype, op);
    return enqueue(
        "reduce_scatter", label, describe_buffer(in),
        [=, this, type = type, mpi_op = mpi_op](MPI_Request* r) {
          return MPI_Ireduce_scatter_block(in.data, out.data, int(out.count), type, mpi_op, comm_, r);
        },
        op == ReduceOp::Avg ? std::function<void()>([=, this] { divide(out, size_); }) : nullptr);
  }

  WorkPtr barrier(std::string label) override {
    return enqueue(
        "barrier", label, "", [this](MPI_Request* r) { return MPI_Ibarrier(comm_, r); }, nullptr);
  }

 private:
  MPI_Datatype datatype(DType t) const {
    switch (t) {
      case DType::Float32: return MPI_FLOAT;
      case DType::Float64: return MPI_DOUBLE;
      case DType::BFloat16:
      case DType::Float16: return half_type_;
      case DType::Int32: return MPI_INT32_T;
      case DType::Int64: return MPI_INT64_T;
      case DType::UInt8:
      case DType::Bool: return MPI_UINT8_T;
    }
    MOH_FAIL("MPI: unknown dtype");
  }

  std::pair<MPI_Datatype, MPI_Op> reduction(const char* collective, DType t, ReduceOp op) const {
    check_reduction(collective, t, op);
    if (t == DType::BFloat16) return {half_type_, bf16_sum_};
    if (t == DType::Float16) return {half_type_, fp16_sum_};
    return {datatype(t), MPI_SUM};
  }

  WorkPtr enqueue(const char* name, const std::string& label, const std::string& payload,
                  std::function<int(MPI_Request*)> post, std::function<void()> after) {
    auto work = std::make_shared<MpiWork>();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Op op;
      op.seq = next_seq_++;
      op.what = str_cat("#", op.seq, " ", name, label.empty() ? "" : " '" + label + "'",
                        payload.empty() ? "" : " (" + payload + ")");
      op.post = [post = std::move(post), what = op.what](MPI_Request* r) {
        const int rc = post(r);
        if (rc != MPI_SUCCESS) {
          char text[MPI_MAX_ERROR_STRING] = {};
          int len = 0;
          MPI_Error_string(rc, text, &len);
          throw DistError(str_cat("collective ", what, " failed to start: ", text));
        }
      };
      op.after = std::move(after);
      op.work = work;
      queue_.push_back(std::move(op));
    }
    cv_.notify_all();
    return work;
  }

  void progress_loop() {
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!broken_.empty() || g_failed.load()) {
        op.work->complete(str_cat(where_, ": collective ", op.what, " not run: ",
                                  broken_.empty() ? "the job is being aborted" : "an earlier collective failed: " + broken_));
        continue;
      }
      try {
        run(op);
        op.work->complete("");
      } catch (const std::exception& e) {
        broken_ = e.what();
        const std::shared_ptr<MpiWork> work = op.work;
        stranded_.push_back(std::move(op));  // its request may still be in flight over its buffers
        work->complete(broken_);
      }
    }
  }

  // Posts `op` and polls it: busy for the first microseconds and while a caller is blocked waiting
  // (for at most a second), otherwise sleeping with a growing pause (at most 200 us) so a long
  // collective does not steal the cores backward runs on.
  void run(Op& op) {
    MPI_Request request = MPI_REQUEST_NULL;
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(timeout_s()));
    op.post(&request);
    auto pause = std::chrono::microseconds(0);
    for (int polls = 0;; ++polls) {
      int flag = 0;
      const int rc = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = {};
        int len = 0;
        MPI_Error_string(rc, text, &len);
        throw DistError(str_cat(where_, ": collective ", op.what, " failed: ", text));
      }
      if (flag) break;
      const Clock::time_point now = Clock::now();
      if (now > deadline) throw DistError(timeout_report(op, seconds_between(start, now)));
      if (g_failed.load())
        throw DistError(str_cat(where_, ": collective ", op.what, " abandoned: the job is being aborted"));
      const bool caller_blocked = g_blocked_waiters.load() > 0 && now - start < std::chrono::seconds(1);
      if (polls > 64 && !caller_blocked) {
        pause = std::min(std::chrono::microseconds(200), pause + std::chrono::microseconds(5));
        std::this_thread::sleep_for(pause);
      }
    }
    if (op.after) op.after();
    busy_s_.store(busy_s_.load() + seconds_between(start, Clock::now()));
  }

  // Exchanges "I wait in collective X" notes with the peers that also timed out and names the
  // ranks that sent none (dead, hung, or computing elsewhere) or wait in a different collective.
  std::string timeout_report(const Op& op, double waited) {
    static DiagMessage note;  // outlives the un-waited sends (the job aborts after this)
    note.seq = op.seq;
    std::snprintf(note.what, sizeof note.what, "%s", op.what.c_str());
    std::vector<MPI_Request> sends(size_t(size_), MPI_REQUEST_NULL);
    for (int p = 0; p < size_; ++p)
      if (p != rank_) MPI_Isend(&note, sizeof note, MPI_BYTE, p, kDiagTag, diag_, &sends[size_t(p)]);
    std::vector<DiagMessage> replies(static_cast<size_t>(size_));
    std::vector<bool> replied(size_t(size_), false);
    replied[size_t(rank_)] = true;
    const double grace = std::clamp(0.25 * timeout_s(), 0.5, 5.0);
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(grace));
    int missing = size_ - 1;
    while (missing > 0 && Clock::now() < until) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kDiagTag, diag_, &flag, &status);
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      const int from = status.MPI_SOURCE;
      MPI_Recv(&replies[size_t(from)], sizeof(DiagMessage), MPI_BYTE, from, kDiagTag, diag_, MPI_STATUS_IGNORE);
      if (!replied[size_t(from)]) --missing;
      replied[size_t(from)] = true;
    }
    std::string absent, elsewhere;
    for (int p = 0; p < size_; ++p) {
      if (!replied[size_t(p)]) {
        absent += str_cat(absent.empty() ? "" : ", ", p);
      } else if (p != rank_ && replies[size_t(p)].seq != op.seq) {
        elsewhere += str_cat("; rank ", p, " waits in a different collective, ", replies[size_t(p)].what,
                             " (the ranks diverged)");
      }
    }
    std::string report = str_cat(where_, ": collective ", op.what, " did not complete within ", waited,
                                 " s (distributed.timeout_s = ", timeout_s(), ")");
    if (!absent.empty())
      report += str_cat(": rank", absent.find(',') == std::string::npos ? " " : "s ", absent,
                        " did not arrive (no report within ", grace,
                        " s: the process died, hangs, or computes elsewhere)");
    else if (elsewhere.empty())
      report += ": every rank reports waiting in it (a backend or network failure)";
    return report + elsewhere;
  }

  LaunchEnv env_;
  MPI_Comm comm_ = MPI_COMM_NULL, diag_ = MPI_COMM_NULL;
  MPI_Datatype half_type_ = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum_ = MPI_OP_NULL, fp16_sum_ = MPI_OP_NULL;
  int rank_ = 0, size_ = 1;
  std::string where_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  int64_t next_seq_ = 0;
  bool stopping_ = false;
  std::string broken_;  // progress thread only
  std::vector<Op> stranded_;  // progress thread only: failed in flight, never freed before the abort
  std::atomic<double> busy_s_{0};  // written by the progress thread only
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_world(const LaunchEnv& env, double timeout_s) {
  return std::make_unique<MpiCommunicator>(env, timeout_s);
}

void mpi_mark_failed() { g_failed.store(true); }

}  // namespace moh::dist::detail
