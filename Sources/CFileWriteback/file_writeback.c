// sync_file_range and O_DIRECT are GNU extensions that Swift's Glibc module does not export.
#define _GNU_SOURCE
#include <fcntl.h>
#include "file_writeback.h"

int pm_start_writeback(int fd, off_t offset, off_t count) {
#ifdef __linux__
    return sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)count;
    return 0;
#endif
}

int pm_direct_io_flag(void) {
#ifdef O_DIRECT
    return O_DIRECT;
#else
    return 0;
#endif
}
