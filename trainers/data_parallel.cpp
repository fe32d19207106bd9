// Data-parallel gradient synchronisation (see data_parallel.h).
#include "trainers/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/moh_attention.h"
#include "trainers/config_schema.h"
#include "trainers/same_job.h"

namespace moh {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A flat buffer of consecutive gradients (one dtype) all-reduced as one collective. Sharded, `flat`
// is padded to world size x chunk elements and reduce-scattered into `shard`, this rank's chunk.
struct Bucket {
  Tensor flat;
  Tensor shard;                // sharded only: [chunk]
  std::vector<size_t> params;  // indices into State::params, in backward order
  int64_t ready = 0;           // params whose gradient is in `flat` this step
  dist::WorkPtr work;
};

// The part of a parameter a rank owns when sharded: its elements [offset, offset + count), which
// sit at `in_shard` in the bucket's shard.
struct OwnedRange {
  int64_t offset = 0, count = 0, in_shard = 0;
};

Tensor flat_view(const Tensor& t) { return t.view({t.numel()}); }

}  // namespace

struct DataParallel::State {
  Module& model;
  dist::Communicator& comm;  // the model's tensors
  dist::Communicator& host;  // host values
  DataParallelOptions opt;
  std::vector<ag::Variable> params;
  std::vector<size_t> bucket_of;
  std::vector<int64_t> offset_of;
  std::vector<bool> ready;
  std::vector<OwnedRange> owned;  // sharded only, per param
  std::vector<Bucket> buckets;
  size_t next_launch = 0;
  bool sync = false;
  double comm_at_start = 0;
  bool failed_together = false;  // every rank threw the same error: no rank is left waiting
  DataParallelStats stats;

  State(Module& m, dist::Communicator& c, dist::Communicator& h, DataParallelOptions o)
      : model(m), comm(c), host(h), opt(o) {}

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
      const DType dtype = params[group[0]].dtype();
      const Device device = params[group[0]].device();
      if (opt.shard_optimizer) {
        const int64_t world = comm.size(), chunk = (n + world - 1) / world, begin = chunk * comm.rank();
        owned.resize(params.size());
        for (size_t i : group) {
          const int64_t lo = std::max(offset_of[i], begin);
          const int64_t hi = std::min(offset_of[i] + params[i].numel(), begin + chunk);
          if (hi > lo) owned[i] = {lo - offset_of[i], hi - lo, lo - begin};
        }
        b.shard = zeros({chunk}, dtype, device);
        n = chunk * world;
      }
      b.flat = zeros({n}, dtype, device);
      b.params = group;
      buckets.push_back(std::move(b));
    }
  }

  // This rank's elements of params[i]'s tensor `full` (its shape), and their place in the shard.
  Tensor owned_part(size_t i, const Tensor& full) const {
    return flat_view(full).narrow(0, owned[i].offset, owned[i].count);
  }
  Tensor shard_part(size_t i) const {
    return buckets[bucket_of[i]].shard.narrow(0, owned[i].in_shard, owned[i].count);
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
      const std::string label = "grad bucket " + std::to_string(next_launch);
      b.work = opt.shard_optimizer
                   ? comm.reduce_scatter(dist::Buffer::of(b.flat, "gradient bucket"),
                                         dist::Buffer::of(b.shard, "gradient shard"), dist::ReduceOp::Avg, label)
                   : comm.all_reduce(dist::Buffer::of(b.flat, "gradient bucket"), dist::ReduceOp::Avg, label);
      ++next_launch;
    }
  }

  void finish() {
    launch_ready(true);
    const double start = now_s();
    for (Bucket& b : buckets) b.work->wait();
    stats.wait_s += now_s() - start;
    for (size_t i = 0; i < params.size(); ++i) {
      // Every rank ends with a defined gradient, also where its backward reached nothing: the
      // average, or sharded the average on its own elements and zero elsewhere.
      Tensor g = params[i].grad();
      if (opt.shard_optimizer) {
        if (g.defined() && g.is_contiguous()) zero_(g);
        else params[i].set_grad(zeros(params[i].shape(), params[i].dtype(), params[i].device()));
        if (owned[i].count > 0) owned_part(i, params[i].grad()).copy_(shard_part(i));
      } else if (g.defined()) {
        g.copy_(slice(i));
      } else {
        params[i].set_grad(slice(i).clone());
      }
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

  // Sharded: every bucket's shards gathered over ranks into `flat`; `fill(i, part)` writes this
  // rank's elements of params[i] into `part`, then `take(i, whole)` receives all of them.
  template <class Fill, class Take>
  void gather_buckets(const std::string& what, Fill fill, Take take) {
    for (size_t k = 0; k < buckets.size(); ++k) {
      Bucket& b = buckets[k];
      for (size_t i : b.params)
        if (owned[i].count > 0) fill(i, shard_part(i));
      b.work = comm.all_gather(dist::Buffer::of(b.shard, "shard"), dist::Buffer::of(b.flat, "bucket"),
                               what + " bucket " + std::to_string(k));
    }
    for (Bucket& b : buckets) {
      b.work->wait();
      b.work.reset();
      for (size_t i : b.params) take(i, slice(i));
    }
  }
};

DataParallel::DataParallel(Module& model, dist::Communicator& comm, DataParallelOptions options,
                           dist::Communicator* host)
    : state_(std::make_shared<State>(model, comm, host ? *host : comm, options)),
      uncaught_at_start_(std::uncaught_exceptions()) {
  State& s = *state_;
  MOH_CHECK(s.host.device().is_cpu() && s.host.size() == comm.size() && s.host.rank() == comm.rank(),
            "DataParallel: the host communicator must be a CPU one over the same ranks, got ", s.host.backend(),
            " on ", s.host.device(), " (rank ", s.host.rank(), " of ", s.host.size(), ") next to ", comm.backend(),
            " (rank ", comm.rank(), " of ", comm.size(), ")");
  if (comm.size() == 1) return;
  for (const auto& [name, p] : model.named_parameters())
    MOH_CHECK(p.device() == comm.device(), "DataParallel: parameter '", name, "' is on ", p.device(), " but the ",
              comm.backend(), " communicator on ", comm.device());
  s.build_buckets();
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i)
    s.params[i].register_hook([weak, i](ag::Variable&) {
      if (auto state = weak.lock()) state->on_grad(i);
    });
  if (options.global_balance)
    set_balance_reducer(model,
                        [&comm](Tensor& load) { dist::all_reduce(comm, load, dist::ReduceOp::Avg, "moh load"); });
  s.comm_at_start = comm.busy_seconds();
}

namespace {
dist::Communicator& configured_world(const Config& cfg) {
  dist::set_timeout(cfg.get_float("distributed.timeout_s"));
  return dist::world();
}

// The communicator for the model's tensors: the CPU world, or NCCL on the parameters' GPU when there
// is more than one rank (one process needs no collectives at all).
dist::Communicator& model_communicator(const Module& model, dist::Communicator& world) {
  const auto params = model.named_parameters();
  const Device device = params.empty() ? Device::cpu() : params[0].second.device();
  return device.is_cpu() || world.size() == 1 ? world : dist::communicator_for(device);
}
}  // namespace

DataParallel::DataParallel(Module& model, const Config& cfg)
    : DataParallel(model, model_communicator(model, configured_world(cfg)),
                   {cfg.get_float("distributed.bucket_mb"), cfg.get_string("moh.balance_scope") == "global",
                    cfg.get_bool("distributed.shard_optimizer")},
                   &dist::world()) {}

DataParallel::~DataParallel() {
  if (world_size() > 1 && state_->opt.global_balance) set_balance_reducer(state_->model, nullptr);
  if (std::uncaught_exceptions() > uncaught_at_start_ && world_size() > 1 && !state_->failed_together)
    dist::mark_failed();
}

int DataParallel::rank() const { return state_->comm.rank(); }
int DataParallel::world_size() const { return state_->comm.size(); }

void DataParallel::check_same_job(const Config& cfg, int64_t total_steps) {
  try {
    check_ranks_run_same_job(state_->host, cfg, total_steps);
  } catch (const ConfigError&) {
    state_->failed_together = true;
    throw;
  }
}

void DataParallel::broadcast_state(int64_t step) {
  State& s = *state_;
  if (s.comm.size() == 1) return;
  const std::vector<int64_t> steps = dist::all_gather(s.host, from_vector(std::vector<int64_t>{step}, {1}),
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
  dist::all_reduce(state_->host, t, dist::ReduceOp::Sum, "metrics");
  values = t.to_vector<double>();
}

bool DataParallel::sharded() const { return state_->comm.size() > 1 && state_->opt.shard_optimizer; }

void DataParallel::shard(Optimizer& optimizer) {
  if (!sharded()) return;
  State& s = *state_;
  std::map<const void*, size_t> index_of;
  for (size_t i = 0; i < s.params.size(); ++i) index_of.emplace(s.params[i].impl().get(), i);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const Optimizer::Param& p : optimizer.params()) {
    auto it = index_of.find(p.var.impl().get());
    MOH_CHECK(it != index_of.end(), "DataParallel::shard: optimizer parameter '", p.name, "' is not in the model");
    ranges.emplace_back(s.owned[it->second].offset, s.owned[it->second].count);
  }
  optimizer.shard(ranges);
}

GradNorm DataParallel::clip_gradients(const NamedParameters& params, double max_norm) {
  if (!sharded()) return max_norm > 0 ? clip_grad_norm(params, max_norm) : grad_norm(params);
  // Each rank's gradients are zero outside its elements: its local norm is its share. Ranks send
  // their squared share and the index of their first non-finite gradient (-1: none).
  const GradNorm local = grad_norm(params);
  double local_nonfinite = -1;
  for (size_t i = 0; i < params.size() && !local.finite(); ++i)
    if (params[i].first == local.nonfinite) local_nonfinite = double(i);
  const Tensor mine = from_vector(std::vector<double>{local.norm * local.norm, local_nonfinite}, {2}, DType::Float64);
  const std::vector<double> all = dist::all_gather(state_->host, mine, "gradient norm").to_vector<double>();
  double total = 0, first_nonfinite = double(params.size());
  for (size_t r = 0; r < all.size(); r += 2) {
    total += all[r];
    if (all[r + 1] >= 0) first_nonfinite = std::min(first_nonfinite, all[r + 1]);
  }
  GradNorm global;
  if (first_nonfinite < double(params.size())) global.nonfinite = params[size_t(first_nonfinite)].first;
  global.norm = global.finite() ? std::sqrt(total) : std::nan("");
  return max_norm > 0 ? clip_to_norm(params, global, max_norm) : global;
}

void DataParallel::finish_step() {
  if (!sharded()) return;
  State& s = *state_;
  s.gather_buckets(
      "parameter", [&](size_t i, Tensor part) { part.copy_(s.owned_part(i, s.params[i].data())); },
      [&](size_t i, const Tensor& whole) {
        Tensor data = s.params[i].data();
        data.copy_(whole);
      });
}

std::map<std::string, Tensor> DataParallel::optimizer_state(const Optimizer& optimizer) {
  std::map<std::string, Tensor> out = optimizer.state_dict();
  if (!sharded()) return out;
  State& s = *state_;
  std::map<const void*, const Optimizer::Param*> param_of;
  for (const Optimizer::Param& p : optimizer.params()) param_of.emplace(p.var.impl().get(), &p);
  for (size_t k = 0; k < optimizer.state_names().size(); ++k) {
    const std::string& state = optimizer.state_names()[k];
    s.gather_buckets(
        "optimizer " + state,
        [&](size_t i, Tensor part) { part.copy_(param_of.at(s.params[i].impl().get())->state[k]); },
        [&](size_t i, const Tensor& whole) {
          out[param_of.at(s.params[i].impl().get())->name + "/" + state] = whole.clone();
        });
  }
  return out;
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
