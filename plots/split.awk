# Split a kbench CSV into small whitespace-separated data files for gnuplot.
# Run as: awk -v out=DIR -v src=FILE.csv -f split.awk FILE.csv
# Columns are found by name.  Only timed PASS rows are kept: a SKIP or FAIL
# row has no timing and must never reach a figure.  Of rows alike but for
# their GPU (a --replicate run has one per GPU), the first in the file
# stands for them, so no point is drawn twice.  Writes into DIR:
#   meta                      key<TAB>value from the `# key: value` lines
#   groups                    "op dtype family variant unit x" per plotted line,
#                             in CSV order; unit is GFLOP/s or GB/s, by the
#                             `bound` of the (op, dtype, family)'s largest row; family
#                             is the rows' `family` column ("_" for a CSV
#                             without one: all shapes, one line); x is the
#                             family's `axis`, the shape field its points are
#                             placed at, or "-" for the problem size
#   speed.OP.DTYPE.FAMILY.VAR.dat  "x speed" per shape (unsorted)
#   maths                     "op dtype math" for each math among the rows
#   speedup.OP.DTYPE.dat      "variant speedup" at the representative shape,
#                             the op's rows of that dtype only
#   speedup.OP.DTYPE.info     "shape baseline" of that chart
#   roofline.OP.dat           "intensity gflop_s variant" at each variant's largest shape
#   roofline.OP.best          "intensity gflop_s op:variant" of its fastest one
#   ops                       ops that have roofline points
#   across                    "op dtype" whose rows span several GPUs (the
#                             `devices` column: "0+1"); no one-GPU ceiling
#                             bounds them and no one-GPU roofline holds them

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

# The value of shape field `name` in this row: its position in
# shape_fields (brackets of optional fields dropped) picks the d column.
function field_value(f, name,    fields, k, i, names) {
    fields = f[col["shape_fields"]]
    gsub(/[][]/, "", fields)
    k = split(fields, names, "x")
    for (i = 1; i <= k; i++)
        if (names[i] == name && ("d" i) in col)
            return f[col["d" i]]
    fail("line " NR ": axis '" name "' is not a field of " f[col["shape_fields"]])
}

function keep_row(f,    op, var, dtype, key, fam, axis, fa) {
    op = f[col["op"]]; var = f[col["variant"]]; dtype = f[col["dtype"]]
    check_name(op); check_name(var); check_name(dtype)
    fam = ("family" in col) && f[col["family"]] != "" ? f[col["family"]] : "_"
    axis = ("axis" in col) ? f[col["axis"]] : ""
    # A peer's row without a family (an older peer script) is measured at a
    # kbench row's shape: it joins that row's family.
    if (fam != "_")
        fam_of[op, f[col["shape"]]] = fam SUBSEP axis
    else if ((op, f[col["shape"]]) in fam_of) {
        split(fam_of[op, f[col["shape"]]], fa, SUBSEP)
        fam = fa[1]
        axis = fa[2]
    }
    check_name(fam)
    if (axis != "")
        check_name(axis)
    if (!((op, dtype, ("math" in col) ? f[col["math"]] : dtype) in math_seen)) {
        math_seen[op, dtype, ("math" in col) ? f[col["math"]] : dtype] = 1
        print op, dtype, ("math" in col) ? f[col["math"]] : dtype > (out "/maths")
    }
    key = op SUBSEP dtype SUBSEP fam SUBSEP var
    if ((key, f[col["shape"]]) in kept)
        return
    kept[key, f[col["shape"]]] = 1
    if (!(key in seen)) {
        seen[key] = 1
        g_op[++ngroups] = op; g_dtype[ngroups] = dtype; g_var[ngroups] = var
        g_fam[ngroups] = fam; g_axis[ngroups] = axis == "" ? "-" : axis
        if (!(op in op_seen)) {
            op_seen[op] = 1
            op_list[++nops] = op
        }
        if (!((op, dtype) in od_seen)) {
            od_seen[op, dtype] = 1
            od_op[++nods] = op
            od_dtype[nods] = dtype
        }
    }
    # This (op, dtype)'s variants in CSV order, for the baseline fallback.
    if (!((op, dtype, var) in var_seen)) {
        var_seen[op, dtype, var] = 1
        od_vars[op, dtype, ++od_nvars[op, dtype]] = var
    }
    n++
    r_op[n] = op; r_dtype[n] = dtype; r_var[n] = var; r_shape[n] = f[col["shape"]]; r_fam[n] = fam
    r_flops[n] = f[col["flops"]] + 0; r_bytes[n] = f[col["bytes"]] + 0
    r_med[n] = f[col["median_ms"]] + 0; r_gf[n] = f[col["gflop_s"]] + 0
    r_sx[n] = f[col["speedup_x"]]
    r_bound[n] = ("bound" in col) ? f[col["bound"]] : ""
    r_across[n] = ("devices" in col) && index(f[col["devices"]], "+") > 0
    if (r_across[n] && !((op, dtype) in across_seen)) {
        across_seen[op, dtype] = 1
        print op, dtype > (out "/across")
    }
    # The speed points keep the CSV's text: awk's numbers print to 6 digits.
    # x is the axis field's value, else the problem size in the plot's unit.
    r_point[n, 1] = (axis != "" ? field_value(f, axis) : f[col["flops"]]) " " f[col["gflop_s"]]
    r_point[n, 0] = (axis != "" ? field_value(f, axis) : f[col["bytes"]]) " " f[col["gb_s"]]
}

# Whether an (op, dtype, family) is plotted in FLOP/s: the `bound` kbench
# wrote for its largest row (by FLOP, then bytes) that has one; without the
# column, whether that row's intensity is above the run's fp32 ridge point.
# By family, so decode attention shows GB/s where prefill shows GFLOP/s.
function compute_bound(op, dtype, fam,    i, pick, any, ridge, mem) {
    pick = 0
    for (any = 1; any >= 0 && !pick; any--)
        for (i = 1; i <= n; i++)
            if (r_op[i] == op && r_dtype[i] == dtype && (fam == "" || r_fam[i] == fam) && (!any || r_bound[i] != "") &&
                (!pick || r_flops[i] > r_flops[pick] || (r_flops[i] == r_flops[pick] && r_bytes[i] > r_bytes[pick])))
                pick = i
    if (r_bound[pick] != "")
        return r_bound[pick] == "compute"
    mem = meta_num("ceiling_mem_gb_s", meta_num("datasheet_mem_gb_s", 0))
    ridge = mem > 0 ? meta_num("ceiling_fp32_gflop_s", meta_num("datasheet_fp32_gflop_s", 0)) / mem : 10
    return r_bytes[pick] > 0 && r_flops[pick] / r_bytes[pick] > ridge
}

function meta_num(key, fallback) {
    return (key in meta_kv) && meta_kv[key] + 0 > 0 ? meta_kv[key] + 0 : fallback
}

# The speed points and the groups list, each (op, dtype, family) in its own unit.
function write_speed(    i, k) {
    for (k = 1; k <= ngroups; k++)
        if (!((g_op[k], g_dtype[k], g_fam[k]) in flop_unit))
            flop_unit[g_op[k], g_dtype[k], g_fam[k]] = compute_bound(g_op[k], g_dtype[k], g_fam[k])
    for (k = 1; k <= ngroups; k++)
        print g_op[k], g_dtype[k], g_fam[k], g_var[k], flop_unit[g_op[k], g_dtype[k], g_fam[k]] ? "GFLOP/s" : "GB/s",
              g_axis[k] > (out "/groups")
    for (i = 1; i <= n; i++)
        print r_point[i, flop_unit[r_op[i], r_dtype[i], r_fam[i]]] > (out "/speed." r_op[i] "." r_dtype[i] "." r_fam[i] "." r_var[i] ".dat")
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

# The variant the op's rows of one dtype are measured against, from rows of
# that dtype only: a bf16 kernel over an fp32 library call would flatter it.
# The CSV's `baseline_OP` line for f32 rows, `baseline_DTYPE_OP` for the
# others (baseline_bf16_matmul), when that variant passed in this dtype; else
# the first variant of the dtype, in CSV order, named cublas*, else cudnn*,
# else torch; else none.  Sets from_meta: whether the CSV's line named it.
function baseline_of(op, dtype,    key, i, j, k, names, v) {
    key = dtype == "f32" ? "baseline_" op : "baseline_" dtype "_" op
    from_meta = 0
    if (key in meta_kv && (op SUBSEP dtype SUBSEP meta_kv[key]) in var_seen) {
        from_meta = 1
        return meta_kv[key]
    }
    k = split("^cublas ^cudnn ^nccl ^torch$", names, " ")
    for (i = 1; i <= k; i++)
        for (j = 1; j <= od_nvars[op, dtype]; j++) {
            v = od_vars[op, dtype, j]
            if (v ~ names[i])
                return v
        }
    return ""
}

# Speedups of one (op, dtype) at the largest shape (by FLOP, then bytes) its
# baseline passed.  A row's speedup_x is over the baseline of its own dtype
# as kbench named it, so it is used when the baseline came from the CSV's
# line; otherwise (or when the cell is empty, as in PyTorch's bf16 rows) it
# is the baseline's median over the row's.
function write_speedup(op, dtype,    base, i, best, best_bytes, shape, bmed, sx, file) {
    base = baseline_of(op, dtype)
    if (base == "")
        return
    # By FLOP, then by bytes moved: an op that does no arithmetic (copy).
    best = -1
    for (i = 1; i <= n; i++)
        if (r_op[i] == op && r_dtype[i] == dtype && r_var[i] == base &&
            (r_flops[i] > best || (r_flops[i] == best && r_bytes[i] > best_bytes))) {
            best = r_flops[i]
            best_bytes = r_bytes[i]
            shape = r_shape[i]
            bmed = r_med[i]
        }
    if (bmed <= 0)
        return
    file = out "/speedup." op "." dtype ".dat"
    for (i = 1; i <= n; i++) {
        if (r_op[i] != op || r_dtype[i] != dtype || r_shape[i] != shape || r_med[i] <= 0)
            continue
        sx = from_meta && r_sx[i] != "" ? r_sx[i] : bmed / r_med[i]
        print r_var[i], sx > file
    }
    print shape, base > (out "/speedup." op "." dtype ".info")
}

# One roofline point per variant: its largest shape, where launch overhead
# matters least.
function write_roofline(op,    i, best, pick, var, top) {
    for (i = 1; i <= n; i++)
        if (r_op[i] == op && r_bytes[i] > 0 && r_flops[i] > 0 && !r_across[i] &&
            (!(r_var[i] in best) || r_flops[i] > best[r_var[i]])) {
            best[r_var[i]] = r_flops[i]
            pick[r_var[i]] = i
        }
    # An op that does no arithmetic (copy) has no place on a log-log roofline.
    if (length(pick) == 0)
        return
    top = ""
    for (var in pick) {
        i = pick[var]
        print r_flops[i] / r_bytes[i], r_gf[i], var > (out "/roofline." op ".dat")
        if (top == "" || r_gf[i] > r_gf[top])
            top = i
    }
    # Only the op's fastest variant is labelled, so the labels stay readable.
    print r_flops[top] / r_bytes[top], r_gf[top], op ":" r_var[top] > (out "/roofline." op ".best")
    print op > (out "/ops")
}

END {
    if (failed)
        exit 2
    if (!have_header) {
        print "kbench: " src ": not a kbench CSV (no header line)" > "/dev/stderr"
        exit 2
    }
    write_speed()
    for (i = 1; i <= nods; i++)
        write_speedup(od_op[i], od_dtype[i])
    for (i = 1; i <= nops; i++)
        write_roofline(op_list[i])
}
