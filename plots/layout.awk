# The parts of a plot gnuplot cannot lay out by itself, written as gnuplot
# commands that speed.gp and roofline.gp load: axis ranges and ticks, the
# labels at the ends of a speed plot's lines (pushed apart so none overlap),
# the ceilings' labels, and the roofline's labels (each placed where it hides
# no other label and no point).  The plots have fixed margins, so a data
# point's place in pixels is known here.
#
# Speed plot:
#   awk -v mode=speed -v kind=axis|shapes|size -v unit=GB/s|GFLOP/s
#       -v variants="v1 v2 ..." -v base=BASELINE -v shapes=FILE -v ceilings=FILE
#       -f layout.awk PREFIX.v1.dat PREFIX.v2.dat ...
#   -v libraries="..." names the variants drawn dashed; -v across="VAR:N ..."
#   those whose rows span N GPUs (named so).
#   Each .dat has "x speed" lines sorted by x; ceilings has "VALUE LABEL"
#   lines; shapes (kind=shapes) "index shape" lines.  kind axis: x is a shape
#   field, ticks at its values, log scale where they span more than 8x;
#   size: x is the problem size (a CSV without families); shapes: x is the
#   shape's index, ticks named by shape.  For axis and size each line ends
#   in its variant's name and its speedup over BASE at that shape.
# Roofline:
#   awk -v mode=roofline -v ops="op1 op2 ..." -v xmin= -v xmax= -v ymin= -v ymax=
#       -v mem= -v fp32= -v tc= -v ceiling_src=measured|datasheet
#       -f layout.awk roofline.*.dat roofline.*.best
#   The op with index i in ops is drawn in linetype i.

BEGIN {
    W = 1100; H = 650                    # the PNG's size in pixels
    CHAR = 7                             # width of a 10 pt character, about
    LINE = 14                            # a 10 pt label's height, with air
}

function log10(v) { return log(v) / log(10) }
function max(a, b) { return a > b ? a : b }
function min(a, b) { return a < b ? a : b }
function q(s) { gsub(/'/, "''", s); return "'" s "'" }

# A tick label for a shape field's value: plain up to 5 digits, 2^k for a
# larger power of two (element counts of the collectives), else 3 digits
# with an SI prefix.
function tick(v,    k, p, s) {
    if (v < 100000)
        return sprintf("%d", v)
    k = int(log(v) / log(2) + 0.5)
    if (2 ^ k == v)
        return "2^{" k "}"
    split("k M G T", p, " ")
    for (k = 0; v >= 1000 && k < 4; k++)
        v /= 1000
    s = sprintf("%.3g", v)
    return s p[k]
}

# The nearest of 1, 2 or 5 times a power of ten under v (dir -1) or over it
# (dir 1).
function nice(v, dir,    e, m, k, best, c) {
    e = int(log10(v)) - (v < 1 ? 1 : 0)
    split("1 2 5 10", m, " ")
    best = ""
    for (k = -1; k <= 1; k++)
        for (c = 1; c <= 4; c++) {
            t0 = m[c] * 10 ^ (e + k)
            if (dir < 0 && t0 <= v * 1.0000001 && (best == "" || t0 > best))
                best = t0
            if (dir > 0 && t0 >= v * 0.9999999 && (best == "" || t0 < best))
                best = t0
        }
    return best
}

# A speedup to three digits: 0.862x, 12.4x, 877x.
function speedup(r) {
    return r >= 100 ? sprintf(" %.0fx", r) : r >= 10 ? sprintf(" %.1fx", r) : sprintf(" %.2fx", r)
}

# Shorter than the unit's own figure: 779168 GFLOP/s is 779 TFLOP/s.
function amount(v) {
    if (unit == "GFLOP/s")
        return v >= 1000 ? sprintf("%.0f TFLOP/s", v / 1000) : sprintf("%.0f GFLOP/s", v)
    return v >= 1000 ? sprintf("%.2f TB/s", v / 1000) : sprintf("%.0f GB/s", v)
}

mode == "speed" && FNR == 1 { file_index++ }
mode == "speed" {
    v = file_index
    np[v]++
    px[v, np[v]] = $1; py[v, np[v]] = $2
    if ($2 > 0) {
        ylo = ylo == "" || $2 < ylo ? $2 : ylo
        yhi = yhi == "" || $2 > yhi ? $2 : yhi
    }
    xlo = xlo == "" || $1 < xlo ? $1 : xlo
    xhi = xhi == "" || $1 > xhi ? $1 : xhi
    if (!(($1 + 0) in xseen)) {
        xseen[$1 + 0] = 1
        xs[++nx] = $1 + 0
    }
    next
}
mode == "roofline" && FILENAME ~ /\.best$/ {
    nb++
    bx[nb] = $1; by[nb] = $2; bop[nb] = FILENAME; btext[nb] = $3
    next
}
mode == "roofline" {
    npt++
    rx[npt] = $1; ry[npt] = $2
    next
}

END {
    if (mode == "speed")
        speed()
    else
        roofline()
}

function speed(    pair, gpus, shown, left, e, nv, names, i, k, c, clab, nc, lo, hi, top, bottom, plot_h, logx, n, t, ord, j, tmp,
                   ey, ex, pos, gap, text, width, maxw, sx, bx, yb, s, nshape, shape, rot) {
    nv = split(variants, names, " ")
    # A variant's name as shown: with its GPUs when its rows span several.
    k = split(across, t, " ")
    for (i = 1; i <= k; i++) {
        split(t[i], pair, ":")
        gpus[pair[1]] = pair[2]
    }
    for (i = 1; i <= nv; i++) {
        shown[i] = names[i] ((names[i] in gpus) ? " (" gpus[names[i]] " GPUs)" : "")
        printf "vtitle%d = %s\n", i, q(shown[i])
    }
    # The ceilings join the y range: a row is read against them.
    nc = 0
    while ((getline line < ceilings) > 0) {
        split(line, t, " ")
        if (t[1] + 0 <= 0)
            continue
        c[++nc] = t[1] + 0
        clab[nc] = substr(line, length(t[1]) + 2)
        yhi = max(yhi, c[nc])
    }
    # The range: 1, 2 or 5 times a power of ten, with some air; ticks at
    # 1-2-5 (1-2-3-5-7 within two decades) where decades alone are too few.
    lo = nice(ylo / 1.25, -1)
    hi = nice(yhi * 1.25, 1)
    printf "set yrange [%.6g:%.6g]\n", lo * 0.999, hi * 1.001
    if (hi / lo <= 1000) {
        k = split(hi / lo <= 100 ? "1 2 3 5 7" : "1 2 5", t, " ")
        printf "set ytics ("
        n = 0
        for (e = int(log10(lo)) - 1; 10 ^ e <= hi; e++)
            for (j = 1; j <= k; j++)
                if (t[j] * 10 ^ e >= lo * 0.999 && t[j] * 10 ^ e <= hi * 1.001)
                    printf "%s%.6g", n++ ? ", " : "", t[j] * 10 ^ e
        print ")"
        print "set mytics 1"
    }
    top = 75
    bottom = 65

    if (kind == "shapes") {
        nshape = 0
        width = 0
        while ((getline line < shapes) > 0) {
            split(line, t, " ")
            shape[++nshape] = t[2]
            width = max(width, length(t[2]))
        }
        rot = nshape > 4 || width > 14
        # Tick labels are in the 11 pt font, about 7.4 pixels a character.
        bottom = 65 + (rot ? width * 7.4 * 0.71 : 0)
        left = max(80, rot ? width * 7.4 * 0.71 + 10 : 80)
        print "unset logscale x"
        print "set xrange [0.5:" nshape + 0.5 "]"
        printf "set xtics (" 
        for (i = 1; i <= nshape; i++)
            printf "%s%s %d", (i > 1 ? ", " : ""), q(shape[i]), i
        print ") noenhanced" (rot ? " rotate by 45 right" : "")
        print "unset mxtics; set grid noxtics"
        # The key in the right margin, as wide as the longest name.
        width = 0
        for (i = 1; i <= nv; i++)
            width = max(width, length(shown[i]))
        printf "set key at screen %.4f, screen %.4f left top vertical maxrows 40 Left reverse font ',10' samplen 1\n",
            1 - (width * CHAR + 45) / W, 1 - top / H
        printf "set rmargin at screen %.4f\n", 1 - (width * CHAR + 55) / W
    } else {
        logx = kind == "size" || (xlo > 0 && xhi / xlo > 8)
        if (logx) {
            print "set logscale x"
            print "set xrange [" xlo / 1.25 ":" xhi * 1.25 "]"
        } else {
            print "unset logscale x"
            pad = xhi > xlo ? (xhi - xlo) * 0.05 : max(xlo * 0.1, 1)
            print "set xrange [" xlo - pad ":" xhi + pad "]"
        }
        if (kind == "axis") {
            # Ticks at the measured values, sorted; every other one when
            # there are too many to read, the last one always.
            for (i = 2; i <= nx; i++)
                for (j = i; j > 1 && xs[j - 1] > xs[j]; j--) {
                    tmp = xs[j]; xs[j] = xs[j - 1]; xs[j - 1] = tmp
                }
            step = nx > 12 ? 2 : 1
            printf "set xtics ("
            n = 0
            for (i = nx; i >= 1; i -= step)
                printf "%s\"%s\" %.17g", n++ ? ", " : "", tick(xs[i]), xs[i]
            print ")"
            print "unset mxtics; set grid xtics mytics"
        } else
            print "set format x '10^{%L}'"
        # Each line ends in a label: its variant and its speedup over the
        # baseline at that shape.  Labels are pushed apart to a line's height.
        plot_h = H - top - bottom
        gap = LINE / plot_h * (log10(hi) - log10(lo))
        bx = 0
        for (i = 1; i <= nv; i++)
            if (names[i] == base)
                bx = i
        maxw = 0
        n = 0
        for (i = 1; i <= nv; i++) {
            if (np[i] == 0)
                continue
            ex[i] = px[i, np[i]]; ey[i] = py[i, np[i]]
            text[i] = shown[i]
            if (bx == i)
                text[i] = text[i] " = 1x"
            else if (bx)
                for (k = 1; k <= np[bx]; k++)
                    if (px[bx, k] == ex[i] && ey[i] > 0) {
                        text[i] = text[i] speedup(ey[i] / py[bx, k])
                        break
                    }
            maxw = max(maxw, length(text[i]))
            if (ey[i] > 0)
                ord[++n] = i
        }
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && ey[ord[j - 1]] > ey[ord[j]]; j--) {
                tmp = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = tmp
            }
        for (j = 1; j <= n; j++) {
            pos[j] = log10(ey[ord[j]])
            if (j > 1 && pos[j] < pos[j - 1] + gap)
                pos[j] = pos[j - 1] + gap
        }
        for (j = n; j >= 1; j--) {
            if (j == n && pos[j] > log10(hi) - gap / 2)
                pos[j] = log10(hi) - gap / 2
            if (j < n && pos[j] > pos[j + 1] - gap)
                pos[j] = pos[j + 1] - gap
        }
        for (j = 1; j <= n; j++) {
            i = ord[j]
            printf "set label %s at graph 1, first %.6g offset char 1.6, 0 left font ',10' tc lt %d noenhanced front\n",
                q(text[i]), 10 ^ pos[j], i
            # A short lead from the line's end to its label.
            printf "set arrow from first %.6g, first %.6g to graph 1, first %.6g nohead lt %d lw 1 dt 3 front\n",
                ex[i], ey[i], 10 ^ pos[j], i
            # A stub in the line's own colour and dash by the label.
            printf "set arrow from graph 1, first %.6g rto character 1.4, 0 nohead lt %d lw 2 dt %d front\n", 10 ^ pos[j], i,
                index(" " libraries " ", " " names[i] " ") ? 2 : 1
        }
        printf "set rmargin at screen %.4f\n", 1 - (maxw * CHAR + 40) / W
        print "unset key"
    }
    printf "set tmargin at screen %.4f\n", 1 - top / H
    printf "set bmargin at screen %.4f\n", bottom / H
    print "set lmargin at screen " (left ? left : 80) / W
    # Ceilings: a line each, named on the line at the left, over the points.
    print "set style textbox opaque noborder margins 1, 0"
    for (k = 1; k <= nc; k++) {
        print "ceiling" k " = " c[k]
        printf "set label %s at graph 0.01, first %.6g offset 0, 0.6 left font ',9' tc rgb '#333333' noenhanced front boxed\n",
            q(clab[k] ": " amount(c[k])), c[k]
    }
}

# Which side of the memory slope a pixel is on: -1 above it, 1 below.
function slope_side(x, y,    lx, ly) {
    lx = log10(xmin) + (x - L) / PW * (log10(xmax) - log10(xmin))
    ly = log10(ymin) + (B - y) / PH * (log10(ymax) - log10(ymin))
    return ly > lx + log10(mem) ? -1 : 1
}

# Roofline labels: each op's fastest point, labelled where the label hides
# no other label and no point; one moved away from its point gets a lead.
function roofline(    t, angle, i, j, k, ord, tmp, cx, cy, w, h, cand, ncand, ok, x0, y0, lx, ly,
                      placed, pxl, pyl, pxr, pyr, name, dx, dy, best, width, cols) {
    k = split(ops, t, " ")
    for (i = 1; i <= k; i++)
        op_index[t[i]] = i
    # The key right of the plot, under the roofs' names: an op a line,
    # then the four maths.  KEYROWS lines fit under screen 0.6; more take
    # further columns, each as wide as the longest name, and the plot
    # narrows to make room for them (else they run off the page).
    width = 11 # "3xtf32 math"
    for (i = 1; i <= k; i++)
        width = max(width, length(t[i]))
    KEYROWS = 24
    cols = int((k + 4 + KEYROWS - 1) / KEYROWS)
    # Globals: slope_side uses them.
    L = 80; R = W - 250 - (cols - 1) * (width * CHAR + 40); T = 50; B = H - 60
    printf "set key at screen %.4f, screen 0.6 left top vertical maxrows %d Left reverse samplen 1 font ',10'\n",
        (R + 19) / W, KEYROWS
    PW = R - L; PH = B - T
    printf "set lmargin at screen %.4f; set rmargin at screen %.4f\n", L / W, R / W
    printf "set tmargin at screen %.4f; set bmargin at screen %.4f\n", 1 - T / H, 1 - B / H
    # The roofs in pixels: y, and x where each begins (its ridge point).
    nroof = 0
    split(fp32 " " tc / 6 " " tc / 2 " " tc, t, " ")
    for (i = 1; i <= 4; i++)
        if (t[i] > 0 && mem > 0) {
            roofy[++nroof] = B - (log10(t[i]) - log10(ymin)) / (log10(ymax) - log10(ymin)) * PH
            roofx[nroof] = L + (log10(t[i] / mem) - log10(xmin)) / (log10(xmax) - log10(xmin)) * PW
        }
    # The memory slope's label, above the slope (nothing runs there), short
    # of the fp32 ridge point, turned as the slope is on the page.
    if (mem > 0 && fp32 > 0) {
        k = fp32 / mem / 5
        angle = atan2(PH / (log10(ymax) - log10(ymin)), PW / (log10(xmax) - log10(xmin))) * 180 / 3.14159265
        printf "set label %s at %.6g, %.6g rotate by %.1f center offset -0.9, 1.1 font ',9' tc rgb '#333333' front\n",
            q(sprintf("memory %.0f GB/s (%s)", mem, ceiling_src)), k, k * mem, angle
    }
    for (i = 1; i <= npt; i++) {
        ptx[i] = L + (log10(rx[i]) - log10(xmin)) / (log10(xmax) - log10(xmin)) * PW
        pty[i] = B - (log10(ry[i]) - log10(ymin)) / (log10(ymax) - log10(ymin)) * PH
    }
    for (i = 1; i <= nb; i++)
        ord[i] = i
    # Highest first: the crowded compute-bound corner gets the first pick.
    for (i = 2; i <= nb; i++)
        for (j = i; j > 1 && by[ord[j - 1]] < by[ord[j]]; j--) {
            tmp = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = tmp
        }
    # Candidate places, in pixels from the point: right, left, then
    # further up or down on either side.
    ncand = 0
    for (k = 0; k <= 8; k++)
        for (j = 0; j <= 1; j++) {
            dy = (k % 2 ? 1 : -1) * int((k + 1) / 2) * LINE
            candx[++ncand] = 8; candy[ncand] = dy; canda[ncand] = "left"
            candx[++ncand] = -8; candy[ncand] = dy; canda[ncand] = "right"
        }
    placed = 0
    for (j = 1; j <= nb; j++) {
        i = ord[j]
        x0 = L + (log10(bx[i]) - log10(xmin)) / (log10(xmax) - log10(xmin)) * PW
        y0 = B - (log10(by[i]) - log10(ymin)) / (log10(ymax) - log10(ymin)) * PH
        w = length(btext[i]) * CHAR; h = LINE
        best = 0
        for (k = 1; k <= ncand && !best; k++) {
            lx = canda[k] == "left" ? x0 + candx[k] : x0 + candx[k] - w
            ly = y0 + candy[k] - h / 2
            if (lx < L + 2 || lx + w > R - 2 || ly < T + 2 || ly + h > B - 2)
                continue
            ok = 1
            for (m = 1; m <= placed && ok; m++)
                if (lx < pxr[m] && lx + w > pxl[m] && ly < pyr[m] && ly + h > pyl[m])
                    ok = 0
            for (m = 1; m <= npt && ok; m++)
                if (ptx[m] > lx - 4 && ptx[m] < lx + w + 4 && pty[m] > ly - 4 && pty[m] < ly + h + 4)
                    ok = 0
            # Nor across a ceiling: a flat roof from its ridge point on, or
            # the memory slope (a label wholly on one side of it).
            for (m = 1; m <= nroof && ok; m++)
                if (ly - 2 < roofy[m] && ly + h + 2 > roofy[m] && lx + w > roofx[m])
                    ok = 0
            if (ok && mem > 0 && slope_side(lx - 2, ly - 2) * slope_side(lx + w + 2, ly + h + 2) <= 0)
                ok = 0
            if (ok)
                best = k
        }
        if (!best)
            best = 1
        k = best
        lx = canda[k] == "left" ? x0 + candx[k] : x0 + candx[k] - w
        ly = y0 + candy[k] - h / 2
        placed++
        pxl[placed] = lx; pxr[placed] = lx + w; pyl[placed] = ly; pyr[placed] = ly + h
        name = btext[i]
        sub(/.*roofline\./, "", bop[i]); sub(/\.best$/, "", bop[i])
        printf "set label %s at screen %.4f, screen %.4f %s font ',9' tc lt %d noenhanced front\n",
            q(name), (x0 + candx[k]) / W, 1 - (y0 + candy[k]) / H, canda[k], op_index[bop[i]]
        if (candy[k] != 0)
            printf "set arrow from screen %.4f, screen %.4f to screen %.4f, screen %.4f nohead lt %d lw 0.8 front\n",
                x0 / W, 1 - y0 / H, (x0 + candx[k] * 0.8) / W, 1 - (y0 + candy[k]) / H, op_index[bop[i]]
    }
}
