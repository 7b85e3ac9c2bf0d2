# Speed of one (op, dtype, shape family) against the family's axis field, or
# against problem size.  render.sh passes, with gnuplot -e:
#   prefix      data files are prefix.VARIANT.'.dat', columns "x speed"
#   variants    space-separated variant names
#   libraries   the library variants among them (drawn dashed)
#   plot_title, xlabel, ylabel, out (output path without extension)
#   ceilingK, ceiling_labelK  up to three ceilings in the plot's unit, one
#                            per math among the rows (K = 1..3; unset or 0:
#                            none), drawn as horizontal lines
#   points      1: shapes that share no sweep (tile-hostile ones), drawn as
#               points, never joined into a line that would suggest a trend
# For an overlay of two runs (render.sh --overlay) it passes as well:
#   base_prefix, base_variants   the same for the base run, drawn dashed;
#                                the new run (prefix, variants) is solid
#   colours, base_colours        one linetype number per variant, so that a
#                                variant has the same colour in both runs
#   new_label, base_label        key entries for the solid and dashed lines
# Then every line is solid or dashed by run, not by library.
# 1 when v is a library variant: its dash type is then 2 (dashed)
is_library(v) = strstrt(' '.libraries.' ', ' '.v.' ') > 0

# Sixteen distinct colours, so a ladder of up to sixteen variants repeats
# none: gnuplot's default eight, then eight more.
set linetype 9 lc rgb '#8c564b'
set linetype 10 lc rgb '#e377c2'
set linetype 11 lc rgb '#7f7f7f'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#bcbd22'
set linetype 14 lc rgb '#ff7f0e'
set linetype 15 lc rgb '#393b79'
set linetype 16 lc rgb '#a55194'
set linetype cycle 16

set title plot_title noenhanced
set xlabel xlabel noenhanced
set ylabel ylabel noenhanced
# Variants of one ladder differ by orders of magnitude in size and speed.
set logscale xy
set format x '10^{%L}'
# SI prefixes: 10k, 1M, ... and 100m for 0.1, where '%.0f' would print 0.
set format y '%.0s%c'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
# Below the plot, in columns: a long ladder takes rows, not a third of the width.
set key outside bottom center horizontal maxrows 3 font ',10'

ceiling_at(k) = exists('ceiling'.k) ? value('ceiling'.k) : 0
ceiling_label_at(k) = ceiling_at(k) > 0 ? value('ceiling_label'.k) : ''
style = exists('points') && points ? 'points pt 7 ps 1.2' : 'linespoints lw 2 pt 7 ps 0.7'

set terminal pngcairo enhanced size 1100,650 font 'Sans,11'
set output out.'.png'
if (exists('base_prefix')) {
    # A base variant the new run lacks gets its own key entry; the others
    # share the new run's.
    in_new(v) = strstrt(' '.variants.' ', ' '.v.' ') > 0
    plot for [i=1:words(variants)] prefix.word(variants, i).'.dat' using 1:2 \
             with linespoints lw 2 pt 7 ps 0.7 lc word(colours, i) + 0 dt 1 \
             title word(variants, i) noenhanced, \
         for [i=1:words(base_variants)] base_prefix.word(base_variants, i).'.dat' using 1:2 \
             with linespoints lw 2 pt 6 ps 0.7 lc word(base_colours, i) + 0 dt 2 \
             title (in_new(word(base_variants, i)) ? '' : word(base_variants, i).' (base only)') noenhanced, \
         keyentry with lines lw 2 lc 'black' dt 1 title new_label noenhanced, \
         keyentry with lines lw 2 lc 'black' dt 2 title base_label noenhanced
} else {
    plot for [v in variants] prefix.v.'.dat' using 1:2 with @style dt 1 + is_library(v) title v noenhanced, \
         for [k=1:3] (ceiling_at(k) > 0 ? ceiling_at(k) : 1/0) with lines lw 1.5 lc 'black' dt k + 2 \
             title ceiling_label_at(k) noenhanced
}
set terminal svg enhanced size 1100,650 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
