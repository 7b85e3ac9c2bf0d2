/* The commands that take runs (CSVs) as input and need no GPU: report, the
 * README's results table (report.c), and derive, a run's derived columns
 * computed again (derive.c). */
#ifndef KBENCH_REPORT_H
#define KBENCH_REPORT_H

#include <stdio.h>
#include "harness/csv_read.h"

int kb_cmd_report(int argc, char **argv);
void kb_report_usage(FILE *f);
int kb_cmd_derive(int argc, char **argv);

/* The stage table of one run's `kbench model stages` rows, as markdown
 * (report_stages.c); NULL with err when the run has none. */
char *kb_report_stages(const kb_run_file *f, char *err, size_t errlen);


#endif
