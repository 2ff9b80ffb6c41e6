#!/usr/bin/env bash
# Re-run every command whose output under validation/results depends on the simulator, after a change
# under simulator/ (its model hash, validation.accuracy.cache.model_hash, stamps the accuracy files).
# Run from a checkout with the simulator built in place (python setup.py -q build_ext --inplace).
#   scripts/rescore.sh [--jobs N] [--list] [STEP ...]     # no STEP: all, in this order
# A step whose marker exists in $RESCORE_DONE (default out/rescore-done/) is skipped, so a killed run
# resumes; each finished step writes its marker (delete the folder to start over). The accuracy cache
# (out/accuracy-cache) also keeps finished rows. On 2 cores the whole list takes about 2 hours, most of
# it `main` and `heldout`; scripts/device_rescore.sh runs any of these commands on the device's 16 cores.
# Not here: validation.power_sims / power_fit (they re-fit the clock model's [fitted] constants from the
# simulated activity of the campaign's data-parallel rows: a model change that moves that activity calls
# for them too, as a modelling step).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
J=2
if [ "${1:-}" = "--jobs" ]; then J=$2; shift 2; fi
R=validation/results
declare -A CMD=(
  [streamk_nd]="-m wsim accuracy --data h200-streamk-nd --jobs $J --out $R/streamk_nd"
  [streamk]="-m wsim accuracy --data h200-streamk --jobs $J --out $R/streamk"
  [fixup_contention]="-m validation.fixup_contention --out $R"
  [fixup_traces]="-m validation.fixup_traces --out $R"
  [fixup_traces_h100]="-m validation.fixup_traces --raw $R/fixup_traces_h100 --out $R --name h100_fixup_traces"
  [streamk_check]="benchmarks/streamk_check.py --jobs $J"
  [ragged_n]="-m wsim accuracy --data h200-ragged-n --jobs $J --out $R/ragged_n"
  [ragged_n_check]="benchmarks/streamk_check.py --jobs $J --data $R/h200_ragged_n.json --out $R/ragged_n_check.md"
  [small_m]="-m wsim accuracy --data h200-small-m --jobs $J --out $R/small_m"
  [small_m_check]="benchmarks/streamk_check.py --jobs $J --data $R/h200_small_m.json --out $R/small_m_check.md"
  [small_m_rates]="-m validation.small_m_rates"
  [coop64]="-m wsim accuracy --data h200-coop64 --jobs $J --out $R/coop64"
  [mainloop_replay]="benchmarks/mainloop_replay.py --out $R"
  [l2_replay]="benchmarks/l2_replay.py --out $R"
  [sharer_sync]="benchmarks/sharer_sync.py --out $R"
  [quick]="-m wsim accuracy --quick --data h200 --jobs $J --out $R/quick"
  [main]="-m wsim accuracy --quick --budget h200=1300 --budget b200=150 --jobs $J --out $R"
  [heldout]="-m validation.accuracy --data h200-wide-heldout --quick --budget 1500 --jobs $J --out $R/heldout"
  [tune_h200]="benchmarks/tune_check.py --data h200 --jobs $J --out $R/tune_check.md"
  [tune_b200]="benchmarks/tune_check.py --data b200 --b200-budget 150 --jobs $J --out $R/tune_check_b200.md"
  [check]="-m wsim check --grid full --out $R/check_catalogue.md"
)
ORDER=(streamk_nd streamk fixup_contention fixup_traces fixup_traces_h100 streamk_check ragged_n ragged_n_check
       small_m small_m_check small_m_rates coop64 mainloop_replay l2_replay sharer_sync quick main heldout tune_h200 tune_b200 check)
if [ "${1:-}" = "--list" ]; then
  for s in "${ORDER[@]}"; do echo "$s: python ${CMD[$s]}"; done; exit 0
fi
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=("${ORDER[@]}")
for s in "${steps[@]}"; do
  [ -n "${CMD[$s]:-}" ] || { echo "rescore: unknown step '$s'; steps: ${ORDER[*]}" >&2; exit 2; }
done
DONE=${RESCORE_DONE:-out/rescore-done}
mkdir -p "$DONE"
rc=0
for s in "${steps[@]}"; do
  if [ -e "$DONE/$s" ]; then echo "== $s: done before (marker $DONE/$s)"; continue; fi
  t0=$(date +%s)
  echo "== $s: python ${CMD[$s]}"
  # shellcheck disable=SC2086  # the command's words are meant to split
  if $PY ${CMD[$s]}; then touch "$DONE/$s"; else echo "== $s FAILED"; rc=1; fi
  echo "== $s: $(( $(date +%s) - t0 )) s"
done
exit $rc
