# Loss curves of `kbench model train --loss-csv` (and of peers written in
# the same columns): training loss by step and by wall time, one line per
# file, the held-out loss as points.  loss.sh passes, with gnuplot -e:
#   files       space-separated CSV paths; titles  their labels, the same order
#   xcol        1 (step) or 6 (wall_s); xlabel; out (output path without extension)
set datafile separator ','
set datafile commentschars '#'
set key autotitle columnhead
set title 'Training loss' noenhanced
set xlabel xlabel
set ylabel 'cross-entropy (nats)'
set grid lc rgb '#dddddd'
set key top right noenhanced
set terminal pngcairo enhanced size 1000,600 font 'Sans,11'
set output out.'.png'
n = words(files)
plot for [i = 1:n] word(files, i) using xcol:2 with lines lw 2 lc i title word(titles, i), \
     for [i = 1:n] word(files, i) using xcol:(column(7) > 0 ? column(7) : 1/0) with points pt 7 ps 1.2 lc i \
         title word(titles, i).' held-out'
set terminal svg enhanced size 1000,600 dynamic font 'Sans,11'
set output out.'.svg'
replot
set output
