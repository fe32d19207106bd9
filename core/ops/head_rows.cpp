// Front end of pack_head_rows: validation (the head split, topk's shape and dtype, each token's
// selection on its device) and output allocation; see core/ops.h for the contract.
#include "core/dispatch.h"
#include "core/kernels/head_rows.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// Throws for token i's row of topk, which is known to hold an id outside [0, routed) or one id twice.
[[noreturn]] void fail_selection(const Tensor& topk, int64_t i, int64_t routed) {
  const std::vector<int64_t> row = topk.narrow(0, i, 1).to_vector<int64_t>();
  for (size_t j = 0; j < row.size(); ++j) {
    MOH_CHECK(row[j] >= 0 && row[j] < routed, "pack_head_rows: topk[", i, ", ", j, "] = ", row[j],
              " is out of range [0, ", routed, ") for the routed heads");
    for (size_t m = 0; m < j; ++m)
      MOH_CHECK(row[m] != row[j], "pack_head_rows: token ", i, " selects routed head ", row[j],
                " twice (topk[", i, ", ", m, "] and [", i, ", ", j, "])");
  }
  MOH_FAIL("pack_head_rows: token ", i, "'s selection was reported bad but is not");
}

}  // namespace

HeadRows pack_head_rows(const Tensor& topk_in, int64_t batch, int64_t heads, int64_t shared,
                        int64_t first_position) {
  const char* op = "pack_head_rows";
  MOH_CHECK(topk_in.defined() && topk_in.dim() == 2 && topk_in.dtype() == DType::Int64, op,
            ": expected an int64 selection topk [N, K], got ", topk_in.defined() ? describe(topk_in) : "nothing");
  const int64_t n = topk_in.size(0), k = topk_in.size(1), routed = heads - shared;
  MOH_CHECK(heads >= 1 && shared >= 0 && shared <= heads, op, ": shared heads ", shared, " must be in [0, heads = ",
            heads, "]");
  MOH_CHECK(k <= routed && (k > 0 || shared == heads), op, ": ", k, " selected heads per token ",
            k == 0 ? str_cat("need every head shared, got ", shared, " of ", heads)
                   : str_cat("exceed the ", routed, " routed heads"));
  MOH_CHECK(batch >= 1 && n % batch == 0, op, ": ", n, " tokens do not split into a batch of ", batch);
  MOH_CHECK(first_position >= 0, op, ": first_position must be >= 0, got ", first_position);
  const Tensor topk = topk_in.contiguous();
  const Device dev = topk.device();
  const int64_t bad = MOH_BACKEND(dev, first_bad_selection, topk, routed);
  if (bad >= 0) fail_selection(topk, bad, routed);
  const int64_t rows = n * (shared + k);
  HeadRows out{Tensor::empty({rows}, DType::Int64, dev), Tensor::empty({rows}, DType::Int64, dev),
               Tensor::empty({rows}, DType::Int64, dev), Tensor::empty({heads * batch + 1}, DType::Int64, dev),
               Tensor::empty({heads + 1}, DType::Int64, dev)};
  MOH_BACKEND(dev, pack_head_rows, out.token_index, out.q_pos, out.pair_index, out.row_offsets, out.head_offsets,
              topk, batch, shared, first_position);
  return out;
}

}  // namespace moh
