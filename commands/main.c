/* kbench: benchmark and check transformer kernels. */
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"
#include "commands/report.h"
#include "commands/model.h"
#include "version.h"

int main(int argc, char **argv)
{
    kb_options o;
    char err[512];
    /* compare, report and derive have their own arguments and need no GPU. */
    if (argc > 1 && !strcmp(argv[1], "compare"))
        return kb_cmd_compare(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "report"))
        return kb_cmd_report(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "derive"))
        return kb_cmd_derive(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "model"))
        return kb_cmd_model(argc - 1, argv + 1);
    if (kb_parse_args(argc, argv, &o, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    switch (o.cmd) {
    case KB_CMD_LIST:
        return kb_cmd_list(stdout);
    case KB_CMD_RUN:
        return kb_cmd_run(&o);
    case KB_CMD_CEILINGS:
        return kb_cmd_ceilings(&o);
    case KB_CMD_PE:
        return kb_cmd_pe(&o);
    case KB_CMD_VERSION:
        printf("kbench %s\n", KB_GIT_COMMIT);
        return 0;
    default:
        kb_print_usage(stdout);
        kb_report_usage(stdout);
        kb_model_usage(stdout);
        return 0;
    }
}
