// `moh encode` and `moh decode`: images to latents and back with a trained autoencoder run
// (tools/cli.cpp dispatches here):
//   moh encode RUN_DIR|CHECKPOINT --out LATENTS.h5 [--split train|test|<folder>] [--posterior mean|sample]
//              [--batch N] [--limit N] [--seed S] [key=value ...]
//   moh decode RUN_DIR|CHECKPOINT --latents LATENTS.h5|FAST_DIT_DIR --out GRID.png|DIR [--first I]
//              [--count N] [--columns K] [--crop S] [key=value ...]
// Same exit-status contract as the rest of the CLI: 0 ok, 2 usage or config, 1 runtime failure.
#pragma once

#include <string>

namespace moh {

bool is_latent_command(const std::string& command);  // "encode" or "decode"
// argv[1] is "encode" or "decode".
int run_latent_command(int argc, char** argv);

}  // namespace moh
