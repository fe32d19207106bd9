// FaultyTask: wraps a Task and injects faults on chosen micro-batches (counted from 1 per wrapper)
// so trainer tests can crash a run, request a stop, poison the loss or have the data pipeline warn at a
// known point.
#pragma once

#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "trainers/task.h"
#include "trainers/trainer.h"

namespace moh::test {

class FaultyTask : public Task {
 public:
  enum class Fault {
    Crash,     // throws before the micro-batch runs
    Stop,      // requests a graceful stop after it
    NanLoss,   // multiplies its loss by NaN
    Overflow,  // multiplies its loss by 1e36: finite in float32, not once an fp16 loss scale applies
    Warn,      // the inner task's warning channel reports "faulty: warning at micro-batch N"
  };
  struct At {
    int64_t micro_batch;
    Fault fault;
  };
  FaultyTask(std::unique_ptr<Task> inner, std::vector<At> faults) : inner_(std::move(inner)), faults_(std::move(faults)) {}
  FaultyTask(std::unique_ptr<Task> inner, int64_t at, Fault fault) : FaultyTask(std::move(inner), {{at, fault}}) {}

  Module& model() override { return inner_->model(); }
  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    const int64_t n = ++count_;
    if (fires(n, Fault::Crash)) throw std::runtime_error("simulated crash");
    MicroBatchLoss out = inner_->train_micro_batch(batch_size);
    if (fires(n, Fault::Stop)) Trainer::request_stop();
    if (fires(n, Fault::NanLoss)) out.loss = ag::mul(out.loss, NAN);
    if (fires(n, Fault::Overflow)) out.loss = ag::mul(out.loss, 1e36);
    if (fires(n, Fault::Warn)) inner_->warnings().warn("faulty: warning at micro-batch " + std::to_string(n));
    return out;
  }
  std::map<std::string, double> evaluate() override { return inner_->evaluate(); }
  int64_t samples_per_epoch() const override { return inner_->samples_per_epoch(); }
  std::map<std::string, int64_t> data_state() const override { return inner_->data_state(); }
  void load_data_state(const std::map<std::string, int64_t>& s) override { inner_->load_data_state(s); }
  std::map<std::string, Generator*> generators() override { return inner_->generators(); }
  WarningChannel& warnings() override { return inner_->warnings(); }

 private:
  bool fires(int64_t n, Fault fault) const {
    for (const At& f : faults_)
      if (f.micro_batch == n && f.fault == fault) return true;
    return false;
  }

  std::unique_ptr<Task> inner_;
  std::vector<At> faults_;
  int64_t count_ = 0;
};

}  // namespace moh::test
