// CPU pack_head_rows: a counting sort of the active (token, head) pairs by group g = head * batch + b.
// Pairs are visited in token order, so each group's rows come out with their tokens ascending.
#include "core/kernels/head_rows.h"

#include <vector>

namespace moh::cpu {

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
  std::fill(off, off + row_offsets.numel(), 0);  // off[g + 1]: the rows of group g, then the prefix sums
  for (int64_t h = 0; h < shared; ++h)
    for (int64_t b = 0; b < batch; ++b) off[h * batch + b + 1] = tokens;
  for (int64_t i = 0; i < n * k; ++i) ++off[(shared + sel[i]) * batch + (i / k) / tokens + 1];
  for (int64_t g = 1; g < row_offsets.numel(); ++g) off[g] += off[g - 1];
  std::vector<int64_t> next(off, off + heads * batch);
  int64_t *tok = token_index.data<int64_t>(), *pos = q_pos.data<int64_t>(), *pair = pair_index.data<int64_t>();
  auto place = [&](int64_t token, int64_t head) {
    const int64_t r = next[size_t(head * batch + token / tokens)]++;
    tok[r] = token;
    pos[r] = first_position + token % tokens;
    pair[r] = token * heads + head;
  };
  for (int64_t token = 0; token < n; ++token) {
    for (int64_t h = 0; h < shared; ++h) place(token, h);
    for (int64_t j = 0; j < k; ++j) place(token, shared + sel[token * k + j]);
  }
  int64_t* head_off = head_offsets.data<int64_t>();
  for (int64_t h = 0; h <= heads; ++h) head_off[h] = off[h * batch];
}

}  // namespace moh::cpu
