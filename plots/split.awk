# Split a kbench CSV into small whitespace-separated data files for gnuplot.
# Run as: awk -v out=DIR -v src=FILE.csv [-v by_size=1] -f split.awk FILE.csv
# (by_size=1: a family without an axis over problem size, not by shape, as
# overlays of two runs draw it, whose shapes may differ).
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
#   speed.OP.DTYPE.FAMILY.VAR.dat  "x speed" per shape (unsorted); for a
#                             family without an axis, x is the shape's index
#                             in shapes.OP.DTYPE.FAMILY
#   shapes.OP.DTYPE.FAMILY    "index shape" of such a family, by work
#   fields.OP.DTYPE.FAMILY    the family's shape_fields ("-" without the column)
#   baselines                 "op dtype baseline" of each (op, dtype) with one
#   maths                     "op dtype math" for each math among the rows
#   speedup.OP.DTYPE.dat      "variant speedup" at the representative shape,
#                             the op's rows of that dtype only
#   speedup.OP.DTYPE.info     "shape baseline" of that chart
#   roofline.OP.dat           "intensity gflop_s variant math" at the largest
#                             shape of each (variant, dtype)
#   roofline.OP.best          "intensity gflop_s op:variant" of its fastest one
#   ops                       ops that have roofline points
#   across                    "op dtype variant gpus" of the variants whose
#                             rows span several GPUs (the `devices` column:
#                             "0+1"); no one-GPU ceiling bounds them and no
#                             one-GPU roofline holds them

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
    if (r_across[n] && !((op, dtype, var) in across_seen)) {
        across_seen[op, dtype, var] = 1
        print op, dtype, var, split(f[col["devices"]], fa, "+") > (out "/across")
    }
    # The speed points keep the CSV's text: awk's numbers print to 6 digits.
    # x is the axis field's value, else the problem size in the plot's unit.
    # A family without an axis (fam not "_") is placed by shape, at the
    # index write_speed gives each of its shapes: "@" until then.
    r_byshape[n] = axis == "" && fam != "_" && by_size != 1
    r_math[n] = ("math" in col) && f[col["math"]] != "" ? f[col["math"]] : dtype
    r_point[n, 1] = (axis != "" ? field_value(f, axis) : r_byshape[n] ? "@" : f[col["flops"]]) " " \
                    speed_of(f[col["gflop_s"]], r_flops[n], r_med[n])
    r_point[n, 0] = (axis != "" ? field_value(f, axis) : r_byshape[n] ? "@" : f[col["bytes"]]) " " \
                    speed_of(f[col["gb_s"]], r_bytes[n], r_med[n])
    if (!((op, dtype, fam) in fields_of)) {
        fields_of[op, dtype, fam] = 1
        print ("shape_fields" in col) && f[col["shape_fields"]] != "" ? f[col["shape_fields"]] : "-" > (out "/fields." op "." dtype "." fam)
    }
}

# A speed as the CSV has it, or from the work and the median where its three
# decimals would round it away (a 1x1x1 matmul runs at 0.000 GFLOP/s).
function speed_of(text, work, ms) {
    return text + 0 >= 10 || ms <= 0 ? text : sprintf("%.6g", work / ms * 1e-6)
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
function write_speed(    i, k, p) {
    for (k = 1; k <= ngroups; k++)
        if (!((g_op[k], g_dtype[k], g_fam[k]) in flop_unit))
            flop_unit[g_op[k], g_dtype[k], g_fam[k]] = compute_bound(g_op[k], g_dtype[k], g_fam[k])
    for (k = 1; k <= ngroups; k++)
        print g_op[k], g_dtype[k], g_fam[k], g_var[k], flop_unit[g_op[k], g_dtype[k], g_fam[k]] ? "GFLOP/s" : "GB/s",
              g_axis[k] > (out "/groups")
    number_shapes()
    for (i = 1; i <= n; i++) {
        p = r_point[i, flop_unit[r_op[i], r_dtype[i], r_fam[i]]]
        if (r_byshape[i])
            sub(/^@/, shape_index[r_op[i], r_dtype[i], r_fam[i], r_shape[i]], p)
        print p > (out "/speed." r_op[i] "." r_dtype[i] "." r_fam[i] "." r_var[i] ".dat")
    }
}

# The shapes of each family without an axis, numbered 1, 2, ... by work
# (FLOP, then bytes), so that its plot lists them left to right by size:
# shapes.OP.DTYPE.FAMILY has "index shape" lines.
function number_shapes(    i, j, k, key, m, list, w1, w2, tmp, parts) {
    for (i = 1; i <= n; i++) {
        if (!r_byshape[i] || (r_op[i], r_dtype[i], r_fam[i], r_shape[i]) in shape_index)
            continue
        key = r_op[i] SUBSEP r_dtype[i] SUBSEP r_fam[i]
        shape_index[key, r_shape[i]] = 0
        m = ++nshapes[key]
        fam_shape[key, m] = i
    }
    for (key in nshapes) {
        m = nshapes[key]
        for (j = 1; j <= m; j++)
            list[j] = fam_shape[key, j]
        # Insertion sort: a family has a handful of shapes.
        for (j = 2; j <= m; j++)
            for (k = j; k > 1; k--) {
                w1 = list[k - 1]; w2 = list[k]
                if (r_flops[w1] < r_flops[w2] || (r_flops[w1] == r_flops[w2] && r_bytes[w1] <= r_bytes[w2]))
                    break
                tmp = list[k - 1]; list[k - 1] = list[k]; list[k] = tmp
            }
        split(key, parts, SUBSEP)
        for (j = 1; j <= m; j++) {
            shape_index[key, r_shape[list[j]]] = j
            print j, r_shape[list[j]] > (out "/shapes." parts[1] "." parts[2] "." parts[3])
        }
    }
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
    # The model's stage rows have their own chart (render.sh's stages_plot).
    if (f[col["status"]] == "PASS" && f[col["median_ms"]] != "" && f[col["op"]] !~ /^stage-/)
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
    print op, dtype, base > (out "/baselines")
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

# One roofline point per (variant, dtype): its largest shape, where launch
# overhead matters least.  PyTorch's f32 and bf16 rows are both `torch`.
function write_roofline(op,    i, best, pick, vd, top, any) {
    for (i = 1; i <= n; i++) {
        vd = r_var[i] SUBSEP r_dtype[i]
        if (r_op[i] == op && r_bytes[i] > 0 && r_flops[i] > 0 && !r_across[i] &&
            (!(vd in best) || r_flops[i] > best[vd])) {
            best[vd] = r_flops[i]
            pick[vd] = i
        }
    }
    # An op that does no arithmetic (copy) has no place on a log-log roofline.
    any = 0
    top = ""
    for (vd in pick) {
        any = 1
        i = pick[vd]
        print r_flops[i] / r_bytes[i], r_gf[i], r_var[i], r_math[i] > (out "/roofline." op ".dat")
        if (top == "" || r_gf[i] > r_gf[top])
            top = i
    }
    if (!any)
        return
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
