// The `moh` command line (a stable contract; scripts depend on it):
//   moh train CONFIG.yaml [dotted.key=value ...]    train (resume per train.resume)
//   moh eval RUN_DIR|CHECKPOINT [key=value ...]      evaluate; the last output line is one JSON
//                                                    object, also written to eval.json beside the checkpoint
//   moh config CONFIG.yaml [key=value ...]           print the fully resolved config
//   moh generate RUN_DIR|CHECKPOINT --prompt TEXT ... text from an llm run (tools/generate_cli.h)
//   moh tokenize ... | moh tokenizer ...             text commands (tools/text_cli.h)
//   moh --help | moh COMMAND --help
// Exit status: 0 success, 2 bad usage or config, 1 runtime failure (message on stderr).
#pragma once

namespace moh {

int run_cli(int argc, char** argv);

}  // namespace moh
