// CPU pack_head_rows: a counting sort of the active (token, head) pairs by group g = head * batch + b,
// batch elements in parallel (each owns its groups). A batch element's pairs are visited in token order,
// so each group's rows come out with their tokens ascending, the same on any thread count.
#include "core/kernels/head_rows.h"

#include <vector>

namespace moh::cpu {
namespace {

constexpr int64_t kParallelRows = 4096;  // selected (token, head) ids below which one thread packs

}  // namespace

int64_t first_bad_selection(const Tensor& topk, int64_t routed) {
  const int64_t n = topk.size(0), k = topk.size(1);
  const int64_t* sel = topk.data<int64_t>();
  std::vector<int64_t> seen_by(size_t(routed), -1);  // the last token that selected each head
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = sel[i * k + j];
      if (e < 0 || e >= routed || seen_by[size_t(e)] == i) return i;
      seen_by[size_t(e)] = i;
    }
  return -1;
}

void pack_head_rows(const Tensor& token_index, const Tensor& q_pos, const Tensor& pair_index,
                    const Tensor& row_offsets, const Tensor& head_offsets, const Tensor& topk, int64_t batch,
                    int64_t shared, int64_t first_position) {
  const int64_t heads = head_offsets.numel() - 1, n = topk.size(0), k = topk.size(1), tokens = n / batch;
  const int64_t* sel = topk.data<int64_t>();
  int64_t* off = row_offsets.data<int64_t>();
  // off[g + 1]: the rows of group g = h * batch + b, then the prefix sums. A batch element's tokens fill
  // only its own groups, so the batch elements count and place in parallel.
  off[0] = 0;
#pragma omp parallel for schedule(static) if (n * k > kParallelRows)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) off[h * batch + b + 1] = h < shared ? tokens : 0;
    const int64_t* row = sel + b * tokens * k;
    for (int64_t i = 0; i < tokens * k; ++i) ++off[(shared + row[i]) * batch + b + 1];
  }
  for (int64_t g = 1; g <= heads * batch; ++g) off[g] += off[g - 1];
  int64_t *tok = token_index.data<int64_t>(), *pos = q_pos.data<int64_t>(), *pair = pair_index.data<int64_t>();
#pragma omp parallel for schedule(static) if (n * k > kParallelRows)
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> free_row(static_cast<size_t>(heads));  // the next free row of each of b's groups
    for (int64_t h = 0; h < heads; ++h) free_row[size_t(h)] = off[h * batch + b];
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t token = b * tokens + t;
      const auto place = [&](int64_t head) {
        const int64_t r = free_row[size_t(head)]++;
        tok[r] = token;
        pos[r] = first_position + t;
        pair[r] = token * heads + head;
      };
      for (int64_t h = 0; h < shared; ++h) place(h);
      for (int64_t j = 0; j < k; ++j) place(shared + sel[token * k + j]);
    }
  }
  int64_t* head_off = head_offsets.data<int64_t>();
  for (int64_t h = 0; h <= heads; ++h) head_off[h] = off[h * batch];
}

}  // namespace moh::cpu
