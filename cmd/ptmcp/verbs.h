/*
 * verbs: the command-line verbs: those that work on the store (list,
 * show, import, export, prune, doctor; verbs.c) and those that run the other
 * tools on it (run, attach, decode, query, compare; drive.c).  Each takes the verb's own argv (argv[0] is
 * the verb) and returns an exit status, having said what went wrong.
 */
#ifndef PTMCP_VERBS_H
#define PTMCP_VERBS_H

#include "tool/cli.h"

int verb_list(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_show(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_import(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_export(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_prune(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_doctor(const struct tool_info *t, const char *store, int argc,
    char **argv);

/* drive.c: verbs that run the other tools. */
int verb_run(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_attach(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_decode(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_query(const struct tool_info *t, const char *store, int argc,
    char **argv);
int verb_compare(const struct tool_info *t, const char *store, int argc,
    char **argv);

#endif
