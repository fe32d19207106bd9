// StopSignals: while one is alive (a run), SIGINT, SIGTERM and SIGUSR1 request a graceful stop:
// stop_requested() turns true and the trainer checkpoints after the current step. SIGUSR1 is there
// for mpirun, which forwards it to every rank unchanged (its own SIGTERM ends the job instead; see
// docs/distributed.md). A SIGINT after a stop was requested ends the process at once with status
// 130, without a checkpoint (a second Ctrl-C during a long step). Creating the outermost one clears
// the request; destroying one restores the handlers it found. They nest: `moh train` holds one from
// its start, so a stop asked for while the task loads its data is not lost when the trainer's own
// one is created (the run then stops with a checkpoint after its first step).
#pragma once

namespace moh {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void (*previous_[3])(int) = {};
};

bool stop_requested();
// What the handlers do (async-signal-safe): Trainer::request_stop().
void request_stop();

}  // namespace moh
