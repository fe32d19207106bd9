// Data-parallel gradient synchronisation (see data_parallel.h).
#include "trainers/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/moh_routing.h"
#include "trainers/config_schema.h"

namespace moh {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A flat buffer of consecutive gradients (one dtype) all-reduced as one collective.
struct Bucket {
  Tensor flat;
  std::vector<size_t> params;  // indices into State::params, in backward order
  int64_t ready = 0;           // params whose gradient is in `flat` this step
  dist::WorkPtr work;
};

}  // namespace

struct DataParallel::State {
  Module& model;
  dist::Communicator& comm;
  DataParallelOptions opt;
  std::vector<ag::Variable> params;
  std::vector<size_t> bucket_of;
  std::vector<int64_t> offset_of;
  std::vector<bool> ready;
  std::vector<Bucket> buckets;
  size_t next_launch = 0;
  bool sync = false;
  double comm_at_start = 0;
  DataParallelStats stats;

  State(Module& m, dist::Communicator& c, DataParallelOptions o) : model(m), comm(c), opt(o) {}

  Tensor slice(size_t i) {
    const Bucket& b = buckets[bucket_of[i]];
    return b.flat.narrow(0, offset_of[i], params[i].numel()).view(params[i].shape());
  }

  // Reverse registration order, a new bucket when the dtype changes or the size cap is reached.
  void build_buckets() {
    const auto named = model.named_parameters();
    for (auto it = named.rbegin(); it != named.rend(); ++it)
      if (it->second.requires_grad()) params.push_back(it->second);
    const double cap = opt.bucket_mb * double(1 << 20);
    std::vector<std::vector<size_t>> groups;
    double bytes = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const double size = double(params[i].data().nbytes());
      if (groups.empty() || bytes + size > cap || params[i].dtype() != params[groups.back()[0]].dtype()) {
        if (groups.empty() || !groups.back().empty()) groups.emplace_back();
        bytes = 0;
      }
      groups.back().push_back(i);
      bytes += size;
    }
    bucket_of.resize(params.size());
    offset_of.resize(params.size());
    ready.assign(params.size(), false);
    for (const std::vector<size_t>& group : groups) {
      Bucket b;
      int64_t n = 0;
      for (size_t i : group) {
        bucket_of[i] = buckets.size();
        offset_of[i] = n;
        n += params[i].numel();
      }
      b.flat = zeros({n}, params[group[0]].dtype(), params[group[0]].device());
      b.params = group;
      buckets.push_back(std::move(b));
    }
  }

  void copy_in(size_t i) {
    Tensor dst = slice(i);
    const Tensor g = params[i].grad();
    if (g.defined()) dst.copy_(g);
    else zero_(dst);
  }

  // Leaf hook: the gradient of params[i] is final for this backward.
  void on_grad(size_t i) {
    if (!sync || ready[i]) return;
    copy_in(i);
    ready[i] = true;
    ++buckets[bucket_of[i]].ready;
    launch_ready(false);
  }

  // Launches buckets in order while the next one is complete (all of them with `force`).
  void launch_ready(bool force) {
    while (next_launch < buckets.size()) {
      Bucket& b = buckets[next_launch];
      if (!force && b.ready < int64_t(b.params.size())) return;
      for (size_t i : b.params)
        if (!ready[i]) copy_in(i);  // not reached by this backward: its accumulated gradient or zero
      b.work = comm.all_reduce(dist::Buffer::of(b.flat, "gradient bucket"), dist::ReduceOp::Avg,
                               "grad bucket " + std::to_string(next_launch));
      ++next_launch;
    }
  }

  void finish() {
    launch_ready(true);
    const double start = now_s();
    for (Bucket& b : buckets) b.work->wait();
    stats.wait_s += now_s() - start;
    for (size_t i = 0; i < params.size(); ++i) {
      // Every rank ends with the same defined gradient, also where its backward reached nothing.
      Tensor g = params[i].grad();
      if (g.defined()) g.copy_(slice(i));
      else params[i].set_grad(slice(i).clone());
      ready[i] = false;
    }
    for (Bucket& b : buckets) {
      b.ready = 0;
      b.work.reset();
    }
    next_launch = 0;
    sync = false;
    ++stats.steps;
    stats.buckets += int64_t(buckets.size());
  }
};

DataParallel::DataParallel(Module& model, dist::Communicator& comm, DataParallelOptions options)
    : state_(std::make_shared<State>(model, comm, options)), uncaught_at_start_(std::uncaught_exceptions()) {
  State& s = *state_;
  if (comm.size() == 1) return;
  s.build_buckets();
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i)
    s.params[i].register_hook([weak, i](ag::Variable&) {
      if (auto state = weak.lock()) state->on_grad(i);
    });
  if (options.global_balance)
    set_balance_load_reducer([&comm](Tensor& load) { dist::all_reduce(comm, load, dist::ReduceOp::Avg, "moh load"); });
  s.comm_at_start = comm.busy_seconds();
}

namespace {
dist::Communicator& configured_world(const Config& cfg) {
  dist::set_timeout(cfg.get_float("distributed.timeout_s"));
  return dist::world();
}
}  // namespace

DataParallel::DataParallel(Module& model, const Config& cfg)
    : DataParallel(model, configured_world(cfg),
                   {cfg.get_float("distributed.bucket_mb"), cfg.get_string("moh.balance_scope") == "global"}) {}

DataParallel::~DataParallel() {
  if (world_size() > 1 && state_->opt.global_balance) set_balance_load_reducer(nullptr);
  if (std::uncaught_exceptions() > uncaught_at_start_ && world_size() > 1) dist::mark_failed();
}

int DataParallel::rank() const { return state_->comm.rank(); }
int DataParallel::world_size() const { return state_->comm.size(); }

void DataParallel::broadcast_state(int64_t step) {
  State& s = *state_;
  if (s.comm.size() == 1) return;
  const std::vector<int64_t> steps = dist::all_gather(s.comm, from_vector(std::vector<int64_t>{step}, {1}),
                                                      "resume step").to_vector<int64_t>();
  for (int r = 1; r < s.comm.size(); ++r)
    MOH_CHECK(steps[size_t(r)] == steps[0], "data-parallel start: rank ", r, " is at step ", steps[size_t(r)],
              " but rank 0 at step ", steps[0],
              " (every rank must resume the same checkpoint: the run folder must be visible to all ranks)");
  auto send = [&](Tensor t, const std::string& name) {
    Tensor buf = t.contiguous();
    dist::broadcast(s.comm, buf, 0, name);
    if (!buf.shares_storage(t)) t.copy_(buf);
  };
  for (auto& [name, p] : s.model.named_parameters()) send(p.data(), name);
  for (auto& [name, b] : s.model.named_buffers()) send(b, name);
}

void DataParallel::begin_micro_batch(bool last) {
  State& s = *state_;
  if (s.comm.size() > 1) s.sync = last;
}

void DataParallel::finish_gradients() {
  if (state_->comm.size() > 1) state_->finish();
}

void DataParallel::sum(std::vector<double>& values) {
  if (state_->comm.size() == 1 || values.empty()) return;
  Tensor t = from_vector(values, {int64_t(values.size())}, DType::Float64);
  dist::all_reduce(state_->comm, t, dist::ReduceOp::Sum, "metrics");
  values = t.to_vector<double>();
}

DataParallelStats DataParallel::stats() const {
  DataParallelStats out = state_->stats;
  out.comm_s = state_->comm.busy_seconds() - state_->comm_at_start;
  return out;
}

int64_t per_rank_micro_batch(const Config& cfg, int world_size) {
  const int64_t batch = cfg.get_int("train.batch_size"), accum = cfg.get_int("train.grad_accum");
  if (batch % (accum * world_size) != 0)
    throw ConfigError(str_cat(cfg.origin("train.batch_size"), ": train.batch_size ", batch,
                              " (the global batch) must be a multiple of train.grad_accum ", accum, " x ",
                              world_size, " processes"));
  return batch / (accum * world_size);
}

}  // namespace moh
