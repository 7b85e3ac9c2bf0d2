# Speed of one (op, dtype, shape family) against the family's axis field, or
# against problem size.  render.sh passes, with gnuplot -e:
#   prefix      data files are prefix.VARIANT.'.dat', columns "x speed"
#   variants    space-separated variant names
#   libraries   the library variants among them (drawn dashed)
#   plot_title, xlabel, ylabel, out (output path without extension)
#   ceilingK    up to four ceilings in the plot's unit, one per math among
#               the rows (K = 1..4; unset or 0: none), drawn as horizontal
#               lines; set by layout
#   points      1: shapes that share no sweep (tile-hostile ones), x being
#               the shape's index, drawn as points (squares for libraries),
#               never joined into a line that would suggest a trend
#   layout      gnuplot commands from layout.awk: ranges, ticks, margins,
#               the labels at the lines' ends and on the ceilings, and the
#               ceilings (ceilingK); loaded before the plot
# For an overlay of two runs (render.sh --overlay) it passes as well:
#   base_prefix, base_variants   the same for the base run, drawn dashed;
#                                the new run (prefix, variants) is solid
#   colours, base_colours        one linetype number per variant, so that a
#                                variant has the same colour in both runs
#   new_label, base_label        key entries for the solid and dashed lines
# Then every line is solid or dashed by run, not by library.
# 1 when v is a library variant: its dash type is then 2 (dashed)
is_library(v) = strstrt(' '.libraries.' ', ' '.v.' ') > 0

# Twenty distinct colours, so a ladder of up to twenty variants repeats
# none.
array palette[20] = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#0e9aa7', '#e377c2', \
                     '#8c564b', '#9a9a00', '#7f7f7f', '#393b79', '#a55194', '#637939', '#c79a2a', \
                     '#843c39', '#000080', '#00a087', '#ff1493', '#5f9ea0', '#000000']
do for [i=1:20] { set linetype i lc rgb palette[i] }
set linetype cycle 20

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

set terminal pngcairo enhanced size 1100,650 font 'Sans,11'
set output out.'.png'
# layout.awk's ranges, ticks, margins and labels (not for an overlay).
if (exists('layout')) { load layout }
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
    if (exists('points') && points) {
        # Shapes that share no sweep, at their index: points only, each
        # variant a little aside so that none hides another.
        nv = words(variants)
        dodge(i) = nv > 1 ? (i - (nv + 1) / 2.0) * 0.7 / nv : 0
        plot for [i=1:nv] prefix.word(variants, i).'.dat' using ($1 + dodge(i)):2 \
                 with points pt (is_library(word(variants, i)) ? 5 : 7) ps 1.3 lt i \
                 title (exists('vtitle'.i) ? value('vtitle'.i) : word(variants, i)) noenhanced, \
             for [k=1:4] (ceiling_at(k) > 0 ? ceiling_at(k) : 1/0) with lines lw 1.5 lc 'black' dt k + 1 notitle
    } else {
        # With layout.awk's labels at the lines' ends, the key is off.
        plot for [i=1:words(variants)] prefix.word(variants, i).'.dat' using 1:2 \
                 with linespoints lw 2 pt 7 ps 0.7 lt i dt 1 + is_library(word(variants, i)) \
                 title word(variants, i) noenhanced, \
             for [k=1:4] (ceiling_at(k) > 0 ? ceiling_at(k) : 1/0) with lines lw 1.5 lc 'black' dt k + 1 notitle
    }
}
set terminal svg enhanced size 1100,650 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
