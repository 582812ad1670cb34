#ifndef PEERMESH_STDERR_FILTER_H
#define PEERMESH_STDERR_FILTER_H

#include <stddef.h>
#include <sys/types.h>

/// Receives what C code writes to `stderr`, one flush at a time (whole lines: the stream is line-buffered), and
/// returns how many bytes it took (all of them) or -1.
typedef ssize_t (*pm_stderr_handler)(const char *bytes, size_t count);

/// Replaces C's `stderr` with a line-buffered stream that hands every line to `handler` instead of file
/// descriptor 2. Returns 0, or -1 when the stream could not be made (stderr is then unchanged).
int pm_stderr_filter_install(pm_stderr_handler handler);

#endif
