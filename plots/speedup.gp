# Each variant's speedup over its dtype's baseline at one shape (one op, one dtype).
# render.sh passes, with gnuplot -e:
#   data        file of "variant speedup" lines
#   baseline    the baseline variant's name (its bar is drawn in grey)
#   plot_title, out (output path without extension)
stats data using 2 nooutput

set title plot_title noenhanced
set ylabel sprintf('speedup over %s (x)', baseline) noenhanced
set xtics rotate by -30 left noenhanced
set xrange [-0.6:STATS_records - 0.4]
# Headroom for the value printed above the tallest bar.
set yrange [0:STATS_max * 1.15]
set grid ytics lc rgb '#dddddd'
set style fill solid 0.8 border -1
set boxwidth 0.6
set key top left
set bmargin 5
bar_color(name) = name eq baseline ? 0x999999 : 0x3b75af

set terminal pngcairo enhanced size 1000,600 font 'Sans,11'
set output out.'.png'
plot data using 0:2:(bar_color(strcol(1))):xtic(1) with boxes lc rgb variable notitle, \
     '' using 0:2:(sprintf('%.2fx', $2)) with labels offset 0,0.8 notitle, \
     1 with lines dt 2 lw 1.5 lc 'black' title baseline.' = 1' noenhanced
set terminal svg enhanced size 1000,600 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
