# Sourced by the reproduce scripts.
# parse_matrix_options TAG HELP_LAST_LINE "$@": reads the leading --seeds S, --configs C, --parallel N and
# -h/--help (which prints the script's header comment, lines 2 to HELP_LAST_LINE) into the variables seeds,
# configs and parallel (the caller sets their defaults first); the remaining arguments (the key=value
# overrides) are left in the array matrix_rest.
parse_matrix_options() {
  local tag=$1 help_last=$2
  shift 2
  while [[ $# -gt 0 && "$1" == --* ]]; do
    case "$1" in
      --seeds) seeds=$2; shift 2 ;;
      --configs) configs=$2; shift 2 ;;
      --parallel) parallel=$2; shift 2 ;;
      --help) sed -n "2,${help_last}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) echo "$tag: unknown option $1" >&2; exit 2 ;;
    esac
  done
  [[ "${1:-}" != -h ]] || { sed -n "2,${help_last}p" "$0" | sed 's/^# \{0,1\}//'; exit 0; }
  matrix_rest=("$@")
}

# run_matrix runs one job per (seed, config), at most PARALLEL at once
# (a new one starts as soon as any finishes), skipping those whose run folder already holds DONE_FILE
# (so an interrupted script resumes), and exits 1 when a job fails.
#   run_matrix TAG OUT_RUNS PARALLEL "SEEDS" "CONFIGS" DONE_FILE JOB [ARGS...]
# calls `JOB CONFIG SEED ARGS...` in the background for run folder OUT_RUNS/CONFIG_sSEED; TAG prefixes its
# messages.
run_matrix() {
  local tag=$1 out_runs=$2 parallel=$3 seeds=$4 configs=$5 done_file=$6 job=$7
  shift 7
  local running=0 seed config
  for seed in $seeds; do
    for config in $configs; do
      if [[ -f "$out_runs/${config}_s${seed}/$done_file" ]]; then
        echo "$tag: ${config}_s${seed} already done" >&2
        continue
      fi
      if ((running >= parallel)); then
        wait -n || { echo "$tag: a run failed (see $out_runs/*.out)" >&2; exit 1; }
        running=$((running - 1))
      fi
      "$job" "$config" "$seed" "$@" &
      running=$((running + 1))
    done
  done
  for ((; running > 0; running--)); do
    wait -n || { echo "$tag: a run failed (see $out_runs/*.out)" >&2; exit 1; }
  done
}
