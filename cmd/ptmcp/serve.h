/*
 * serve: `ptmcp serve`, MCP over stdin and stdout (see server.h for the
 * parts).
 */
#ifndef PTMCP_SERVE_H
#define PTMCP_SERVE_H

/*
 * Serves until stdin closes, on the store at store_path (NULL: the
 * default).  Returns the exit status.
 */
int serve_main(const char *store_path, unsigned max_jobs);

#endif
