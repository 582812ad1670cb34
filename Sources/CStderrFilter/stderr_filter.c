// C libraries the CLI links (libavahi-client) print their own warnings with fprintf(stderr, ...), straight into a
// person's room. fopencookie (a GNU extension Swift's Glibc module does not export) lets the CLI see those lines
// first and route them; everything else it passes on to file descriptor 2 at once, crash reports included.
#define _GNU_SOURCE
#include <stdio.h>
#include "stderr_filter.h"

static pm_stderr_handler installed;

static ssize_t filter_write(void *cookie, const char *bytes, size_t count) {
    (void)cookie;
    return installed(bytes, count);
}

int pm_stderr_filter_install(pm_stderr_handler handler) {
    installed = handler;
    cookie_io_functions_t functions = { .read = NULL, .write = filter_write, .seek = NULL, .close = NULL };
    FILE *stream = fopencookie(NULL, "w", functions);
    if (stream == NULL) return -1;
    if (setvbuf(stream, NULL, _IOLBF, BUFSIZ) != 0) {
        fclose(stream);
        return -1;
    }
    stderr = stream;
    return 0;
}
