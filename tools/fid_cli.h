// `moh fid`: the Fréchet distance between generated images and real ones in the feature space of a
// trained moh image classifier (tools/cli.cpp dispatches here):
//   moh fid SAMPLES.npz --features CLASSIFIER_RUN [--ref test|train|REF.npz] [--save-ref STATS.npz]
//           [--batch B] [key=value ...]
// Beside the score it prints the real-vs-real floor (as many training images against the reference) and
// a noise ceiling (as many uniform-noise images), and, when the samples carry labels (arr_1), the
// classifier's accuracy on them. The last line printed is a JSON summary. Same exit-status contract as
// the rest of the CLI: 0 ok, 2 usage or config, 1 runtime failure.
#pragma once

namespace moh {

// argv[1] is "fid".
int run_fid_command(int argc, char** argv);

}  // namespace moh
