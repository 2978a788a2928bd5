#!/bin/bash
# The paper profile on a SLURM cluster as five chained jobs, so that no job holds N nodes through
# a phase that uses one (configs/slurm/reproduce.sbatch runs the phases; its header says what each
# does). Submit from the checkout:
#
#     configs/slurm/submit.sh 4            # N = 4 nodes of 8 GPUs for the phases that use them
#     PROFILE=colab configs/slurm/submit.sh 1
#
# 01 (one node: base sampling, the 70B teacher on its 8 GPUs, the chunk policy's SFT)
#   -> label (N nodes: one labelling worker per GPU) -> train (N nodes: 02 merges, 03, 04 trains on
#   every node) -> generate (N nodes: 05-07's judging and sampling) -> final (one node: 05-07 join,
#   07 trains). Each job starts only if the one before succeeded (--dependency=afterok); a failed
#   phase is resubmitted alone with PHASE=<phase> sbatch --nodes=... configs/slurm/reproduce.sbatch,
#   and resumes what it left.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:?usage: configs/slurm/submit.sh NODES}
script=configs/slurm/reproduce.sbatch
prev=""
for spec in 01:1 label:$N train:$N generate:$N final:1; do
  phase=${spec%%:*}
  nodes=${spec##*:}
  dep=${prev:+--dependency=afterok:$prev}
  prev=$(PHASE=$phase sbatch --parsable --nodes="$nodes" --export=ALL,PHASE="$phase" $dep "$script")
  prev=${prev%%;*}  # --parsable prints "id;cluster" on a multi-cluster site
  echo "[submit] phase $phase on $nodes node(s): job $prev${dep:+ (after the last)}"
done
