#!/usr/bin/env bash
# Launches `moh train` data-parallel under OpenMPI's mpirun (docs/distributed.md).
# Usage: scripts/launch.sh [-n NPROCS] [-H HOSTFILE] [-t THREADS] CONFIG.yaml [key=value ...]
#   -n  processes in all (default: one per GPU when GPUs are present, else one per CPU socket)
#   -H  OpenMPI hostfile for multi-node runs ("node1 slots=8" lines); default: this node only
#   -t  OpenMP/BLAS threads per process (default: this node's cores / its processes)
# Environment: MOH_BIN (default build/moh), MPIRUN_ARGS (extra mpirun options, e.g. "--mca btl_tcp_if_include
# eth0"), NCCL_* and OMP_* pass through. As root, OpenMPI's allow-run-as-root settings are set.
# SIGTERM (kill, a scheduler's cancel) stops the run gracefully: a checkpoint, exit status 0.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
nprocs="" hostfile="" threads=""
while getopts "n:H:t:h" opt; do
  case $opt in
    n) nprocs=$OPTARG ;;
    H) hostfile=$OPTARG ;;
    t) threads=$OPTARG ;;
    *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
(($# >= 1)) || { echo "launch.sh: missing CONFIG.yaml (see -h)" >&2; exit 2; }
moh=${MOH_BIN:-$repo/build/moh}
[[ -x $moh ]] || { echo "launch.sh: $moh is not built (set MOH_BIN or build first)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "launch.sh: mpirun not found (scripts/setup.sh installs openmpi-bin)" >&2; exit 2; }

gpus=0
command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
sockets=$(lscpu -p=SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l)
((sockets > 0)) || sockets=1
cores=$(nproc)
if [[ -z $nprocs ]]; then
  if ((gpus > 0)); then nprocs=$gpus; else nprocs=$sockets; fi
fi
per_node=$nprocs
if [[ -n $hostfile ]]; then
  nodes=$(grep -cv '^\s*\(#\|$\)' "$hostfile")
  per_node=$(((nprocs + nodes - 1) / nodes))
fi
[[ -n $threads ]] || threads=$((cores / per_node > 0 ? cores / per_node : 1))

# One process per socket when the node has a socket per process (CPU runs); else leave placement to the OS.
bind=(--bind-to none)
((gpus == 0 && per_node > 1 && per_node <= sockets && sockets > 1)) && bind=(--map-by socket --bind-to socket)
args=(-np "$nprocs" "${bind[@]}" -x OMP_NUM_THREADS="$threads" -x OMP_PROC_BIND=false
      -x NCCL_DEBUG="${NCCL_DEBUG:-WARN}" -x CUDA_DEVICE_ORDER=PCI_BUS_ID)
[[ -n $hostfile ]] && args+=(--hostfile "$hostfile")
((per_node > cores)) && args+=(--oversubscribe)
for var in $(env | grep -o '^\(NCCL\|MOH\)_[A-Z0-9_]*' || true); do args+=(-x "$var"); done
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# mpirun ends the job on a SIGTERM of its own (SIGTERM to every rank, SIGKILL a second later, exit
# status 1 whatever the ranks did) but forwards SIGUSR1, which moh takes as a stop request. So a
# SIGTERM to this script becomes a SIGUSR1 to mpirun: every rank stops at the same step, rank 0
# saves a checkpoint, and the script exits with the job's status (0).
# shellcheck disable=SC2086  # MPIRUN_ARGS is a list of options
mpirun "${args[@]}" ${MPIRUN_ARGS:-} "$moh" train "$@" &
job=$!
interrupted=0
trap 'interrupted=1; kill -USR1 "$job" 2>/dev/null || true' TERM
while :; do
  interrupted=0
  wait "$job" && status=0 || status=$?
  ((interrupted && status > 128)) || break  # the trap interrupted the wait, mpirun still runs
done
exit "$status"
