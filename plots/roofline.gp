# Roofline of one GPU: every (op, variant, dtype) at its largest shape, under
# the memory and compute ceilings.  render.sh passes, with gnuplot -e:
#   ops         space-separated op names; op i is drawn in linetype i
#   prefix      data files are prefix.OP.'.dat', columns "intensity gflop_s
#               variant math"
#   layout      layout.awk's margins and labels: each op's fastest point
#               named where the name hides no other label and no point
#   mem         memory bandwidth in GB/s (0: unknown, no ceilings drawn)
#   fp32, tc    FP32 and bf16 tensor-core peaks in GFLOP/s (0: unknown); the
#               tf32 roof is half the tensor one, 3xtf32's a sixth
#   xmin, xmax  the intensity range, wide enough to show the ridge points
#   ymin, ymax  the GFLOP/s range
#   plot_title, out (output path without extension)
roof(x, peak) = x * mem < peak ? x * mem : peak

set title plot_title noenhanced
set xlabel 'arithmetic intensity (FLOP per byte moved)'
set ylabel 'GFLOP/s'
set logscale xy
set format x '10^{%L}'
set format y '%.0s%c'
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
# Outside the plot: an op per line, then the markers' maths, 24 lines a column
# (layout.awk places it and narrows the plot for a second column).
set key at screen 0.79, screen 0.6 left top vertical maxrows 24 Left reverse samplen 1 font ',10'
set samples 1000
# A colour per op, twenty before any repeats.
array palette[20] = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#0e9aa7', '#e377c2', \
                     '#8c564b', '#9a9a00', '#7f7f7f', '#393b79', '#a55194', '#637939', '#c79a2a', \
                     '#843c39', '#000080', '#00a087', '#ff1493', '#5f9ea0', '#000000']
do for [i=1:20] { set linetype i lc rgb palette[i] }
set linetype cycle 20
# The marker says which math, and so which roof, a point is held to: fp32
# FMA (circle), 3xtf32 (diamond), tf32 tensor (square), bf16 tensor
# (triangle).
marker(m) = m eq 'bf16' ? 9 : m eq 'tf32' ? 5 : m eq '3xtf32' ? 13 : 7

# The roofs, named in the right margin at their height (layout.awk names
# the memory slope).
if (mem > 0 && fp32 > 0) {
    set label sprintf('fp32 FMA %.1f TFLOP/s', fp32 / 1000) at graph 1, first fp32 offset 1, 0 left font ',9' front
}
if (mem > 0 && tc > 0) {
    set label sprintf('tf32 tensor %.0f TFLOP/s', tc / 2000) at graph 1, first tc / 2 offset 1, 0 left font ',9' front
    set label sprintf('3xtf32 %.0f TFLOP/s', tc / 6000) at graph 1, first tc / 6 offset 1, 0 left font ',9' front
    set label sprintf('bf16 tensor %.0f TFLOP/s', tc / 1000) at graph 1, first tc offset 1, 0 left font ',9' front
}
if (exists('layout')) { load layout }

# Ceilings join the plot only when known, hence the command built as text.
cmd = "plot for [i=1:words(ops)] prefix.word(ops, i).'.dat' using 1:2:(marker(strcol(4))) " \
    . "with points pt variable ps 1.3 lt i notitle, " \
    . "for [i=1:words(ops)] keyentry with points pt 7 ps 1.3 lt i title word(ops, i) noenhanced, " \
    . "keyentry with points pt 7 lc 'black' title 'fp32 math', " \
    . "keyentry with points pt 13 lc 'black' title '3xtf32 math', " \
    . "keyentry with points pt 5 lc 'black' title 'tf32 math', " \
    . "keyentry with points pt 9 lc 'black' title 'bf16 math'"
if (mem > 0 && fp32 > 0) {
    cmd = cmd . ", roof(x, fp32) with lines lw 2 lc 'black' notitle"
}
if (mem > 0 && tc > 0) {
    cmd = cmd . ", (x * mem > tc / 6 ? roof(x, tc / 6) : 1/0) with lines lw 1.5 dt 4 lc 'black' notitle" \
        . ", (x * mem > tc / 2 ? roof(x, tc / 2) : 1/0) with lines lw 1.5 dt 3 lc 'black' notitle" \
        . ", (x * mem > fp32 ? roof(x, tc) : 1/0) with lines lw 2 dt 2 lc 'black' notitle"
}

set terminal pngcairo enhanced size 1100,650 font 'Sans,11'
set output out.'.png'
eval cmd
set terminal svg enhanced size 1100,650 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
