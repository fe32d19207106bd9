// Finite-difference checks of embedding (repeated indices, 2-D index), gather and index_select
// on last and non-last dims with repeated indices, and scatter_add / index_add in x and src.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

Tensor idx(const std::vector<int64_t>& v, const Shape& shape) { return from_vector<int64_t>(v, shape); }

TEST(GradcheckIndexing, Embedding) {
  Tensor indices = idx({3, 0, 3, 1, 3, 2}, {2, 3});
  EXPECT_GRADCHECK([&](const Inputs& in) { return embedding(in[0], indices); }, {leaf({5, 4}, 1)});
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return embedding(in[0], idx({4, 4}, {2}));
      },
      {transposed_leaf({5, 3}, 2)});
}

TEST(GradcheckIndexing, Gather) {
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return gather(in[0], 1, idx({0, 2, 2, 1, 1, 1}, {2, 3}));
      },
      {leaf({2, 4}, 3)});
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return gather(in[0], 0, idx({2, 0, 2, 2}, {2, 2}));
      },
      {transposed_leaf({3, 3}, 4)});
}

TEST(GradcheckIndexing, IndexSelect) {
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return index_select(in[0], 0, idx({2, 0, 2}, {3}));
      },
      {leaf({3, 4}, 5)});
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return index_select(in[0], -1, idx({1, 1, 3, 0}, {4}));
      },
      {transposed_leaf({2, 3, 4}, 6)});
}

TEST(GradcheckIndexing, ScatterAdd) {
  Tensor index = idx({1, 0, 1, 2, 2, 2}, {2, 3});
  EXPECT_GRADCHECK([&](const Inputs& in) { return scatter_add(in[0], 1, index, in[1]); },
                   {leaf({2, 4}, 7), leaf({2, 3}, 8)});
  // src larger than index: its elements outside the index block get no gradient.
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return scatter_add(in[0], 0, idx({2, 0}, {1, 2}), in[1]);
      },
      {leaf({3, 2}, 9), leaf({2, 3}, 10)});
}

TEST(GradcheckIndexing, IndexAdd) {
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return index_add(in[0], 0, idx({1, 1, 0}, {3}), in[1]);
      },
      {leaf({3, 2}, 11), transposed_leaf({3, 2}, 12)});
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return index_add(in[0], 1, idx({2, 0}, {2}), in[1]);
      },
      {leaf({2, 3}, 13), leaf({2, 2}, 14)});
}

}  // namespace
}  // namespace moh::ag
