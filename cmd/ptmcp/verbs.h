/*
 * verbs: the command-line verbs that work on the store (list, show,
 * import, prune, doctor).  Each takes the verb's own argv (argv[0] is
 * the verb) and returns an exit status, having said what went wrong.
 */
#ifndef PTMCP_VERBS_H
#define PTMCP_VERBS_H

#include "cli.h"

int verb_list(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_show(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_import(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_prune(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_doctor(const struct tool_info *t, const char *store, int argc,
    char **argv);

#endif
