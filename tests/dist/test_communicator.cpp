// The CPU collectives of world(), on however many ranks the binary runs (1 alone, 2 under
// `mpirun -np 2`): every rank builds the same expected values from a formula of (rank, index)
// and checks what the collective returned, for float32, float64, bf16, fp16 and int64, plus the
// argument checks (non-contiguous tensors, wrong sizes, devices, roots, dtypes).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/dist/world.h"
#include "core/factory.h"
#include "core/half.h"
#include "tests/test_util.h"

namespace moh::dist {
namespace {

// The value rank r contributes at index i: distinct per rank and index, exactly representable.
double value(int r, int64_t i) { return double(r + 1) * 0.25 + double(i % 97) - 40.0; }

Tensor contribution(int r, int64_t n, DType dtype) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = value(r, i);
  return from_vector(v, {n}, dtype);
}

// Sum over ranks as the backend computes it: in dtype, rank order (exact for these values).
template <class T>
std::vector<double> expected_sum(int size, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    T acc = T(value(0, i));
    for (int r = 1; r < size; ++r) acc = T(float(acc) + float(T(value(r, i))));
    out[size_t(i)] = double(acc);
  }
  return out;
}

class Collectives : public ::testing::Test {
 protected:
  Communicator& comm = world();
  int rank = comm.rank(), size = comm.size();
};

TEST_F(Collectives, WorldMatchesTheLauncher) {
  EXPECT_EQ(size, launch_env().world_size);
  EXPECT_EQ(rank, launch_env().rank);
  EXPECT_EQ(comm.backend(), size > 1 ? "mpi" : "local");
  EXPECT_TRUE(comm.device().is_cpu());
}

TEST_F(Collectives, AllReduceSumAndAvgFloat32) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1000), int64_t(1) << 18}) {
    Tensor t = contribution(rank, n, DType::Float32);
    all_reduce(comm, t, ReduceOp::Sum, "test sum");
    const std::vector<double> want = expected_sum<float>(size, n);
    EXPECT_EQ(t.to_vector<double>(), want) << "n=" << n;
    Tensor a = contribution(rank, n, DType::Float32);
    all_reduce(comm, a, ReduceOp::Avg);
    std::vector<double> avg(want.size());
    for (size_t i = 0; i < want.size(); ++i) avg[i] = double(float(want[i]) / float(size));
    EXPECT_EQ(a.to_vector<double>(), avg) << "n=" << n;
  }
}

TEST_F(Collectives, AllReduceOtherDtypes) {
  const int64_t n = 777;
  Tensor d = contribution(rank, n, DType::Float64);
  all_reduce(comm, d, ReduceOp::Sum);
  EXPECT_EQ(d.to_vector<double>(), expected_sum<double>(size, n));
  Tensor b = contribution(rank, n, DType::BFloat16);
  all_reduce(comm, b, ReduceOp::Sum);
  EXPECT_EQ(b.to_vector<double>(), expected_sum<BFloat16>(size, n));
  Tensor h = contribution(rank, n, DType::Float16);
  all_reduce(comm, h, ReduceOp::Sum);
  EXPECT_EQ(h.to_vector<double>(), expected_sum<Float16>(size, n));
  Tensor ha = contribution(rank, n, DType::BFloat16);
  all_reduce(comm, ha, ReduceOp::Avg);
  const std::vector<double> bsum = expected_sum<BFloat16>(size, n);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(ha.to_vector<double>()[size_t(i)], double(BFloat16(float(bsum[size_t(i)]) / float(size)))) << i;
  Tensor k = from_vector(std::vector<int64_t>{int64_t(rank) << 40, 3, -int64_t(rank)}, {3});
  all_reduce(comm, k, ReduceOp::Sum);
  int64_t high = 0, low = 0;
  for (int r = 0; r < size; ++r) high += int64_t(r) << 40, low -= r;
  EXPECT_EQ(k.to_vector<int64_t>(), (std::vector<int64_t>{high, 3 * size, low}));
}

TEST_F(Collectives, ManyInFlightCompleteInIssueOrder) {
  std::vector<Tensor> bufs;
  std::vector<WorkPtr> works;
  for (int b = 0; b < 12; ++b) {
    bufs.push_back(contribution(rank + b, 100 + 37 * b, DType::Float32));
    works.push_back(comm.all_reduce(Buffer::of(bufs.back(), "test"), ReduceOp::Sum, "bucket " + std::to_string(b)));
  }
  for (int b = 11; b >= 0; --b) works[size_t(b)]->wait();
  for (int b = 0; b < 12; ++b) {
    EXPECT_TRUE(works[size_t(b)]->finished());
    std::vector<double> want(size_t(100 + 37 * b), 0.0);
    for (size_t i = 0; i < want.size(); ++i) {
      float acc = float(value(b, int64_t(i)));
      for (int r = 1; r < size; ++r) acc += float(value(r + b, int64_t(i)));
      want[i] = acc;
    }
    EXPECT_EQ(bufs[size_t(b)].to_vector<double>(), want) << "bucket " << b;
  }
}

// Rank 0 drops its tensor and the Work of a pending all_reduce, as an exception unwinding would;
// rank 1 joins later. The collective must not write into memory the process has reused meanwhile
// (the next tensor of the same size gets the freed block unless the collective still holds it).
TEST_F(Collectives, ATensorDroppedWhileItsCollectiveIsPendingIsNotWrittenAfterwards) {
  const int64_t n = 128;
  if (rank == 0) {
    {
      Tensor t = contribution(rank, n, DType::Float32);
      comm.all_reduce(Buffer::of(t, "t"), ReduceOp::Sum, "dropped");
    }
    Tensor fresh = full({n}, -7.0);
    comm.barrier("after the dropped all_reduce")->wait();
    EXPECT_EQ(fresh.to_vector<double>(), std::vector<double>(size_t(n), -7.0));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Tensor t = contribution(rank, n, DType::Float32);
    all_reduce(comm, t, ReduceOp::Sum, "dropped");
    comm.barrier("after the dropped all_reduce")->wait();
    EXPECT_EQ(t.to_vector<double>(), expected_sum<float>(size, n));
  }
}

TEST_F(Collectives, BroadcastFromEveryRoot) {
  for (int root = 0; root < size; ++root) {
    Tensor t = contribution(rank, 513, DType::Float32);
    broadcast(comm, t, root, "params");
    EXPECT_EQ(t.to_vector<double>(), contribution(root, 513, DType::Float32).to_vector<double>());
    Tensor k = from_vector(std::vector<int64_t>{rank * 7, -rank}, {2});
    broadcast(comm, k, root);
    EXPECT_EQ(k.to_vector<int64_t>(), (std::vector<int64_t>{root * 7, -root}));
  }
}

TEST_F(Collectives, AllGatherInRankOrder) {
  Tensor t = contribution(rank, 6, DType::Float32).reshape({2, 3});
  Tensor all = all_gather(comm, t, "shards");
  ASSERT_EQ(all.shape(), (Shape{size, 2, 3}));
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(all.select(0, r).contiguous().to_vector<double>(), contribution(r, 6, DType::Float32).to_vector<double>());
  Tensor b = all_gather(comm, contribution(rank, 5, DType::BFloat16));
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(b.select(0, r).contiguous().to_vector<double>(),
              contribution(r, 5, DType::BFloat16).to_vector<double>());
}

TEST_F(Collectives, ReduceScatterSumAndAvg) {
  const int64_t block = 300;
  const std::vector<double> sum = expected_sum<float>(size, block * size);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
    Tensor out = reduce_scatter(comm, contribution(rank, block * size, DType::Float32), op, "grads");
    ASSERT_EQ(out.shape(), (Shape{block}));
    const std::vector<double> got = out.to_vector<double>();
    for (int64_t i = 0; i < block; ++i) {
      const float s = float(sum[size_t(rank * block + i)]);
      EXPECT_EQ(got[size_t(i)], op == ReduceOp::Sum ? double(s) : double(s / float(size))) << i;
    }
  }
}

TEST_F(Collectives, BarrierAndAsyncBarrier) {
  comm.barrier("start")->wait();
  WorkPtr w = comm.barrier();
  w->wait();
  EXPECT_TRUE(w->finished());
}

TEST_F(Collectives, BadArgumentsThrowNamingTheProblem) {
  Tensor t = contribution(rank, 12, DType::Float32).reshape({3, 4}).transpose(0, 1);
  test::expect_error([&] { all_reduce(comm, t, ReduceOp::Sum); }, {"all_reduce", "contiguous"});
  Tensor k = from_vector(std::vector<int64_t>{1, 2}, {2});
  test::expect_error([&] { all_reduce(comm, k, ReduceOp::Avg); }, {"avg of int64", "not supported"});
  Tensor flag = from_vector(std::vector<uint8_t>{1}, {1});
  test::expect_error([&] { all_reduce(comm, flag, ReduceOp::Sum); }, {"sum of uint8"});
  test::expect_error([&] { broadcast(comm, k, size); }, {"broadcast: root", "not a rank"});
  test::expect_error([&] { broadcast(comm, k, -1); }, {"not a rank"});
  Tensor in = Tensor::empty({4}), wrong = Tensor::empty({4 * size + 1});
  test::expect_error([&] { comm.all_gather(Buffer::of(in, "t"), Buffer::of(wrong, "t")); }, {"all_gather", "blocks"});
  Tensor scalar = Tensor::empty({});
  test::expect_error([&] { reduce_scatter(comm, scalar, ReduceOp::Sum); }, {"reduce_scatter", "multiple"});
  if (size > 1) {
    Tensor odd = Tensor::empty({size * 2 + 1});
    test::expect_error([&] { reduce_scatter(comm, odd, ReduceOp::Sum); }, {"reduce_scatter", "multiple"});
  }
  Tensor other = Tensor::empty({4 * size}, DType::Float64);
  test::expect_error([&] { comm.all_gather(Buffer::of(in, "t"), Buffer::of(other, "t")); }, {"dtypes differ"});
  Buffer gpu{in.raw_data(), 4, DType::Float32, Device::cuda(0)};
  test::expect_error([&] { comm.all_reduce(gpu, ReduceOp::Sum); }, {"works on cpu", "cuda:0"});
  test::expect_error([&] { comm.set_timeout(0); }, {"timeout must be positive"});
  test::expect_error([&] { Buffer::of(Tensor(), "x"); }, {"undefined tensor"});
  comm.barrier("after the errors")->wait();  // the failed calls issued nothing: ranks still agree
}

}  // namespace
}  // namespace moh::dist
