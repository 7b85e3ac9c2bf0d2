#!/usr/bin/env bash
# `kbench model train`: on a slice of the GPL's text (tests/data, from
# Debian's base-files) a small model learns: one line a step, the loss of
# its last five steps under that of its first five, its held-out loss down
# from the first evaluation to the last, the loss curve's CSV with one row
# a step, the same seed giving the same losses; and every bad input
# refused in one line with exit 2 before any work.
#   tests/test_train_cli.sh KBENCH SOURCE_ROOT
src=$(realpath "$2") # before shell_test.sh moves to its working folder
source "$(dirname "$0")/shell_test.sh"
data=$src/tests/data/gpl3_slice.txt
args=(model train --data "$data" --cpu-only --vocab 320 --d-model 32 --layers 1 --heads 2 --kv-heads 1
      --seq 32 --batch 4 --steps 30 --lr 1e-2 --eval-every 10)

"$kbench" "${args[@]}" --loss-csv loss.csv >out 2>err || fail "train: rc=$? $(cat err)"
[[ $(grep -c '^step ' out) -eq 30 ]] || fail "want 30 step lines: $(cat out)"
grep -q "^training on .*tokens of a 320-token BPE learnt from it" out || fail "no setup line: $(head -2 out)"
awk '/^step / { l[++n] = $4 } END { a = b = 0; for (i = 1; i <= 5; ++i) { a += l[i]; b += l[n - 5 + i] }
     exit !(b < a - 5 * 0.3) }' out || fail "the loss did not fall by 0.3: $(grep '^step' out | sed -n '1p;$p')"
awk '/held-out loss/ { v[++n] = $NF } END { exit !(n == 3 && v[3] < v[1]) }' out ||
    fail "the held-out loss did not fall: $(grep held-out out)"
[[ $(grep -vc '^#' loss.csv) -eq 31 ]] || fail "loss.csv: want a header and 30 rows: $(cat loss.csv)"
head -n 5 loss.csv | grep -q '^step,loss,grad_norm,lr,tokens,wall_s,val_loss$' || fail "loss.csv's header: $(head -5 loss.csv)"
"$kbench" "${args[@]}" >again 2>&1 || fail "a second run failed: $(cat again)"
diff <(grep '^step' out | awk '{print $4}') <(grep '^step' again | awk '{print $4}') >/dev/null ||
    fail "the same seed gave other losses"

expect_line 2 "needs --data FILE.txt" model train --cpu-only
expect_line 2 "add --cpu-only" model train --data "$data"
expect_line 2 "byte-level BPE starts from 256" model train --data "$data" --cpu-only --vocab 100
expect_line 2 "cannot open" model train --data missing.txt --cpu-only
printf 'a few words only\n' >tiny.txt
expect_line 2 "too few for --seq 64" model train --data tiny.txt --cpu-only
expect_line 2 "unknown option '--nope'" model train --data "$data" --cpu-only --nope
expect_line 2 "--steps" model train --data "$data" --cpu-only --steps 0
expect_line 2 "--lr" model train --data "$data" --cpu-only --lr 0
expect_line 2 "is not a multiple of --kv-heads" model train --data "$data" --cpu-only --heads 4 --kv-heads 3
expect_line 2 "no-such-dir" model train --data "$data" --cpu-only --loss-csv no-such-dir/loss.csv
[[ -e loss.csv.tmp.* ]] 2>/dev/null && fail "a temporary file was left behind"

[[ $failures -eq 0 ]] && echo "all train CLI checks passed"
exit $((failures > 0))
