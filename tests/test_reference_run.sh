#!/usr/bin/env bash
# tools/reference_run.sh's plumbing, with a stand-in for kbench (no GPU
# here): one CSV per GPU under results/<gpu>/ that replaces the GPU's earlier
# runs and keeps other GPUs', the model rows (transformer, Llama, stages)
# appended, the steps timed, and
# a failed sweep that leaves no CSV failing the run and removing nothing.
#   tests/test_reference_run.sh SOURCE_ROOT
src=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/shell_test.sh" /dev/null
mkdir -p repo/results/h100 repo/results/a100
cp -r "$src/tools" "$src/plots" "$src/peers" repo/
echo old >repo/results/h100/kbench-old.csv
echo other >repo/results/a100/kbench-other.csv
# The stand-in's run is a committed one, so the plots step has real rows.
template=$(ls "$src"/results/*/*.csv | head -1)
cat >fake-kbench <<STUB
#!/usr/bin/env bash
# kbench's stand-in: \`run --csv F\` writes a run, \`model ... --append F\`
# repeats its last row; FAKE_FAIL=1 makes run fail before writing anything.
last=\${!#}
case \$1 in
run) [[ \${FAKE_FAIL:-0} == 1 ]] && exit 1
     cp "$template" "\$last" ;;
model) tail -1 "\$last" >>"\$last" ;;
derive) ;;
esac
STUB
chmod +x fake-kbench

# Only the tools the scripts use, and no python3, so the PyTorch steps skip.
mkdir bin && ln -s "$(command -v bash)" bin/bash
for t in awk sed find mkdir mv rm cp date realpath mktemp tr cat grep sort head tail cut wc ls dirname basename \
         uniq paste join tee env touch gnuplot; do
    p=$(command -v $t) && ln -s "$p" bin/$t
done
PATH=$work/bin bash repo/tools/reference_run.sh "$work/fake-kbench" >log 2>&1
rc=$?
runs=(repo/results/h100/*.csv)
[[ $rc -eq 0 ]] || fail "reference_run exited $rc: $(cat log)"
[[ ${#runs[@]} -eq 1 && ${runs[0]} == repo/results/h100/kbench-*.csv && ${runs[0]} != *old* ]] ||
    fail "results/h100 holds ${runs[*]}, not one new run"
[[ -f repo/results/a100/kbench-other.csv ]] || fail "another GPU's run was removed"
[[ $(wc -l <"${runs[0]}") -eq $(($(wc -l <"$template") + 7)) ]] || fail "the run lacks the seven model rows (transformer, Llama, stages)"
grep -q '^== sweep: exit 0 after [0-9]* s$' log || fail "the sweep step's time is not printed: $(cat log)"
grep -q 'PyTorch rows: skipped' log || fail "the PyTorch step did not skip without PyTorch: $(cat log)"

# A machine of two GPUs: its own folder, and the tensor-parallel FFN's rows merged in.
printf '#!/usr/bin/env bash\necho "GPU 0: H100"\necho "GPU 1: H100"\n' >bin/nvidia-smi
chmod +x bin/nvidia-smi
PATH=$work/bin bash repo/tools/reference_run.sh "$work/fake-kbench" >log 2>&1
rc=$?
pair=(repo/results/h100-x2/*.csv)
[[ $rc -eq 0 && ${#pair[@]} -eq 1 && -f ${pair[0]} ]] || fail "two GPUs did not make one run in results/h100-x2: $(cat log)"
grep -q '^== tensor-parallel FFN: exit 0' log || fail "two GPUs did not run the tensor-parallel FFN: $(cat log)"
[[ $(wc -l <"${runs[0]}") -eq $(($(wc -l <"$template") + 7)) ]] || fail "the two-GPU run replaced the one-GPU run"
rm bin/nvidia-smi

FAKE_FAIL=1 PATH=$work/bin bash repo/tools/reference_run.sh "$work/fake-kbench" >log 2>&1
[[ $? -ne 0 ]] || fail "a sweep that wrote nothing did not fail"
[[ -f ${runs[0]} ]] || fail "a failed sweep removed the GPU's run"

# merge_csv.sh: a part from an older kbench, short of the columns added
# since, gets them empty (either order); a part of another table is
# refused and nothing is written.
printf '# a: 1\nop,variant,dtype,math,x,shape\nm,v,f32,f32,1,10\n' >old.csv
printf '# b: 2\nop,variant,dtype,math,x,shape,extra\nm,w,f32,f32,2,10,7\n' >new.csv
printf 'op,variant,other\nm,u,3\n' >alien.csv
bash repo/tools/merge_csv.sh both.csv old.csv new.csv &&
    [[ $(sed -n 3,5p both.csv | paste -sd'|') == 'op,variant,dtype,math,x,shape,extra|m,v,f32,f32,1,10,|m,w,f32,f32,2,10,7' ]] ||
    fail "merge of an older part first: $(cat both.csv)"
bash repo/tools/merge_csv.sh both.csv new.csv old.csv &&
    [[ $(tail -1 both.csv) == 'm,v,f32,f32,1,10,' ]] || fail "merge of an older part last: $(cat both.csv)"
bash repo/tools/merge_csv.sh bad.csv old.csv alien.csv 2>err
[[ $? -eq 2 && ! -e bad.csv ]] && grep -q "alien.csv: its header is not" err ||
    fail "merge of another table: $(cat err)"

[[ $failures -eq 0 ]] && echo "reference_run checks passed"
exit $((failures > 0))
