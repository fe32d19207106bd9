// The op API: every tensor op, declared once, implemented by core/cpu/ and core/cuda/.
// Conventions (all ops):
//  - Inputs may be non-contiguous or broadcast views; outputs are new contiguous tensors unless
//    the name ends in `_` (in place, writes into its first argument).
//  - No implicit type promotion: tensor operands share one dtype (index tensors are int64,
//    masks are bool); a mismatch throws moh::Error naming the op, the shapes, dtypes and devices.
//  - All tensor operands live on one device; the result lives there too.
//  - `dim` arguments may be negative (counted from the end).
// Math ops (exp, softmax, norms, ...) accept float32/float64 (the CUDA backend adds bf16/fp16);
// add/sub/mul/div/neg/comparisons/where/clamp/maximum/minimum also accept int32/int64.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/math/conv_geometry.h"
#include "core/random.h"
#include "core/tensor.h"

namespace moh {

// ---------------------------------------------------------------- elementwise (broadcasting)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);

// Comparisons return bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor logical_not(const Tensor& mask);  // bool -> bool

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
enum class GeluApprox { None, Tanh };  // erf form (exact) or tanh approximation
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
Tensor silu(const Tensor& x);
// Fused derivatives: grad_out * f'(x).
Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, GeluApprox approx = GeluApprox::None);
Tensor silu_backward(const Tensor& grad_out, const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
// where(cond, a, b): a where cond is true, else b; all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// In place (self must be a writable, non-broadcast tensor; other broadcasts to self).
void add_(Tensor& self, const Tensor& other, double alpha = 1.0);  // self += alpha * other
void mul_(Tensor& self, double value);
void mul_(Tensor& self, const Tensor& other);
void fill_(Tensor& self, double value);
void zero_(Tensor& self);

// ---------------------------------------------------------------- reductions
// Empty `dims` reduces over all dims. Result dtype = input dtype (argmax: int64).
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Variance with Bessel-style `correction` (1 = unbiased, 0 = population).
Tensor variance(const Tensor& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
                bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
// Sums a broadcast gradient back to `shape` (the reverse of expand); used by autograd.
Tensor sum_to_shape(const Tensor& x, const Shape& shape);

// ---------------------------------------------------------------- softmax
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim);      // out = softmax(x)
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim);  // out = log_softmax(x)

// ---------------------------------------------------------------- normalisation (last dim)
struct NormForward {
  Tensor out;
  Tensor mean;  // [rows] (layer_norm only), the input dtype (float32 for 16-bit inputs)
  Tensor rstd;  // [rows], like mean; rows = numel / last dim: 1-D, flattened over all leading dims
};
struct NormBackward {
  Tensor grad_x;
  Tensor grad_weight;  // undefined when no weight
  Tensor grad_bias;    // undefined when no bias
};
// weight/bias may be undefined Tensors (no affine); when given they have shape [last dim].
NormForward layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
NormBackward layer_norm_backward(const Tensor& grad_out, const Tensor& x, const NormForward& saved,
                                 const Tensor& weight, bool has_bias);
NormForward rms_norm(const Tensor& x, const Tensor& weight, double eps);
NormBackward rms_norm_backward(const Tensor& grad_out, const Tensor& x, const NormForward& saved,
                               const Tensor& weight);
// group_norm (channels second, as torch.nn.GroupNorm): x [N, C, ...] with groups dividing C; each
// sample's group of C / groups channels is normalised over its values (with the trailing dims), then
// scaled and shifted per channel by weight [C] and bias [C] (either may be undefined). Saved mean and
// rstd are [N * groups]. Fused: one pass for the statistics and one for the output; the backward reads
// its inputs twice. grad_weight / grad_bias are summed over samples in a fixed order (the same bits for
// any thread count).
NormForward group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps);
NormBackward group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const NormForward& saved,
                                 const Tensor& weight, bool has_bias);

// ---------------------------------------------------------------- matmul (BLAS)
// a [..., M, K] @ b [..., K, N] -> [..., M, N]; batch dims broadcast; 1-D operands are not
// accepted (unsqueeze them). Transposed views are passed to BLAS without copying.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);  // strictly [B, M, K] @ [B, K, N]
// bias + a @ b, bias broadcasting to the [..., M, N] result (a Linear's [N] bias): the bias is
// written first and the GEMM accumulates onto it, one pass over the output instead of three.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------- embedding
// weight [V, D], indices int64 of any shape -> [..., D]. Out-of-range indices throw.
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Scatter-add of grad_out [..., D] into a [num_rows, D] gradient (deterministic order).
Tensor embedding_backward(const Tensor& grad_out, const Tensor& indices, int64_t num_rows);

// ---------------------------------------------------------------- cross entropy
enum class Reduction { Mean, Sum, None };
struct CrossEntropyForward {
  Tensor loss;  // 0-d for Mean/Sum, [N] for None
  Tensor lse;   // [N] log-sum-exp of each row, saved for backward (float32 for 16-bit logits)
};
// logits [N, C], target int64 [N]. Mean divides by the count of targets != ignore_index.
CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing = 0.0,
                                  int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);
// grad_loss has the shape of the forward loss. Returns d loss / d logits [N, C].
Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                              const Tensor& lse, double label_smoothing = 0.0, int64_t ignore_index = -100,
                              Reduction reduction = Reduction::Mean);

// ---------------------------------------------------------------- indexing
struct TopK {
  Tensor values;
  Tensor indices;  // int64
};
// Along the last dim; ties go to the lower index; sorted (largest first when largest).
TopK topk(const Tensor& x, int64_t k, bool largest = true);
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = DType::Int64);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// Copy of x with src written at index along dim (scatter) or added there (scatter_add).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);  // index: 1-D int64
// Copy of x with src slices added at positions index along dim.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// The backward of index_select: index_add into zeros whose dim `dim` has `size` entries (no zero tensor
// copied); grad's dim `dim` has index.numel() entries.
Tensor index_select_backward(const Tensor& grad, int64_t dim, const Tensor& index, int64_t size);

// ---------------------------------------------------------------- joining and splitting
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim);  // views
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim);

// ---------------------------------------------------------------- dropout
struct DropoutForward {
  Tensor out;
  Tensor mask;  // bool, true = kept
};
// Zeroes each element with probability p and scales the rest by 1/(1-p), drawing the mask from
// the Philox stream (the same seed and offset give the same mask on every device).
DropoutForward dropout(const Tensor& x, double p, Generator& gen);

// ---------------------------------------------------------------- attention
// Scaled dot-product attention, computed in query x key blocks with an online softmax, so no
// [Tq, Tk] score matrix of all heads exists at once. q [B, H, Tq, D], k [B, Hkv, Tk, D],
// v [B, Hkv, Tk, Dv] with any strides but a unit stride on the last dim (views of a fused qkv
// projection need no copy). causal: query i attends keys j <= i + (Tk - Tq).
// Grouped-query attention: Hkv must divide H; query head h reads K/V head h / (H / Hkv) (the
// LLaMA/HF repeat_kv order: heads [0, H / Hkv) share K/V head 0), read in place, never repeated.
// The backward's grad_k / grad_v have Hkv heads, each the sum over the query heads that read it,
// summed in ascending head order (deterministic, the same bits for any thread count).
struct AttentionForward {
  Tensor out;  // [B, H, Tq, Dv] view of memory laid out [B, Tq, H, Dv]: out.permute({0, 2, 1, 3}) is contiguous
  Tensor lse;  // [B, H, Tq] log-sum-exp of each query's scaled scores, saved for backward (float32 for 16-bit q)
};
struct AttentionBackward {
  Tensor grad_q, grad_k, grad_v;  // shapes of q, k, v
};
AttentionForward attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal);
AttentionBackward attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionForward& saved, double scale, bool causal);

// Packed queries (MoH sparse mode): group g = h * B + b (head-major, so one head's rows are
// contiguous across the batch) owns the rows [row_offsets[g], row_offsets[g + 1]) of q_rows [R, D];
// row r is the token at sequence position q_pos[r] (int64), which the causal mask uses
// (keys j <= q_pos[r]). k, v as for attention(); row_offsets and q_pos live on q_rows' device.
// `heads` is the number of query heads H (row_offsets has H * B + 1 entries); 0 means Hkv, one query
// head per K/V head. Hkv must divide H; query head h reads K/V head h / (H / Hkv), as for attention().
// Returns out [R, Dv] and lse [R]; the backward returns grad_q [R, D] and grad_k/grad_v like k/v.
AttentionForward attention_packed(const Tensor& q_rows, const Tensor& row_offsets, const Tensor& q_pos,
                                  const Tensor& k, const Tensor& v, double scale, bool causal, int64_t heads = 0);
AttentionBackward attention_packed_backward(const Tensor& grad_out, const Tensor& q_rows, const Tensor& row_offsets,
                                            const Tensor& q_pos, const Tensor& k, const Tensor& v,
                                            const AttentionForward& saved, double scale, bool causal,
                                            int64_t heads = 0);

// ---------------------------------------------------------------- grouped row projections
// Per-group linear maps over gathered/scattered rows: the query and output projections of MoH's
// sparse mode, where group g is one routed head and its rows are the tokens that selected it.
// Group g owns rows [offsets[g], offsets[g + 1]) (offsets int64 [G + 1], non-decreasing, ending at
// R); index int64 [R] names the token row each packed row belongs to. w [G, Dout, Din] may be any
// strided view with a unit last stride (e.g. a slice of a fused weight).
//
// gather_linear: out[r] = x[index[r]] @ w[g]^T (+ bias[g]) -> [R, Dout]; x [N, Din], bias [G, Dout].
Tensor gather_linear(const Tensor& x, const Tensor& index, const Tensor& offsets, const Tensor& w,
                     const Tensor& bias);
struct GroupedLinearBackward {
  Tensor grad_input;   // gather_linear: [N, Din] (scatter-added); scatter_linear: [R, Din]
  Tensor grad_weight;  // [G, Dout, Din]
  Tensor grad_bias;    // [G, Dout] when a bias was given
};
GroupedLinearBackward gather_linear_backward(const Tensor& grad_out, const Tensor& x, const Tensor& index,
                                             const Tensor& offsets, const Tensor& w, bool has_bias);
// scatter_linear: out [num_rows, Dout], zero except out[index[r]] += src[r] @ w[g]^T; src [R, Din].
// Accumulation into a row shared by several groups happens in packed-row order (deterministic).
Tensor scatter_linear(const Tensor& src, const Tensor& index, const Tensor& offsets, const Tensor& w,
                      int64_t num_rows);
GroupedLinearBackward scatter_linear_backward(const Tensor& grad_out, const Tensor& src, const Tensor& index,
                                              const Tensor& offsets, const Tensor& w);

// gate_rows: MoH's gated attention rows in one pass. rows [R, D] (row r: the output of (token, head) pair
// index[r]), gates [P] (one per pair), index [R] int64, distinct values in [0, P):
//   scatter false: out [R, D], out[r] = rows[r] * gates[index[r]];
//   scatter true:  out [P, D], out[index[r]] = rows[r] * gates[index[r]], every other row zero (the
//                  dense output projection's input, unselected pairs as zero rows).
// The backward gives grad_rows [R, D] and grad_gates [P]: for row r, the dot of its upstream row with
// rows[r] at index[r], zero at pairs no row names. float32/float64, and bfloat16/float16 on CUDA (computed
// in float32); results do not depend on the thread count.
Tensor gate_rows(const Tensor& rows, const Tensor& gates, const Tensor& index, bool scatter);
struct GateRowsBackward {
  Tensor grad_rows;   // [R, D]
  Tensor grad_gates;  // [P]
};
GateRowsBackward gate_rows_backward(const Tensor& grad_out, const Tensor& rows, const Tensor& gates,
                                    const Tensor& index, bool scatter);

// ---------------------------------------------------------------- MoH routing
// The learned MoH router of every token in one pass (layers/moh_routing.h has the formulas):
// logits [N, C] are the token's [E router | hs shared-gate (only when hs > 1) | 2 stage-gate (only
// when hs > 0)] columns, E = heads - shared, 1 <= topk <= E <= 128, shared <= 128. Per token:
// p = softmax(router), the top-k heads of p (NaN first, ties to the lower index), r = topk * p*m / max(sum(p*m), eps),
// gates = r (shared == 0) or [a0 * s, a1 * r] with s = hs * softmax(shared) (1 when hs == 1) and
// a = 2 * softmax(stage). A token's results do not depend on the others or on the thread count.
struct MoHRoute {
  Tensor gates;  // [N, heads]
  Tensor probs;  // [N, E] p
  Tensor mask;   // [N, E] 1 where selected, else 0 (the logits' dtype)
  Tensor topk;   // [N, topk] int64 selected routed heads, ascending
};
MoHRoute moh_route(const Tensor& logits, int64_t heads, int64_t shared, int64_t topk, double eps);
// d logits from d gates [N, heads] and d probs [N, E] (either undefined: zero); the clamp at eps passes
// the gradient where the sum is >= eps. Recomputes the routing from the logits.
Tensor moh_route_backward(const Tensor& grad_gates, const Tensor& grad_probs, const Tensor& logits, int64_t heads,
                          int64_t shared, int64_t topk, double eps);

// pack_head_rows: the active (token, head) pairs of MoH's sparse execution, grouped by head h in [0, heads),
// then by batch element, tokens ascending inside a group, computed on topk's device (no host read but the
// selection's check). topk [N, K] int64 holds each token's K distinct routed heads in [0, heads - shared),
// in any order (K == 0: every head shared, shared == heads); N = batch * T tokens, token i = b * T + t.
// Every token uses the shared heads [0, shared) and, for each id e of its row, head shared + e. Row r of
// the R = N * (shared + K) rows is token token_index[r] at position q_pos[r] = first_position + t
// (first_position: the cached positions before these tokens when decoding), and pair_index[r] =
// token * heads + h indexes a flat [N * heads] array. The offsets are exact prefix sums of the group
// sizes, so the result is the same on every device.
struct HeadRows {
  Tensor token_index;   // [R] int64
  Tensor q_pos;         // [R] int64
  Tensor pair_index;    // [R] int64
  Tensor row_offsets;   // [heads * batch + 1] int64, group g = h * batch + b (attention_packed's order)
  Tensor head_offsets;  // [heads + 1] int64 (gather_linear / scatter_linear groups)
};
HeadRows pack_head_rows(const Tensor& topk, int64_t batch, int64_t heads, int64_t shared,
                        int64_t first_position = 0);

// ---------------------------------------------------------------- image resampling (NCHW)
// x [N, C, H, W] of a math float dtype, H and W >= 1 (N, C may be 0). Each output element of the
// forward and each input element of the backward is computed by one thread in a fixed order, so
// results do not depend on the thread count (no atomics).
// upsample_nearest2d: [N, C, H * scale, W * scale], y[n, c, i, j] = x[n, c, i / scale, j / scale]
// (PyTorch's nn.Upsample(scale_factor=scale, mode="nearest") for an integer scale >= 1).
Tensor upsample_nearest2d(const Tensor& x, int64_t scale);
// grad_out [N, C, H * scale, W * scale] -> [N, C, H, W]: the sum of each scale x scale block.
Tensor upsample_nearest2d_backward(const Tensor& grad_out, int64_t scale);
// avg_pool2d: no padding, floor mode, as torch.nn.functional.avg_pool2d(x, kernel, stride):
// [N, C, (H - kernel) / stride + 1, (W - kernel) / stride + 1], each the mean of its kernel x kernel
// window; kernel, stride >= 1 and kernel <= H, W.
Tensor avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride);
// grad_x of input_shape: each input element sums grad_out / kernel^2 over the windows covering it
// (overlapping windows when stride < kernel; none when stride > kernel leaves it uncovered: 0).
Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, int64_t kernel, int64_t stride);

// ---------------------------------------------------------------- convolution (NCHW)
// conv2d: x [N, C, H, W], weight [O, C / groups, KH, KW], bias [O] or undefined -> [N, O, HO, WO]
// (sizes: core/math/conv_geometry.h), cross-correlation with zero padding as torch's conv2d; groups
// divides C and O. float32/float64 on both backends (the CUDA backend adds bfloat16/float16).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params);
struct Conv2dBackward {
  Tensor grad_input;   // [N, C, H, W] when asked for
  Tensor grad_weight;  // [O, C / groups, KH, KW] when asked for
  Tensor grad_bias;    // [O] when asked for
};
struct Conv2dGrads {  // which gradients conv2d_backward computes
  bool input = true, weight = true, bias = true;
};
// The same bits run to run at a given thread count. On the CPU, float32 weight and bias gradients
// (oneDNN) change in the last bits with the thread count; float64 batch sums run in chunks in an
// order set by the shape (docs/conv.md says what else can depend on the thread count).
Conv2dBackward conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                               const Conv2dParams& params, Conv2dGrads wanted = {});

// ---------------------------------------------------------------- threading
// Sets the one OpenMP pool that ops and OpenBLAS share.
void set_num_threads(int threads);
int num_threads();
// The OpenBLAS kernel set picked for this CPU at load time (e.g. "Haswell"; OPENBLAS_CORETYPE overrides).
std::string blas_core_name();

}  // namespace moh
