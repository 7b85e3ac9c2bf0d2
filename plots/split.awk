# Split a kbench CSV into small whitespace-separated data files for gnuplot.
# Run as: awk -v out=DIR -v src=FILE.csv -f split.awk FILE.csv
# Columns are found by name.  Only timed PASS rows are kept: a SKIP or FAIL
# row has no timing and must never reach a figure.  Writes into DIR:
#   meta                      key<TAB>value from the `# key: value` lines
#   groups                    "op dtype variant unit" per plotted line, in CSV
#                             order; unit is GFLOP/s or GB/s
#   speed.OP.DTYPE.VAR.dat    "size speed" per shape (unsorted)
#   speedup.OP.dat            "variant speedup" at the representative shape
#   speedup.OP.info           "shape baseline" of that chart
#   roofline.OP.dat           "intensity gflop_s variant" at each variant's largest shape
#   ops                       ops that have roofline points

# Split one record; the writer quotes fields holding a comma or a quote.
function split_csv(line, f,    n, i, c, cur, quoted) {
    if (index(line, "\"") == 0)
        return split(line, f, ",")
    n = 0
    cur = ""
    quoted = 0
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (quoted && c == "\"" && substr(line, i + 1, 1) == "\"") {
            cur = cur c
            i++
        } else if (c == "\"")
            quoted = !quoted
        else if (c == "," && !quoted) {
            f[++n] = cur
            cur = ""
        } else
            cur = cur c
    }
    f[++n] = cur
    return n
}

function fail(msg) {
    print "kbench: " src ": " msg > "/dev/stderr"
    failed = 1
    exit 2
}

function read_header(line,    f, i, need, k) {
    ncols = split_csv(line, f)
    for (i = 1; i <= ncols; i++)
        col[f[i]] = i
    k = split("op variant dtype shape flops bytes median_ms gflop_s gb_s speedup_x status", need, " ")
    for (i = 1; i <= k; i++)
        if (!(need[i] in col))
            fail("not a kbench CSV (no '" need[i] "' column)")
    have_header = 1
}

# Names become file names and gnuplot words, so they must stay plain.
function check_name(s) {
    if (s !~ /^[A-Za-z0-9_+-]+$/)
        fail("line " NR ": name '" s "' has characters other than letters, digits, _ + -")
}

# Compute-bound ops are measured in FLOP/s, the rest in bytes moved per second.
function flop_op(op) {
    return op ~ /^(matmul|attention|ffn|encoder-layer|decoder-layer|seq2seq)/
}

function keep_row(f,    op, var, dtype, x, y, key) {
    op = f[col["op"]]; var = f[col["variant"]]; dtype = f[col["dtype"]]
    check_name(op); check_name(var); check_name(dtype)
    x = flop_op(op) ? f[col["flops"]] : f[col["bytes"]]
    y = flop_op(op) ? f[col["gflop_s"]] : f[col["gb_s"]]
    print x, y > (out "/speed." op "." dtype "." var ".dat")
    has_var[op, var] = 1
    key = op SUBSEP dtype SUBSEP var
    if (!(key in seen)) {
        seen[key] = 1
        print op, dtype, var, flop_op(op) ? "GFLOP/s" : "GB/s" > (out "/groups")
        if (!(op in op_seen)) {
            op_seen[op] = 1
            op_list[++nops] = op
        }
    }
    n++
    r_op[n] = op; r_var[n] = var; r_shape[n] = f[col["shape"]]
    r_flops[n] = f[col["flops"]] + 0; r_bytes[n] = f[col["bytes"]] + 0
    r_med[n] = f[col["median_ms"]] + 0; r_gf[n] = f[col["gflop_s"]] + 0
    r_sx[n] = f[col["speedup_x"]]
}

{ sub(/\r$/, "") }
/^#/ && !have_header {
    if (match($0, /^# [^:]+: /)) {
        meta_kv[substr($0, 3, RLENGTH - 4)] = substr($0, RLENGTH + 1)
        print substr($0, 3, RLENGTH - 4) "\t" substr($0, RLENGTH + 1) > (out "/meta")
    }
    next
}
/^[ \t]*$/ { next }
!have_header { read_header($0); next }
{
    if (split_csv($0, f) != ncols)
        fail("line " NR ": field count differs from the header")
    if (f[col["status"]] == "PASS" && f[col["median_ms"]] != "")
        keep_row(f)
}

# The variant every other variant is measured against: the CSV's
# `baseline_OP` line, else the first library variant present.
function baseline_of(op,    i, names, k) {
    if (("baseline_" op) in meta_kv && (op SUBSEP meta_kv["baseline_" op]) in has_var)
        return meta_kv["baseline_" op]
    k = split("cublas cudnn torch", names, " ")
    for (i = 1; i <= k; i++)
        if ((op SUBSEP names[i]) in has_var)
            return names[i]
    return ""
}

# Speedups at the largest shape (by FLOP) the baseline passed.
function write_speedup(op,    base, i, best, shape, bmed, sx, file) {
    base = baseline_of(op)
    if (base == "")
        return
    best = -1
    for (i = 1; i <= n; i++)
        if (r_op[i] == op && r_var[i] == base && r_flops[i] > best) {
            best = r_flops[i]
            shape = r_shape[i]
            bmed = r_med[i]
        }
    file = out "/speedup." op ".dat"
    for (i = 1; i <= n; i++) {
        if (r_op[i] != op || r_shape[i] != shape || r_med[i] <= 0)
            continue
        sx = r_sx[i] != "" ? r_sx[i] : bmed / r_med[i]
        print r_var[i], sx > file
    }
    print shape, base > (out "/speedup." op ".info")
}

# One roofline point per variant: its largest shape, where launch overhead
# matters least.
function write_roofline(op,    i, best, pick, var) {
    for (i = 1; i <= n; i++)
        if (r_op[i] == op && r_bytes[i] > 0 && r_flops[i] > 0 &&
            (!(r_var[i] in best) || r_flops[i] > best[r_var[i]])) {
            best[r_var[i]] = r_flops[i]
            pick[r_var[i]] = i
        }
    # An op that does no arithmetic (copy) has no place on a log-log roofline.
    if (length(pick) == 0)
        return
    for (var in pick) {
        i = pick[var]
        print r_flops[i] / r_bytes[i], r_gf[i], var > (out "/roofline." op ".dat")
    }
    print op > (out "/ops")
}

END {
    if (failed)
        exit 2
    if (!have_header) {
        print "kbench: " src ": not a kbench CSV (no header line)" > "/dev/stderr"
        exit 2
    }
    for (i = 1; i <= nops; i++) {
        write_speedup(op_list[i])
        write_roofline(op_list[i])
    }
}
