// Sinusoidal tables: DiT's timestep_embedding (even and odd dims) and MAE's 2-D sin-cos table
// (class-token row, square and non-square grids) against the reference code's float64 values,
// the sin-first order, the 1-D table and the argument checks.
#include <gtest/gtest.h>

#include "core/factory.h"
#include "layers/position.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

TEST(LayerPosition, TimestepEmbeddingMatchesDiT) {
  layer_test::Fixture f = layer_test::load_fixture("position");
  Tensor t = f["timestep.t"];
  for (DType dtype : {DType::Float64, DType::Float32}) {
    const double tol = dtype == DType::Float64 ? 1e-13 : 1e-6;
    Tensor even = timestep_embedding(t, 16, 10000.0, SinusoidOrder::CosSin, dtype);
    EXPECT_EQ(even.dtype(), dtype);
    nn_test::expect_close(even, f["timestep.dim16"], tol, "dim16");
    nn_test::expect_close(timestep_embedding(t.to(DType::Float32), 15, 1000.0, SinusoidOrder::CosSin, dtype),
                          f["timestep.dim15"], tol, "dim15 (zero last column)");
  }
}

TEST(LayerPosition, SinCos2dMatchesMae) {
  layer_test::Fixture f = layer_test::load_fixture("position");
  nn_test::expect_close(sincos_table_2d(16, 4, 4, 1, DType::Float64), f["sincos2d.square"], 1e-13,
                        "4x4 + cls");
  nn_test::expect_close(sincos_table_2d(8, 2, 3, 0, DType::Float64), f["sincos2d.wide"], 1e-13, "2x3");
  nn_test::expect_close(sincos_table_2d(16, 4, 4, 1), f["sincos2d.square"], 1e-6, "float32");
}

TEST(LayerPosition, OrdersAndTheOneDimensionalTable) {
  Tensor steps = from_vector<int64_t>({0, 3, 7}, {3});
  std::vector<double>
      cs = timestep_embedding(steps, 8, 10000.0, SinusoidOrder::CosSin, DType::Float64).to_vector<double>(),
      sc = timestep_embedding(steps, 8, 10000.0, SinusoidOrder::SinCos, DType::Float64).to_vector<double>();
  for (size_t r = 0; r < 3; ++r)
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(sc[r * 8 + k], cs[r * 8 + 4 + k]);
      EXPECT_EQ(sc[r * 8 + 4 + k], cs[r * 8 + k]);
    }
  EXPECT_NEAR(sc[8 + 1], std::sin(3.0 * std::exp(-std::log(10000.0) / 4.0)), 1e-15);  // t = 3, freq 1
  Tensor table = sincos_table_1d(7, 6, 100.0, SinusoidOrder::SinCos, DType::Float64);
  ASSERT_EQ(table.shape(), Shape({7, 6}));
  nn_test::expect_close(table, timestep_embedding(arange(7), 6, 100.0, SinusoidOrder::SinCos, DType::Float64),
                        0, "1-d table");
  EXPECT_EQ(sincos_table_1d(0, 4).shape(), Shape({0, 4}));
}

TEST(LayerPosition, ArgumentErrors) {
  EXPECT_ERROR_MENTIONS(timestep_embedding(zeros({2, 2}), 8), "timestep_embedding: expected timesteps [N]");
  EXPECT_ERROR_MENTIONS(timestep_embedding(zeros({2}), 0), "timestep_embedding");
  EXPECT_ERROR_MENTIONS(timestep_embedding(zeros({2}), 4, 10000.0, SinusoidOrder::CosSin, DType::Int64),
                        "timestep_embedding");
  EXPECT_ERROR_MENTIONS(sincos_table_1d(-1, 4), "sincos_table_1d");
  EXPECT_ERROR_MENTIONS(sincos_table_2d(6, 2, 2), "sincos_table_2d");
  EXPECT_ERROR_MENTIONS(sincos_table_2d(8, -1, 2), "sincos_table_2d");
}

}  // namespace
}  // namespace moh
