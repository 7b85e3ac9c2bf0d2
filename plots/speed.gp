# Speed against problem size for one (op, dtype): one line per variant, the
# library variants dashed.  render.sh passes, with gnuplot -e:
#   prefix      data files are prefix.VARIANT.'.dat', columns "size speed"
#   variants    space-separated variant names
#   libraries   the library variants among them (drawn dashed)
#   plot_title, xlabel, ylabel, out (output path without extension)
# 1 when v is a library variant: its dash type is then 2 (dashed)
is_library(v) = strstrt(' '.libraries.' ', ' '.v.' ') > 0

set title plot_title noenhanced
set xlabel xlabel noenhanced
set ylabel ylabel noenhanced
# Variants of one ladder differ by orders of magnitude in size and speed.
set logscale xy
set format x '10^{%L}'
# SI prefixes: 10k, 1M, ... and 100m for 0.1, where '%.0f' would print 0.
set format y '%.0s%c'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set key outside right top

set terminal pngcairo enhanced size 1100,650 font 'Sans,11'
set output out.'.png'
plot for [v in variants] prefix.v.'.dat' using 1:2 with linespoints \
     lw 2 pt 7 ps 0.7 dt 1 + is_library(v) title v noenhanced
set terminal svg enhanced size 1100,650 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
