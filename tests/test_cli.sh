#!/usr/bin/env bash
# CLI error paths: each bad input gets exit code 2, one line on stderr naming
# the problem, and writes nothing.  No GPU is needed (or used).
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"

# Files the tests below need; anything else that appears is output.
mkdir fixtures fixtures/folder
: >fixtures/file

expect() { # expect CODE PATTERN ARGS...
    local code=$1 pattern=$2 extra
    shift 2
    "$kbench" "$@" >stdout 2>stderr
    local rc=$? lines
    lines=$(wc -l <stderr)
    # One line: no control character but its final newline (untrusted text is escaped).
    if [[ $rc -ne $code || $lines -ne 1 ]] || ! grep -q -- "$pattern" stderr ||
        LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' stderr; then
        echo "FAIL: kbench ${*@Q} -> rc=$rc (want $code), stderr ($lines lines): $(cat -v stderr)"
        failures=$((failures + 1))
    fi
    extra=$(ls -A | grep -v -x -e stdout -e stderr -e fixtures; ls -A fixtures | grep -v -x -e folder -e file)
    if [[ -n $extra || -n $(ls -A fixtures/folder) ]]; then
        echo "FAIL: kbench ${*@Q} wrote output: $extra $(ls -A fixtures/folder)"
        failures=$((failures + 1))
        rm -rf results ./*.csv fixtures/folder/*
    fi
}

expect 2 "missing command"
expect 2 "unknown command 'frob'" frob
expect 2 "unknown op 'softmaxx'" run --op softmaxx
expect 2 "unknown variant 'nope'" run --variant nope
expect 2 "unknown variant 'zz\*'" run --variant 'naive,zz*'
expect 2 "malformed matmul shape '10x10'" run --op matmul --sizes 10x10
expect 2 "malformed matmul shape '1x2x3x4'" run --op matmul --sizes 1x2x3x4
expect 2 "malformed matmul shape '8xfoox8'" run --op matmul --sizes 8xfoox8
expect 2 "malformed matmul shape .-4x4x4." run --op matmul --sizes -4x4x4
expect 2 "malformed matmul shape ''" run --op matmul --sizes 4x4x4,,
expect 2 "between 1 and" run --op matmul --sizes 0x16x16
expect 2 "between 1 and" run --op matmul --sizes 16x16x99999999999
expect 2 "byte count overflows" run --op matmul --sizes 2147483647x2147483647x2147483647
# Dimensions past int64 are "too large" too, with checked arithmetic (UBSan
# saw 19 digits overflow), however many digits.
expect 2 "between 1 and 2147483647" run --op matmul --sizes 16x16x9999999999999999999
expect 2 "between 1 and 2147483647" run --op matmul --sizes 16x16x99999999999999999999
expect 2 "between 1 and 2147483647" run --op matmul --sizes "16x16x$(printf '9%.0s' {1..300})"
# A long shape is not cut to a valid prefix (here 1x1x1).
expect 2 "malformed matmul shape '1x1x000" run --op matmul --sizes "1x1x$(printf '0%.0s' {1..250})1junk"
expect 2 "unknown dtype 'f64'" run --dtype f64
expect 2 "unknown dtype 'i32'" run --dtype i32
expect 2 "unknown option '--fast'" run --fast
expect 2 "--csv needs a value" run --csv
expect 2 "--device needs an integer from 0 to 1024" run --device -1
expect 2 "--max-time needs seconds" run --max-time 0
expect 2 "--max-noise needs a percentage" run --max-noise 0
expect 2 "--format needs csv, md or jsonl, got 'xml'" run --format xml
expect 2 "--max-noise needs a percentage" run --max-noise nan
expect 2 "--max-noise needs a percentage" run --max-noise 101
expect 2 "--min-samples needs an integer from 3 to 2000" run --min-samples 2
expect 2 "--min-samples needs an integer from 3 to 2000" run --min-samples 20.5
expect 2 "--min-samples needs an integer from 3 to 2000" run --min-samples 2001
# Numbers are finite decimals: NaN passed every range check before.
for bad in nan inf 0x10 1e999 ' 1'; do
    expect 2 "--max-time needs seconds in (0, 3600\], got '$bad'" run --op copy --sizes 1 --max-time "$bad"
done
expect 2 "--device needs an integer from 0 to 1024, got 'nan'" run --op copy --sizes 1 --device nan
expect 2 "--device needs an integer from 0 to 1024, got '0x1'" run --op copy --sizes 1 --device 0x1
expect 2 "--seq-len needs an integer from 1 to 65536" pe --seq-len nan --d-model 4
# One number grammar in every command: integers are digits only (no space,
# newline, sign, exponent or point); reals are plain decimals with an
# optional exponent, and every refusal states the range it enforces.
for bad in ' 8' $'\n8' +8 1e3 3.0 -0; do
    expect 2 "--min-samples needs an integer from 3 to 2000, got '" run --op copy --sizes 1 --min-samples "$bad"
    expect 2 "--device needs an integer from 0 to 1024, got '" run --op copy --sizes 1 --device "$bad"
    expect 2 "--seq-len needs an integer from 1 to 65536, got '" pe --seq-len "$bad" --d-model 4
done
for bad in +1 .5 5. 1e 0 -0.0; do
    expect 2 "--max-time needs seconds in (0, 3600\], got '$bad'" run --op copy --sizes 1 --max-time "$bad"
done
# What the range says is what is enforced: (0, 3600] takes 0.0009 and 1e-300.
for good in 0.0009 1e-300 3600 3.6e3; do
    CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --op copy --sizes 1 --max-time "$good"
done
# A list names each item once: a repeat is a slip, not a second run.
expect 2 "--dtype names 'f32' twice" run --op copy --sizes 1 --dtype f32,bf16,f32
expect 2 "--variant names 'memcpy' twice" run --op copy --sizes 1 --variant memcpy,memcpy
expect 2 "--family names 'square' twice" run --op matmul --family square,square
# Empty lists and empty items are refused, not read as "all".
expect 2 "--dtype has an empty item" run --op copy --sizes 1 --dtype ,
expect 2 "--dtype has an empty item" run --op copy --sizes 1 --dtype f32,
expect 2 "--op has an empty item" run --op ,
expect 2 "--op has an empty item" run --op copy,,matmul
expect 2 "--variant has an empty item" run --op copy --sizes 1 --variant ,
expect 2 "malformed copy shape ''" run --op copy --sizes ,
# Each op once: 17 names once said "unknown op" of a known one.
ops=$("$kbench" list | awk '/^[a-z_]+ \(/ { print $1 }' | paste -sd,)
expect 2 "--op names 'copy' twice" run --op "$ops,$ops"
expect 2 "--op names 'matmul' twice" run --op matmul,matmul
# Untrusted text is echoed escaped, on one line.
expect 2 "unknown op 'a[\\]x0ab'" run --op $'a\nb'
expect 2 "unknown option '--fast[\\]x0a'" run $'--fast\n'
expect 2 "unknown command 'frob[\\]x0d'" $'frob\r'
expect 2 "unknown dtype '[\\]x1b\[31mred'" run --dtype $'\e[31mred'
expect 2 "unknown variant 'x[\\]x0ay'" run --variant $'x\ny'
expect 2 "malformed matmul shape '8x8[\\]x0a'" run --op matmul --sizes $'8x8\n'
expect 2 "--max-time needs seconds in (0, 3600\], got '1[\\]x0a'" run --max-time $'1\n'
expect 2 "ceilings takes only --device N, not '[\\]x0a'" ceilings $'\n'
expect 2 "pe takes --seq-len T, --d-model D and --paper, not '[\\]x1b'" pe $'\e'
expect 2 "--sizes needs exactly one --op" run --sizes 8x8x8
expect 2 "must divide the query heads H" run --op attention --sizes 1x4x2x3x4x3c
expect 2 "must divide the query heads H" run --op attention --sizes 1x4x2x3x4x8
expect 2 "each dimension must be between 1" run --op attention --sizes 1x4x2x3x4x0
expect 2 "expected 5 to 6 fields" run --op attention --sizes 1x4x2x3x4x2x2
expect 2 "malformed attention shape '1x1x2x2x4cc'" run --op attention --sizes 1x1x2x2x4cc
expect 2 "malformed softmax shape '8x8x8'" run --op softmax --sizes 8x8x8
expect 2 "--sizes, --family, --quick and --test-sizes" run --op matmul --quick --sizes 8x8x8
expect 2 "--sizes, --family, --quick and --test-sizes" run --quick --test-sizes
expect 2 "--sizes, --family, --quick and --test-sizes" run --family square --sizes 8x8x8 --op matmul
expect 2 "unknown family 'd64' for the selected ops" run --op matmul --family d64
expect 2 "--family has an empty item" run --family square,
expect 2 "'list' takes no arguments" list extra
expect 2 "ceilings takes only --device N, not '--hot'" ceilings --hot
expect 2 "--device needs an integer from 0 to 1024" ceilings --device x
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" ceilings

# --devices: all, or distinct indices, at most 8; --replicate only with it;
# never with --device.
for bad in x -1 1.5 0x1 ALL ' 1' 1025; do
    expect 2 "--devices needs 'all' or device indices from 0 to 1024, got '$bad'" run --op copy --sizes 1 --devices "$bad"
done
expect 2 "--devices needs 'all' or device indices from 0 to 1024, got '[\\]x0a'" run --devices $'0,\n'
expect 2 "--devices needs a value" run --devices
expect 2 "--devices has an empty item" run --devices 0,,1
expect 2 "--devices has an empty item" run --devices 0,
expect 2 "--devices names '1' twice" run --devices 1,0,1
expect 2 "--devices names device 01 twice" run --devices 1,0,01
expect 2 "--devices names more than 8 devices" run --devices 0,1,2,3,4,5,6,7,8
expect 2 "--devices is given twice" run --devices 0 --devices 1
expect 2 "--devices is given twice" run --devices all --devices all
expect 2 "--replicate needs --devices" run --op copy --sizes 1 --replicate
expect 2 "--device and --devices both choose the GPUs" run --device 1 --devices 0,1
expect 2 "--device and --devices both choose the GPUs" run --devices all --device 0
# Bad input comes before the GPUs are counted (here there are none).
CUDA_VISIBLE_DEVICES= expect 2 "unknown op 'nope'" run --devices all --op nope
CUDA_VISIBLE_DEVICES= expect 2 "cannot write missing/out.csv" run --devices all --op copy --sizes 1 --csv missing/out.csv
# No GPU: one line, exit 1, nothing written, whether named or `all`.
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --devices 0 --op copy --sizes 1
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --devices all --replicate --op copy --sizes 1 --out-dir new
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --devices 0,1 --op copy --sizes 1 --csv out.csv

expect 2 "pe needs --seq-len T and --d-model D" pe --seq-len 5
expect 2 "--d-model needs an integer from 1 to 65536" pe --seq-len 5 --d-model 0
expect 2 "pe takes --seq-len T, --d-model D and --paper, not '--hot'" pe --hot

# The positional-encoding table of the seeds, to 6 significant digits.
table=$("$kbench" pe --seq-len 5 --d-model 5 | tr -s ' ')
expected="0 1 0 1 0
0.841471 0.540302 0.157827 0.987467 0.0251162
0.909297 -0.416147 0.311697 0.950181 0.0502166
0.14112 -0.989992 0.457755 0.889079 0.0752853
-0.756802 -0.653644 0.592338 0.80569 0.100306"
[[ $table == "$expected" ]] || { echo "FAIL: kbench pe table:"; echo "$table"; failures=$((failures + 1)); }
# The paper's exponent, 10000^(-2i/d): column 2 of row 1 is sin(10000^-0.4).
[[ $("$kbench" pe --seq-len 2 --d-model 5 --paper | tail -1 | awk '{print $3}') == 0.0251162 ]] ||
    { echo "FAIL: kbench pe --paper"; failures=$((failures + 1)); }

# No GPU (hidden from the runtime): one line, non-zero exit, nothing written.
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --op matmul --quick --variant naive
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --op copy --sizes 1 --csv out.csv
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --op copy --sizes 1 --out-dir new
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" run --op copy --sizes 1 --out-dir fixtures/folder

# An output that cannot be written is bad input, found before the GPU is
# opened (here there is none: the refusal must come first).
CUDA_VISIBLE_DEVICES= expect 2 "cannot write missing/out.csv: No such file" run --op copy --sizes 1 --csv missing/out.csv
CUDA_VISIBLE_DEVICES= expect 2 "cannot write fixtures/file/out.csv: Not a directory" \
    run --op copy --sizes 1 --csv fixtures/file/out.csv
CUDA_VISIBLE_DEVICES= expect 2 "cannot write fixtures/folder: not a regular file" \
    run --op copy --sizes 1 --csv fixtures/folder
CUDA_VISIBLE_DEVICES= expect 2 "cannot write /dev/null: not a regular file" run --op copy --sizes 1 --csv /dev/null
CUDA_VISIBLE_DEVICES= expect 2 "cannot write aaaa*\.\.\.: File name too long" \
    run --op copy --sizes 1 --csv "$(printf 'a%.0s' {1..4090})"
CUDA_VISIBLE_DEVICES= expect 2 "cannot write no[\\]x0adir/out.csv" run --op copy --sizes 1 --csv $'no\ndir/out.csv'
CUDA_VISIBLE_DEVICES= expect 2 "cannot create missing/sub: No such file" run --op copy --sizes 1 --out-dir missing/sub
CUDA_VISIBLE_DEVICES= expect 2 "cannot write fixtures/file/kbench-.*: Not a directory" \
    run --op copy --sizes 1 --out-dir fixtures/file

# list works without a GPU and names every variant with its needs.
"$kbench" list >list.txt || { echo "FAIL: kbench list"; failures=$((failures + 1)); }
grep -q "^matmul (MxNxK)" list.txt || { echo "FAIL: list lacks matmul"; failures=$((failures + 1)); }
grep -q "naive" list.txt || { echo "FAIL: list lacks naive"; failures=$((failures + 1)); }

# --help after any command prints the usage on stdout and exits 0.
for args in "run --help" "run --op matmul -h" "list --help" "ceilings --help" "pe --help" "model encoder --help" \
            "model --help"; do
    "$kbench" $args >stdout 2>stderr
    rc=$?
    if [[ $rc -ne 0 || -s stderr ]] || ! grep -q "^usage: kbench" stdout; then
        echo "FAIL: kbench $args -> rc=$rc, stderr: $(cat stderr)"
        failures=$((failures + 1))
    fi
done

[[ $failures -eq 0 ]] && echo "all CLI checks passed"
exit $((failures > 0))
