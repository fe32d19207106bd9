// `moh sample`: class-conditional samples of a trained DiT run (tools/cli.cpp dispatches here):
//   moh sample RUN_DIR|CHECKPOINT --out DIR [--num N] [--classes 0,3,...] [--cfg S] [--cfg-channels K]
//              [--steps N] [--sampler ddpm|ddim] [--eta E] [--seed S] [--batch B]
//              [--autoencoder AE_RUN|CKPT] [--crop S] [--columns K] [--pngs] [key=value ...]
// It writes DIR/samples.npz (arr_0: uint8 [N, H, W, C] images, arr_1: int64 [N] labels, the layout of
// the ADM evaluation suite's sample batches), DIR/grid.png (the first 100 at most) and with --pngs one
// PNG per sample in DIR/images/; the last line printed is a JSON summary. Same exit-status contract as
// the rest of the CLI: 0 ok, 2 usage or config, 1 runtime failure.
#pragma once

namespace moh {

// argv[1] is "sample".
int run_sample_command(int argc, char** argv);

}  // namespace moh
