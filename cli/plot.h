/* Plotting through gnuplot, for bench and ab. Internal to the command. */
#ifndef CLI_PLOT_H
#define CLI_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Removes DIR and the files in it (a temporary directory of plot_tempdir or ab's). */
int plot_cleanup(const char *dir);
/* set terminal/output/title for TERMINAL ("png" or "svg") into script S. */
void plot_header(FILE *s, const char *terminal, const char *file, const char *title);

/* Plotting through gnuplot. plot_available() looks for it on PATH; when it is absent it
 * prints exactly one line on stderr and returns false. plot_run() runs SCRIPT (which
 * reads data files already written to DIR) and prints one line on failure. */
bool plot_available(const char *command);
int plot_tempdir(char *dir, size_t size);
int plot_run(const char *command, const char *dir, const char *script);
/* "png" or "svg" from the file name; NULL (after one line on stderr) otherwise. */
const char *plot_terminal(const char *command, const char *file);

#endif
