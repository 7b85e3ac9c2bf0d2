# The model's stages (kbench model stages) at one shape: each stage's prefill
# time and decode time per token, log scale, its dtype and error under it.
# render.sh passes, with gnuplot -e:
#   data        file of "stage prefill_ms decode_ms label" lines (label: a
#               one-word "dtype,rel.L2" tag)
#   plot_title, out (output path without extension)
stats data using 3 nooutput

set title plot_title noenhanced
set ylabel 'ms (log scale)'
set logscale y
set xrange [-0.6:STATS_records - 0.4]
set yrange [STATS_min / 4:*]
set grid ytics lc rgb '#dddddd'
set style fill solid 0.8 border -1
set boxwidth 0.35
set key top right
set bmargin 5
set xtics noenhanced

set terminal pngcairo enhanced size 1000,600 font 'Sans,11'
set output out.'.png'
plot data using ($0 - 0.18):2:xtic(stringcolumn(1)."\n".stringcolumn(4)) with boxes lc rgb 0x999999 title 'prefill (ms)', \
     '' using ($0 + 0.18):3 with boxes lc rgb 0x3b75af title 'decode (ms per token)', \
     '' using ($0 - 0.18):2:(sprintf('%.2f', $2)) with labels offset 0,0.8 notitle, \
     '' using ($0 + 0.18):3:(sprintf('%.3f', $3)) with labels offset 0,0.8 notitle
set terminal svg enhanced size 1000,600 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
