// oneDNN float32 convolutions (see core/cpu/conv_onednn.h). A Plan is one primitive plus, per
// operand, the caller's plain layout (NCHW, OIHW / GOIHW, [O]) and the primitive's, with the reorder
// between them when they differ. Plans are cached by problem in a mutex-guarded map (built once, read
// many times; a problem oneDNN cannot run is cached as null). One engine serves the process; each
// calling thread has its own stream (a stream is not safe to share between threads executing at once).
// Scratch (reordered operands, oneDNN's scratchpad) comes from the tensor allocator per call, so a
// cached primitive may run on several threads at once (user scratchpad mode).
#include "core/cpu/conv_onednn.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/ops.h"

namespace moh::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

enum class Direction { Forward, BackwardData, BackwardWeights };

// Everything a primitive depends on. oneDNN fixes its thread split when the primitive is built, so
// the thread count is part of the problem.
struct Problem {
  Direction direction;
  int64_t n, c, h, w, o, kh, kw;
  Conv2dParams p;
  bool bias;
  int threads;

  auto key() const {
    return std::tuple(int(direction), n, c, h, w, o, kh, kw, p.stride_h, p.stride_w, p.pad_h, p.pad_w,
                      p.dilation_h, p.dilation_w, p.groups, bias, threads);
  }
};

using ProblemKey = decltype(std::declval<Problem>().key());

Problem problem(Direction direction, const ConvGeometry& g, bool bias) {
  return {direction, g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.p, bias, num_threads()};
}

const dnnl::engine& engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

// One argument of a primitive: user (the caller's layout) and inner (the primitive's); `reorder`
// converts user -> inner for an input, inner -> user for an output, and is empty when they agree.
struct Slot {
  int arg;
  bool output;
  memory::desc user, inner;
  dnnl::reorder reorder;
};

struct Plan {
  dnnl::primitive primitive;
  std::vector<Slot> slots;
  memory::desc scratchpad;
};

Slot slot(int arg, bool output, const memory::desc& user, const memory::desc& inner) {
  Slot s{arg, output, user, inner, {}};
  if (user != inner)
    s.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), inner, engine(), user))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), inner));
  return s;
}

// The problem in oneDNN's terms: user layouts, and the geometry vectors every descriptor takes.
struct Shapes {
  memory::desc src, weights, bias, dst;  // plain layouts
  memory::dims src_dims, weights_dims, dst_dims, strides, dilates, pad_l, pad_r;

  explicit Shapes(const ConvGeometry& g) {
    src_dims = {g.n, g.c, g.h, g.w};
    dst_dims = {g.n, g.o, g.ho, g.wo};
    const bool grouped = g.groups > 1;
    weights_dims = grouped ? memory::dims{g.groups, g.og, g.cg, g.kh, g.kw} : memory::dims{g.o, g.c, g.kh, g.kw};
    src = memory::desc(src_dims, memory::data_type::f32, Tag::nchw);
    dst = memory::desc(dst_dims, memory::data_type::f32, Tag::nchw);
    weights = memory::desc(weights_dims, memory::data_type::f32, grouped ? Tag::goihw : Tag::oihw);
    bias = memory::desc({g.o}, memory::data_type::f32, Tag::x);
    strides = {g.p.stride_h, g.p.stride_w};
    dilates = {g.p.dilation_h - 1, g.p.dilation_w - 1};  // oneDNN counts the gaps
    pad_l = {g.p.pad_h, g.p.pad_w};
    // The high-side padding that makes oneDNN's output size the floor one (negative when the last
    // input rows are never reached).
    pad_r = {(g.ho - 1) * g.p.stride_h + (g.kh - 1) * g.p.dilation_h + 1 - g.h - g.p.pad_h,
             (g.wo - 1) * g.p.stride_w + (g.kw - 1) * g.p.dilation_w + 1 - g.w - g.p.pad_w};
  }
  memory::desc any(const memory::dims& dims) const { return {dims, memory::data_type::f32, Tag::any}; }
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(const Shapes& s, bool bias) {
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             s.any(s.src_dims), s.any(s.weights_dims),
                                             bias ? s.bias : memory::desc(), s.any(s.dst_dims), s.strides,
                                             s.dilates, s.pad_l, s.pad_r);
  return {desc, user_scratchpad(), engine()};
}

Plan build_plan(const ConvGeometry& g, Direction direction, bool bias) {
  const Shapes s(g);
  switch (direction) {
    case Direction::Forward: {
      const auto pd = forward_pd(s, bias);
      Plan plan{dnnl::convolution_forward(pd),
                {slot(DNNL_ARG_SRC, false, s.src, pd.src_desc()),
                 slot(DNNL_ARG_WEIGHTS, false, s.weights, pd.weights_desc()),
                 slot(DNNL_ARG_DST, true, s.dst, pd.dst_desc())},
                pd.scratchpad_desc()};
      if (bias) plan.slots.push_back(slot(DNNL_ARG_BIAS, false, s.bias, s.bias));
      return plan;
    }
    case Direction::BackwardData: {
      const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, s.any(s.src_dims),
                                                       s.any(s.weights_dims), s.any(s.dst_dims), s.strides,
                                                       s.dilates, s.pad_l, s.pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), engine(),
                                                               forward_pd(s, false));
      return {dnnl::convolution_backward_data(pd),
              {slot(DNNL_ARG_DIFF_DST, false, s.dst, pd.diff_dst_desc()),
               slot(DNNL_ARG_WEIGHTS, false, s.weights, pd.weights_desc()),
               slot(DNNL_ARG_DIFF_SRC, true, s.src, pd.diff_src_desc())},
              pd.scratchpad_desc()};
    }
    case Direction::BackwardWeights: {
      const dnnl::convolution_backward_weights::desc desc(
          dnnl::algorithm::convolution_direct, s.any(s.src_dims), s.any(s.weights_dims),
          bias ? s.bias : memory::desc(), s.any(s.dst_dims), s.strides, s.dilates, s.pad_l, s.pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), engine(),
                                                                  forward_pd(s, bias));
      Plan plan{dnnl::convolution_backward_weights(pd),
                {slot(DNNL_ARG_DIFF_DST, false, s.dst, pd.diff_dst_desc()),
                 slot(DNNL_ARG_SRC, false, s.src, pd.src_desc()),
                 slot(DNNL_ARG_DIFF_WEIGHTS, true, s.weights, pd.diff_weights_desc())},
                pd.scratchpad_desc()};
      if (bias) plan.slots.push_back(slot(DNNL_ARG_DIFF_BIAS, true, s.bias, s.bias));
      return plan;
    }
  }
  MOH_FAIL("conv2d (oneDNN): unknown direction");
}

// The cached plan of a problem; null when oneDNN has no implementation for it.
std::shared_ptr<const Plan> plan_for(const ConvGeometry& g, Direction direction, bool bias) {
  static std::mutex mutex;
  static std::map<ProblemKey, std::shared_ptr<const Plan>> cache;
  const auto key = problem(direction, g, bias).key();
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::shared_ptr<const Plan> plan;
  try {
    plan = std::make_shared<const Plan>(build_plan(g, direction, bias));
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented) MOH_FAIL("conv2d (oneDNN): building the primitive failed: ", e.what());
  }
  cache.emplace(key, plan);
  return plan;
}

// Scratch bytes from the tensor allocator (float32 elements, so 4-byte granular).
Tensor scratch_bytes(size_t bytes) { return Tensor::empty({int64_t((bytes + 3) / 4)}, DType::Float32, Device::cpu()); }

// Runs the plan on the callers' buffers, given in the order of plan.slots.
void execute(const Plan& plan, const std::vector<const Tensor*>& operands) {
  MOH_CHECK(operands.size() == plan.slots.size(), "conv2d (oneDNN): ", operands.size(), " operands for ",
            plan.slots.size(), " slots");
  try {
    dnnl::stream& s = stream();
    std::unordered_map<int, memory> args;
    std::vector<Tensor> buffers;  // alive until the stream has finished
    std::vector<std::pair<const Slot*, std::pair<memory, memory>>> write_back;  // inner -> user
    for (size_t i = 0; i < operands.size(); ++i) {
      const Slot& sl = plan.slots[i];
      memory user(sl.user, engine(), operands[i]->data<float>());
      if (!sl.reorder) {
        args.emplace(sl.arg, user);
        continue;
      }
      buffers.push_back(scratch_bytes(sl.inner.get_size()));
      memory inner(sl.inner, engine(), buffers.back().data<float>());
      if (sl.output)
        write_back.push_back({&sl, {inner, user}});
      else
        sl.reorder.execute(s, user, inner);
      args.emplace(sl.arg, inner);
    }
    if (plan.scratchpad.get_size() > 0) {
      buffers.push_back(scratch_bytes(plan.scratchpad.get_size()));
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, engine(), buffers.back().data<float>()));
    }
    plan.primitive.execute(s, args);
    for (auto& [sl, mems] : write_back) sl->reorder.execute(s, mems.first, mems.second);
    s.wait();
  } catch (const dnnl::error& e) {
    MOH_FAIL("conv2d (oneDNN): executing the primitive failed: ", e.what());
  }
}

}  // namespace

bool onednn_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                           const Tensor& out) {
  const ConvGeometry g = conv_geometry(x.shape(), weight.shape(), params);
  const auto plan = plan_for(g, Direction::Forward, bias.defined());
  if (!plan) return false;
  if (bias.defined())
    execute(*plan, {&x, &weight, &out, &bias});
  else
    execute(*plan, {&x, &weight, &out});
  return true;
}

bool onednn_conv2d_backward_data(const Tensor& grad_out, const Tensor& weight, const Conv2dParams& params,
                                 const Tensor& grad_input) {
  const ConvGeometry g = conv_geometry(grad_input.shape(), weight.shape(), params);
  const auto plan = plan_for(g, Direction::BackwardData, false);
  if (!plan) return false;
  execute(*plan, {&grad_out, &weight, &grad_input});
  return true;
}

bool onednn_conv2d_backward_weights(const Tensor& grad_out, const Tensor& x, const Conv2dParams& params,
                                    const Tensor& grad_weight, const Tensor& grad_bias) {
  const ConvGeometry g = conv_geometry(x.shape(), grad_weight.shape(), params);
  const auto plan = plan_for(g, Direction::BackwardWeights, grad_bias.defined());
  if (!plan) return false;
  if (grad_bias.defined())
    execute(*plan, {&grad_out, &x, &grad_weight, &grad_bias});
  else
    execute(*plan, {&grad_out, &x, &grad_weight});
  return true;
}

}  // namespace moh::cpu
