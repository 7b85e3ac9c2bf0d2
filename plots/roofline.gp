# Roofline of one GPU: every (op, variant) at its largest shape, under the
# memory and compute ceilings.  render.sh passes, with gnuplot -e:
#   ops         space-separated op names
#   prefix      data files are prefix.OP.'.dat', columns "intensity gflop_s variant",
#               and prefix.OP.'.best', the op's fastest point labelled "op:variant"
#   mem         memory bandwidth in GB/s (0: unknown, no ceilings drawn)
#   fp32, tc    FP32 and tensor-core peaks in GFLOP/s (0: unknown)
#   xmin, xmax  the intensity range, wide enough to show the ridge points
#   ymin, ymax  the GFLOP/s range, with room for the key above the ceilings
#   plot_title, out (output path without extension)
roof(x, peak) = x * mem < peak ? x * mem : peak

set title plot_title noenhanced
set xlabel 'arithmetic intensity (FLOP per byte moved)'
set ylabel 'GFLOP/s'
set logscale xy
set format x '10^{%L}'
set format y '10^{%L}'
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
# Above the memory slope nothing can run, so the key hides nothing there.
set key top left opaque
set samples 1000
# A colour per op, sixteen before any repeats.
array palette[16] = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#e377c2', \
                     '#8c564b', '#bcbd22', '#7f7f7f', '#393b79', '#a55194', '#637939', '#e7ba52', \
                     '#843c39', '#000080']
do for [i=1:16] { set linetype i lc rgb palette[i] }
set linetype cycle 16

# Ceilings join the plot only when known, hence the command built as text.
cmd = "plot for [i=1:words(ops)] prefix.word(ops, i).'.dat' using 1:2 with points pt 7 ps 1.3 lt i " \
    . "title word(ops, i) noenhanced, " \
    . "for [i=1:words(ops)] prefix.word(ops, i).'.best' using 1:2:3 with labels left offset 1,(i % 2 ? 0.5 : -0.5) " \
    . "font ',9' tc lt i noenhanced notitle"
if (mem > 0 && fp32 > 0) {
    cmd = cmd . ", roof(x, fp32) with lines lw 2 lc 'black' " \
        . "title sprintf('FP32 %.1f TFLOP/s, memory %.0f GB/s', fp32 / 1000, mem)"
}
if (mem > 0 && tc > 0) {
    cmd = cmd . ", roof(x, tc) with lines lw 2 dt 2 lc 'black' " \
        . "title sprintf('tensor core %.1f TFLOP/s', tc / 1000)"
}

set terminal pngcairo enhanced size 1100,700 font 'Sans,11'
set output out.'.png'
eval cmd
set terminal svg enhanced size 1100,700 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
