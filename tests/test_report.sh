#!/usr/bin/env bash
# kbench report: the markdown table from hand-written runs (merging by date,
# FAIL, SKIP, hot and library rows left out), the README rewrite between
# markers, and bad input.  With the source root as a second argument, the
# committed README's table must be what the committed runs give.  No GPU.
#   bash tests/test_report.sh KBENCH [SOURCE_ROOT]
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"
root=${2:+$(realpath "$2")}

header=op,variant,dtype,math,shape,flops,bytes,median_ms,rel_stdev_pct,pct_of_peak,bound,l2,status

# report CODE ARGS...: run it, check the exit code; output in out, err.
report() {
    local code=$1
    shift
    expect_rc "$code" report "$@"
}

# bad_input PATTERN ARGS...: exit 2 and exactly one stderr line matching.
bad_input() {
    local pattern=$1
    shift
    report 2 "$@"
    [[ $(wc -l <err) -eq 1 ]] && grep -q -- "$pattern" err ||
        fail "report $*: want one stderr line matching '$pattern', got: $(cat err)"
}

# The older run: matmul's own variants against cuBLAS (cublas_tf32 is a
# library call, so never kbench's best), a smaller and a non-default shape,
# softmax with a hot, a SKIP and a FAIL row, bf16 attention without a
# baseline of its dtype, and a model row.
cat >old.csv <<EOF
# gpu: NVIDIA H100 80GB HBM3
# date: 2026-01-01T00:00:00Z
# baseline_matmul: cublas
# baseline_softmax: cudnn
$header
matmul,cublas,f32,f32,1024x1024x1024,2147483648,12582912,0.050,0.5,80.0,compute,cold,PASS
matmul,cublas_tf32,f32,tf32,1024x1024x1024,2147483648,12582912,0.010,0.5,90.0,compute,cold,PASS
matmul,double_buffered,f32,f32,1024x1024x1024,2147483648,12582912,0.100,0.5,40.0,compute,cold,PASS
matmul,warptile,f32,f32,1024x1024x1024,2147483648,12582912,0.080,0.5,50.0,compute,cold,PASS
matmul,torch,f32,f32,1024x1024x1024,2147483648,12582912,0.060,0.5,,,cold,PASS
matmul,warptile,f32,f32,512x512x512,268435456,3145728,0.001,0.5,50.0,compute,cold,PASS
matmul,warptile,f32,f32,5000x5000x5000,250000000000,300000000,5.000,0.5,50.0,compute,cold,PASS
softmax,cudnn,f32,f32,65536x4096,1342177280,2147483648,0.800,0.5,89.0,memory,cold,PASS
softmax,vectorized,f32,f32,65536x4096,1342177280,2147483648,0.750,0.5,95.0,memory,cold,PASS
softmax,warp,f32,f32,65536x4096,1342177280,2147483648,0.700,0.5,99.0,memory,cold,PASS
softmax,online,f32,f32,65536x4096,1342177280,2147483648,0.100,0.5,99.0,memory,hot,PASS
softmax,smem_block,f32,f32,65536x4096,1342177280,2147483648,,,,,cold,SKIP
softmax,naive,f32,f32,65536x4096,1342177280,2147483648,,,,,cold,FAIL
attention,flash_mma,bf16,bf16,4x16x8192x8192x128,2199023255552,536870912,6.000,0.5,45.0,compute,cold,PASS
attention,torch,bf16,bf16,4x16x8192x8192x128,2199023255552,536870912,3.000,0.5,,,cold,PASS
seq2seq,3xtf32_graph,f32,f32,32x128x128x512x8x2048x6x6c,376883380224,201728000,6.449,0.1,,compute,cold,PASS
seq2seq,torch,f32,f32,32x128x128x512x8x2048x6x6c,376883380224,201728000,12.679,0.6,,,cold,PASS
EOF

# The newer run, named first on the command line: the date decides.  warptile
# got slower, warp now fails, and its columns differ (gflop_per_j, no l2).
# Under the table, a line per run, oldest first, with its ceilings; metadata
# that markdown would read as markup comes out as '?'.
cat >new.csv <<EOF
# date: 2026-02-01T00:00:00Z
# git_commit: abc123|<b>
# sm_clock_mhz: 1980
# ceiling_mem_gb_s: 3006.1
# ceiling_fp32_gflop_s: 63582.9
# ceiling_tc_gflop_s: 787272.9
# ceiling_tc_clock_mhz: 1980
# ceiling_tc_clock_inside_mhz: 1762
# datasheet_mem_gb_s: 3352.3
# datasheet_fp32_gflop_s: 66908.2
# datasheet_tc_gflop_s: 1070530.6
# baseline_matmul: cublas
op,variant,dtype,math,shape,flops,bytes,median_ms,rel_stdev_pct,pct_of_peak,bound,status,gflop_per_j
matmul,warptile,f32,f32,1024x1024x1024,2147483648,12582912,0.120,0.5,33.0,compute,PASS,
softmax,warp,f32,f32,65536x4096,1342177280,2147483648,,,,,FAIL,
softmax,vectorized,f32,f32,65536x4096,1342177280,2147483648,0.760,0.5,94.0,memory,PASS,3.5
EOF

report 0 new.csv old.csv
cat >want <<'EOF'
| op | dtype | variant | shape | speed | % of roofline | × baseline | × PyTorch | GFLOP/J | run |
|---|---|---|---|---|---|---|---|---|---|
| matmul | f32 | double_buffered | 1024x1024x1024 | 21.5 TFLOP/s | 40.0% | 0.50× cublas | 0.60× | – | old |
| softmax | f32 | vectorized | 65536x4096 | 2826 GB/s | 94.0% | 1.05× cudnn | – | 3.5 | new |
| attention | bf16 | flash_mma | 4x16x8192x8192x128 | 366.5 TFLOP/s | 45.0% | – | 0.50× | – | old |
| seq2seq | f32 | 3xtf32_graph | 32x128x128x512x8x2048x6x6c | 58.4 TFLOP/s | – | – | 1.97× | – | old |

Run `old.csv`: commit ?, 2026-01-01T00:00:00Z.

Run `new.csv`: commit abc123??b?, 2026-02-01T00:00:00Z; ceilings measured: 3006 GB/s of memory, 63.6 TFLOP/s of fp32 FMA, 787 TFLOP/s of bf16 tensor math at 1980 MHz by NVML, 1762 inside the kernel (datasheet at 1980 MHz: 3352 GB/s, 66.9 and 1071 TFLOP/s).
EOF
diff want out >/dev/null || fail "merged table differs: $(diff want out)"

# One run: no run column, and its own newest rows.
report 0 old.csv
grep -q "| run |" out && fail "run column for one run: $(cat out)"
grep -q "^| matmul | f32 | warptile | 1024x1024x1024 | 26.8 TFLOP/s | 50.0% | 0.62× cublas | 0.75× | – |$" out ||
    fail "old.csv alone: $(cat out)"
grep -q "^| softmax | f32 | warp | 65536x4096 | 3068 GB/s | 99.0% | 1.14× cudnn | – | – |$" out ||
    fail "old.csv alone, softmax: $(cat out)"

# No `torch` row: PyTorch's eager figure is its fastest backend's row
# (attention_backward's torch_cudnn, torch_flash), never torch.compile's.
cat >backends.csv <<EOF
$header
attention_backward,flash_mma,bf16,bf16,2x16x8192x8192x128,2748779069440,536870912,4.000,0.5,25.0,compute,cold,PASS
attention_backward,torch_flash,bf16,bf16,2x16x8192x8192x128,2748779069440,536870912,8.000,0.5,,,cold,PASS
attention_backward,torch_cudnn,bf16,bf16,2x16x8192x8192x128,2748779069440,536870912,6.000,0.5,,,cold,PASS
attention_backward,torch_compile,bf16,bf16,2x16x8192x8192x128,2748779069440,536870912,1.000,0.5,,,cold,PASS
EOF
report 0 backends.csv
grep -q "^| attention_backward | bf16 | flash_mma | 2x16x8192x8192x128 | .* | 1.50× | – |$" out ||
    fail "PyTorch's fastest eager backend: $(cat out)"

# Without flops and bytes columns the rates give the work back.
awk -F, -v OFS=, '/^#/ { print; next } !h++ { $6 = "gflop_s"; $7 = "gb_s"; print; next }
     { ms = $8; if (ms != "") { $6 = $6 / ms / 1e6; $7 = $7 / ms / 1e6 } print }' old.csv >rates.csv
report 0 rates.csv
grep -q "^| matmul | f32 | warptile | 1024x1024x1024 | 26.8 TFLOP/s |" out || fail "from rates: $(cat out)"

# FAIL and SKIP rows never appear, even when nothing else is left.
grep -v ",PASS$" old.csv >failed.csv
bad_input "no passing timed row" failed.csv
# Library rows alone are not kbench's.
grep -v "double_buffered\|warptile\|vectorized\|warp,\|flash_mma\|3xtf32_graph" old.csv >library.csv
bad_input "no passing timed row" library.csv

# --readme: the text between the markers is replaced, every other byte kept.
printf '# Title\r\nintro with <!-- a comment -->\n\n<!-- report:begin -->\nold table\n<!-- report:end -->\ntail, no newline' >README.md
chmod 640 README.md
cp README.md before.md
report 0 new.csv old.csv --readme README.md
[[ -s out || -s err ]] && fail "--readme printed: $(cat out err)"
{ head -c "$(grep -b -o '<!-- report:begin -->' before.md | cut -d: -f1)" before.md
  printf '<!-- report:begin -->\n'; cat want; printf '<!-- report:end -->\ntail, no newline'; } >expected.md
cmp -s expected.md README.md || fail "README rewrite: $(diff expected.md README.md)"
[[ $(stat -c %a README.md) == 640 ]] || fail "README mode $(stat -c %a README.md), want 640"
report 0 new.csv old.csv --readme README.md
cmp -s expected.md README.md || fail "second rewrite changed README: $(diff expected.md README.md)"
ls README.md.tmp.* >/dev/null 2>&1 && fail "temporary file left behind"

# Markers missing, doubled or reversed: exit 2, the file untouched.
for text in 'no markers\n' '<!-- report:begin -->\nonly a begin\n' \
            '<!-- report:end -->\n<!-- report:begin -->\n' \
            '<!-- report:begin -->\n<!-- report:end -->\n<!-- report:begin -->\n<!-- report:end -->\n'; do
    printf "$text" >bad.md
    cp bad.md bad-before.md
    bad_input "bad.md needs one '<!-- report:begin -->' line and, after it, one '<!-- report:end -->' line" \
        old.csv --readme bad.md
    cmp -s bad.md bad-before.md || fail "bad.md changed: $(cat bad.md)"
done
bad_input "cannot read missing.md" old.csv --readme missing.md

# Bad input and help.
bad_input "usage: kbench report RUN.csv" --readme README.md
bad_input "--readme needs a file" old.csv --readme
bad_input "unknown option '--fast' for report" old.csv --fast
bad_input "cannot read mis[\\]x0asing.csv" old.csv $'mis\nsing.csv'
sed 's/,0.100,/,fast,/' old.csv >bad.csv
bad_input "bad.csv:8: median_ms (column 8) is 'fast'" bad.csv
sed 's/,40.0,/,4e1x,/' old.csv >bad.csv
bad_input "bad.csv:8: pct_of_peak (column 10) is '4e1x'" bad.csv
report 0 --help
grep -q "^usage: kbench report" out || fail "--help: $(cat out)"

# --across: rows across GPUs alone (hot ones too), each against its
# baseline, one-GPU or not; without it they never appear.
cat >across.csv <<EOF
# gpu: NVIDIA H200
# date: 2026-01-03T00:00:00Z
# baseline_bf16_allreduce: nccl
# baseline_bf16_ffn: cublaslt
${header},devices
allreduce,nccl,bf16,bf16,536870912,536870912,1073741824,3.2,0.5,,memory,hot,PASS,0+1
allreduce,p2p_oneshot,bf16,bf16,536870912,536870912,1073741824,3.1,0.5,,memory,hot,PASS,0+1
allreduce,naive,bf16,bf16,536870912,536870912,1073741824,7.7,0.5,,memory,hot,PASS,0+1
ffn,cublaslt,bf16,bf16,8192x8192x32768,8796093022208,1342259200,12.0,0.5,68.0,compute,cold,PASS,0
ffn,tp_overlap,bf16,bf16,8192x8192x32768,8796093022208,1342259200,6.0,0.5,62.0,compute,cold,PASS,0+1
EOF
report 0 across.csv --across
grep -q '^| allreduce | bf16 | p2p_oneshot | 536870912 | .* | 1.03× nccl |' out &&
    grep -q '^| ffn | bf16 | tp_overlap | 8192x8192x32768 | .* | 2.00× cublaslt |' out ||
    fail "--across: want p2p_oneshot and tp_overlap against their baselines, got: $(cat out)"
report 2 across.csv
printf '<!-- report-across:begin -->\nold\n<!-- report-across:end -->\n' >across.md
report 0 across.csv --across --readme across.md
grep -q tp_overlap across.md && ! grep -q old across.md || fail "--across --readme: $(cat across.md)"

# --stages: the model's stage table from one run's stage rows, each stage's
# prefill and decode, the share of the copy ceiling from its bytes, its error;
# a FAIL shows its reason; stage rows never enter the results table.
cat >stages.csv <<EOF
# gpu: NVIDIA H100 80GB HBM3
# date: 2026-01-04T00:00:00Z
# ceiling_mem_gb_s: 3000
${header},rel_l2_err,tol_at_max_err,reason
stage-prefill,basic,f32,f32,30x576x9x3x1536x49152x512t,1e12,6e8,40.0,0.5,,compute,cold,PASS,2e-6,1e-4,
stage-decode,basic,f32,f32,30x576x9x3x1536x49152x512t,1e12,6e8,20.0,0.5,,compute,cold,PASS,2e-6,1e-4,
stage-prefill,paper,f32,f32,30x576x9x3x1536x49152x512t,1e12,6e8,10.0,0.5,,compute,cold,FAIL,3e-3,1e-4,logits rel. L2 3e-3 over the bound
stage-decode,paper,f32,f32,30x576x9x3x1536x49152x512t,1e12,6e8,,,,,cold,FAIL,3e-3,1e-4,logits rel. L2 3e-3 over the bound
stage-prefill,fast,bf16,bf16,30x576x9x3x1536x49152x512t,1e11,3e8,2.0,0.5,,compute,cold,PASS,5e-3,6.25e-2,
stage-decode,fast,bf16,bf16,30x576x9x3x1536x49152x512t,3e8,3e8,0.5,0.5,,memory,cold,PASS,5e-3,6.25e-2,
matmul,warptile,f32,f32,1024x1024x1024,2147483648,12582912,0.080,0.5,50.0,compute,cold,PASS,,,
EOF
report 0 stages.csv --stages
grep -q '^| basic | f32 | 40.00 ms | 20.000 ms | 50 | 1.0% | PASS, 2.0e-06 (≤ 1e-04) |$' out &&
    grep -q '^| paper | f32 | FAIL: logits rel. L2 3e-3 over the bound |' out &&
    grep -q '^| fast | bf16 | 2.00 ms | 0.500 ms | 2000 | 20.0% | PASS, 5.0e-03 (≤ 6e-02) |$' out &&
    ! grep -q '^| modern' out &&
    grep -q '^At 30 layers, d_model 576, 9 heads (3 KV heads in modern and fast), d_ff 1536, vocab 49152, tied embeddings; a 512-token prompt' out ||
    fail "--stages: got $(cat out)"
report 0 stages.csv
grep -q stage- out && fail "stage rows in the results table: $(cat out)"
bad_input "old.csv has no stage-decode row" old.csv --stages
bad_input "report takes one of --across and --stages" stages.csv --stages --across

# The committed README's tables are what the committed runs give.
if [[ -n $root ]]; then
    report 0 "$root"/results/h200/*.csv
    sed -n '/<!-- report:begin -->/,/<!-- report:end -->/p' "$root/README.md" | sed '1d;$d' >committed
    diff committed out >/dev/null ||
        fail "README.md's table is stale; regenerate it: kbench report results/h200/*.csv --readme README.md"
    report 0 --across "$root"/results/h200-x2/*.csv
    sed -n '/<!-- report-across:begin -->/,/<!-- report-across:end -->/p' "$root/README.md" | sed '1d;$d' >committed
    diff committed out >/dev/null ||
        fail "README.md's table across GPUs is stale; regenerate it: kbench report --across results/h200-x2/*.csv --readme README.md"
    if grep -q '<!-- report-stages:begin -->' "$root/README.md"; then
        report 0 --stages "$root"/results/h200/*.csv
        sed -n '/<!-- report-stages:begin -->/,/<!-- report-stages:end -->/p' "$root/README.md" | sed '1d;$d' >committed
        diff committed out >/dev/null ||
            fail "README.md's stage table is stale; regenerate it: kbench report --stages results/h200/*.csv --readme README.md"
    fi
fi

[[ $failures -eq 0 ]] && echo "all report checks passed"
exit $((failures > 0))
