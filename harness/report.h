/* kbench report: the README's results table, generated from runs. */
#ifndef KBENCH_REPORT_H
#define KBENCH_REPORT_H

#include <stdio.h>

int kb_cmd_report(int argc, char **argv);
void kb_report_usage(FILE *f);

#endif
