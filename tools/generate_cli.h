// `moh generate`: text from a trained llm run (tools/cli.cpp dispatches here):
//   moh generate RUN_DIR|CHECKPOINT --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K]
//                [--top-p P] [--seed S] [key=value ...]
// Same exit-status contract as the rest of the CLI: 0 ok, 2 usage or config, 1 runtime failure.
#pragma once

namespace moh {

// argv[1] is "generate".
int run_generate_command(int argc, char** argv);

}  // namespace moh
