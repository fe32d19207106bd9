// The tape engine. Non-leaf gradients live in per-backward slots indexed by the output slot ids
// handed out at record time; a leaf's gradient is final once the backward walk has run the
// first node (in forward order) that consumed it, which is recorded when the leaf first appears.
// Each tape has a process-unique generation so stale non-leaves (from a cleared tape) are caught.
#include "autograd/tape.h"

#include <atomic>
#include <chrono>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "autograd/profile.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh::ag {
namespace {

struct Edge {
  int64_t slot = -1;  // non-leaf input requiring grad: its gradient slot
  int64_t leaf = -1;  // leaf input requiring grad: index into Tape::leaves
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
  bool needs_grad() const { return slot >= 0 || leaf >= 0; }
};

struct OutputMeta {
  int64_t slot = -1;  // -1: a non-floating output (no gradient)
  Shape shape;
  DType dtype;
  Device device;
};

struct Node {
  const char* op;
  std::vector<Edge> inputs;
  std::vector<OutputMeta> outputs;
  std::vector<int64_t> finalizes;  // leaves first consumed here: final once this node has run
  BackwardFn backward;
  const char* phase = nullptr;  // the profiler's phase open when recorded (profile.h)
};

std::atomic<uint64_t> next_generation{1};

struct Tape {
  uint64_t generation = next_generation.fetch_add(1);
  int64_t num_slots = 0;
  std::vector<Node> nodes;
  std::vector<std::shared_ptr<detail::VariableImpl>> leaves;
  std::unordered_map<const detail::VariableImpl*, int64_t> leaf_index;
};

thread_local Tape tape;
thread_local bool enabled = true;

// A buffer nobody else can see: safe to accumulate into in place.
bool owned(const Tensor& t) {
  return t.is_contiguous() && t.storage().use_count() == 1 && t.nbytes() == t.storage()->nbytes();
}

bool writable(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[size_t(d)] == 0 && t.shape()[size_t(d)] > 1) return false;
  return true;
}

void accumulate(Tensor& acc, Tensor g) {
  if (!acc.defined()) {
    acc = std::move(g);
  } else if (owned(acc)) {
    add_(acc, g);
  } else {
    acc = moh::add(acc, g);
  }
}

// Adds this backward's gradient into the leaf's .grad and fires its hooks.
void finalize_leaf(const std::shared_ptr<detail::VariableImpl>& impl, Tensor g) {
  if (!g.defined()) return;
  if (!impl->grad.defined()) {
    impl->grad = owned(g) ? std::move(g) : g.clone();
  } else if (writable(impl->grad)) {
    add_(impl->grad, g);
  } else {
    impl->grad = moh::add(impl->grad, g);
  }
  Variable handle(impl);
  const size_t num_hooks = impl->hooks.size();  // hooks added by a hook wait for the next backward
  for (size_t i = 0; i < num_hooks; ++i) impl->hooks[i](handle);
}

void run_node(Node& node, std::vector<Tensor>& slots, std::vector<Tensor>& pending) {
  std::vector<Tensor> grad_outputs(node.outputs.size());
  bool reached = false;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].slot < 0) continue;
    grad_outputs[i] = std::move(slots[size_t(node.outputs[i].slot)]);
    reached = reached || grad_outputs[i].defined();
  }
  if (!reached) return;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const OutputMeta& meta = node.outputs[i];
    if (!grad_outputs[i].defined()) grad_outputs[i] = zeros(meta.shape, meta.dtype, meta.device);
  }
  Needs needs(node.inputs.size());
  for (size_t j = 0; j < node.inputs.size(); ++j) needs[j] = node.inputs[j].needs_grad();

  std::vector<Tensor> grads = node.backward(grad_outputs, needs);
  grad_outputs.clear();
  MOH_CHECK(grads.size() == node.inputs.size(), "backward of ", node.op, ": the closure returned ",
            grads.size(), " gradients for ", node.inputs.size(), " inputs");
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    const Edge& edge = node.inputs[j];
    if (!edge.needs_grad() || !grads[j].defined()) continue;
    Tensor g = std::move(grads[j]);
    MOH_CHECK(g.dtype() == edge.dtype && g.device() == edge.device, "backward of ", node.op,
              ": gradient for input ", j, " is ", describe(g), ", expected ", dtype_name(edge.dtype), " on ",
              edge.device);
    if (g.shape() != edge.shape) {
      try {
        g = sum_to_shape(g, edge.shape);
      } catch (const Error& e) {
        MOH_FAIL("backward of ", node.op, ": gradient for input ", j, " has shape ", shape_str(g.shape()),
                 ", which does not reduce to the input shape ", shape_str(edge.shape), " (", e.what(), ")");
      }
    }
    accumulate(edge.slot >= 0 ? slots[size_t(edge.slot)] : pending[size_t(edge.leaf)], std::move(g));
  }
}

}  // namespace

bool grad_enabled() { return enabled; }

NoGradGuard::NoGradGuard() : previous_(enabled) { enabled = false; }
NoGradGuard::~NoGradGuard() { enabled = previous_; }

GradModeGuard::GradModeGuard(bool on) : previous_(enabled) { enabled = on; }
GradModeGuard::~GradModeGuard() { enabled = previous_; }

bool should_record(const std::vector<Variable>& inputs) {
  if (!enabled) return false;
  for (const Variable& v : inputs)
    if (v.defined() && v.requires_grad()) return true;
  return false;
}

std::vector<Variable> record_multi(const char* op, std::vector<Tensor> outputs,
                                   const std::vector<Variable>& inputs, BackwardFn backward) {
  std::vector<Variable> result;
  result.reserve(outputs.size());
  if (!should_record(inputs)) {
    for (Tensor& t : outputs) result.emplace_back(std::move(t));
    return result;
  }
  for (const Variable& v : inputs) {  // before touching the tape
    MOH_CHECK(
        !v.defined() || !v.requires_grad() || v.impl()->generation == 0 ||
            v.impl()->generation == tape.generation,
        op, ": input ", v.describe(),
        " was computed on a tape that has been cleared since (backward or clear_tape ran) or on another "
        "thread; detach() it or recompute it");
  }
  for (const Tensor& t : outputs) MOH_CHECK(t.defined(), op, ": undefined output");
  const PhaseProfiler* profiler = active_profiler();
  Node node{op, {}, {}, {}, std::move(backward), profiler ? profiler->open_phase() : nullptr};
  node.inputs.resize(inputs.size());
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Variable& v = inputs[j];
    if (!v.defined() || !v.requires_grad()) continue;
    const detail::VariableImpl& impl = *v.impl();
    Edge& edge = node.inputs[j];
    if (impl.generation == 0) {
      auto [it, inserted] = tape.leaf_index.try_emplace(&impl, int64_t(tape.leaves.size()));
      if (inserted) {
        tape.leaves.push_back(v.impl());
        node.finalizes.push_back(it->second);
      }
      edge.leaf = it->second;
    } else {
      edge.slot = impl.slot;
    }
    edge.shape = impl.data.shape();
    edge.dtype = impl.data.dtype();
    edge.device = impl.data.device();
  }
  for (Tensor& t : outputs) {
    OutputMeta meta{-1, t.shape(), t.dtype(), t.device()};
    Variable out(std::move(t));
    if (is_floating(meta.dtype)) {
      meta.slot = tape.num_slots++;
      out.impl()->requires_grad = true;
      out.impl()->generation = tape.generation;
      out.impl()->slot = meta.slot;
    }
    node.outputs.push_back(std::move(meta));
    result.push_back(std::move(out));
  }
  tape.nodes.push_back(std::move(node));
  return result;
}

Variable record(const char* op, Tensor output, const std::vector<Variable>& inputs, BackwardFn1 backward) {
  if (!should_record(inputs)) return Variable(std::move(output));
  BackwardFn fn = [backward = std::move(backward)](const std::vector<Tensor>& grads, const Needs& needs) {
    return backward(grads[0], needs);
  };
  return record_multi(op, {std::move(output)}, inputs, std::move(fn))[0];
}

void backward(const Variable& loss, Tensor grad_out) {
  MOH_CHECK(loss.defined(), "backward: undefined loss Variable");
  const detail::VariableImpl& impl = *loss.impl();
  MOH_CHECK(impl.requires_grad, "backward: ", loss.describe(),
            " does not require grad (nothing it was computed from requires grad, or it was computed under "
            "NoGradGuard)");
  if (!grad_out.defined()) {
    MOH_CHECK(impl.data.numel() == 1, "backward: ", loss.describe(),
              " is not a 1-element tensor; pass grad_out for a non-scalar output");
    grad_out = ones(impl.data.shape(), impl.data.dtype(), impl.data.device());
  } else {
    MOH_CHECK(grad_out.shape() == impl.data.shape() && grad_out.dtype() == impl.data.dtype() &&
                  grad_out.device() == impl.data.device(),
              "backward: grad_out ", describe(grad_out), " does not match ", loss.describe());
  }
  MOH_CHECK(impl.generation == 0 || impl.generation == tape.generation, "backward: the graph of ",
            loss.describe(), " was already freed (backward or clear_tape ran since it was computed)");

  Tape local = std::move(tape);
  tape = Tape();
  NoGradGuard no_grad;  // closures and hooks record nothing
  if (impl.generation == 0) {
    finalize_leaf(loss.impl(), std::move(grad_out));
    return;
  }
  std::vector<Tensor> slots(size_t(local.num_slots));
  std::vector<Tensor> pending(local.leaves.size());
  slots[size_t(impl.slot)] = std::move(grad_out);
  PhaseProfiler* profiler = active_profiler();
  if (profiler) profiler->charge_forward();
  while (!local.nodes.empty()) {
    const auto start = profiler ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Node& node = local.nodes.back();
    run_node(node, slots, pending);
    for (int64_t leaf : node.finalizes)
      finalize_leaf(local.leaves[size_t(leaf)], std::move(pending[size_t(leaf)]));
    const char* phase = node.phase;
    local.nodes.pop_back();  // frees the saved tensors now
    if (profiler) profiler->add_backward(phase, start);
  }
  if (profiler) profiler->skip_to_now();
}

void clear_tape() { tape = Tape(); }

size_t tape_size() { return tape.nodes.size(); }

}  // namespace moh::ag
